"""A sentence's support verdict from its citation checks (research/support.py): the one definition the CLI's
`--explain` and the web app's draft show. Each outcome and each verdict, and a recorded answer run read back."""

from __future__ import annotations

from tests.trail import RESEARCH_TRAILS
from tracerag.research.citecheck import CitationCheck
from tracerag.research.support import Outcome, Verdict, from_events, sentence_support, totals
from tracerag.trail import read_trail
from tracerag.trail.events import DraftCitation, DraftSentence, SentenceKind


def sentence(*labels: str) -> DraftSentence:
    cited = [DraftCitation(doc_id="d", label=label, quote="q", span=(0, 1)) for label in labels]
    return DraftSentence(text="A claim.", kind=SentenceKind.PARAPHRASE, citations=cited)


def checked(i: int, j: int, supported: bool | None, located: bool = True) -> CitationCheck:
    return CitationCheck(i, j, f"S{j + 1}", "d", (0, 1), located, supported, "model", f"why {i}.{j}")


def test_each_verdict_from_its_citations_outcomes():
    sentences = [sentence("S1", "S2"), sentence("S1", "S2"), sentence("S1", "S2"), sentence("S1", "S2"), sentence()]
    checks = [
        checked(0, 0, True), checked(0, 1, True),  # both support
        checked(1, 0, True), checked(1, 1, False),  # one of two
        checked(2, 0, False), checked(2, 1, None, located=False),  # neither: one judged not, one not found
        checked(3, 0, None), checked(3, 1, None),  # located, but no verdict on either
        CitationCheck(4, -1, "", None, None, False, None, "model", "no citation"),
    ]  # fmt: skip
    found = sentence_support(sentences, checks)
    assert [s.verdict for s in found] == [
        Verdict.SUPPORTED, Verdict.PARTLY, Verdict.UNSUPPORTED, Verdict.NOT_CHECKED, Verdict.UNSUPPORTED,
    ]  # fmt: skip
    assert [s.reason for s in found] == [
        "all 2 citations support it", "1 of 2 citations support it", "0 of 2 citations support it",
        "no verdict on its 2 citations", "no citation",
    ]  # fmt: skip
    assert [c.outcome for c in found[2].citations] == [Outcome.DOES_NOT, Outcome.DOES_NOT]
    assert [c.reason for c in found[1].citations] == ["why 1.0", "why 1.1"]
    assert totals(found) == {Verdict.SUPPORTED: 1, Verdict.PARTLY: 1, Verdict.UNSUPPORTED: 2, Verdict.NOT_CHECKED: 1}


def test_a_supported_and_an_unsupported_citation_mixed_with_one_unjudged():
    found = sentence_support([sentence("S1", "S2")], [checked(0, 0, True), checked(0, 1, None)])
    assert found[0].verdict is Verdict.PARTLY  # not every citation supports it: not "supported"
    unjudged = sentence_support([sentence("S1", "S2")], [checked(0, 0, False), checked(0, 1, None)])
    assert unjudged[0].verdict is Verdict.UNSUPPORTED


def test_the_recorded_answer_run_read_back():
    """tests/fixtures/trails/research/answer.jsonl: a supported quotation, a paraphrase the model found
    unsupported, and an inference whose quote is not at its cited place and whose other label is no source."""
    found = from_events(read_trail(RESEARCH_TRAILS / "answer.jsonl"))
    assert [(s.kind, s.verdict) for s in found] == [
        ("quotation", Verdict.SUPPORTED), ("paraphrase", Verdict.UNSUPPORTED), ("inference", Verdict.UNSUPPORTED),
    ]  # fmt: skip
    assert [c.label for c in found[2].citations] == ["S1", "S9"]
    assert found[2].citations[0].span is None and "not in" in found[2].citations[0].reason
    assert found[2].citations[1].reason == "S9 is not one of the draft's sources"
