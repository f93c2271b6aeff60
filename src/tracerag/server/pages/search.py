"""The search page (`/`) and the document view (`/collections/{name}/documents/{doc_id}`), rendered on the server.

A GET changes nothing: `/?q=fire&corpus=letemps&from=1880` searches and shows the results, and records no run (a
reload, a link preview, a prefetch or another site's `<img>` would). The form is POSTed to `/search` with the page's
CSRF token: that records the search as a run in the trail (once: the same search as the collection's last run is
not recorded again) and redirects (303) to the GET address with `run=` added, the address to bookmark or share.
Each result can be added to the run's selection (`/search/select`, a form; search.js sends it to the selections
API instead), opened at its cited span with the query's words marked, or followed to its run in the trail.

Every sentence the page says about a search (`statements`) is read from the search's answer. Document text reaches
the page only through Jinja's autoescaping: a snippet or a cited span is cut into pieces by character offsets on
the server and each piece is escaped."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import ValidationError
from starlette.datastructures import ImmutableMultiDict

from tracerag.collection import trail_roots
from tracerag.config import CHANNELS
from tracerag.errors import SelectionError, TraceError
from tracerag.retrieval.kwic import matches, query_keys
from tracerag.retrieval.search_filter import OptionNames
from tracerag.server.api.collections import document_view, searchable, web_link
from tracerag.server.api.search import (
    PAGE_LISTS,
    PAGE_PLAIN,
    SearchAnswer,
    SearchBody,
    TimeWindows,
    recorded_key,
    repeats,
    request_key,
    run,
)
from tracerag.server.api.selections import DecisionIn, decide, selections
from tracerag.server.deps import State
from tracerag.server.errors import field_of, status_of, validation_message
from tracerag.server.security import CSRF_FIELD
from tracerag.server.state import ServerState
from tracerag.trail import trails_by_run

router = APIRouter(include_in_schema=False)

LIST_PARAMS, PLAIN_PARAMS = PAGE_LISTS, PAGE_PLAIN

# The form's labels by the request field each box fills: an error on the page names the box a person typed in
# ("From", not `date_from`); the API keeps its field names.
LABELS = {
    "query": "Words", "k": "Results", "date_from": "From", "date_to": "To", "windows": "Windows",
    "filter": "Boolean filter", "min_ocr": "Least OCR quality", "add": "Add a word", "expand": "Expansion",
    "channels": "Channels", "corpus": "Sub-corpora", "language": "Languages", "fields": "field",
}  # fmt: skip
PAGE_NAMES = OptionNames(
    date_from=LABELS["date_from"], date_to=LABELS["date_to"], fields=LABELS["fields"], corpus=LABELS["corpus"],
    language=LABELS["language"], doc_ids="doc_ids", iiif_base="iiif_base",
)  # fmt: skip


def pieces(text: str, spans: list[list[int]] | list[tuple[int, int]]) -> list[tuple[str, bool]]:
    """`text` cut at `spans` into (piece, marked) pairs, in order; overlapping spans merged. The template escapes
    each piece and wraps the marked ones in <mark>: offsets, never string replacement in HTML."""
    out: list[tuple[str, bool]] = []
    at = 0
    for start, end in sorted((int(s), int(e)) for s, e in spans):
        start = max(start, at)
        if end <= start:
            continue
        if start > at:
            out.append((text[at:start], False))
        out.append((text[start:end], True))
        at = end
    if at < len(text):
        out.append((text[at:], False))
    return out


def document_href(
    name: str,
    doc_id: str,
    start: int | None = None,
    end: int | None = None,
    *,
    query: str | None = None,
    run_id: str | None = None,
) -> str:
    """The document view's address; the id is quoted whole ("/" and "#" too), so no id reads as a path. `query`
    (its words marked there) and `run_id` (linked back) are the search it was opened from."""
    href = f"/collections/{quote(name, safe='')}/documents/{quote(doc_id, safe='')}"
    params: dict[str, Any] = {}
    if start is not None and end is not None:
        params |= {"start": start, "end": end}
    if query:
        params["q"] = query
    if run_id:
        params["run"] = run_id
    if params:
        href += "?" + urlencode(params)
    return href + ("#span" if "start" in params else "")


def window_chart(windows: TimeWindows | None) -> dict[str, Any] | None:
    """The windowing diagnostic as SVG geometry: per window, a bar for its share of the results and one for its
    share of the documents searched, on one scale (the largest share spans the chart)."""
    if windows is None or not windows.rows:
        return None
    bar_h, gap, label_w, width = 10, 8, 90, 300
    top = max(max(r.result_share, r.corpus_share) for r in windows.rows) or 1.0
    rows = []
    for i, r in enumerate(windows.rows):
        y = i * (2 * bar_h + gap)
        rows.append(
            {
                "row": r,
                "y": y,
                "text_y": y + bar_h + 4,
                "result_w": round(width * r.result_share / top, 1),
                "corpus_w": round(width * r.corpus_share / top, 1),
                "corpus_y": y + bar_h,
            }
        )
    return {
        "rows": rows,
        "label_w": label_w,
        "bar_h": bar_h,
        "width": label_w + width + 10,
        "height": len(rows) * (2 * bar_h + gap),
        "windows": windows,
    }


def _body(params: ImmutableMultiDict[str, Any]) -> dict[str, Any]:
    """The search request the page's parameters (an address's or a posted form's) ask for."""
    body: dict[str, Any] = {}
    for param, key in PLAIN_PARAMS.items():
        value = str(params.get(param) or "").strip()
        if value:
            body[key] = value
    for param, key in LIST_PARAMS.items():
        values = [str(v).strip() for v in params.getlist(param) if str(v).strip()]
        if values:
            body[key] = values
    fields = [str(v) for v in params.getlist("field") if str(v).strip()]
    if fields:
        body["fields"] = dict(f.partition("=")[::2] for f in fields)
    return body


def _collection(state: ServerState, asked: str | None) -> str | None:
    if asked:
        state.path_of(asked)  # an unknown name is a 404 page naming the ones served
        return asked
    return min(state.collections) if state.collections else None


ANSWERS_KEPT = 64  # answers of recorded searches kept for the page they redirect to (one search, not two)


class RecordedAnswers:
    """The answers of the searches this process recorded, by (collection, run id), with their request's key: the
    page a POST redirects to shows the answer that was recorded, not a second search."""

    def __init__(self) -> None:
        self._answers: OrderedDict[tuple[str, str], tuple[str, SearchAnswer]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, name: str, run_id: str, key: str) -> SearchAnswer | None:
        with self._lock:
            found = self._answers.get((name, run_id))
        return found[1] if found is not None and found[0] == key else None

    def add(self, name: str, key: str, answer: SearchAnswer) -> None:
        assert answer.run_id is not None
        with self._lock:
            self._answers[(name, answer.run_id)] = (key, answer)
            while len(self._answers) > ANSWERS_KEPT:
                self._answers.popitem(last=False)


_ANSWERS_LOCK = threading.Lock()


def recorded_answers(request: Request) -> RecordedAnswers:
    with _ANSWERS_LOCK:
        found: RecordedAnswers | None = getattr(request.app.state, "search_answers", None)
        if found is None:
            found = request.app.state.search_answers = RecordedAnswers()
        return found


def recorded_run(state: ServerState, name: str, run_id: str | None, key: str) -> str | None:
    """`run_id` when it names a search run of collection `name` recorded for this same request (its key), else
    None: an address's `run=` is shown as the search's run only when it is. The id is looked up among the trails'
    names, never made into a path."""
    if not run_id:
        return None
    path = trails_by_run(trail_roots(state.path_of(name), state.settings)).get(run_id)
    return run_id if path is not None and recorded_key(path) == key else None


def search_address(pairs: Iterable[tuple[str, Any]], run_id: str | None = None) -> str:
    """The GET address of a search from the page's parameters: empty boxes, the CSRF token and any old run left
    out, `run_id` added."""
    kept = [(k, str(v)) for k, v in pairs if k not in (CSRF_FIELD, "run") and isinstance(v, str) and v.strip()]
    if run_id:
        kept.append(("run", run_id))
    return "/?" + urlencode(kept) if kept else "/"


@router.get("/")
def search_page(request: Request, state: State) -> Response:
    params = request.query_params
    name = _collection(state, params.get("c"))
    form = _body(params)
    context: dict[str, Any] = {
        "page": "search",
        "collections": sorted(state.collections),
        "collection": name,
        "form": form,
        "params": params,
        "channels": CHANNELS,
        "answer": None,
        "error": None,
        "error_field": None,
        "run_id": None,
        "csrf_field": CSRF_FIELD,
    }
    status = 200
    if name is None:
        context["error"] = "this server serves no collection: start it with `tracerag serve -c DIR`"
        return _render(request, context, 200)
    with state.reading(name) as col:
        info = searchable(name, col)
    context["info"] = info
    context["tree_nodes"] = _numbered([n.model_dump() for n in info.corpus_tree])
    if form.get("query"):
        try:
            body = SearchBody(**form)
            key = request_key(body)
            run_id = recorded_run(state, name, params.get("run"), key)
            answer = recorded_answers(request).get(name, run_id, key) if run_id else None
            if answer is None:
                answer = run(state, name, body, PAGE_NAMES, record=False)  # a GET records nothing
        except ValidationError as exc:
            first = exc.errors()[0]
            field = field_of(first["loc"])
            context["error_field"] = _page_name(field)
            context["error"] = f"{LABELS.get(field.partition('.')[0], field)}: {validation_message(first)}"
            status = 422
        except TraceError as exc:
            context["error"] = str(exc)
            status = status_of(exc)
        else:
            context["answer"] = answer
            context["run_id"] = run_id
            context["here"] = search_address(params.multi_items(), run_id)
            context["results"] = _results(name, answer, run_id, _decided(state, name, answer.query) if run_id else {})
            context["statements"] = statements(answer)
            context["chart"] = window_chart(answer.time_windows)
            if run_id:
                context["trail_href"] = f"/trails/{quote(name, safe='')}/{quote(run_id, safe='')}"
                context["review_href"] = f"/review/{quote(name, safe='')}/{quote(run_id, safe='')}"
    return _render(request, context, status)


@router.post("/search")
async def record_search(request: Request, state: State) -> Response:
    """The search form, posted (the guard checked its CSRF token): the search recorded as a run, unless the
    collection's last run is this same search, then 303 to its GET address with the run. A request the page
    cannot run is sent to the GET address too, which says what is wrong and records nothing."""
    posted = await request.form()
    pairs = [(k, v) for k, v in posted.multi_items() if isinstance(v, str)]
    name = _collection(state, str(posted.get("c") or "") or None)
    if name is None:
        return RedirectResponse("/", status_code=303)
    form = _body(posted)
    if not form.get("query"):
        return RedirectResponse(search_address(pairs), status_code=303)
    try:
        body = SearchBody(**form)
        key = request_key(body)
        answers = recorded_answers(request)
        previous = repeats(state, name, body)
        if previous is not None and answers.get(name, previous, key) is not None:
            return RedirectResponse(search_address(pairs, previous), status_code=303)
        answer = run(state, name, body, PAGE_NAMES)
    except (ValidationError, TraceError):
        return RedirectResponse(search_address(pairs), status_code=303)
    assert answer.run_id is not None
    answers.add(name, key, answer)
    return RedirectResponse(search_address(pairs, answer.run_id), status_code=303)


@router.post("/search/select")
async def select_result(request: Request, state: State) -> Response:
    """A result added to its run's selection (accepted), from the page's form without JavaScript: its button
    posts the search's form with `pick` (rank:doc_id); the selections API's decision, then back to the results at
    that result."""
    posted = await request.form()
    name = _collection(state, str(posted.get("c") or "") or None)
    run_id = str(posted.get("run") or "")
    rank, _, doc_id = str(posted.get("pick") or "").partition(":")
    if name is None or not run_id or not doc_id:
        raise TraceError("a result to add names its collection, run and document (c, run, pick)")
    decide(name, run_id, DecisionIn(doc_id=doc_id, decision="accept", run=run_id), state, request)
    pairs = [(k, v) for k, v in posted.multi_items() if isinstance(v, str) and k != "pick"]
    back = search_address(pairs, run_id)
    return RedirectResponse(back + (f"#result-{rank}" if rank.isdigit() else ""), status_code=303)


def _decided(state: ServerState, name: str, query: str) -> dict[str, str]:
    """The decisions already made on the search's question (its selection), by document."""
    try:
        with selections(state, name) as store:
            return {e.doc_id: e.decision.value for e in store.entries(query)}
    except SelectionError:
        return {}


def statements(answer: SearchAnswer) -> list[str]:
    """What the page says about how the search was done, each read from its answer (`params`, `expansion`): the
    order of the results, the filter, the channels that found something and those that stayed silent, the
    variants searched and what was added to the query."""
    params, expansion = answer.params, answer.expansion or {}
    variants = [v for v in expansion.get("variants") or [] if v.get("query")]
    said = _order(answer, variants)
    limits = _limits(params)
    if limits:
        said.append("Searched only: " + "; ".join(limits) + ".")
    if expansion.get("filter_expression"):
        allowed = expansion.get("allowed")
        said.append(f"The boolean filter admitted {allowed:,} document{'' if allowed == 1 else 's'}.")
    said += _channels(params)
    searched = expansion.get("searched")
    if searched and " ".join(searched.split()) != " ".join(answer.query.split()):
        said.append(f"Searched as “{searched}” (with the words added).")
    if variants:
        said.append("Also searched: " + "; ".join(f"“{v['query']}” ({v.get('source', 'variant')})" for v in variants))
    return said


def _order(answer: SearchAnswer, variants: list[dict[str, Any]]) -> list[str]:
    """The order of the results: by score, or balanced across time windows (then fused again, with variants)."""
    windows = answer.params.get("windows")
    if not answer.results:
        return []
    if not windows:
        return ["Sorted by score."]
    if variants:
        return [
            f"Each query's results were balanced across time windows of {windows}, then the queries' "
            "rankings fused: the results are in fused-score order."
        ]
    return [f"Balanced across time windows of {windows}, not sorted by score."]


def _limits(params: dict[str, Any]) -> list[str]:
    """What the filter limited the search to: sub-corpora, languages, dates, fields, OCR quality."""
    flt = params.get("filter") or {}
    limits = []
    if flt.get("corpora"):
        limits.append("sub-corpora " + ", ".join(flt["corpora"]))
    if flt.get("languages"):
        limits.append("languages " + ", ".join(flt["languages"]))
    if flt.get("date_from") or flt.get("date_to"):
        limits.append(f"dates {flt.get('date_from') or '…'} to {flt.get('date_to') or '…'}")
    for key, value in (flt.get("fields") or {}).items():
        limits.append(f"{key} = {value}")
    if params.get("min_ocr_quality") is not None:
        limits.append(f"estimated OCR quality at least {params['min_ocr_quality']}")
    return limits


def _channels(params: dict[str, Any]) -> list[str]:
    """The channels that found something, and why each other stayed silent or found nothing."""
    said = []
    active = list(params.get("active_channels") or [])
    if active:
        said.append(f"Found by the channel{'s' if len(active) > 1 else ''} " + ", ".join(active) + ".")
    readings = params.get("channel_readings") or {}
    for channel in params.get("channels") or []:
        if channel in active:
            continue
        reading = readings.get(channel) or {}
        why = reading.get("why")
        if why and reading.get("acts") is False:
            said.append(f"The {channel} channel stayed silent: {why}.")
        else:
            # after a colon: `why` may hold parentheses of its own
            said.append(f"The {channel} channel found nothing" + (f": it searched {why}." if why else "."))
    return said


def _numbered(nodes: list[dict[str, Any]], counter: list[int] | None = None) -> list[dict[str, Any]]:
    """The corpus tree with an element id on each node (a corpus name may hold any character; an id may not)."""
    counter = counter if counter is not None else [0]
    for node in nodes:
        counter[0] += 1
        node["id"] = f"corpus-{counter[0]}"
        _numbered(node["children"], counter)
    return nodes


def _page_name(field: str) -> str:
    """A request field as the page's form names it (`date_from` is the `from` box)."""
    head, _, rest = field.partition(".")
    names = {v: k for k, v in {**PLAIN_PARAMS, **LIST_PARAMS}.items()}
    return names.get(head, head) + (f".{rest}" if rest else "")


def _results(name: str, answer: SearchAnswer, run_id: str | None, decided: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {
            "r": r,
            "href": document_href(
                name, r.doc_id, r.best_chunk.start, r.best_chunk.end, query=answer.query, run_id=run_id
            ),
            "snippets": [  # in the text's order, as the CLI prints them
                (sn, pieces(sn.text, sn.spans)) for sn in sorted(r.snippets, key=lambda sn: sn.start)
            ],
            "decision": decided.get(r.doc_id),
        }
        for r in answer.results
    ]


def _render(request: Request, context: dict[str, Any], status: int) -> Response:
    templates = request.app.state.templates
    return templates.TemplateResponse(request, "search.html", context, status_code=status)


@router.get("/collections/{name}/documents/{doc_id:path}")
def document_page(request: Request, name: str, doc_id: str, state: State) -> Response:
    params = request.query_params
    start, end = (_offset(params.get(key), key) for key in ("start", "end"))
    query = (params.get("q") or "").strip()[:4000]
    with state.reading(name) as col:
        view = document_view(name, col, doc_id, start, end, params.get("iiif_base") or None)
    span = view.span
    # the query's words, found as BM25 matches them (folded, stemmed in the document's language)
    words = matches(view.text, query_keys([query], view.language), view.language) if query else []
    run_id = params.get("run") or None
    if run_id is not None and run_id not in trails_by_run(trail_roots(state.path_of(name), state.settings)):
        run_id = None
    back = {"c": name} | ({"q": query} if query else {})
    context = {
        "page": "search",
        "view": view,
        "text": layered(view.text, (span.start, span.end) if span else None, words),
        "query": query,
        "marked_words": len(words),
        "links": {k: web_link(v) for k, v in view.source.items()},
        "back": "/?" + urlencode(back),
        "trail_href": f"/trails/{quote(name, safe='')}/{quote(run_id, safe='')}" if run_id else None,
    }
    templates = request.app.state.templates
    return templates.TemplateResponse(request, "document.html", context)


def layered(
    text: str, cited: tuple[int, int] | None, words: list[tuple[int, int]]
) -> list[tuple[bool, list[tuple[str, bool]]]]:
    """`text` as runs outside and inside the cited span (cited, pieces), each cut into (piece, a query word)."""
    if cited is None:
        return [(False, pieces(text, words))]
    start, end = cited
    out: list[tuple[bool, list[tuple[str, bool]]]] = []
    for lo, hi, inside in ((0, start, False), (start, end, True), (end, len(text), False)):
        if hi > lo or inside:
            part = text[lo:hi]
            local = [(max(s, lo) - lo, min(e, hi) - lo) for s, e in words if e > lo and s < hi]
            out.append((inside, pieces(part, local)))
    return out


def _offset(value: str | None, name: str) -> int | None:
    if value is None or value == "":
        return None
    if not value.isdigit():
        raise TraceError(f"{name}: expected a character offset (a whole number at least 0), got {value!r}")
    return int(value)
