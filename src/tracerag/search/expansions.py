"""The variants a search was asked to add to its query (`--expand llm, translate, vocab`), each made or its failure
said: the LLM's variants (`variants.py`), the query in the collection's other languages (`translations.py`), the
vocabulary model's neighbours (`retrieval/expansion.vocabulary_variants`). Made in that order, the model calls
recorded in the trail as they are made; a translation an LLM variant already is is not searched twice.

An expansion that cannot be made (no model, an unusable answer, no vocabulary model) is a failure kept here for the
run to record; the search goes on with what there is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tracerag.collection import Collection
from tracerag.config import ExpansionSettings
from tracerag.llm import StructuredLLM
from tracerag.retrieval import vocabulary as vocab
from tracerag.retrieval.expansion import Variant, vocabulary_variants
from tracerag.search.translations import translations
from tracerag.search.variants import query_variants
from tracerag.text import fold_key
from tracerag.trail import Trail
from tracerag.trail.events import LLMCallEvent, LLMPurpose

EXPANSIONS = ("llm", "translate", "vocab")


@dataclass
class Expansions:
    """What the expansions asked for gave: the variants to search, what failed, and the model calls made."""

    variants: list[Variant] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    llm_calls: int = 0


def translates(expand: Sequence[str], cfg: ExpansionSettings) -> bool:
    """Whether the query is translated: asked for, or with the LLM's variants unless the settings say not."""
    return "translate" in expand or ("llm" in expand and cfg.translate)


def expansions(
    collection: Collection, query: str, expand: Sequence[str], n: int, llm: StructuredLLM | None, trail: Trail
) -> Expansions:
    """The variants of `query` that `expand` asks for (`n` of the LLM's), each model call emitted on `trail`."""
    cfg = collection.settings.expansion
    out = Expansions()
    if "llm" in expand:
        _llm_variants(out, collection, query, n, llm, trail)
    if translates(expand, cfg):
        _translations(out, collection, query, llm, trail)
    if "vocab" in expand:
        try:
            model = vocab.load(vocab.folder_of(collection))
            out.variants += vocabulary_variants(query, model, cfg.vocab_variants, cfg.min_similarity)
        except vocab.VocabularyMissing as exc:
            out.failures.append(f"vocabulary variants: {exc}")
    return out


def _llm_variants(
    out: Expansions, collection: Collection, query: str, n: int, llm: StructuredLLM | None, trail: Trail
) -> None:
    if llm is None:
        out.failures.append("llm variants: no language model is configured (--llm)")
        return
    languages, dates = collection_span(collection)
    outcome = query_variants(llm, query, n, languages=languages, dates=dates)
    if outcome.completion is not None:
        out.llm_calls += 1
        trail.emit(LLMCallEvent.of(outcome.completion, outcome.messages, LLMPurpose.VARIANTS))
    if outcome.failure:
        out.failures.append(f"llm variants: {outcome.failure}")
    out.variants += outcome.variants


def _translations(out: Expansions, collection: Collection, query: str, llm: StructuredLLM | None, trail: Trail) -> None:
    if llm is None:
        out.failures.append("translations: no language model is configured (--llm)")
        return
    translated = translations(llm, query, collection_span(collection)[0])
    if translated.completion is not None:
        out.llm_calls += 1
        trail.emit(LLMCallEvent.of(translated.completion, translated.messages, LLMPurpose.TRANSLATE))
    if translated.failure:
        out.failures.append(f"translations: {translated.failure}")
    have = {fold_key(v.query) for v in out.variants}  # an LLM variant may be the same translation already
    out.variants += [v for v in translated.variants if fold_key(v.query) not in have]


def collection_span(collection: Collection) -> tuple[list[str], tuple[str, str] | None]:
    """The collection's languages (most documents first) and date span, for the variants' and translations'
    prompts."""
    languages: dict[str, int] = {}
    low, high = None, None
    for c in collection.store.corpora():
        for lang, count in c.languages.items():
            if lang and lang != "?":
                languages[lang] = languages.get(lang, 0) + count
        if c.date_min and (low is None or c.date_min < low):
            low = c.date_min
        if c.date_max and (high is None or c.date_max > high):
            high = c.date_max
    ordered = sorted(languages, key=lambda lang: -languages[lang])
    return ordered, (low[:4], high[:4]) if low and high else None
