"""Channel weights calibrated on the collection itself, without labels.

A channel that is weak on a collection (dense on OCR'd known-item spans, say) must not sink what a strong one
found, and no collection comes with relevance judgments. So the collection is made to judge itself:
pseudo-queries of several kinds are made from its own documents, each with the documents that answer it
(`retrieval/pseudo_queries.py`: spans, rare words, word pairs, shuffled spans, its entity names, a model's
questions), and every channel's mean reciprocal rank of the first answer becomes its weight in the fusion (the
best channel 1, the others in proportion). Each channel is compared with the best channel on the queries it acted
on, so a channel that is silent by design on some queries (the phrase channel on long ones) is judged where it
speaks.

Each kind weighs the same, whatever its count (`_balanced`: a query of a kind with n queries counts 1/n), as if
people asked each kind equally often: a kind that came out short (a collection with few rare entity names, a
model that failed on some passages) counts as much as the others. A channel is judged on the queries it acted on
with those counts, so a kind it rarely acts on (the entity channel on spans) counts in proportion to how often it
acts there. The weight is the ratio of these MRRs, not a mean of each kind's ratio: on a kind where every channel
does poorly, or where a channel acted on a handful of queries, the ratio of two small MRRs is mostly noise, and
pooling keeps it from counting as much as a kind the channels tell apart (benchmarks/calibration_kinds.py
compares the ways).

The date channel is not calibrated: it acts only on a date the user stated, and a stated date is the user's
constraint, not evidence for a weight to weigh (its weight stays 1).

The result is stored beside the collection with the collection's state at the time (`retrieval/weights.py`), so a
search can tell when it no longer describes the collection; `kinds` in it says, per kind, how each channel did.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tracerag.collection import Collection
from tracerag.model import Hit
from tracerag.retrieval.entities import EntityChannel
from tracerag.retrieval.fusion import Method, Normalisation, Normalisations, fuse_scored, max_pool
from tracerag.retrieval.pseudo_queries import (
    KEYWORDS,
    KINDS,
    PHRASE_WORDS,
    QUERIES_PER_KIND,
    SPAN_WORDS,
    Asked,
    PseudoQuery,
    Questioner,
    make,
    pseudo_queries,
)
from tracerag.retrieval.search import CALIBRATED_METHOD, CALIBRATED_SCALES, Retriever, SearchRequest
from tracerag.retrieval.weights import (
    CALIBRATION_FILE,
    MIN_DOCUMENTS,
    SEED,
    Calibration,
    KindReport,
    as_dict,
    collection_state,
    load,
    save,
)

__all__ = [
    "CALIBRATION_FILE",
    "KEYWORDS",
    "KINDS",
    "MIN_DOCUMENTS",
    "PHRASE_WORDS",
    "QUERIES_PER_KIND",
    "SEED",
    "SPAN_WORDS",
    "Asked",
    "Calibration",
    "KindReport",
    "Measured",
    "PseudoQuery",
    "Questioner",
    "as_dict",
    "calibrate",
    "collection_state",
    "kind_table",
    "load",
    "measure",
    "pseudo_queries",
    "refresh",
    "save",
    "weigh",
]

UNCALIBRATED = ("date",)  # see the module docstring


@dataclass
class Measured:
    """Every pseudo-query searched with every channel: what the weights and the report are computed from."""

    queries: list[PseudoQuery]
    channels: list[str]
    ranks: list[dict[str, int | None]]  # per query: channel -> rank of its first answer (None: not found)
    scored: list[dict[str, list[tuple[str, float]]]]  # per query: channel -> its documents, scored
    notes: dict[str, str]  # per kind: why fewer queries than asked, or none
    seconds: float


def measure(
    retriever: Retriever,
    per_kind: int = QUERIES_PER_KIND,
    seed: int = SEED,
    progress: Callable[[int, int], None] | None = None,
    questioner: Questioner | None = None,
) -> Measured:
    """Make the pseudo-queries and search each once with every calibrated channel, read channel by channel."""
    started = time.perf_counter()
    collection = retriever.collection
    made = make(collection, per_kind, seed, questioner)
    # the dense channel only on a collection whose every chunk has its vector, the entity channel on one with entities
    entities = "entity" in retriever.settings.channels and EntityChannel(collection.store).why_silent() is None
    channels = [
        str(c)
        for c in retriever.settings.channels
        if c not in UNCALIBRATED and (c != "dense" or retriever.has_vectors) and (c != "entity" or entities)
    ]
    ranks: list[dict[str, int | None]] = []
    scored: list[dict[str, list[tuple[str, float]]]] = []
    for n, q in enumerate(made.queries, start=1):
        ranking = retriever.search(SearchRequest(q.text, k=10, channels=tuple(channels), windows=""))
        per_channel = _documents(ranking.channel_hits)
        scored.append(per_channel)
        ranks.append({c: _rank_of(q.relevant, per_channel[c]) if c in per_channel else None for c in channels})
        if progress:
            progress(n, len(made.queries))
    return Measured(made.queries, channels, ranks, scored, made.notes, time.perf_counter() - started)


def calibrate(
    retriever: Retriever,
    per_kind: int = QUERIES_PER_KIND,
    seed: int = SEED,
    progress: Callable[[int, int], None] | None = None,
    questioner: Questioner | None = None,
) -> Calibration | None:
    """Measure every configured channel on the collection's pseudo-queries (None when the collection holds fewer
    than MIN_DOCUMENTS documents); questions only with a `questioner`. Each query is one search with every
    channel, read channel by channel."""
    collection = retriever.collection
    if collection.store.count_documents() < MIN_DOCUMENTS:
        return None
    measured = measure(retriever, per_kind, seed, progress, questioner)
    mrr, reference, weights = weigh(measured)
    queries, kinds = measured.queries, _kind_of(measured.queries)
    acted = {c: sum(1 for r in measured.scored if r.get(c)) for c in measured.channels}
    return Calibration(
        weights=weights,
        mrr={c: round(v, 4) for c, v in mrr.items()},
        reference={c: round(v, 4) for c, v in reference.items()},
        acted={c: n for c, n in acted.items() if n},
        queries={kind: len(kinds.get(kind, [])) for kind in KINDS},
        fused=_fused_mrr(queries, measured.scored, weights),
        state=collection_state(collection),
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        seconds=round(measured.seconds, 2),
        kinds=kind_table(measured, weights),
        seed=seed,
        channels=list(measured.channels),
    )


def weigh(measured: Measured) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """Each channel's kind-balanced MRR on the queries it acted on, the best channel's on the same queries, and
    their ratio: the weight (see the module docstring)."""
    kinds = _kind_of(measured.queries)
    ranks, channels = measured.ranks, measured.channels
    mrr: dict[str, float] = {}
    reference: dict[str, float] = {}
    weights: dict[str, float] = {}
    rr = {o: [_rr(r.get(o)) for r in ranks] for o in channels}
    for c in channels:
        acted = [i for i in range(len(ranks)) if measured.scored[i].get(c)]
        if not acted:
            continue
        mrr[c] = _balanced(acted, rr[c], measured.queries, kinds)
        reference[c] = max(_balanced(acted, rr[o], measured.queries, kinds) for o in channels)
        weights[c] = round(mrr[c] / reference[c], 4) if reference[c] > 0 else 0.0
    return mrr, reference, weights


def _kind_of(queries: Sequence[PseudoQuery]) -> dict[str, list[int]]:
    """Query indexes by kind, in KINDS order."""
    out: dict[str, list[int]] = {}
    for i, q in enumerate(queries):
        out.setdefault(q.kind, []).append(i)
    return {k: out[k] for k in KINDS if k in out}


def _balanced(
    acted: Sequence[int], values: Sequence[float], queries: Sequence[PseudoQuery], kinds: Mapping[str, Sequence[int]]
) -> float:
    """The mean of `values` (by query index) over the `acted` queries, a query of a kind with n queries counting
    1/n: as if every kind were asked equally often, whatever its count."""
    share = {k: 1.0 / len(idx) for k, idx in kinds.items()}
    total = math.fsum(share[queries[i].kind] for i in acted)
    return math.fsum(share[queries[i].kind] * values[i] for i in acted) / total if total else 0.0


def kind_table(measured: Measured, weights: Mapping[str, float]) -> dict[str, KindReport]:
    """Per kind, each channel's MRR where it acted and the default fusion's; every kind is named, an absent one
    with why."""
    kinds = _kind_of(measured.queries)
    out: dict[str, KindReport] = {}
    for kind in KINDS:
        idx = kinds.get(kind, [])
        mrr: dict[str, float] = {}
        acted: dict[str, int] = {}
        for c in measured.channels:
            where = [i for i in idx if measured.scored[i].get(c)]
            if where:
                mrr[c] = round(_mean(_rr(measured.ranks[i][c]) for i in where), 4)
                acted[c] = len(where)
        fused = None
        if idx:
            subset = [measured.queries[i] for i in idx]
            fused = _fused_mrr(subset, [measured.scored[i] for i in idx], weights, only="calibrated")["calibrated"]
        out[kind] = KindReport(len(idx), mrr, acted, fused, measured.notes.get(kind, ""))
    return out


def _documents(hits_by_channel: Mapping[str, Sequence[Hit]]) -> dict[str, list[tuple[str, float]]]:
    return {name: [(e.doc_id, e.score) for e in max_pool(hits)] for name, hits in hits_by_channel.items() if hits}


def _rank_of(relevant: frozenset[str], ranking: Sequence[tuple[str, float]]) -> int | None:
    """The rank of the first document that answers the query."""
    for rank, (d, _) in enumerate(ranking, start=1):
        if d in relevant:
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
    only: str | None = None,
) -> dict[str, float]:
    """Each fusion method's MRR (of `only`, when given), each kind weighing the same."""
    kinds = _kind_of(queries)
    out = {}
    for name, method, normalisation, weighted in CANDIDATES:
        if only is not None and name != only:
            continue
        rr: list[float] = []
        for q, rankings in zip(queries, scored, strict=True):
            if not rankings:
                rr.append(0.0)
                continue
            w = {c: weights.get(c, 1.0) for c in rankings} if weighted else None
            fused = fuse_scored(method, rankings, weights=w, normalisation=normalisation)
            rr.append(_rr(next((i for i, f in enumerate(fused, start=1) if f.key in q.relevant), None)))
        out[name] = round(_balanced(range(len(queries)), rr, queries, kinds), 4)
    return out


def refresh(collection: Collection, progress: Callable[[int, int], None] | None = None) -> Calibration | None:
    """Calibrate again and save when the stored weights are missing or no longer describe the collection
    (`Calibration.staleness`); the new calibration, or None when nothing was done (still valid, or the collection
    too small to calibrate). Called by the writer at the end of an ingest or an embed, which asks no model: the
    question kind is for `tracerag calibrate`, where the cost of the model's calls is asked for."""
    stored, _ = load(collection)
    # a format 1 calibration (no table per kind) is used by searches until this replaces it
    if stored is not None and stored.kinds and stored.staleness(collection_state(collection)) is None:
        return None
    found = calibrate(Retriever(collection), progress=progress)
    if found is not None:
        save(collection, found)
    return found
