"""Query expansion: a query searched as itself and as its variants (an LLM's, the collection's vocabulary model's),
each variant's ranking fused with the original's by the retrieval's one RRF primitive (`fusion.rrf`), every
ranking kept for the trail. Also where a search takes the researcher's own additions: the synonym map, the
neighbours they chose, and a boolean filter (`retrieval/boolean.py`) turned into the search's allow-list.

The original query weighs as much as all the variants together (`expansion.original_weight` = 1): a variant can
lift a document the original ranked low, or bring in one it missed, but a document only the variants find can at
most draw level with the original's first one, and a single wayward variant moves little. This module does not
know where variants come from (the LLM's are made in `search/variants.py`): retrieval never imports a model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from rapidfuzz import fuzz

from tracerag.model import RankedDocument, Ranking
from tracerag.retrieval import boolean
from tracerag.retrieval.fusion import rrf
from tracerag.retrieval.search import Retriever, SearchRequest
from tracerag.retrieval.synonyms import Applied, SynonymMap
from tracerag.retrieval.vocabulary import Vocabulary, words
from tracerag.text import fold_key

ORIGINAL = "original"
# Documents each query (the original and every variant) retrieves before the RRF: deeper than k, so that a document
# two variants find at rank 30 can still rise into the first k.
EACH_DEPTH = 50
# How alike a neighbour must be spelled to become a vocabulary variant (rapidfuzz ratio of the folded forms, 0-100):
# "gouvernemens" / "gouvernement" 92, "gambetla" / "gambetta" 88, "deparis" / "paris" 83 pass; "parisien" / "paris"
# 77 and "mouvement" / "gouvernement" 76 do not.
SPELLING_RATIO = 80.0
# Words shorter than this have no neighbours worth a search: a fastText word of three letters is little more than
# its own three-letter n-gram, so its "neighbours" are words that share two letters with it (on hipe-entities-dated,
# "BNS" gave "bons" and "ns", and the query lost its one relevant document from the first ten).
MIN_WORD = 4


class VariantSource(StrEnum):
    LLM = "llm"  # a language model's variant of the query (search/variants.py)
    VOCABULARY = "vocabulary"  # a query word swapped for its neighbour in the collection's vocabulary model
    RESEARCHER = "researcher"  # the query with the researcher's own additions (--add, the synonym map)


class VariantKind(StrEnum):
    """The four kinds of LLM variant (the multilingual hybrid-RAG system's), and the vocabulary model's one."""

    PERIOD_VOCABULARY = "period_vocabulary"  # the words of the time the sources were written
    HISTORICAL_SPELLING = "historical_spelling"  # old or variant spellings of the query's words and names
    OTHER_LANGUAGE = "other_language"  # the query in another language of the collection
    BROADER_NARROWER = "broader_narrower"  # a broader or a narrower concept
    NEIGHBOUR = "neighbour"  # the vocabulary model's
    ADDITIONS = "additions"  # the researcher's chosen words and synonym forms, added to the query


@dataclass(frozen=True)
class Variant:
    query: str
    source: VariantSource
    kind: VariantKind
    why: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"query": self.query, "source": str(self.source), "kind": str(self.kind), "why": self.why}


@dataclass
class Expanded:
    """The fused ranking, what was searched, and each query's own ranking (the original first)."""

    ranking: Ranking
    searched: str  # the original query with the synonym map's forms and the chosen neighbours added
    rankings: list[tuple[str, Variant | None, Ranking]]  # (name, variant or None for the original, its ranking)
    weights: dict[str, float]
    synonyms: list[Applied] = field(default_factory=list)
    added: tuple[str, ...] = ()
    filter_expression: str | None = None
    allowed: int | None = None  # documents the boolean filter let through


def with_additions(query: str, synonyms: SynonymMap | None, added: Sequence[str]) -> tuple[str, list[Applied]]:
    """The query with the synonym map's forms and the researcher's chosen words appended (each once)."""
    applied: list[Applied] = []
    if synonyms is not None:
        query, applied = synonyms.apply(query)
    have = set(words(query))
    extra = [w for w in dict.fromkeys(added) if w.strip() and not set(words(w)) <= have]
    return (query + " " + " ".join(extra) if extra else query), applied


def vocabulary_variants(
    query: str,
    vocabulary: Vocabulary,
    n: int,
    min_similarity: float,
    min_spelling: float = SPELLING_RATIO,
    per_word: int = 10,
) -> list[Variant]:
    """Up to `n` variants of `query`, each the query with one neighbour of one of its words added (the closest
    first): a neighbour in the collection's vocabulary model (cosine at least `min_similarity`) that is also
    spelled like the word (rapidfuzz ratio of the folded forms at least `min_spelling`): its OCR misreadings,
    splits and joins, old spellings ("gouvernemens", "deparis"), which BM25 cannot match and the researcher would
    otherwise add by hand. The word is kept, not replaced: measured on hipe-entities-dated (100 queries), variants
    that replaced an entity's name by its neighbours all kept the query's year, agreed on documents of that year
    that do not name the entity, and took R@10 from 0.909 (hybrid) to 0.553. A neighbour that folds to a word of
    the query, or only adds or drops up to two letters at its end (an inflection: the stemmer finds it), is left
    out, since it searches what the query already searches; so are words, and neighbours, of fewer than `MIN_WORD`
    letters."""
    query_words = list(dict.fromkeys(words(query)))
    folded = {fold_key(w) for w in query_words}
    candidates: list[tuple[float, str, str]] = []
    for w in query_words:
        fw = fold_key(w)
        if len(fw) < MIN_WORD:
            continue
        for nb in vocabulary.neighbours(w, per_word):
            fn = fold_key(nb.word)
            if nb.similarity < min_similarity or fn in folded or len(fn) < MIN_WORD:
                continue
            if (fn.startswith(fw) or fw.startswith(fn)) and abs(len(fn) - len(fw)) <= 2:
                continue
            if fuzz.ratio(fw, fn) < min_spelling:
                continue
            candidates.append((nb.similarity, w, nb.word))
    candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
    out: list[Variant] = []
    for similarity, w, neighbour in candidates[:n]:
        out.append(
            Variant(
                f"{query} {neighbour}",
                VariantSource.VOCABULARY,
                VariantKind.NEIGHBOUR,
                f"{w} + {neighbour} (cosine {similarity:.2f}, {vocabulary.count(neighbour)} occurrences)",
            )
        )
    return out


def search_expanded(
    retriever: Retriever,
    request: SearchRequest,
    variants: Sequence[Variant] = (),
    *,
    synonyms: SynonymMap | None = None,
    added: Sequence[str] = (),
    filter_expression: str | None = None,
    original_weight: float = 1.0,
) -> Expanded:
    """Search the query (with its additions) and each variant under the same filter, and fuse the rankings by
    weighted RRF; without variants, the original's ranking as it is."""
    searched, applied = with_additions(request.query, synonyms, added)
    # The additions are a variant of their own, fused with the query as written: appended to the query itself they
    # turned the phrase channel's whole-query phrase into one no document holds, and the search narrowed.
    if searched != request.query:
        why = "the query with your additions (" + ", ".join([*(f for a in applied for f in a.added), *added]) + ")"
        variants = [Variant(searched, VariantSource.RESEARCHER, VariantKind.ADDITIONS, why), *variants]
    flt, allowed = request.filter, None
    if filter_expression:
        expr = boolean.parse(filter_expression)
        flt = boolean.allow_list(expr, retriever.collection.store, request.filter)
        allowed = len(flt.doc_ids)
    depth = max(request.k, EACH_DEPTH) if variants else request.k
    rankings: list[tuple[str, Variant | None, Ranking]] = []
    for i, (query, variant) in enumerate([(request.query, None), *((v.query, v) for v in variants)]):
        name = ORIGINAL if variant is None else f"variant {i}"
        if allowed == 0:  # nothing satisfies the filter: an empty allow-list would mean "everything"
            ranking = Ranking(
                documents=[],
                params={
                    "query": query,
                    "k": request.k,
                    "filter": flt.to_dict(),
                    "channels": list(request.channels or ()),
                    "active_channels": [],
                },
            )
        else:
            ranking = retriever.search(replace(request, query=query, k=depth, filter=flt))
        rankings.append((name, variant, ranking))
    weights = {name: 1.0 for name, _, _ in rankings}
    if len(rankings) > 1:
        weights[ORIGINAL] = original_weight * (len(rankings) - 1)
    fused = rankings[0][2] if len(rankings) == 1 else _fuse(rankings, weights, retriever.settings.rrf_k, request.k)
    fused.params["expansion"] = {
        "searched": searched,
        "variants": [v.to_dict() for _, v, _ in rankings if v is not None],
        "weights": weights,
        "filter_expression": filter_expression,
        "allowed": allowed,
    }
    return Expanded(fused, searched, rankings, weights, applied, tuple(added), filter_expression, allowed)


def _fuse(
    rankings: list[tuple[str, Variant | None, Ranking]], weights: dict[str, float], rrf_k: int, k: int
) -> Ranking:
    """The variants' document rankings fused by weighted RRF; each document keeps the channel evidence and cited
    chunk of the query that ranked it best (the original on a tie)."""
    fused = rrf({name: r.doc_ids() for name, _, r in rankings}, rrf_k, weights)
    best: dict[str, RankedDocument] = {}
    for _, _, r in rankings:
        for d in r.documents:
            if d.doc_id not in best or d.rank < best[d.doc_id].rank:
                best[d.doc_id] = d
    docs = [
        RankedDocument(f.key, i + 1, f.score, best[f.key].channels, best[f.key].best_chunk_id, best[f.key].window)
        for i, f in enumerate(fused[:k])
    ]
    original = rankings[0][2]
    params = original.params.copy()
    params["k"] = k
    params["variant_ranks"] = {
        f.key: {name: r.doc_ids().index(f.key) + 1 for name, _, r in rankings if f.key in set(r.doc_ids())}
        for f in fused[:k]
    }
    return Ranking(docs, original.channel_hits, original.field_hits, params)
