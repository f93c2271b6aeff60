"""The catalog assistant's people-written eval: conversations written as people write, scored turn by turn.

The templated benchmark (`catalog_bench`) builds its requests from the catalog's own fields; these come from a
requests file (JSON lines, one conversation a line, format in `benchmarks/catalog_people/README.md`) whose
expectations were checked by reading the records: the outcomes allowed, record ids that would be a right
recommendation (`acceptable`), the reachable-now services one of which must come first (`first`), ids that must
not be offered because their own text contradicts what the person said (`forbidden`), the place, day and language
the person meant, and whether the reply must carry the directory's crisis numbers.

Each conversation runs in a fresh state of one assistant per catalog (rules only unless a model is given); every
turn with an expectation is scored. Per category and pooled ("all"): wrongly refused, outcome as expected, hit@k,
reachable-now first, crisis numbers present, stated fact contradicted (a forbidden id offered), structural
violations (a recommendation whose own fields miss the meant place, day or language), out of catalog, repeats on
paging, nothing new while acceptable services remained unshown, do-not-refer offered, Spanish understood, turn
latency. `turns.jsonl` holds every scored turn with what failed, so each figure can be traced to its requests.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from statistics import median
from typing import Any, NamedTuple

from tracerag.catalog import filters
from tracerag.catalog.assistant import CatalogAssistant
from tracerag.catalog.model import ConstraintKind, ServiceRecord, Structural
from tracerag.catalog.profile import CatalogProfile
from tracerag.catalog.store import CatalogStore
from tracerag.config import Settings
from tracerag.errors import ConfigError
from tracerag.eval.report import trails_dir, write_reports
from tracerag.llm import StructuredLLM
from tracerag.trail.events import CatalogOutcome

# When the conversations are asked: what is open now, "today", "tonight", a notice's dates and a record's
# verification age depend on it, so the figures of one file are the same on every run. A Wednesday evening:
# urgent requests come at any hour, and an evening leaves only 24-hour and evening services open.
EVAL_MOMENT = datetime(2026, 12, 9, 20, 0)

CATEGORIES = (
    "urgent",
    "everyday",
    "typo",
    "stated_fact",
    "place",
    "restriction",
    "follow_up",
    "paging",
    "spanish",
    "not_in_catalog",
)
REFUSALS = frozenset({CatalogOutcome.NONE_FOUND, CatalogOutcome.NO_MATCH, CatalogOutcome.CLARIFY})
TURNS_JSONL = "turns.jsonl"
_ID_LISTS = ("acceptable", "first", "forbidden")
_PLACE_LISTS = ("city", "zip", "language")
_EXPECT_KEYS = frozenset({"outcome", *_ID_LISTS, *_PLACE_LISTS, "weekday", "crisis_numbers"})
_LINE_KEYS = frozenset({"id", "catalog", "category", "language", "turns", "made"})
# Profile fields holding the numbers every urgent reply must carry (added by the urgency work; absent: none).
_NUMBER_FIELDS = ("emergency_numbers", "crisis_numbers")


# ------------------------------------------------------------------------------------------------ the file


@dataclass(frozen=True)
class Expect:
    """What one turn should get (see the module docstring); ids and places as the catalog stores them."""

    outcome: tuple[str, ...]
    acceptable: tuple[str, ...] = ()
    first: tuple[str, ...] = ()
    forbidden: tuple[str, ...] = ()
    city: tuple[str, ...] = ()
    zip: tuple[str, ...] = ()
    weekday: tuple[int, ...] = ()
    language: tuple[str, ...] = ()
    crisis_numbers: bool = False

    def ids(self) -> set[str]:
        return {*self.acceptable, *self.first, *self.forbidden}

    def structural(self) -> list[Structural]:
        """The place, day and language the person meant, as constraints each recommendation must meet."""
        wanted = [
            (ConstraintKind.CITY, self.city),
            (ConstraintKind.ZIP, self.zip),
            (ConstraintKind.WEEKDAY, tuple(str(d) for d in self.weekday)),
            (ConstraintKind.LANGUAGE, self.language),
        ]
        return [Structural(kind, values) for kind, values in wanted if values]


@dataclass(frozen=True)
class PersonTurn:
    say: str
    expect: Expect | None  # None: asked, not scored


@dataclass(frozen=True)
class Conversation:
    id: str
    catalog: str
    category: str
    language: str
    turns: tuple[PersonTurn, ...]
    made: str
    where: str  # "file:line", for warnings and turns.jsonl


def load_requests(path: Path) -> list[Conversation]:
    """The conversations of a requests file; a line that breaks the format is an error naming file:line and the
    field. Blank lines are skipped."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the requests file: {exc}") from None
    conversations: list[Conversation] = []
    seen: dict[str, str] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        conversation = _conversation(line, where)
        if conversation.id in seen:
            raise ConfigError(f"{where}: id: {conversation.id!r} already used at {seen[conversation.id]}")
        seen[conversation.id] = where
        conversations.append(conversation)
    if not conversations:
        raise ConfigError(f"{path}: no conversation in the requests file")
    return conversations


def _conversation(line: str, where: str) -> Conversation:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: not a JSON object: {exc.msg} (column {exc.colno})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: not a JSON object")
    extra = sorted(set(data) - _LINE_KEYS)
    if extra:
        raise ConfigError(f"{where}: {extra[0]}: unknown field (expected {', '.join(sorted(_LINE_KEYS))})")
    for key in ("id", "catalog", "category", "language", "made"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise ConfigError(f"{where}: {key}: missing or not a non-empty string")
    if data["category"] not in CATEGORIES:
        raise ConfigError(f"{where}: category: {data['category']!r} is not one of {', '.join(CATEGORIES)}")
    turns = data.get("turns")
    if not isinstance(turns, list) or not turns:
        raise ConfigError(f"{where}: turns: missing or not a non-empty list")
    parsed = tuple(_turn(t, f"{where}: turns[{i}]") for i, t in enumerate(turns))
    if not any(t.expect for t in parsed):
        raise ConfigError(f"{where}: turns: no turn has an `expect`: nothing would be scored")
    return Conversation(data["id"], data["catalog"], data["category"], data["language"], parsed, data["made"], where)


def _turn(data: Any, where: str) -> PersonTurn:
    if not isinstance(data, dict) or set(data) - {"say", "expect"}:
        raise ConfigError(f"{where}: a turn is an object with `say` and an optional `expect`")
    if not isinstance(data.get("say"), str) or not data["say"].strip():
        raise ConfigError(f"{where}.say: missing or not a non-empty string")
    if "expect" not in data:
        return PersonTurn(data["say"], None)
    return PersonTurn(data["say"], _expect(data["expect"], f"{where}.expect"))


def _expect(data: Any, where: str) -> Expect:
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: not an object")
    extra = sorted(set(data) - _EXPECT_KEYS)
    if extra:
        raise ConfigError(f"{where}.{extra[0]}: unknown field (expected {', '.join(sorted(_EXPECT_KEYS))})")
    outcome = _strings(data, "outcome", where)
    if not outcome:
        raise ConfigError(f"{where}.outcome: missing or empty (allowed outcomes: {', '.join(CatalogOutcome)})")
    wrong = [o for o in outcome if o not in set(CatalogOutcome)]
    if wrong:
        raise ConfigError(f"{where}.outcome: {wrong[0]!r} is not one of {', '.join(CatalogOutcome)}")
    weekday = data.get("weekday", [])
    if not isinstance(weekday, list) or not all(isinstance(d, int) and 0 <= d <= 6 for d in weekday):
        raise ConfigError(f"{where}.weekday: a list of day numbers 0 (Monday) to 6")
    crisis = data.get("crisis_numbers", False)
    if not isinstance(crisis, bool):
        raise ConfigError(f"{where}.crisis_numbers: true or false")
    lists = {key: _strings(data, key, where) for key in (*_ID_LISTS, *_PLACE_LISTS)}
    return Expect(outcome, weekday=tuple(weekday), crisis_numbers=crisis, **lists)


def _strings(data: dict, key: str, where: str) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ConfigError(f"{where}.{key}: a list of non-empty strings")
    return tuple(value)


def unknown_ids(conversations: Iterable[Conversation], known: set[str]) -> dict[str, list[str]]:
    """Per conversation id, the expected ids the catalog lacks: a warning, and those conversations' turns are
    scored as failing (never dropped)."""
    out: dict[str, list[str]] = {}
    for c in conversations:
        missing = sorted({i for t in c.turns if t.expect for i in t.expect.ids()} - known)
        if missing:
            out[c.id] = missing
    return out


# ------------------------------------------------------------------------------------------------ scoring


class Answered(NamedTuple):
    """What the assistant made of one turn."""

    outcome: str
    recommended: list[str]
    reply: str
    ms: float


@dataclass
class TurnScore:
    """One scored turn. `checks` are pass/fail figures that apply to it (a rate's numerator and denominator);
    `counts` are problems among its recommendations; `failed` says each in words."""

    conversation: str
    category: str
    language: str
    turn: int
    request: str
    outcome: str
    recommended: list[str]
    ms: float
    checks: dict[str, bool] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)
    reply: str = ""


# The pass/fail figures (True = good, except `wrongly_refused`, `contradicted` and `nothing_new`: True = bad).
RATES = (
    "outcome_ok",
    "wrongly_refused",
    "hit",
    "first_ok",
    "crisis_numbers",
    "contradicted",
    "nothing_new",
    "spanish_understood",
)
COUNTS = ("recommendations", "structural", "out_of_catalog", "repeats", "do_not_refer")
BAD_RATES = frozenset({"wrongly_refused", "contradicted", "nothing_new"})


@dataclass(frozen=True)
class Directory:
    """What scoring needs of a catalog: its ids, its records by id, its numbers and its do-not-refer statuses."""

    known: frozenset[str]
    records: Mapping[str, ServiceRecord]
    numbers: tuple[str, ...] | None  # None: the profile lists none
    do_not_refer: frozenset[str]


def profile_numbers(profile: CatalogProfile) -> tuple[str, ...] | None:
    """The emergency and crisis numbers a profile lists (strings, or entries with a `number`), None for none."""
    found: list[str] = []
    for name in _NUMBER_FIELDS:
        value = getattr(profile, name, None) or ()
        entries = value.values() if isinstance(value, Mapping) else value
        for entry in [entries] if isinstance(entries, str) else entries:
            number = entry.get("number") if isinstance(entry, Mapping) else getattr(entry, "number", entry)
            if number:
                found.append(str(number))
    return tuple(dict.fromkeys(found)) or None


def do_not_refer_statuses(profile: CatalogProfile) -> frozenset[str]:
    return frozenset(str(s).casefold() for s in getattr(profile, "do_not_refer", ()) or ())


def says_number(reply: str, number: str) -> bool:
    """Whether the reply carries the number, however its digits are grouped ("(305) 358-4357", "305.358.4357")."""
    digits = re.sub(r"\D", "", number)
    if not digits:
        return number.casefold() in reply.casefold()
    pattern = r"[\s().\-]*".join(digits)
    return re.search(rf"(?<!\d){pattern}(?!\d)", reply) is not None


def score_conversation(
    conversation: Conversation,
    answers: Sequence[Answered],
    directory: Directory,
    k: int,
    missing_ids: Sequence[str] = (),
) -> list[TurnScore]:
    """Every scored turn of one conversation, given what the assistant answered to each of its turns."""
    shown: set[str] = set()
    scores: list[TurnScore] = []
    for n, (turn, answer) in enumerate(zip(conversation.turns, answers, strict=True)):
        before = set(shown)
        shown.update(answer.recommended)
        if turn.expect is None:
            continue
        score = TurnScore(
            conversation.id,
            conversation.category,
            conversation.language,
            n,
            turn.say,
            answer.outcome,
            list(answer.recommended),
            answer.ms,
            reply=answer.reply,
        )
        _score_turn(score, turn.expect, answer, directory, k, before, conversation)
        if missing_ids:
            score.failed.append(f"expectation names ids not in the catalog: {', '.join(missing_ids)}")
            score.checks = {m: m in BAD_RATES for m in score.checks}  # scored as failing, never dropped
        scores.append(score)
    return scores


def _score_turn(
    score: TurnScore,
    expect: Expect,
    answer: Answered,
    directory: Directory,
    k: int,
    before: set[str],
    conversation: Conversation,
) -> None:
    """Fill `score`'s checks, counts and failures (in that order: the outcome, the picks, the crisis numbers, the
    forbidden services, paging, then each recommendation); `before`: what earlier turns recommended."""
    checks, failed = score.checks, score.failed
    recommended = answer.recommended
    _check_outcome(checks, failed, expect, answer.outcome)
    _check_picks(checks, failed, expect, recommended, k)
    if expect.crisis_numbers:
        _check_crisis_numbers(checks, failed, directory, answer.reply)
    if expect.forbidden:
        offered = [r for r in recommended if r in expect.forbidden]
        checks["contradicted"] = bool(offered)
        if offered:
            failed.append(f"forbidden offered (stated fact contradicted or restriction not met): {', '.join(offered)}")
    paging = conversation.category == "paging"
    if paging and score.turn > 0 and set(expect.acceptable) - before:
        checks["nothing_new"] = not set(recommended) - before
        if checks["nothing_new"]:
            failed.append("nothing new while acceptable services remained unshown")
    if conversation.language == "es":
        checks["spanish_understood"] = checks["outcome_ok"] and checks.get("hit", True)
    _count_recommendations(score, expect, directory, before if paging else set())


def _check_outcome(checks: dict[str, bool], failed: list[str], expect: Expect, outcome: str) -> None:
    """The outcome expected; where an answer was, no refusal instead."""
    checks["outcome_ok"] = outcome in expect.outcome
    if not checks["outcome_ok"]:
        failed.append(f"outcome {outcome}, expected {' or '.join(expect.outcome)}")
    if CatalogOutcome.ANSWER in expect.outcome:
        checks["wrongly_refused"] = outcome in REFUSALS and outcome not in expect.outcome
        if checks["wrongly_refused"]:
            failed.append("wrongly refused")


def _check_picks(
    checks: dict[str, bool], failed: list[str], expect: Expect, recommended: Sequence[str], k: int
) -> None:
    """An acceptable service in the top k; a reachable-now one first, where the expectation names them."""
    if expect.acceptable:
        checks["hit"] = bool(set(recommended[:k]) & set(expect.acceptable))
        if not checks["hit"]:
            failed.append(f"no acceptable id in the top {k}")
    if expect.first:
        checks["first_ok"] = bool(recommended) and recommended[0] in expect.first
        if not checks["first_ok"]:
            failed.append(f"first is {recommended[0] if recommended else 'nothing'}, not a reachable-now service")


def _check_crisis_numbers(checks: dict[str, bool], failed: list[str], directory: Directory, reply: str) -> None:
    """Every crisis number of the catalog's profile said in the reply."""
    if directory.numbers is None:
        checks["crisis_numbers"] = False
        failed.append("crisis numbers: profile has no crisis numbers")
        return
    missing = [x for x in directory.numbers if not says_number(reply, x)]
    checks["crisis_numbers"] = not missing
    if missing:
        failed.append(f"crisis numbers missing from the reply: {', '.join(missing)}")


def _count_recommendations(score: TurnScore, expect: Expect, directory: Directory, repeats_of: set[str]) -> None:
    """What must not be recommended, counted: ids the catalog lacks, records that break a structural
    constraint, do-not-refer records, and (paging) what an earlier turn showed (`repeats_of`)."""
    counts, failed = score.counts, score.failed
    structural = expect.structural()
    counts.update(dict.fromkeys(COUNTS, 0))
    counts["recommendations"] = len(score.recommended)
    for rid in score.recommended:
        record = directory.records.get(rid)
        if rid not in directory.known or record is None:
            counts["out_of_catalog"] += 1
            failed.append(f"out of catalog: {rid}")
            continue
        wrong = filters.violations(record, structural)
        if wrong:
            counts["structural"] += 1
            failed.append(f"structural: {rid}: {'; '.join(wrong)}")
        status = str(getattr(record, "status", "") or "")
        if status and status.casefold() in directory.do_not_refer:
            counts["do_not_refer"] += 1
            failed.append(f"do-not-refer offered: {rid} (status {status!r})")
        if rid in repeats_of:
            counts["repeats"] += 1
            failed.append(f"repeat: {rid} was recommended earlier in the conversation")


# ------------------------------------------------------------------------------------------------ summary


def summarise(scores: Sequence[TurnScore]) -> dict[str, dict[str, Any]]:
    """Per category (in `CATEGORIES` order, those present) after the pooled "all": conversations and turns,
    each rate as {"n", "k", "rate"} (k turns of the n it applies to; None rate over none), the counts, and turn
    latency (median, p95, ms)."""
    groups: dict[str, list[TurnScore]] = {"all": list(scores)}
    for category in CATEGORIES:
        items = [s for s in scores if s.category == category]
        if items:
            groups[category] = items
    table: dict[str, dict[str, Any]] = {}
    for name, items in groups.items():
        row: dict[str, Any] = {
            "conversations": len({s.conversation for s in items}),
            "turns": len(items),
        }
        for metric in RATES:
            applied = [s.checks[metric] for s in items if metric in s.checks]
            row[metric] = {
                "n": len(applied),
                "k": sum(applied),
                "rate": sum(applied) / len(applied) if applied else None,
            }
        for metric in COUNTS:
            row[metric] = sum(s.counts.get(metric, 0) for s in items)
        ms = [s.ms for s in items]
        row["latency_ms"] = {"median": _percentile(ms, 50), "p95": _percentile(ms, 95)}
        table[name] = row
    return table


def _percentile(values: Sequence[float], p: float) -> float | None:
    """The p-th percentile by nearest rank (median: the statistics median)."""
    if not values:
        return None
    if p == 50:
        return median(values)
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))
    return ordered[int(rank) - 1]


def _fraction(cell: dict[str, Any]) -> str:
    return "–" if not cell["n"] else f"{cell['k']}/{cell['n']}"


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f}"


def markdown(summary: dict[str, Any]) -> str:
    """Two tables per catalog, each under 120 columns: what went right (k/n turns), then what must not happen."""
    lines = [f"# Catalog assistant: people-written requests, k = {summary['k']}", ""]
    if summary.get("at"):
        asked = datetime.fromisoformat(summary["at"])
        lines += [f"Asked as on {asked:%A %Y-%m-%d %H:%M} (what is open now, 'today', notices, verification age).", ""]
    for name, result in summary["catalogs"].items():
        table = result["results"]
        lines += [
            f"## {name}: {result['conversations']} conversations, {result['turns']} scored turns "
            f"({Path(result['file']).name})",
            "",
            f"Crisis numbers in the profile: {', '.join(result['crisis_numbers']) or 'none'}. One-time warm-up "
            f"(vocabulary, crisis index): {result['warmup_seconds']:.1f} s, not in turn latencies.",
            "",
            "| category | conv | turns | outcome ok | wrongly refused | hit@k | urgent first | crisis nos | Spanish |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for category, m in table.items():
            lines.append(
                f"| {category} | {m['conversations']} | {m['turns']} | {_fraction(m['outcome_ok'])} | "
                f"{_fraction(m['wrongly_refused'])} | {_fraction(m['hit'])} | {_fraction(m['first_ok'])} | "
                f"{_fraction(m['crisis_numbers'])} | {_fraction(m['spanish_understood'])} |"
            )
        lines += [
            "",
            "| category | recs | contradicted | structural | off-catalog | repeats | nothing new | do-not-refer"
            " | ms p50 | ms p95 |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for category, m in table.items():
            lines.append(
                f"| {category} | {m['recommendations']} | {_fraction(m['contradicted'])} | {m['structural']} | "
                f"{m['out_of_catalog']} | {m['repeats']} | {_fraction(m['nothing_new'])} | {m['do_not_refer']} | "
                f"{_ms(m['latency_ms']['median'])} | {_ms(m['latency_ms']['p95'])} |"
            )
        for warning in result["warnings"]:
            lines += ["", f"Warning: {warning}"]
        lines.append("")
    lines += [
        "k/n: turns where it held, of the turns it applies to. Wrongly refused: a request the directory can serve",
        "got none_found, no_match, or a clarifying question it did not allow. Contradicted: a `forbidden` id offered.",
        "Structural: recommendations whose own fields miss the place, day or language meant. Repeats and nothing new:",
        "paging conversations. Every failure is listed per turn in turns.jsonl.",
    ]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------ running


def group_by_catalog(conversations: Sequence[Conversation]) -> dict[str, list[Conversation]]:
    out: dict[str, list[Conversation]] = {}
    for c in conversations:
        out.setdefault(c.catalog, []).append(c)
    return out


def load_directory(store: CatalogStore, profile: CatalogProfile, ids: Iterable[str]) -> Directory:
    known = frozenset(store.all_ids())
    return Directory(known, store.get(set(ids) & known), profile_numbers(profile), do_not_refer_statuses(profile))


def run_conversations(
    assistant: CatalogAssistant, conversations: Sequence[Conversation], progress: Callable[[], None] | None = None
) -> list[list[Answered]]:
    """Each conversation from a fresh state of `assistant`, every turn asked and timed."""
    answers: list[list[Answered]] = []
    for conversation in conversations:
        assistant.reset()
        said: list[Answered] = []
        for turn in conversation.turns:
            started = time.perf_counter()
            got = assistant.ask(turn.say)
            ms = (time.perf_counter() - started) * 1000
            offered = getattr(got, "offered", got.recommendations)  # an urgent turn's lines too, in the reply's order
            said.append(Answered(str(got.outcome), [r.record.id for r in offered], got.reply, ms))
        answers.append(said)
        if progress:
            progress()
    return answers


def run_people_eval(
    catalogs: Mapping[str, Path],
    requests: Path,
    settings: Settings,
    out_dir: Path,
    *,
    k: int = 5,
    llm: StructuredLLM | None = None,
    progress: Callable[[str, int], Callable[[], None]] | None = None,
    warn: Callable[[str], None] | None = None,
    at: datetime = EVAL_MOMENT,
) -> dict[str, Any]:
    """Run every conversation of `requests` on its catalog (`catalogs`: catalog name → directory), as asked at
    the moment `at`, score it, and write results.json, results.md, turns.jsonl and the trails into `out_dir`;
    returns the summary. `warn` is told of each conversation whose expected ids the catalog lacks (its turns are
    scored as failing)."""
    conversations = load_requests(requests)
    by_catalog = group_by_catalog(conversations)
    unknown = sorted(set(by_catalog) - set(catalogs))
    if unknown:
        raise ConfigError(f"{requests}: catalog {unknown[0]!r} has no directory (given: {', '.join(catalogs)})")
    results: dict[str, Any] = {}
    all_scores: list[TurnScore] = []
    started = time.perf_counter()
    for name, items in by_catalog.items():
        catalog_dir = Path(catalogs[name])
        store = CatalogStore.of_catalog(catalog_dir)
        try:
            expected = {i for c in items for t in c.turns if t.expect for i in t.expect.ids()}
            missing = unknown_ids(items, set(store.all_ids()))
            by_id = {c.id: c for c in items}
            warnings = [
                f"{by_id[cid].where}: {cid}: ids not in the catalog (its turns scored as failing): {', '.join(ids)}"
                for cid, ids in missing.items()
            ]
            for warning in warnings:
                if warn:
                    warn(warning)
            tick = progress(f"{name}: {len(items)} conversations", len(items)) if progress else None
            with CatalogAssistant(
                catalog_dir,
                settings,
                llm=llm,
                k=k,
                trail_dir=trails_dir(out_dir),
                today=at.weekday(),
                clock=lambda: at.hour * 60 + at.minute,
            ) as assistant:
                assistant.on = at.date()
                # The records' vocabulary is built once per process on the first topic (about 1 s on 4k records):
                # built here, so turn latency is what each turn costs, and the one-time cost is reported apart.
                warm = time.perf_counter()
                _ = assistant.vocabulary
                _ = assistant.crisis  # the records serving each urgency kind, built on the first urgent turn
                warmup = time.perf_counter() - warm
                answers = run_conversations(assistant, items, tick)
                profile = assistant.profile
            recommended = {r for said in answers for a in said for r in a.recommended}
            directory = load_directory(store, profile, expected | recommended)
        finally:
            store.close()
        scores = [
            s
            for c, said in zip(items, answers, strict=True)
            for s in score_conversation(c, said, directory, k, missing.get(c.id, ()))
        ]
        all_scores += scores
        results[name] = {
            "catalog": str(catalog_dir),
            "file": str(requests),
            "conversations": len(items),
            "turns": len(scores),
            "asked": sum(len(c.turns) for c in items),
            "crisis_numbers": list(directory.numbers or ()),
            "warmup_seconds": warmup,
            "warnings": warnings,
            "results": summarise(scores),
        }
    seconds = time.perf_counter() - started
    asked = sum(len(c.turns) for c in conversations)
    summary = {
        "requests": str(requests),
        "k": k,
        "at": at.isoformat(timespec="minutes"),
        "llm": llm.model if llm is not None else None,
        "conversations": len(conversations),
        "turns_asked": asked,
        "seconds": seconds,
        "turns_per_second": asked / seconds if seconds else None,
        "catalogs": results,
    }
    write_reports(out_dir, summary, markdown(summary))
    write_turns(out_dir / TURNS_JSONL, all_scores)
    return summary


def write_turns(path: Path, scores: Iterable[TurnScore]) -> None:
    """One JSON object per scored turn: request, outcome, recommended ids, the reply, what failed."""
    with path.open("w", encoding="utf-8") as out:
        for s in scores:
            out.write(json.dumps(asdict(s), ensure_ascii=False) + "\n")
