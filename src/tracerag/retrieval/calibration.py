"""Channel weights calibrated on the collection itself, without labels.

A channel that is weak on a collection (dense on OCR'd known-item spans, say) must not sink what a strong one
found, and no collection comes with relevance judgments. So the collection is made to judge itself: pseudo-queries
are cut from its own documents, each with the document it came from as its one answer, and every channel's
mean reciprocal rank of that answer becomes its weight in the fusion (the best channel 1, the others in
proportion). Three kinds of pseudo-query stand for three ways people search (`KINDS`): a span pasted from a text,
a few of its rarer words, and a short run of adjacent words (a name, a phrase). Each channel is compared with the
best channel on the queries it acted on, so a channel that is silent by design on some queries (the phrase
channel on long ones) is judged where it speaks.

The date channel is not calibrated: it acts only on a date the user stated, and a stated date is the user's
constraint, not evidence for a weight to weigh (its weight stays 1).

The result is stored beside the collection with the collection's state at the time (`retrieval/weights.py`), so a
search can tell when it no longer describes the collection.
"""

from __future__ import annotations

import math
import random
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tracerag.collection import Collection
from tracerag.model import Hit
from tracerag.retrieval.entities import EntityChannel
from tracerag.retrieval.fusion import Method, Normalisation, Normalisations, fuse_scored, max_pool
from tracerag.retrieval.search import CALIBRATED_METHOD, CALIBRATED_SCALES, Retriever, SearchRequest
from tracerag.retrieval.weights import (
    CALIBRATION_FILE,
    MIN_DOCUMENTS,
    SEED,
    Calibration,
    as_dict,
    collection_state,
    load,
    save,
)

__all__ = [
    "CALIBRATION_FILE",
    "KINDS",
    "MIN_DOCUMENTS",
    "QUERIES_PER_KIND",
    "SEED",
    "Calibration",
    "PseudoQuery",
    "as_dict",
    "calibrate",
    "collection_state",
    "load",
    "pseudo_queries",
    "refresh",
    "save",
]

QUERIES_PER_KIND = 100
SPAN_WORDS = 12  # a known-item span: the median of the spans people paste (8-15 words on ocr-known-item)
KEYWORDS = 3
PHRASE_WORDS = 2
UNCALIBRATED = ("date",)  # see the module docstring
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True, slots=True)
class PseudoQuery:
    kind: str  # one of KINDS
    text: str
    doc_id: str  # the document it was cut from: its one answer


KINDS = ("span", "keywords", "phrase")


def pseudo_queries(collection: Collection, per_kind: int = QUERIES_PER_KIND, seed: int = SEED) -> list[PseudoQuery]:
    """Up to `per_kind` queries of each kind, cut from documents drawn with `seed` (one chunk of each). Which
    words are rare is read from the drawn chunks themselves (in how many of them a word occurs), so no word list
    of any language is needed."""
    store = collection.store
    rng = random.Random(seed)
    ids = store.document_ids()
    drawn = rng.sample(ids, min(len(ids), per_kind * len(KINDS)))
    chunks_by_doc: dict[str, list] = {}
    for chunk in store.chunks_of(drawn):
        chunks_by_doc.setdefault(chunk.doc_id, []).append(chunk)
    texts = {d: rng.choice(chunks_by_doc[d]).index_text for d in drawn if d in chunks_by_doc}
    frequency: dict[str, int] = {}
    for text in texts.values():
        for word in {w.casefold() for w in _WORD.findall(text)}:
            frequency[word] = frequency.get(word, 0) + 1
    out: list[PseudoQuery] = []
    order = [d for d in drawn if d in texts]
    for i, doc_id in enumerate(order):
        kind = KINDS[i % len(KINDS)]
        text = _cut(kind, texts[doc_id], frequency, rng)
        if text:
            out.append(PseudoQuery(kind, text, doc_id))
    return out


def _cut(kind: str, text: str, frequency: Mapping[str, int], rng: random.Random) -> str | None:
    if kind == "span":
        words = text.split()
        if len(words) < 3:
            return None
        start = rng.randrange(max(1, len(words) - SPAN_WORDS + 1))
        return " ".join(words[start : start + SPAN_WORDS])
    words = _WORD.findall(text)
    candidates = [i for i, w in enumerate(words) if len(w) >= 3 and not w.isdigit()]
    if not candidates:
        return None
    # rarest first among words other drawn chunks also hold (a word in one chunk only is as often OCR noise as
    # a name); ties at random, so that the draw does not favour any position in the text
    shuffled = rng.sample(candidates, len(candidates))
    ranked = sorted(
        shuffled, key=lambda i: (frequency.get(words[i].casefold(), 0) < 2, frequency.get(words[i].casefold(), 0))
    )
    if kind == "keywords":
        chosen: list[int] = []
        for i in ranked:
            if all(words[i].casefold() != words[j].casefold() for j in chosen):
                chosen.append(i)
            if len(chosen) == KEYWORDS:
                break
        return " ".join(words[i] for i in sorted(chosen))
    first = ranked[0]
    start = min(first, max(0, len(words) - PHRASE_WORDS))
    return " ".join(words[start : start + PHRASE_WORDS])


def calibrate(
    retriever: Retriever,
    per_kind: int = QUERIES_PER_KIND,
    seed: int = SEED,
    progress: Callable[[int, int], None] | None = None,
) -> Calibration | None:
    """Measure every configured channel on the collection's pseudo-queries (None when the collection holds fewer
    than MIN_DOCUMENTS documents). Each query is one search with every channel, read channel by channel."""
    collection = retriever.collection
    if collection.store.count_documents() < MIN_DOCUMENTS:
        return None
    started = time.perf_counter()
    queries = pseudo_queries(collection, per_kind, seed)
    # the dense channel only on a collection whose every chunk has its vector, the entity channel on one with entities
    entities = "entity" in retriever.settings.channels and EntityChannel(collection.store).why_silent() is None
    channels = [
        str(c)
        for c in retriever.settings.channels
        if c not in UNCALIBRATED and (c != "dense" or retriever.has_vectors) and (c != "entity" or entities)
    ]
    ranks: list[dict[str, int | None]] = []  # per query: channel -> rank of the answer (None: not found)
    scored: list[dict[str, list[tuple[str, float]]]] = []
    for n, q in enumerate(queries, start=1):
        ranking = retriever.search(SearchRequest(q.text, k=10, channels=tuple(channels), windows=""))
        per_channel = _documents(ranking.channel_hits)
        scored.append(per_channel)
        ranks.append({c: _rank_of(q.doc_id, per_channel[c]) if c in per_channel else None for c in channels})
        if progress:
            progress(n, len(queries))
    acted = {c: [i for i, r in enumerate(scored) if r.get(c)] for c in channels}
    mrr: dict[str, float] = {}
    reference: dict[str, float] = {}
    weights: dict[str, float] = {}
    for c in channels:
        if not acted[c]:
            continue
        mrr[c] = _mean(_rr(ranks[i][c]) for i in acted[c])
        reference[c] = max(_mean(_rr(ranks[i].get(o)) for i in acted[c]) for o in channels)
        weights[c] = round(mrr[c] / reference[c], 4) if reference[c] > 0 else 0.0
    fused = _fused_mrr(queries, scored, weights)
    counts = {kind: sum(1 for q in queries if q.kind == kind) for kind in KINDS}
    return Calibration(
        weights=weights,
        mrr={c: round(v, 4) for c, v in mrr.items()},
        reference={c: round(v, 4) for c, v in reference.items()},
        acted={c: len(v) for c, v in acted.items() if v},
        queries=counts,
        fused=fused,
        state=collection_state(collection),
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        seconds=round(time.perf_counter() - started, 2),
        seed=seed,
        channels=list(map(str, channels)),
    )


def _documents(hits_by_channel: Mapping[str, Sequence[Hit]]) -> dict[str, list[tuple[str, float]]]:
    return {name: [(e.doc_id, e.score) for e in max_pool(hits)] for name, hits in hits_by_channel.items() if hits}


def _rank_of(doc_id: str, ranking: Sequence[tuple[str, float]]) -> int | None:
    for rank, (d, _) in enumerate(ranking, start=1):
        if d == doc_id:
            return rank
    return None


def _rr(rank: int | None) -> float:
    return 1.0 / rank if rank else 0.0


def _mean(values: Any) -> float:
    values = list(values)
    return math.fsum(values) / len(values) if values else 0.0


# The fusion methods compared on the pseudo-queries (each calibration reports their MRR beside the weights) and on
# the benchmarks (benchmarks/fusion_methods.py): name, method, normalisation, weighed by the calibration or not.
CANDIDATES: tuple[tuple[str, Method, Normalisations, bool], ...] = (
    ("calibrated", CALIBRATED_METHOD, CALIBRATED_SCALES, True),  # the default
    ("rrf", Method.RRF, Normalisation.MINMAX, False),
    ("wrrf-calibrated", Method.WRRF, Normalisation.MINMAX, True),
    ("combsum-per-channel", CALIBRATED_METHOD, CALIBRATED_SCALES, False),
    ("combsum-minmax", Method.COMBSUM, Normalisation.MINMAX, False),
    ("combsum-minmax-calibrated", Method.COMBSUM, Normalisation.MINMAX, True),
    ("combmnz-minmax", Method.COMBMNZ, Normalisation.MINMAX, False),
    ("combmnz-minmax-calibrated", Method.COMBMNZ, Normalisation.MINMAX, True),
    ("combsum-zscore", Method.COMBSUM, Normalisation.ZSCORE, False),
    ("combsum-zscore-calibrated", Method.COMBSUM, Normalisation.ZSCORE, True),
)


def _fused_mrr(
    queries: Sequence[PseudoQuery],
    scored: Sequence[Mapping[str, list[tuple[str, float]]]],
    weights: Mapping[str, float],
) -> dict[str, float]:
    out = {}
    for name, method, normalisation, weighted in CANDIDATES:
        total = 0.0
        for q, rankings in zip(queries, scored, strict=True):
            if not rankings:
                continue
            w = {c: weights.get(c, 1.0) for c in rankings} if weighted else None
            fused = fuse_scored(method, rankings, weights=w, normalisation=normalisation)
            total += _rr(next((i for i, f in enumerate(fused, start=1) if f.key == q.doc_id), None))
        out[name] = round(total / len(queries), 4) if queries else 0.0
    return out


def refresh(collection: Collection, progress: Callable[[int, int], None] | None = None) -> Calibration | None:
    """Calibrate again and save when the stored weights are missing or no longer describe the collection
    (`Calibration.staleness`); the new calibration, or None when nothing was done (still valid, or the collection
    too small to calibrate). Called by the writer at the end of an ingest or an embed."""
    stored, _ = load(collection)
    if stored is not None and stored.staleness(collection_state(collection)) is None:
        return None
    found = calibrate(Retriever(collection), progress=progress)
    if found is not None:
        save(collection, found)
    return found
