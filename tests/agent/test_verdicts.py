"""The verdict stage on its own, on real chunks of a small real collection (tests/agent/conftest.py) with canned
model answers: the first verdict per label counts, a candidate without one is held with the failure, an accept
needs a located quote that is a passage, quotes are found as `tracerag.text.locate_quote` finds them (elisions
too), reasons are clipped, and every verdict lands in the ledger and the trail as review's or re-evaluation's
event. And the agent's layering: nouns from the domain, the trail's API from the trail, no copied locator."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from tracerag.agent.context import RunContext
from tracerag.agent.state import Judgement
from tracerag.agent.verdicts import NO_VERDICT, UNANSWERED_REASON, Candidate, Reevaluation, Review, reevaluate
from tracerag.config import AgentSettings
from tracerag.llm import RawAnswer, StructuredLLM, Usage
from tracerag.model import Verdict
from tracerag.retrieval.search import Retriever, SearchRequest
from tracerag.text import locate_quote
from tracerag.trail import MemoryListener, Trail
from tracerag.trail.events import LLMCallEvent, LLMPurpose, ReevalEvent, VerdictEvent

SRC = Path(__file__).resolve().parents[2] / "src" / "tracerag"


class Canned:
    """A provider answering every request with the next of `answers` (the last one repeated)."""

    name, model = "canned", "canned"

    def __init__(self, *answers: object):
        self.answers = [a if isinstance(a, str) else json.dumps(a) for a in answers]
        self.prompts: list[str] = []

    def generate(self, messages, **kwargs) -> RawAnswer:
        self.prompts.append(messages[-1].content)
        return RawAnswer(self.answers[min(len(self.prompts) - 1, len(self.answers) - 1)], Usage(10, 5), 0.1, "canned")


def context(col, *answers: object, **settings) -> tuple[RunContext, MemoryListener, Canned]:
    events = MemoryListener()
    provider = Canned(*answers)
    ctx = RunContext(
        "Reichstag Sitzung", col, Retriever(col), StructuredLLM(provider), Trail(listeners=[events]),
        AgentSettings(**settings),
    )  # fmt: skip
    return ctx, events, provider


@pytest.fixture(scope="module")
def chunks(demo_collection) -> list[tuple[str, str]]:
    ranking = Retriever(demo_collection).search(SearchRequest("Reichstag", k=4, channels=("bm25",), windows=""))
    return [(d.doc_id, d.best_chunk_id) for d in ranking.documents]


def _words(ctx: RunContext, chunk_id: str, start: int, n: int) -> str:
    text, _ = ctx.chunk_text(chunk_id)
    return " ".join(text.split()[start : start + n])


def test_each_candidate_gets_one_checked_verdict_recorded_and_emitted(demo_collection, chunks):
    ctx, events, _ = context(demo_collection, {}, reason_chars=40)
    (d1, c1), (d2, c2), (d3, c3), (d4, c4) = chunks
    quote = _words(ctx, c1, 3, 6)
    answer = {
        "verdicts": [
            {"id": "D1", "verdict": "accept", "reason": "  on   the\nReichstag " + "x" * 80, "quote": quote},
            {"id": " D1 ", "verdict": "reject", "reason": "a second verdict for D1 does not count", "quote": ""},
            {"id": "D2", "verdict": "accept", "reason": "no quote", "quote": "words this chunk never says"},
            {"id": "D3", "verdict": "reject", "reason": "off topic", "quote": ""},
            {"id": "D9", "verdict": "accept", "reason": "a label nobody was shown", "quote": quote},
        ]
    }
    ctx.llm.provider.answers = [json.dumps(answer)]  # type: ignore[union-attr]
    stage = Review(ctx, sq=0, step=3, sub_question="Reichstag", memory="")
    batch = stage.run(Review.candidates(ctx, chunks))
    v1, v2, v3, v4 = batch.verdicts
    text1, start1 = ctx.chunk_text(c1)
    assert (v1.verdict, v1.failure) == (Verdict.ACCEPT, None) and v1.span == locate_quote(quote, text1, start1)
    assert v1.reason == ("on the Reichstag " + "x" * 80)[:40]
    assert v2.verdict is Verdict.HOLD and v2.span is None and "accept without a quote found" in v2.failure
    assert v3.verdict is Verdict.REJECT and v3.failure is None
    assert (v4.verdict, v4.reason, v4.failure) == (Verdict.HOLD, UNANSWERED_REASON, NO_VERDICT)
    # the ledger and the trail hold the same verdicts, as review's events, after the call that gave them
    assert [ctx.ledger.by_chunk[c].verdict for c in (c1, c2, c3, c4)] == [v.verdict for v in batch.verdicts]
    assert isinstance(events[0], LLMCallEvent) and events[0].purpose is LLMPurpose.REVIEW
    emitted = events.of(VerdictEvent)
    assert [(e.doc_id, e.chunk_id, e.verdict, e.reason, e.span, e.failure, e.step, e.sq) for e in emitted] == [
        (v.doc_id, v.chunk_id, v.verdict, v.reason, v.span, v.failure, 3, 0) for v in batch.verdicts
    ]
    assert ctx.ledger.accepted(0) == [d1]


def test_an_accept_quoting_a_whole_excerpt_or_an_elided_passage(demo_collection, chunks):
    (d1, c1), (d2, c2) = chunks[:2]
    ctx, events, _ = context(demo_collection, {})
    text1, start1 = ctx.chunk_text(c1)
    whole = " ".join(text1.split())[:700]
    elided = f"{_words(ctx, c2, 0, 3)} … {_words(ctx, c2, 8, 3)}"
    answer = {
        "verdicts": [
            {"id": "D1", "verdict": "accept", "reason": "all of it", "quote": whole},
            {"id": "D2", "verdict": "accept", "reason": "elided", "quote": elided},
        ]
    }
    ctx.llm.provider.answers = [json.dumps(answer)]  # type: ignore[union-attr]
    v1, v2 = Review(ctx, 0, 1, "Reichstag", "").run(Review.candidates(ctx, chunks[:2])).verdicts
    assert len(whole) > 300 and v1.verdict is Verdict.HOLD and "not a passage" in v1.failure
    text2, start2 = ctx.chunk_text(c2)
    assert v2.verdict is Verdict.ACCEPT and v2.span == locate_quote(elided, text2, start2) and v2.span is not None
    assert v2.span[1] - v2.span[0] > len(elided) - 1  # from its first piece to its last


def test_an_unusable_answer_holds_every_candidate_with_the_error(demo_collection, chunks):
    ctx, events, _ = context(demo_collection, "not JSON at all")
    batch = Review(ctx, 0, 1, "Reichstag", "").run(Review.candidates(ctx, chunks[:2]))
    assert batch.answer is None
    assert all(v.verdict is Verdict.HOLD and v.failure.startswith("attempt 2:") for v in batch.verdicts)
    assert events.of(LLMCallEvent)[0].error and len(events.of(VerdictEvent)) == 2


def test_reevaluation_promotes_or_keeps_the_hold_with_its_reason(demo_collection, chunks):
    (d1, c1), (d2, c2) = chunks[:2]
    ctx, events, provider = context(demo_collection, {})
    for doc_id, chunk_id in chunks[:2]:
        ctx.ledger.record(Judgement(doc_id, chunk_id, Verdict.HOLD, f"unsure about {doc_id}", 1))
    ctx.ledger.record(Judgement(chunks[2][0], chunks[2][1], Verdict.ACCEPT, "the session of the Reichstag", 0))
    quote = _words(ctx, c1, 0, 5)
    provider.answers = [json.dumps({"verdicts": [{"id": "H1", "verdict": "accept", "reason": "now", "quote": quote}]})]
    assert reevaluate(ctx, 1) == 1
    h1, h2 = events.of(ReevalEvent)
    assert (h1.verdict, h1.promoted_from_hold, h1.reason) == (Verdict.ACCEPT, True, "now")
    held = (Verdict.HOLD, False, f"unsure about {d2}", NO_VERDICT)
    assert (h2.verdict, h2.promoted_from_hold, h2.reason, h2.failure) == held
    assert ctx.ledger.by_chunk[c1].promoted_from_hold and ctx.ledger.held(1) == [ctx.ledger.by_chunk[c2]]
    prompt = provider.prompts[0]
    notes = prompt.split("<notes>\n", 1)[1].split("\n</notes>", 1)[0]  # the accepted sources as context, as data
    assert json.loads(notes)["accepted_so_far"][0].startswith(f"{chunks[2][0]}: the session of the Reichstag")
    assert '"held_because": "unsure about' in prompt and "<documents>" in prompt
    assert reevaluate(ctx, 5) == 0 and len(provider.prompts) == 1  # nothing held: no call


def test_a_stage_is_shown_what_its_candidates_show_under_its_labels(demo_collection, chunks):
    ctx, _, provider = context(demo_collection, {"verdicts": []})
    candidates = [Candidate("d", "d#0", "some <b>text</b>", 0, {"text": "some <b>text</b>", "date": "1881"})]
    Reevaluation(ctx, 0, []).run(candidates)
    fenced = provider.prompts[0].split("<documents>\n", 1)[1].rsplit("\n</documents>", 1)[0]
    assert json.loads(fenced) == {"id": "H1", "text": "some <b>text</b>", "date": "1881"}
    assert "<" not in fenced  # tracerag.text.fence_json: no document can close the fence


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [(n.module or "", [a.name for a in n.names]) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]


def test_the_agent_takes_nouns_from_the_domain_and_only_the_api_from_the_trail():
    from tracerag import trail
    from tracerag.trail import events

    api = set(trail.__all__) | {n for n in vars(events) if n.endswith("Event") or n[:1].isupper()}
    nouns = {"Verdict", "RunStatus", "SubQuestion", "RankedSource"}
    for path in (SRC / "agent").glob("*.py"):
        for module, names in _imports(path):
            if module.startswith("tracerag.trail"):
                assert set(names) <= api - nouns, (path.name, module, names)
    for path in [*(SRC / "trail").glob("*.py"), SRC / "model.py"]:
        assert not [m for m, _ in _imports(path) if m.startswith(("tracerag.agent", "tracerag.catalog"))], path
    agent_code = "\n".join(p.read_text(encoding="utf-8") for p in (SRC / "agent").glob("*.py"))
    assert "def locate(" not in agent_code and '.replace("<"' not in agent_code  # text.py's, not a copy
    assert not (SRC / "agent" / "review_more.py").exists()
