"""Graded answers (eval/answers.py) measured on recorded answers whose figures are known by construction.

A tiny French collection is built here; a scripted model (`Scripted`) drafts from what it is shown, following a
plan per question, and judges by reading the prompt. Its answers are recorded once (RecordingProvider) and the
command replays them (`--llm replay:DIR`). Planted in the `bad` run: one unsupported claim of two in `hugo`, one
citation of two naming a non-gold document in `port`, a missed abstention on an absurd question (`phone`) and an
over-abstention on an answerable one (`salon`, whose sources come from a search of the collection). The `good`
run is the same without the unsupported claim and the wrong citation, so comparing them must favour it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tracerag.cli import app
from tracerag.collection import Collection
from tracerag.config import AnswerSettings, load_settings
from tracerag.errors import ConfigError, RecordError
from tracerag.eval.answer_metrics import (
    abstention,
    compare_runs,
    contains_answer,
    exact_match,
    mean_ci,
    normalise_answer,
    token_f1,
)
from tracerag.eval.answer_report import aggregate, markdown, summary
from tracerag.eval.answer_run import asked_over, load_questions
from tracerag.eval.answers import benchmark_questions, grade_all, question_of, read_questions
from tracerag.eval.datasets import Benchmark, Query
from tracerag.llm import RawAnswer, StructuredLLM, Usage
from tracerag.llm.replay import RecordingProvider
from tracerag.model import Document
from tracerag.trail import read_trail, show_runs
from tracerag.trail.events import DraftEvent, LLMCallEvent, LLMPurpose

runner = CliRunner()

DOCS = {
    "d-hugo": "Victor Hugo est né à Besançon en 1802. Il écrivit Les Misérables, publié en 1862.",
    "d-port": "Un violent incendie a détruit les entrepôts du port en 1881. Les pompiers ont lutté toute la nuit.",
    "d-salon": "Le Salon de 1881 ouvrit ses portes au palais de l'Industrie. On y vit de grands tableaux.",
    "d-train": "La ligne de chemin de fer entre Paris et Lyon fut achevée en 1856 après dix ans de travaux.",
}
QUESTIONS = [
    {"id": "hugo", "question": "Où est né Victor Hugo ?", "language": "fr", "kind": "factual",
     "gold_doc": "d-hugo", "gold_answer": "Besançon", "sources": ["d-hugo"]},
    {"id": "port", "question": "Qu'a détruit l'incendie de 1881 ?", "language": "fr", "kind": "factual",
     "gold_doc": "d-port", "gold_answer": "les entrepôts du port", "sources": ["d-port", "d-salon"]},
    {"id": "train", "question": "Quand la ligne de Paris à Lyon fut-elle achevée ?", "language": "fr",
     "kind": "factual", "gold_doc": "d-train", "gold_answer": ["1856", "en 1856"], "sources": ["d-train"]},
    {"id": "mars", "question": "Quel empereur romain a voyagé vers Mars ?", "language": "fr", "kind": "absurd",
     "sources": ["d-train"]},
    {"id": "phone", "question": "Quel téléphone portable utilisait Victor Hugo ?", "language": "fr",
     "kind": "absurd", "sources": ["d-hugo"]},
    {"id": "salon", "question": "En quelle année le Salon ouvrit-il ses portes ?", "language": "fr",
     "kind": "factual", "gold_doc": "d-salon", "gold_answer": "1881"},
]  # fmt: skip
PLANTED_CLAIM = "Victor Hugo fut aussi maire de Paris."
IRRELEVANT = "Victor Hugo écrivit Les Misérables."

# question -> sentences (text, kind, phrase cited from the first shown source holding it); None: abstain
BAD: dict[str, list[tuple[str, str, str]] | None] = {
    "Où est né Victor Hugo ?": [
        ("Victor Hugo est né à Besançon.", "paraphrase", "Victor Hugo est né à Besançon"),
        (PLANTED_CLAIM, "inference", "Il écrivit Les Misérables"),
    ],
    "Qu'a détruit l'incendie de 1881 ?": [
        ("Un violent incendie a détruit les entrepôts du port.", "quotation", "a détruit les entrepôts du port"),
        ("Le Salon ouvrit la même année.", "inference", "Le Salon de 1881 ouvrit ses portes"),  # not the gold
    ],
    "Quand la ligne de Paris à Lyon fut-elle achevée ?": [("1856.", "paraphrase", "achevée en 1856")],
    "Quel empereur romain a voyagé vers Mars ?": None,
    "Quel téléphone portable utilisait Victor Hugo ?": [(IRRELEVANT, "paraphrase", "Il écrivit Les Misérables")],
    "En quelle année le Salon ouvrit-il ses portes ?": None,  # over-abstention
}
GOOD = {
    **BAD,
    "Où est né Victor Hugo ?": BAD["Où est né Victor Hugo ?"][:1],  # type: ignore[index]
    "Qu'a détruit l'incendie de 1881 ?": [
        BAD["Qu'a détruit l'incendie de 1881 ?"][0],  # type: ignore[index]
        ("Les pompiers ont lutté toute la nuit.", "quotation", "Les pompiers ont lutté toute la nuit"),
    ],
}


class Scripted:
    """Drafts by its plan, judges by reading the prompt: a claim is unsupported when it is PLANTED_CLAIM, an
    answer irrelevant when it is IRRELEVANT; the citation check supports every located citation."""

    name = "scripted"

    def __init__(self, plan, model: str):
        self.plan = plan
        self.model = model

    def generate(self, messages, *, json_schema, temperature, max_tokens) -> RawAnswer:
        system, user = messages[0].content, messages[1].content
        if "cited draft answer" in system:
            question = user.split("Question: ", 1)[1].split("\n\nSources:", 1)[0]
            fenced = user.split("<documents>\n", 1)[1].split("\n</documents>", 1)[0]
            shown = [json.loads(line) for line in fenced.split("\n")]
            answer: object = self._draft(self.plan[question], shown)
        elif "check one citation" in system:
            answer = {"reasoning": "the passage states it", "supported": True}
        elif "check one claim" in system:
            supported = json.dumps(PLANTED_CLAIM, ensure_ascii=False)[1:-1] not in user.split("</notes>", 1)[0]
            answer = {"reasoning": "in the passage" if supported else "not in the passage", "supported": supported}
        else:
            relevant = json.dumps(IRRELEVANT, ensure_ascii=False)[1:-1] not in user
            answer = {"reasoning": "it answers" if relevant else "off the question", "relevant": relevant}
        text = json.dumps(answer, ensure_ascii=False)
        return RawAnswer(text, Usage(100, len(text.split())), 0.0, self.model)

    @staticmethod
    def _draft(plan, shown) -> dict:
        if plan is None:
            return {"abstain": True, "abstention": "the sources do not say", "sentences": []}
        sentences = []
        for text, kind, phrase in plan:
            label = next(s["id"] for s in shown if phrase in s["text"])
            sentences.append({"text": text, "kind": kind, "citations": [{"source": label, "quote": phrase}]})
        return {"abstain": False, "sentences": sentences}


@pytest.fixture(scope="module")
def collection(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("graded") / "col"
    docs = [Document(id=i, text=t, corpus="demo", language="fr") for i, t in DOCS.items()]
    with Collection.open(path, load_settings(), mode="write", create=True) as col:
        col.ingest(iter(docs), dense=False)
    return path


@pytest.fixture(scope="module")
def questions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("set") / "questions.jsonl"
    path.write_text("\n".join(json.dumps(q, ensure_ascii=False) for q in QUESTIONS) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module", autouse=True)
def every_question_drafted():
    """The harness is measured on what the scripted model drafts: the check before a draft (research/evidence.py,
    its own test below) would abstain on the absurd questions before the model could miss them."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRACERAG_ANSWER__EVIDENCE_SHARE", "0")
        yield


def _record(collection: Path, questions: Path, plan, folder: Path, model: str, settings=None):
    """Grade the set with the scripted model through the library, its answers recorded in `folder`."""
    llm = StructuredLLM(RecordingProvider(Scripted(plan, model), folder))
    with Collection.open(collection, settings or load_settings(), mode="read") as col:
        return grade_all(col, read_questions(questions), llm, llm, folder.parent / "trails", k=2)


@pytest.fixture(scope="module")
def bad(collection, questions, tmp_path_factory):
    folder = tmp_path_factory.mktemp("bad") / "recorded"
    return folder, {r.id: r for r in _record(collection, questions, BAD, folder, "scripted-bad")}


@pytest.fixture(scope="module")
def good(collection, questions, tmp_path_factory):
    folder = tmp_path_factory.mktemp("good") / "recorded"
    return folder, {r.id: r for r in _record(collection, questions, GOOD, folder, "scripted-good")}


def test_a_planted_unsupported_claim_lowers_faithfulness_by_its_share(bad, good):
    _, rows = bad
    _, fine = good
    assert rows["hugo"].scores["faithfulness"] == 0.5 and fine["hugo"].scores["faithfulness"] == 1.0
    verdicts = [(c.supported, c.method) for c in rows["hugo"].claims]
    assert verdicts == [(True, "model"), (False, "model")]
    # over the four drafts that did not abstain: one claim of two unsupported in one of them
    assert aggregate(list(rows.values()))["all"]["faithfulness"]["mean"] == pytest.approx((0.5 + 3) / 4)
    assert aggregate(list(fine.values()))["all"]["faithfulness"]["mean"] == 1.0


def test_every_verdict_is_in_the_run_s_trail_with_the_claim_and_its_span_only(bad):
    _, rows = bad
    events = read_trail(Path(rows["hugo"].trail))
    calls = [e for e in events if isinstance(e, LLMCallEvent)]
    purposes = [c.purpose for c in calls]
    assert purposes == [LLMPurpose.DRAFT, LLMPurpose.CITE_CHECK, LLMPurpose.CITE_CHECK] + [
        LLMPurpose.GRADE_SUPPORT
    ] * 2 + [LLMPurpose.GRADE_RELEVANCY]
    judged = [c for c in calls if c.purpose is LLMPurpose.GRADE_SUPPORT]
    assert [c.parsed["supported"] for c in judged if c.parsed] == [True, False]
    shown = judged[1].messages[1]["content"]
    assert "Il écrivit Les Misérables" in shown and "Besançon" not in shown  # the span, not its context
    assert "Où est né" not in shown  # nor the question


def test_the_check_before_drafting_abstains_where_the_sources_lack_the_question_s_words(
    collection, questions, tmp_path
):
    """With the evidence check on (its default share) and sources from a search, the absurd questions the model
    drafted anyway abstain without a draft call, saying which words the sources lack; the answerable ones are
    drafted as before. Sources a question names (a selection) are not checked (the other tests)."""
    settings = load_settings().model_copy(update={"answer": AnswerSettings(evidence_share=0.5)})
    searched = tmp_path / "searched.jsonl"  # sources from a search, as no person accepted them: checked
    searched.write_text("".join(json.dumps({**q, "sources": None}) + "\n" for q in QUESTIONS), encoding="utf-8")
    folder = tmp_path / "recorded"
    rows = {r.id: r for r in _record(collection, searched, BAD, folder, "scripted-bad", settings)}
    assert rows["phone"].abstained and rows["mars"].abstained
    assert rows["phone"].stopped and not rows["hugo"].stopped and rows["hugo"].evidence == 1.0
    report = markdown(summary(list(rows.values()), {"set": "searched"}))
    assert "2 of the 6 checked before drafting were stopped there, with no model call." in report
    assert "telephone" in rows["phone"].abstention and "portable" in rows["phone"].abstention
    assert not rows["hugo"].abstained and not rows["port"].abstained and not rows["train"].abstained
    drafted = {e.messages[1]["content"].split("Question: ", 1)[1].split("\n", 1)[0]
               for r in rows.values() for e in read_trail(r.trail)
               if isinstance(e, LLMCallEvent) and e.purpose is LLMPurpose.DRAFT}  # fmt: skip
    assert not any("téléphone" in q or "Mars" in q for q in drafted) and any("Hugo" in q for q in drafted)
    (event,) = [e for e in read_trail(rows["phone"].trail) if isinstance(e, DraftEvent)]
    assert event.evidence is not None and not event.evidence.passed
    assert event.evidence.share < 0.5 and "telephone" in event.evidence.missing
    assert show_runs.draft(event).plain.startswith("draft abstained: the sources hold ")
    (hugo,) = [e for e in read_trail(rows["hugo"].trail) if isinstance(e, DraftEvent)]
    assert "a source holds 100% of the question's words (50% wanted)" in show_runs.draft(hugo).plain


class Unconvinced(Scripted):
    """Scripted, but its citation check finds the irrelevant sentence's citation unsupported."""

    def generate(self, messages, *, json_schema, temperature, max_tokens) -> RawAnswer:
        system, user = messages[0].content, messages[1].content
        if "check one citation" in system and json.dumps(IRRELEVANT, ensure_ascii=False)[1:-1] in user:
            text = json.dumps({"reasoning": "not what the passage says", "supported": False})
            return RawAnswer(text, Usage(100, 10), 0.0, self.model)
        return super().generate(messages, json_schema=json_schema, temperature=temperature, max_tokens=max_tokens)


def test_a_draft_whose_citations_all_fail_is_graded_as_the_abstention_it_became(collection, questions, tmp_path):
    """`phone`'s one citation is found unsupported: the draft is withdrawn, so the absurd question is abstained on
    (its claims not judged, nothing cited), and the report says the abstention was a withdrawal."""
    folder = tmp_path / "recorded"
    llm = StructuredLLM(RecordingProvider(Unconvinced(BAD, "scripted-unconvinced"), folder))
    with Collection.open(collection, load_settings(), mode="read") as col:
        rows = {r.id: r for r in grade_all(col, read_questions(questions), llm, llm, tmp_path / "trails", k=2)}
    phone = rows["phone"]
    assert phone.withdrawn and phone.abstained and phone.abstention.startswith("withdrawn: none of the draft's 1")
    assert phone.scores["abstained"] == 1.0 and phone.scores["faithfulness"] is None and not phone.claims
    assert phone.answer == IRRELEVANT  # what the model wrote stays on the row, as in the trail
    assert not rows["hugo"].withdrawn and not rows["hugo"].abstained
    report = markdown(summary(list(rows.values()), {"set": "unconvinced"}))
    assert "1 drafted, then withdrawn: none of their citations held up." in report


def test_a_wrong_citation_lowers_citation_precision_not_recall(bad, good):
    _, rows = bad
    _, fine = good
    assert rows["port"].scores["citation_precision"] == 0.5 and rows["port"].scores["citation_recall"] == 1.0
    assert fine["port"].scores["citation_precision"] == 1.0
    agg = aggregate(list(rows.values()))["all"]
    # hugo 1, port 1/2, train 1; salon abstained: no citations (precision undefined), recall 0
    assert agg["citation_precision"]["mean"] == pytest.approx(2.5 / 3) and agg["citation_precision"]["n"] == 3
    assert agg["citation_recall"]["mean"] == pytest.approx(3 / 4)


def test_abstention_precision_and_recall_over_a_mixed_set(bad):
    _, rows = bad
    assert rows["mars"].abstained and not rows["phone"].abstained and rows["salon"].abstained
    assert rows["salon"].sources and rows["salon"].sources[0] == "d-salon"  # found by a search of the collection
    a = aggregate(list(rows.values()))["abstention"]
    assert (a["abstained"], a["expected"], a["questions"]) == (2, 2, 6)
    assert a["precision"] == 0.5 and a["recall"] == 0.5 and a["rate"] == pytest.approx(2 / 6)
    by_kind = aggregate(list(rows.values()))["abstention_by"]["kind"]
    assert (by_kind["absurd"]["precision"], by_kind["absurd"]["recall"]) == (1.0, 0.5)
    assert (by_kind["factual"]["precision"], by_kind["factual"]["recall"]) == (0.0, None)  # salon's, not due
    assert rows["phone"].scores["relevancy"] == 0.0 and rows["hugo"].scores["relevancy"] == 1.0


def test_exact_match_and_f1_against_gold_answers(bad, good):
    _, rows = bad
    _, fine = good
    assert rows["train"].scores["exact_match"] == 1.0 and rows["train"].scores["f1"] == 1.0
    # "Victor Hugo est né à Besançon. Victor Hugo fut aussi maire de Paris.": 12 tokens once "de" is dropped
    assert rows["hugo"].scores["f1"] == pytest.approx(2 / 13) and rows["hugo"].scores["contains"] == 1.0
    assert fine["hugo"].scores["f1"] == pytest.approx(2 / 7)
    assert rows["salon"].scores["exact_match"] == 0.0  # an abstention where an answer was due
    assert rows["mars"].scores["exact_match"] is None  # no gold answer: not scored
    assert aggregate(list(rows.values()))["all"]["exact_match"]["mean"] == pytest.approx(1 / 4)


def test_kinds_and_citations_per_answer(bad):
    _, rows = bad
    assert rows["hugo"].scores["paraphrase"] == 0.5 and rows["hugo"].scores["inference"] == 0.5
    assert rows["port"].scores["citations"] == 2.0 and rows["mars"].scores["citations"] == 0.0
    by = aggregate(list(rows.values()))["by"]
    assert set(by["kind"]) == {"absurd", "factual"} and by["kind"]["absurd"]["abstained"]["mean"] == 0.5


def test_the_intervals_bracket_the_means(bad):
    _, rows = bad
    for m in aggregate(list(rows.values()))["all"].values():
        if m["n"]:
            assert m["low"] <= m["mean"] <= m["high"]
    assert mean_ci([1.0, 0.0] * 20).low < 0.5 < mean_ci([1.0, 0.0] * 20).high
    assert mean_ci([]).mean is None


def test_the_paired_comparison_favours_the_run_without_the_planted_faults(bad, good):
    _, rows = bad
    _, fine = good
    compared = {c.metric: c for c in compare_runs(
        {q: r.scores for q, r in rows.items()}, {q: r.scores for q, r in fine.items()}, ["faithfulness", "f1"]
    )}  # fmt: skip
    assert compared["faithfulness"].better == "b" and compared["faithfulness"].n == 4
    assert compared["f1"].better == "b"  # the planted claim's words dilute hugo's F1
    # with enough questions, a planted difference is significant, and identical runs are not
    a = {str(i): {"faithfulness": 0.5} for i in range(30)}
    b = {str(i): {"faithfulness": 1.0 if i % 3 else 0.5} for i in range(30)}
    (planted,) = compare_runs(a, b, ["faithfulness"])
    assert planted.better == "b" and planted.p < 0.05
    (same,) = compare_runs(a, a, ["faithfulness"])
    assert same.better is None and same.p == 1.0
    (few,) = compare_runs({"1": {"f1": 0.0}}, {"1": {"f1": 1.0}}, ["f1"])  # one pair: no test, not "p = 0"
    assert few.better == "b" and few.p is None


def test_the_command_replays_the_recorded_run_and_compares(bad, good, collection, questions, tmp_path):
    folder, rows = bad
    good_folder, _ = good
    first = tmp_path / "bad"
    args = ["eval", "--answers", str(questions), "-c", str(collection), "--k", "2", "--out", str(first)]
    result = runner.invoke(app, [*args, "--llm", f"replay:{folder}"])
    assert result.exit_code == 0, result.output
    report = json.loads((first / "results.json").read_text(encoding="utf-8"))
    replayed = {r["id"]: r["scores"] for r in report["rows"]}
    assert replayed == {q: r.scores for q, r in rows.items()}  # the recorded run, exactly
    assert "replay it offline with --llm replay:" in result.output
    assert report["aggregates"]["abstention"]["precision"] == 0.5
    # its own recording replays it again, and a second run is compared with it question by question
    again = runner.invoke(app, [*args[:-1], str(tmp_path / "again"), "--llm", f"replay:{first / 'recorded' / 'llm'}"])
    assert again.exit_code == 0, again.output
    second = tmp_path / "good"
    compared = runner.invoke(app, [*args[:-1], str(second), "--llm", f"replay:{good_folder}", "--against", str(first)])
    assert compared.exit_code == 0, compared.output
    report = json.loads((second / "results.json").read_text(encoding="utf-8"))
    by_metric = {c["metric"]: c for c in report["comparison"]}
    assert by_metric["faithfulness"]["a"] == pytest.approx(0.875) and by_metric["faithfulness"]["b"] == 1.0
    text = (second / "results.md").read_text(encoding="utf-8")
    assert "## Against the earlier run (A)" in text and "| phone | absurd | no (wrong) |" in text


def test_without_a_judge_faithfulness_is_the_citation_check_s_and_relevancy_is_not_asked(
    bad, collection, questions, tmp_path
):
    """`--judge none`: a cheaper run. The planted claim cites a located span the (model's) citation check supports,
    so without a judge it counts as supported: what the judge adds is said by the difference."""
    folder, rows = bad
    out = tmp_path / "o"
    args = ["eval", "--answers", str(questions), "-c", str(collection), "--k", "2", "--out", str(out)]
    result = runner.invoke(app, [*args, "--llm", f"replay:{folder}", "--judge", "none"])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert report["judge"] is None and report["aggregates"]["all"]["relevancy"]["n"] == 0
    assert "- judge: none (the citation check's verdicts, the drafting model's; no relevancy)" in result.output
    scores = {r["id"]: r["scores"] for r in report["rows"]}
    assert rows["hugo"].scores["faithfulness"] == 0.5 and scores["hugo"]["faithfulness"] == 1.0
    assert not (out / "recorded" / "judge").exists()


def test_a_comparison_with_no_question_in_common_is_refused_before_any_call(bad, collection, questions, tmp_path):
    folder, _ = bad
    first = tmp_path / "first"
    made = runner.invoke(app, ["eval", "--answers", str(questions), "-c", str(collection), "--out", str(first)])
    assert made.exit_code == 0, made.output
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "elsewhere", "question": "Où ?", "language": "fr"}) + "\n", encoding="utf-8")
    args = ["eval", "--answers", str(other), "-c", str(collection), "--out", str(tmp_path / "o")]
    result = runner.invoke(app, [*args, "--llm", f"replay:{folder}", "--against", str(first)])
    assert result.exit_code == 2 and "no question in common" in result.output
    assert not (tmp_path / "o" / "results.json").exists()


def test_verdicts_a_replay_lacks_are_missing_not_guessed(bad, collection, questions, tmp_path):
    """A judge whose answers were never recorded gives no verdict: no faithfulness figure, the claims counted
    as unjudged with the replay's reason, and the command exits 1 (partial)."""
    folder, _ = bad
    judge = tmp_path / "empty"
    judge.mkdir()
    out = tmp_path / "o"
    args = ["eval", "--answers", str(questions), "-c", str(collection), "--k", "2", "--out", str(out)]
    result = runner.invoke(app, [*args, "--llm", f"replay:{folder}", "--judge", f"replay:{judge}"])
    assert result.exit_code == 1, result.output
    report = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert report["aggregates"]["all"]["faithfulness"]["n"] == 0
    hugo = next(r for r in report["rows"] if r["id"] == "hugo")
    assert hugo["unjudged"] == 3  # two claims and the relevancy
    assert all("never recorded" in c["reason"] for c in hugo["claims"])


def test_gold_answers_are_compared_as_squad_does_with_the_language_s_articles():
    assert normalise_answer("L'Hôtel de Ville, à Paris!", "fr") == ["hôtel", "ville", "à", "paris"]
    assert normalise_answer("The Eiffel tower.", "en") == ["eiffel", "tower"]
    assert exact_match("les entrepôts du port", ["Entrepôts, port"], "fr") == 1.0
    assert exact_match("les entrepôts du port", ["Entrepôts, port"], "xx") == 0.0  # no articles known
    assert token_f1("le grand port", ["le port"], "fr") == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert token_f1("rien", ["le port", "rien"], "fr") == 1.0  # the best gold counts
    assert contains_answer("Il naquit à Besançon en 1802.", ["Besançon"], "fr") == 1.0
    assert contains_answer("Il naquit à Besançon-les-Bains.", ["Besan"], "fr") == 0.0  # whole tokens only


def test_abstention_counts_and_question_records():
    a = abstention([(True, True), (True, False), (False, True), (False, False)])
    assert (a.precision, a.recall, a.rate) == (0.5, 0.5, 0.5)
    none = abstention([(False, False)])
    assert none.precision is None and none.recall is None
    q = question_of({"id": "x", "question": " Q ? ", "language": "fr", "gold_answer": "A"})
    assert q.answerable and q.gold_answers == ["A"] and q.question == "Q ?"
    assert not question_of({"id": "y", "question": "Q", "language": "en", "kind": "absurd"}).answerable
    assert question_of({"id": "z", "question": "Q", "language": "en", "answerable": False, "gold_doc": "d"}).gold_doc
    assert math.isclose(mean_ci([0.25]).mean or 0, 0.25)


def test_a_benchmark_s_queries_become_questions_with_its_gold(tmp_path):
    """PIAF's shape: one relevant paragraph and SQuAD answers per question (repeated answers kept once); a query
    with two relevant documents has no single gold document but is still answerable."""
    docs = [Document(id=i, text=t, corpus="demo", language="fr") for i, t in DOCS.items()]
    queries = {
        "q1": Query("q1", "Où est né Victor Hugo ?", "question", "fr", {"answers": ["Besançon", "Besançon"]}),
        "q2": Query("q2", "Quoi en 1881 ?", "question", "fr"),
    }
    bench = Benchmark("mini", "", docs, queries, {"q1": {"d-hugo": 1, "d-port": 0}, "q2": {"d-port": 1, "d-salon": 1}})
    q1, q2 = benchmark_questions(bench, ["q1", "q2"])
    assert (q1.gold_doc, q1.gold_answers, q1.kind, q1.type, q1.answerable) == (
        "d-hugo",
        ["Besançon"],
        "mini",
        "question",
        True,
    )
    assert q2.gold_doc is None and q2.gold_answers == [] and q2.answerable


def test_sets_are_read_in_turn_each_limited_or_sampled_and_ids_stay_unique(questions, tmp_path):
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "x1", "question": "Q ?", "language": "fr", "kind": "absurd"}) + "\n")
    both = load_questions([str(questions), str(other)], tmp_path, limit=2)
    assert [q.id for q in both] == ["hugo", "port", "x1"]
    sampled = load_questions([str(questions)], tmp_path, sample=3, seed=1)
    assert len(sampled) == 3 and sampled == load_questions([str(questions)], tmp_path, sample=3, seed=1)
    assert [q.id for q in sampled] == [q.id for q in read_questions(questions) if q in sampled]  # the file's order
    with pytest.raises(ConfigError, match="'hugo' is in two of the sets"):
        load_questions([str(questions), str(questions)], tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "question": "Q", "language": "fr"}\n{"id": "b", "language": "fr"}\n')
    with pytest.raises(RecordError, match=r"bad.jsonl:2: lacks question"):
        read_questions(bad)


def test_a_report_folder_run_again_records_only_the_new_run(bad, good, collection, questions, tmp_path):
    """Answers of two models in one folder would replay neither: a second run into the same --out replaces the
    first's recording, and replaying from that folder into itself keeps it."""
    (folder, _), (good_folder, fine) = bad, good
    out = tmp_path / "same"
    args = ["eval", "--answers", str(questions), "-c", str(collection), "--k", "2", "--out", str(out)]
    for source in (folder, good_folder, out / "recorded" / "llm"):
        result = runner.invoke(app, [*args, "--llm", f"replay:{source}"])
        assert result.exit_code == 0, result.output
    report = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert {r["id"]: r["scores"] for r in report["rows"]} == {q: r.scores for q, r in fine.items()}
    assert report["llm"] == "replay:scripted-good"


def test_the_shipped_sets_are_read_per_collection_with_abstention_where_due(tmp_path):
    absurd = load_questions(["absurd:piaf"], tmp_path)
    answerable = load_questions(["answerable:piaf"], tmp_path)
    assert absurd and not any(q.answerable for q in absurd) and not any(q.gold_answers for q in absurd)
    assert {q.kind for q in absurd} == {"absent", "anachronism", "false_premise"}
    assert {q.language for q in absurd} == {"fr", "en", "de"}
    assert answerable and all(q.answerable and q.gold_doc and len(q.gold_answers) == 1 for q in answerable)
    both = load_questions(["absurd", "answerable"], tmp_path)
    assert len(both) > len(absurd) + len(answerable)  # the hipe questions too
    assert len(load_questions(["absurd:piaf"], tmp_path, sample=10, seed=3)) == 10
    with pytest.raises(ConfigError, match="asked over 'nowhere'"):
        load_questions(["absurd:nowhere"], tmp_path)


def test_the_command_says_what_answers_need(questions, collection, tmp_path):
    no_collection = runner.invoke(app, ["eval", "--answers", str(questions), "--out", str(tmp_path)])
    assert no_collection.exit_code != 0 and "-c DIR" in no_collection.output
    mixed = runner.invoke(app, ["eval", "--answers", str(questions), "-c", str(collection), "--runs", "bm25"])
    assert mixed.exit_code != 0 and "not rankings" in mixed.output
    assert not (tmp_path / "results.json").exists()


def test_without_a_collection_the_sets_name_the_benchmark_whose_cached_one_is_drafted_over(questions):
    assert asked_over(["absurd:piaf", "answerable:piaf"]) == "piaf-fr"
    assert asked_over(["absurd:hipe"]) == "xling-hipe" and asked_over(["piaf-fr", "answerable:piaf"]) == "piaf-fr"
    with pytest.raises(ConfigError, match=r"more than one collection \(piaf-fr, xling-hipe\)"):
        asked_over(["absurd"])
    with pytest.raises(ConfigError, match="a question file is asked over a collection of yours"):
        asked_over([str(questions)])
    with pytest.raises(ConfigError, match="absurd:nowhere: no collection of the datasets folder is known"):
        asked_over(["absurd:nowhere"])
