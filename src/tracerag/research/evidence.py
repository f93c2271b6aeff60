"""Whether the sources speak of what the question asks, checked before a model is asked to draft from them.

A small model shown sources that do not bear on the question writes an answer all the same: the local 1.5B model
abstained on 1 of 8 absurd questions it was given (docs/guide/evaluation.md). Yet such a question is cheap to
tell: its names, its years and most of its words are in none of the sources. So the drafter looks first, and a
question the sources do not speak of gets an abstention that says which of its words they lack, without a model
call; only a question they do speak of is put to the model, whose own abstention still counts.

The question's **terms** are its forms (`text.kept_forms`: words holding a digit, and the names it capitalises)
and its content words (`content_stems`: folded, stemmed, `MIN_WORD` letters or more). Each source is looked at on
its own, in the text the drafter is shown: a term is held when the source has it as a folded word or by its stem.
A source in another language than the question is asked for the forms only, which are written alike across
languages; its other words would be found only in translation. The source that holds the largest share of the
terms decides: below `share` (setting `answer.evidence_share`), the draft abstains, naming the terms it lacks.

Measured (benchmarks/answer_evidence/measure.py, benchmarks/results/answer_evidence.md): no share both catches
the absurd questions and spares the answerable ones; at 0.5, about 0.7 of the absurd set is stopped here, and
0.2-0.4 of answerable questions whose gold passage was shown are refused, mostly for words the passage puts
otherwise ("Henrietta" for a paragraph that says "Leavitt").

The check sees words, not meaning: it cannot tell a false premise whose words the sources use ("when did Napoleon
win at Waterloo") from a true one; that is the model's to say. At `share` 0 it always passes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tracerag.research.sources import SourceChunk
from tracerag.text import fold_key, kept_forms, stem
from tracerag.trail.events import EvidenceCheck

_WORD = re.compile(r"\w+")
_APOSTROPHE = re.compile(r"['’ʼ]")
MIN_WORD = 4  # shorter words are mostly function words in the languages of the collections; no word lists in code


def content_stems(text: str, language: str) -> set[str]:
    """The folded, stemmed words of `text` long enough to carry content (the evidence check, extraction, lexical
    support). A year counts: "the mayor of Lucerne in 1928" is not answered by a sentence about Lucerne in another
    year."""
    return {stem(w, language) for w in words(text) if len(w) >= MIN_WORD}


def words(text: str) -> list[str]:
    """The folded words of `text`, an apostrophe splitting them: "l'incendie" holds "incendie", which `fold_key`
    alone would join into "lincendie" (it keys names, where "Women's" is one word)."""
    return _WORD.findall(fold_key(_APOSTROPHE.sub(" ", text)))


def why(found: EvidenceCheck) -> str:
    """An abstention's reason, in words a reader can check against the sources ("" when the check passed)."""
    if found.passed:
        return ""
    which = "names, numbers and dates" if found.cross_lingual else "words"
    lacking = f": not {', '.join(found.missing[:8])}" if found.missing else ""
    return f"the sources hold {found.share:.0%} of the question's {which} (at least {found.needed:.0%} wanted){lacking}"


def _terms(question: str, language: str, *, forms_only: bool) -> dict[str, str]:
    """The question's terms, stem → the word as the question writes it (folded): its forms' words, and unless
    `forms_only` its content words."""
    terms: dict[str, str] = {}
    for form in kept_forms(question):
        for word in fold_key(form).split():
            terms.setdefault(stem(word, language), word)
    if not forms_only:
        for word in words(question):
            if len(word) >= MIN_WORD:
                terms.setdefault(stem(word, language), word)
    return terms


def _lacks(source: SourceChunk, terms: dict[str, str], shown: int, language: str) -> list[str]:
    """The terms a source's shown text lacks, each looked for as a folded word or by its stem."""
    folded = set(words(source.text[:shown]))
    lang = source.language or language
    stems = {stem(w, lang) for w in folded}
    return [word for key, word in terms.items() if key not in stems and word not in folded]


def evidence(
    question: str,
    language: str,
    sources: Sequence[SourceChunk],
    *,
    share: float,
    shown: int,
) -> EvidenceCheck:
    """Check `question` (in `language`) against the first `shown` characters of each source: the source that holds
    most of the question's terms decides (see the module doc). Given as the trail records it."""
    best: EvidenceCheck | None = None
    for source in sources:
        cross_lingual = (source.language or language) != language
        terms = _terms(question, language, forms_only=cross_lingual)
        missing = _lacks(source, terms, shown, language)
        held = 1 - len(missing) / len(terms) if terms else 1.0
        found = EvidenceCheck(
            passed=held >= share, share=round(held, 4), needed=share, terms=len(terms), missing=missing,
            cross_lingual=cross_lingual,
        )  # fmt: skip
        if best is None or (found.share, -found.terms) > (best.share, -best.terms):
            best = found
    return best or EvidenceCheck(passed=True, share=1.0, needed=share, terms=0)
