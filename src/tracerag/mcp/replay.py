"""What an assistant asked and got, asked again (`tracerag mcp --replay RUN`): a recorded `call` run's tool is run
again with its recorded arguments, in this process through `tools.py` (no client, no server), and its answer's
digest compared with the recorded one (a repeated search's call run names the run it repeated: its documents are
compared); a search run the web app or an assistant asked for is run again from its recorded request (the search
page's address in its config, `asked`) and its documents compared. An ask run is replayed from its model's
recorded answers by `tracerag ask --replay`; other runs are not replayed here.

A replay records nothing: it reads the collection as it is now and says whether the answer is the same."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlsplit

from pydantic import BaseModel, ValidationError

from tracerag.collection import trail_roots
from tracerag.errors import TraceError, TrailError
from tracerag.mcp.tools import TOOLS, Env, digest
from tracerag.server.api import search as search_api
from tracerag.server.state import ServerState
from tracerag.trail import Event, find_trail, read_trail
from tracerag.trail.events import CallEvent, RunEvent
from tracerag.trail.export import result_event, run_event
from tracerag.trail.summary import call_line, summarise

CALLS = {"document", "selection", "export"}  # the tools that record no run of their own: made again as they were
REPLAYER = "tracerag mcp --replay"  # who asks, for a tool that would name its client (none of the replayed ones)
DIGEST_SHOWN = 12
M = TypeVar("M", bound=BaseModel)


class NotReplayable(TraceError):
    """A run this replay cannot ask again (another kind, no recorded request): said with what can."""


@dataclass
class Replayed:
    """A run asked again: what it asked, the documents named then and now, and for a call both digests."""

    run_id: str
    kind: str  # "call" or "search"
    asked: str  # one line: the call (tool and arguments) or the query
    client: str | None
    then: list[str]
    now: list[str]
    digest_then: str | None = None
    digest_now: str | None = None
    chars_then: int | None = None
    chars_now: int | None = None
    failed: str | None = None  # the call fails now: why
    notes: list[str] = field(default_factory=list)

    @property
    def same(self) -> bool:
        if self.failed is not None:
            return False
        if self.digest_then is not None:
            return self.digest_then == self.digest_now
        return self.then == self.now

    def differences(self) -> list[str]:
        """What differs, one line each (nothing when the answer is the same)."""
        if self.same:
            return []
        if self.failed is not None:
            return [f"the call fails now: {self.failed}", f"documents then: {_ids(self.then)}"]
        lines = []
        if self.digest_then is not None:
            lines.append(
                f"the answer differs: digest then {_short(self.digest_then)}, now {_short(self.digest_now)} "
                f"({self.chars_then:,} characters then, {self.chars_now:,} now)"
            )
        if self.then == self.now:
            lines.append(
                f"documents named: {_ids(self.now)}, then and now, in the same order; the rest of the answer changed "
                "(a decision, a note, a document's text since)"
            )
            return lines
        lines += [f"documents then: {_ids(self.then)}", f"documents now: {_ids(self.now)}"]
        gone = [d for d in self.then if d not in self.now]
        new = [d for d in self.now if d not in self.then]
        if gone:
            lines.append(f"no longer named: {_ids(gone)}")
        if new:
            lines.append(f"named now only: {_ids(new)}")
        if not gone and not new:
            lines.append("the same documents in another order")
        return lines


def _ids(ids: Sequence[str]) -> str:
    return ", ".join(ids) if ids else "none"


def _short(sha: str | None) -> str:
    return (sha or "")[:DIGEST_SHOWN]


def replay_run(state: ServerState, name: str, run: str) -> Replayed:
    """Run `run` (an id, a unique prefix, or a trail file) of collection `name` again and compare its answer."""
    path = find_trail(trail_roots(state.path_of(name), state.settings), run)
    return replay_events(state, name, read_trail(path))


def replay_events(state: ServerState, name: str, events: Sequence[Event]) -> Replayed:
    run = run_event(events)
    summary = summarise(events)
    if summary.kind == "call":
        return replay_call(state, name, run, events)
    if summary.kind == "search":
        return replay_search(state, name, run, events)
    if summary.kind == "ask":
        raise NotReplayable(
            f"run {run.run_id} is an ask run: `tracerag ask --replay {run.run_id} -c DIR` runs it again from its "
            "model's recorded answers"
        )
    raise NotReplayable(
        f"run {run.run_id} is a {summary.kind} run: only call and search runs are asked again here (an ask run by "
        "`tracerag ask --replay`)"
    )


def replay_call(state: ServerState, name: str, run: RunEvent, events: Sequence[Event]) -> Replayed:
    """The recorded tool call made again over collection `name`; its answer's digest against the recorded one."""
    call = next((e for e in events if isinstance(e, CallEvent)), None)
    if call is None:
        raise TrailError(f"run {run.run_id} has no call event: the call was not answered, there is nothing to compare")
    spec = next((t for t in TOOLS if t.name == call.tool), None)
    if spec is None:
        raise NotReplayable(f"run {run.run_id}: tool {call.tool!r} is not one this version has")
    if spec.writes:
        raise NotReplayable(f"run {run.run_id}: {call.tool} changes the researcher's data; it is not made again")
    arguments, notes = _served(dict(call.arguments), name)
    if spec.name == "search":  # a repeated search, answered with the earlier run: asked again unrecorded
        return _replay_search_call(state, name, run, call, arguments, notes)
    if spec.name not in CALLS:
        raise NotReplayable(f"run {run.run_id}: a {call.tool} call records a run of its own; it is not made again")
    args = _validated(spec.input, arguments, run.run_id)
    replayed = Replayed(
        run_id=run.run_id,
        kind="call",
        asked=call_line(call),
        client=run.client,
        then=list(call.doc_ids),
        now=[],
        digest_then=call.digest,
        chars_then=call.chars,
        notes=notes,
    )
    try:
        called = spec.run(Env(state, None, REPLAYER), args)
    except TraceError as exc:  # what it answered then, it cannot now (a document gone, a selection renamed)
        replayed.failed = str(exc)
        return replayed
    replayed.digest_now, replayed.chars_now = digest(called.output.model_dump(mode="json"))
    replayed.now = list(called.doc_ids)
    return replayed


def _replay_search_call(
    state: ServerState, name: str, run: RunEvent, call: CallEvent, arguments: dict[str, Any], notes: list[str]
) -> Replayed:
    """A search call recorded as a call run (a repeat of the collection's last search, answered with that run):
    its answer names a run, which a replay does not record, so its documents are compared, not its digest."""
    body = _validated(search_api.SearchBody, {k: v for k, v in arguments.items() if k != "collection"}, run.run_id)
    answer = search_api.run(state, name, body, record=False)
    notes.append("a repeated search's answer names the run it repeated: its documents are compared")
    return Replayed(
        run_id=run.run_id,
        kind="call",
        asked=call_line(call),
        client=run.client,
        then=list(call.doc_ids),
        now=[r.doc_id for r in answer.results],
        notes=notes,
    )


def _validated(model: type[M], arguments: dict[str, Any], run_id: str) -> M:
    """The recorded arguments as this version's tool takes them; a NotReplayable naming each field that no
    longer holds."""
    try:
        return model.model_validate(arguments)
    except ValidationError as exc:
        said = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise NotReplayable(f"run {run_id}: the recorded arguments no longer hold: {said}") from None


def _served(arguments: dict[str, Any], name: str) -> tuple[dict[str, Any], list[str]]:
    """The arguments with the collection served here: a call that named another (served by another name then) is
    asked of this one, and said, since its answer names its collection."""
    named = arguments.get("collection")
    if named is None or named == name:
        return arguments, []
    note = f"the call named collection {named!r}; asked of {name!r} here (an answer that names it differs by that)"
    return {**arguments, "collection": name}, [note]


def replay_search(state: ServerState, name: str, run: RunEvent, events: Sequence[Event]) -> Replayed:
    """The search run again from its recorded request, recording nothing; its documents against the recorded
    ranking's."""
    asked = run.config.get("asked")
    address = asked.get("address") if isinstance(asked, dict) else None
    if not isinstance(address, str):
        raise NotReplayable(
            f"run {run.run_id} is a search from the command line: its request is not recorded as asked (run "
            "`tracerag search` again)"
        )
    result = result_event(events)
    if result is None:
        raise TrailError(f"run {run.run_id} has no result: the search did not finish, there is nothing to compare")
    body, notes = recorded_request(run, address, str(run.config["asked"].get("key", "")))
    answer = search_api.run(state, name, body, record=False)
    if {"llm", "translate"} & set(body.expand):
        notes.append("a model wrote this search's variants: asked again, it may answer others")
    return Replayed(
        run_id=run.run_id,
        kind="search",
        asked=body.query,
        client=run.client,
        then=[r.doc_id for r in sorted(result.ranking, key=lambda r: r.rank)],
        now=[r.doc_id for r in answer.results],
        notes=notes,
    )


def recorded_request(run: RunEvent, address: str, key: str) -> tuple[search_api.SearchBody, list[str]]:
    """The search request a run recorded: its page address read back (`search_api.page_address`), with what the
    address does not hold taken from the run's config (the documents allowed, the number of variants) where the
    recorded key says the request had it. A request the address cannot give back whole (a synonym map) is said."""
    body = search_api.SearchBody(**_address_fields(address))
    config = run.config
    request = config.get("request")
    recorded_filter = request.get("filter") if isinstance(request, dict) else None
    doc_ids = recorded_filter.get("doc_ids") if isinstance(recorded_filter, dict) else None
    candidates = [body]
    if doc_ids:
        candidates.append(body.model_copy(update={"doc_ids": list(doc_ids)}))
    if isinstance(config.get("variants"), int):
        candidates += [c.model_copy(update={"variants": config["variants"]}) for c in list(candidates)]
    for candidate in candidates:
        if search_api.request_key(candidate) == key:
            return candidate, []
    return body, ["the recorded address does not hold the whole request (a synonym map?): asked again without it"]


def _address_fields(address: str) -> dict[str, Any]:
    """The request fields of a search page address (what `search_api.page_address` wrote)."""
    fields: dict[str, Any] = {}
    for param, value in parse_qsl(urlsplit(address).query):
        if param in search_api.PAGE_PLAIN:
            fields[search_api.PAGE_PLAIN[param]] = value
        elif param in search_api.PAGE_LISTS:
            fields.setdefault(search_api.PAGE_LISTS[param], []).append(value)
        elif param == "field":
            key, _, val = value.partition("=")
            fields.setdefault("fields", {})[key] = val
    return fields
