"""Graded answers: each question of a set drafted from its sources (research/answer.py), its citations checked
(research/citecheck.py), then scored; one `answer` run with its own trail per question, every model call in it.

Per question (a row; None where a figure does not apply):

- `faithfulness`: the share of the draft's claims (its sentences) supported by the spans they cite. With a judge
  model, one call per claim shown the claim and its located cited spans only (eval/answer_judge.py); without
  one, the citation check's lexical verdicts (a claim is supported when one of its citations is). A claim
  citing no located span is unsupported without a call; a claim the judge could not judge is left out and
  counted in `unjudged`. None when the draft abstained.
- `relevancy`: 1.0 when the judge finds that the draft addresses the question, else 0.0 (None: abstained, or no
  judge).
- `citation_precision`: the share of the draft's citations that name the gold document; `citation_recall`: 1.0
  when one of them does. Only where the question has a gold document; an abstention cites nothing (recall 0.0,
  precision None).
- `exact_match`, `f1`, `contains`: the draft's text (its sentences joined) against the gold answers
  (eval/answer_metrics.py); an abstention on a question with gold answers scores 0.0.
- `abstained` (1.0 or 0.0), `citations` (how many), and `quotation`, `paraphrase`, `inference`: the share of
  the draft's sentences of each kind.

The sources are the top-k of a search of the collection for the question, or the documents a question names
(`sources`, a given selection). Aggregates (eval/answer_report.py) are means with bootstrap intervals, overall
and per kind, language and type, and abstention precision and recall.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from tracerag import __version__
from tracerag.collection import Collection
from tracerag.errors import ConfigError, RecordError
from tracerag.eval.answer_judge import Verdict, judge_relevancy, judge_support
from tracerag.eval.answer_metrics import contains_answer, exact_match, token_f1
from tracerag.eval.answer_sets import AnswerQuestion
from tracerag.eval.datasets import Benchmark
from tracerag.llm import StructuredLLM
from tracerag.research.answer import Draft, draft
from tracerag.research.citecheck import CitationCheck, check, withdraw
from tracerag.research.sources import SourceChunk, SourceRef, load_chunks
from tracerag.retrieval.search import Retriever, SearchRequest
from tracerag.trail import JsonlWriter, Trail, new_run_id
from tracerag.trail.events import RunEvent, RunKind, SentenceKind

KINDS = tuple(k.value for k in SentenceKind)
METRICS = (
    "faithfulness",
    "relevancy",
    "citation_precision",
    "citation_recall",
    "exact_match",
    "f1",
    "contains",
    "abstained",
    "citations",
    *KINDS,
)
GROUPS = ("kind", "language", "type")  # a question's fields that a report breaks the figures down by
DEFAULT_K = 3


@dataclass(frozen=True)
class GradedQuestion:
    """One question of a set. `answerable` False: the right answer is an abstention (an absurd question, a false
    premise, an answer in no document)."""

    id: str
    question: str
    language: str
    kind: str = ""
    gold_doc: str | None = None
    gold_answers: list[str] = field(default_factory=list)
    answerable: bool = True
    type: str | None = None
    sources: list[str] | None = None  # doc ids to draft from instead of a search


def question_of(record: dict[str, Any]) -> GradedQuestion:
    """A question from a JSONL record: id, question, language, kind, gold_doc and gold_answer (a string or a
    list) optional; `answerable` when given, else answerable when it has a gold document or answer."""
    for key in ("id", "question", "language"):
        if not isinstance(record.get(key), str) or not record[key].strip():
            raise ValueError(f"lacks {key} (a non-empty string)")
    gold = record.get("gold_answer", record.get("gold_answers"))
    golds = [gold] if isinstance(gold, str) else [g for g in gold or [] if isinstance(g, str)]
    gold_doc = record.get("gold_doc") or None
    answerable = record.get("answerable")
    sources = record.get("sources")
    return GradedQuestion(
        id=record["id"],
        question=record["question"].strip(),
        language=record["language"],
        kind=str(record.get("kind") or ""),
        gold_doc=gold_doc,
        gold_answers=[g for g in golds if g.strip()],
        answerable=bool(gold_doc or golds) if answerable is None else bool(answerable),
        type=record.get("type"),
        sources=list(sources) if isinstance(sources, list) else None,
    )


def read_questions(path: Path) -> list[GradedQuestion]:
    """A question set: one JSON object per line (see `question_of`); a bad line is an error naming file:line."""
    out, seen = [], set()
    with Path(path).open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                q = question_of(json.loads(line))
            except (ValueError, TypeError, AttributeError) as exc:
                raise RecordError(str(exc), file=str(path), line=n) from None
            if q.id in seen:
                raise RecordError(f"the id {q.id!r} is given twice", file=str(path), line=n)
            seen.add(q.id)
            out.append(q)
    if not out:
        raise ConfigError(f"{path}: no questions")
    return out


def shipped_question(q: AnswerQuestion) -> GradedQuestion:
    """A question of a shipped set (eval/answer_sets.py): its kind (absent, anachronism, false_premise,
    answerable) kept as the kind the report breaks figures down by; answerable exactly when that kind says so."""
    golds = [q.gold_answer] if q.gold_answer else []
    return GradedQuestion(q.id, q.question, q.language, q.kind, q.gold_doc, golds, answerable=not q.should_abstain)


def benchmark_questions(bench: Benchmark, query_ids: Sequence[str]) -> list[GradedQuestion]:
    """A benchmark's queries as questions to answer: its one relevant document as the gold document (None when it
    judges several relevant), its gold answers where its loader keeps them (`metadata["answers"]`, PIAF's),
    its query type; the kind is the benchmark's name. All are answerable."""
    out = []
    for qid in query_ids:
        query = bench.queries[qid]
        relevant = [doc for doc, grade in bench.qrels.get(qid, {}).items() if grade >= 1]
        answers = query.metadata.get("answers") or []
        out.append(
            GradedQuestion(
                id=qid,
                question=query.text,
                language=query.language or "en",
                kind=bench.name,
                gold_doc=relevant[0] if len(relevant) == 1 else None,
                gold_answers=[a for a in dict.fromkeys(answers) if isinstance(a, str) and a.strip()],
                type=query.type,
            )
        )
    return out


@dataclass(frozen=True)
class ClaimVerdict:
    sentence: int
    supported: bool | None
    method: str  # "model", "lexical" or "none" (no located citation: unsupported without a call)
    reason: str


@dataclass(frozen=True)
class AnswerRow:
    """One question graded: its figures (`scores`) and what they were computed from."""

    id: str
    question: str
    language: str
    kind: str
    type: str | None
    answerable: bool
    run_id: str
    trail: str
    sources: list[str]
    abstained: bool
    abstention: str
    answer: str
    method: str
    claims: list[ClaimVerdict]
    relevancy_reason: str
    unjudged: int  # claims, and the relevancy, that the judge gave no usable verdict on
    failure: str | None  # why the drafter gave no usable draft (then counted as an abstention), if so
    scores: dict[str, float | None]
    evidence: float | None = None  # the share of the question the best source held, when checked before drafting
    stopped: bool = False  # abstained at that check, before any model call
    withdrawn: bool = False  # drafted, then withdrawn: none of its citations held up (research/citecheck.py)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def grade_question(
    col: Collection,
    q: GradedQuestion,
    llm: StructuredLLM | None,
    judge: StructuredLLM | None,
    trail_dir: Path,
    *,
    k: int = DEFAULT_K,
) -> AnswerRow:
    """Draft, check and score one question, its trail written to `trail_dir`/RUN_ID.jsonl."""
    sources = _sources(col, q, k)
    run_id = new_run_id()
    path = trail_dir / f"{run_id}.jsonl"
    writer = JsonlWriter(path)
    try:
        trail = Trail(run_id, [writer])
        trail.emit(
            RunEvent(
                question=q.question,
                collection=str(col.path),
                k=len(sources),
                config={"from": "given" if q.sources is not None else "search", "eval": "answers", "id": q.id,
                        "language": q.language, "judge": f"{judge.name}:{judge.model}" if judge else None},
                llm={"provider": llm.name, "model": llm.model} if llm else None,
                versions={"tracerag": __version__},
                run=RunKind.ANSWER,
            )
        )  # fmt: skip
        share = None if q.sources is not None else col.settings.answer.evidence_share  # as `tracerag answer` does
        result = draft(q.question, sources, llm, trail, language=q.language, evidence_share=share)
        checks = check(result, llm, trail)
        withdrawn = withdraw(result, checks, trail)
        text = " ".join(s.text for s in result.sentences)  # a withdrawn draft's too: what the model wrote
        if withdrawn is not None:  # graded as the abstention it is: no claims judged, nothing cited
            result = replace(result, abstained=True, abstention=f"withdrawn: {withdrawn}", sentences=[])
        claims = _claims(result, checks, judge, trail)
        relevancy = None if result.abstained or judge is None else judge_relevancy(q.question, text, judge, trail)
    finally:
        writer.close()
    scores = _scores(q, result, claims, relevancy)
    return AnswerRow(
        q.id, q.question, q.language, q.kind, q.type, q.answerable, run_id, str(path),
        [s.doc_id for s in sources], result.abstained, result.abstention, text, result.method, claims,
        relevancy.reason if relevancy else "",
        sum(c.supported is None for c in claims) + (relevancy is not None and relevancy.value is None),
        _draft_failure(result), scores,
        result.evidence.share if result.evidence else None,
        result.evidence is not None and not result.evidence.passed,
        withdrawn is not None,
    )  # fmt: skip


def _draft_failure(result: Draft) -> str | None:
    """The drafter's failure when it gave no usable draft; an abstention that came with sentences (dropped,
    research/answer.py records it as a failure too) is an abstention all the same."""
    honest = result.failure is None or result.failure.startswith("the model abstained")
    return None if honest or not result.abstained else result.failure


def _sources(col: Collection, q: GradedQuestion, k: int) -> list[SourceChunk]:
    if q.sources is not None:
        refs = [SourceRef(doc_id, rank=n) for n, doc_id in enumerate(q.sources, start=1)]
    else:
        ranking = Retriever(col).search(SearchRequest(q.question, k=k))
        refs = [SourceRef(d.doc_id, d.best_chunk_id, None, d.rank, d.score) for d in ranking.documents]
    return load_chunks(col, refs).chunks


def _claims(
    result: Draft, checks: Sequence[CitationCheck], judge: StructuredLLM | None, trail: Trail
) -> list[ClaimVerdict]:
    """Each sentence's verdict against its located cited spans (see the module doc)."""
    out = []
    for i, sentence in enumerate(result.sentences):
        located = [c for c in checks if c.sentence == i and c.located and c.span is not None]
        spans = [_span_text(result.labels[c.label], c.span) for c in located if c.label in result.labels and c.span]
        if not spans:
            out.append(ClaimVerdict(i, False, "none", "no located citation"))
        elif judge is None:
            good = next((c for c in located if c.supported), None)
            reason = (good or located[0]).reason
            out.append(ClaimVerdict(i, good is not None, "lexical", reason))
        else:
            verdict: Verdict = judge_support(sentence.text, spans, judge, trail)
            out.append(ClaimVerdict(i, verdict.value, "model", verdict.reason))
    return out


def _span_text(source: SourceChunk, span: tuple[int, int]) -> str:
    return source.text[span[0] - source.start : span[1] - source.start]


def _scores(q: GradedQuestion, result: Draft, claims: Sequence[ClaimVerdict], relevancy: Verdict | None) -> dict:
    scores: dict[str, float | None] = dict.fromkeys(METRICS)
    scores["abstained"] = float(result.abstained)
    cited = [c.doc_id for s in result.sentences for c in s.citations]
    scores["citations"] = float(len(cited))
    judged = [c for c in claims if c.supported is not None]
    if not result.abstained:
        scores["faithfulness"] = sum(bool(c.supported) for c in judged) / len(judged) if judged else None
        n = len(result.sentences)
        for kind in KINDS:
            scores[kind] = sum(s.kind.value == kind for s in result.sentences) / n
    if relevancy is not None and relevancy.value is not None:
        scores["relevancy"] = float(relevancy.value)
    if q.gold_doc:
        scores["citation_precision"] = sum(d == q.gold_doc for d in cited) / len(cited) if cited else None
        scores["citation_recall"] = float(q.gold_doc in cited)
    if q.gold_answers:
        text = " ".join(s.text for s in result.sentences)
        lang = q.language
        scores["exact_match"] = exact_match(text, q.gold_answers, lang) if not result.abstained else 0.0
        scores["f1"] = token_f1(text, q.gold_answers, lang) if not result.abstained else 0.0
        scores["contains"] = contains_answer(text, q.gold_answers, lang) if not result.abstained else 0.0
    return scores


def grade_all(
    col: Collection,
    questions: Sequence[GradedQuestion],
    llm: StructuredLLM | None,
    judge: StructuredLLM | None,
    trail_dir: Path,
    *,
    k: int = DEFAULT_K,
    progress: Callable[[str, int], Callable[[], None]] | None = None,
) -> list[AnswerRow]:
    advance = progress("grading answers", len(questions)) if progress else None
    rows = []
    for q in questions:
        rows.append(grade_question(col, q, llm, judge, trail_dir, k=k))
        if advance:
            advance()
    return rows
