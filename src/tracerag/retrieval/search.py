"""The warm start: run the channels, max-pool to documents, fuse (calibrated weights by default), balance corpora
and time windows."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from tracerag.collection import Collection
from tracerag.config import (
    CHANNELS,
    CalibratedFusion,
    CombMnzFusion,
    CombSumFusion,
    RetrievalSettings,
    RrfFusion,
    WrrfFusion,
)
from tracerag.engine import FieldStats
from tracerag.engine.points import field_language, text_field
from tracerag.errors import ConfigError
from tracerag.ingest import ocr_fixes
from tracerag.model import DateRange, Filter, FusionMethod, FusionRecord, Hit, RankedDocument, Ranking, SearchParams
from tracerag.retrieval import weights as calibration
from tracerag.retrieval.entities import EntityChannel
from tracerag.retrieval.fusion import Method, Normalisation, fuse
from tracerag.retrieval.query_fusion import (
    CANDIDATES,
    DEFAULT_RULE,
    QueryEvidence,
    QueryRule,
    QueryWeights,
    evidence,
    weigh,
)
from tracerag.retrieval.registry import Channel, Prepared, QueryContext, Reading, reading_order, run_order
from tracerag.retrieval.registry import kinds as channel_kinds
from tracerag.retrieval.registry import names as registered_channels
from tracerag.retrieval.window_share import shares, year_of
from tracerag.retrieval.windows import equal_share, parse_window, window_of

KNOWN_CHANNELS = CHANNELS  # the closed set settings are checked against when loaded
# The fusion of `retrieval.fusion = "calibrated"`: CombSUM keeps how far ahead a channel's first documents are,
# which RRF throws away. Each channel's scores are put on one scale as their meaning allows: a lexical score or a
# date's closeness of 0 means "no match", so they are divided by the best one (a document the words found at a
# third of the best score keeps a third); every chunk has a cosine, so the dense channel's scores are min-max
# scaled over what it returned. Min-max for all cost hipe-entities 0.097 nDCG@10: the weakest mention of a name
# fell to 0, below the dense channel's unrelated first documents (docs/guide/evaluation.md: fusion methods). Each
# channel names its scale where it is registered (`ChannelKind.scale`).
CALIBRATED_METHOD = Method.COMBSUM


def calibrated_scales() -> dict[str, Normalisation]:
    """Each registered channel's scale in the calibrated fusion."""
    return {k.name: k.scale for k in channel_kinds()}


CALIBRATED_SCALES = calibrated_scales()  # the built-in channels' (registered when their modules were imported)


@dataclass(frozen=True)
class FusionPlan:
    """How this retriever fuses its channels, and why: shown by `--explain` and kept in the trail."""

    method: Method
    normalisation: Normalisation | dict[str, Normalisation]  # one for all channels, or one per channel
    weights: dict[str, float] | None  # None: every channel 1
    source: str  # "calibration", "settings" or "equal"
    why: str
    # A date the user stated is a constraint, not one more opinion: the date channel weighs as much as all the
    # other channels that acted together (the calibrated fusion; hipe-entities-dated 0.704 -> 0.729 nDCG@10).
    date_weighs_the_rest: bool = False
    # The share of the query's words that name its entities (retrieval/entities.py `name_share`): the entity
    # channel weighs that much more or less, since a name in a question is context the other channels weigh too
    # (piaf-fr, weighing 1: 0.849 -> 0.819 nDCG@10 on 300 questions). Plain RRF takes no weights.
    entity_share: float = 1.0
    # Fusion per query (retrieval/query_fusion.py): the rule that moves the weights by what one query shows, and
    # that query's evidence, set by the search once its channels have run (None: the weights stay as they are).
    rule: QueryRule | None = None
    evidence: QueryEvidence | None = None

    def query_weights(self, channels: Iterable[str], *, moved_only: bool = True) -> QueryWeights | None:
        """This query's weights of `channels` (the date channel aside: a stated date is a constraint), or None
        when the plan has no per-query rule, the query no evidence yet, or (`moved_only`) the rule moved nothing (no
        dense channel beside the words, say)."""
        if self.rule is None or self.evidence is None or self.method is Method.RRF:
            return None
        present = [c for c in channels if c != "date"]
        base = {c: (self.weights or {}).get(c, 1.0) for c in present}
        if "entity" in base and self.entity_share < 1.0:
            base["entity"] *= self.entity_share
        found = weigh(base, present, self.evidence, self.rule)
        return found if not moved_only or any(f != 1.0 for f in found.factors.values()) else None

    def weights_for(self, channels: Iterable[str]) -> dict[str, float] | None:
        """The weights of one fusion of `channels` (those that found something)."""
        present = list(channels)
        # A channel the calibration did not measure (the entity channel, on a collection calibrated before it had
        # entities) weighs 1, as every channel does without a calibration.
        unmeasured = self.source == "calibration" and any(c not in (self.weights or {}) for c in present)
        dated = self.date_weighs_the_rest and "date" in present
        shared = "entity" in present and self.entity_share < 1.0
        query = self.query_weights(present)
        if not (unmeasured or dated or shared or query):
            return self.weights
        weights = {c: (self.weights or {}).get(c, 1.0) for c in present}
        if shared:
            weights["entity"] *= self.entity_share
        if query is not None:
            weights.update(query.weights)
        if dated:
            weights["date"] = sum(w for c, w in weights.items() if c != "date")
        return weights

    def to_dict(self, channels: Iterable[str] = ()) -> FusionRecord:
        channels = list(channels)
        query = self.query_weights(channels, moved_only=False)  # shown also when it looked and moved nothing
        return {
            "method": str(self.method),
            "normalisation": _scales(self.normalisation) if self.method in (Method.COMBSUM, Method.COMBMNZ) else None,
            "weights": self.weights_for(channels),
            "weights_from": self.source,
            "why": self.why
            + (
                "; the date channel weighs as much as the others together"
                if "date" in channels and self.date_weighs_the_rest
                else ""
            )
            + (
                f"; the entity channel weighs the share of the query's words that are names ({self.entity_share:.2f})"
                if "entity" in channels and self.entity_share < 1.0 and self.method is not Method.RRF
                else ""
            )
            + (f"; this query: {query.why}" if query is not None else ""),
            "per_query": query.to_dict() if query is not None else None,
        }


@dataclass(frozen=True)
class SearchRequest:
    query: str
    k: int = 10
    filter: Filter = field(default_factory=Filter)
    channels: tuple[str, ...] | None = None  # None: the settings' channels
    windows: str | None = None  # None: the settings' windows; "" disables
    min_ocr_quality: float | None = None  # None: the settings' retrieval.min_ocr_quality


@dataclass(frozen=True)
class _Scope:
    """What one request searches: its defaults resolved, the query as the index has it, the filter with the OCR
    floor, and the filters searched apart (one per corpus asked for, with per-corpus depth)."""

    k: int
    channels: tuple[str, ...]
    windows: str | None
    query: str
    min_ocr: float | None
    flt: Filter
    nothing_passes: bool  # the OCR floor admits no document
    groups: list[Filter]


@dataclass(frozen=True)
class _Pool:
    """The channels' rankings at the depth that filled the pool, their fusion and the plan that fused them."""

    hits: dict[str, list[Hit]]
    fields: dict[str, dict[str, list[Hit]]]
    docs: list[RankedDocument]
    plan: FusionPlan
    depth: int


class Retriever:
    """Hybrid search over one collection. Configuration comes from the collection's settings."""

    def __init__(self, collection: Collection, settings: RetrievalSettings | None = None):
        self.collection = collection
        self.settings = settings or collection.settings.retrieval  # another fusion for one eval run, say
        self._has_vectors = False
        self._plan: FusionPlan | None = None
        self._years: dict[Filter, dict[int | None, int]] = {}  # documents per year a filter admits, once per filter
        _check_channels(self.settings.channels)

    def search(self, request: SearchRequest) -> Ranking:
        scope = self._scope(request)
        # BM25's term statistics of the query, asked once (by the field merge, and by the fusion per query)
        stats = _Once(lambda: self.collection.engine.field_stats(scope.query))
        prepared = self._prepare(scope, stats)
        # What each channel took from the query, or why it stayed silent (for --explain and the trail).
        reporting = reading_order(channel_kinds(scope.channels))
        readings = {k.name: r for k in reporting if (r := prepared[k.name].reading) is not None}
        running = self._running(scope, prepared)
        plan = self.fusion_plan()
        share = prepared["entity"].share if "entity" in prepared else 1.0
        if share < 1.0:
            plan = replace(plan, entity_share=share)
        pool = self._deepen(scope, [p.channel for p in running if p.channel is not None], plan, stats)
        docs = self._cut(pool.docs, scope.windows, request.k)
        stated = next((p.stated for p in running if p.stated is not None), None)
        params = self._params(request, scope, pool, docs, readings, stated)
        return Ranking(documents=docs, channel_hits=pool.hits, field_hits=pool.fields, params=params)

    def _params(
        self,
        request: SearchRequest,
        scope: _Scope,
        pool: _Pool,
        docs: list[RankedDocument],
        readings: Mapping[str, Reading],
        stated: DateRange | None,
    ) -> SearchParams:
        """The search as run: what `--explain`, `--json`, the API and the trail show of it."""
        chosen = "--windows" if request.windows else "retrieval.windows" if scope.windows else ""
        years = parse_window(scope.windows) if scope.windows else None
        active = [c for c, h in pool.hits.items() if h]
        return {
            "query": request.query,
            "k": request.k,
            "channels": list(scope.channels),
            "active_channels": active,
            "rrf_k": self.settings.rrf_k,
            "fusion": pool.plan.to_dict(active),
            "field_merge": self.settings.field_merge,
            "depth": pool.depth,
            "filter": scope.flt.to_dict() if scope.min_ocr is None else request.filter.to_dict(),
            "min_ocr_quality": scope.min_ocr,
            "query_form": scope.query if scope.query != request.query else None,
            "windows": scope.windows,
            "per_corpus": len(scope.groups) > 1,
            "query_date": [stated.start, stated.end] if stated else None,
            "channel_readings": {name: {"acts": r.acts, "why": r.why} for name, r in readings.items()},
            "time_windows": self.time_windows(docs, scope.flt, years, chosen),
        }

    def _scope(self, request: SearchRequest) -> _Scope:
        """What a request searches, its defaults taken from the settings and checked."""
        if not request.query.strip():
            raise ConfigError("empty query")
        if request.k <= 0:
            raise ConfigError(f"k must be positive, got {request.k}")
        channels = _check_channels(request.channels or self.settings.channels)
        windows = self.settings.windows if request.windows is None else (request.windows or None)
        # The index text of a collection built with the OCR repairs has them: the query meets it in the same form.
        query = ocr_fixes.fix(request.query)[0] if self.collection.settings.ingest.ocr_fixes else request.query
        min_ocr = self.settings.min_ocr_quality if request.min_ocr_quality is None else request.min_ocr_quality
        flt, nothing_passes = self._ocr_floor(request.filter, min_ocr)
        corpora = _disjoint(flt.corpora)
        several = self.settings.per_corpus_depth and len(corpora) > 1
        groups = [flt.narrowed(corpora=(c,)) for c in corpora] if several else [flt]
        return _Scope(request.k, channels, windows, query, min_ocr, flt, nothing_passes, groups)

    def _prepare(self, scope: _Scope, stats: _Once) -> dict[str, Prepared]:
        """Each channel asked for, read against the query (registry order)."""
        ctx = QueryContext(scope.query, self.collection, self.settings, lambda: self.has_vectors, stats)
        return {kind.name: kind.prepare(ctx) for kind in channel_kinds(scope.channels)}

    def _running(self, scope: _Scope, prepared: Mapping[str, Prepared]) -> list[Prepared]:
        """The channels that act, in the order they run; none when the OCR floor admits no document (an empty
        allow-list would mean "no restriction": nothing is searched instead)."""
        if scope.nothing_passes:
            return []
        ordered = run_order(channel_kinds(scope.channels))
        return [prepared[k.name] for k in ordered if prepared[k.name].channel is not None]

    def _deepen(self, scope: _Scope, channels: list[Channel], plan: FusionPlan, stats: _Once) -> _Pool:
        """The channels run and fused, the depth deepened while a channel was cut off by it and documents are
        missing: the pool must hold at least k documents after max-pooling (and k per window when windowing)."""
        depth = max(self.settings.depth, scope.k)
        want = scope.k * (4 if scope.windows else 1)
        for _ in range(4):
            hits, fields, per_group = self._run_channels(scope.query, channels, scope.groups, depth)
            if plan.rule is not None and plan.evidence is None:  # read once: a deeper pool has the same best chunk
                plan = replace(plan, evidence=self._evidence(hits, stats))
            docs = self._fuse_groups(per_group, plan)
            cut_off = any(len(h) >= depth for h in hits.values())
            if len(docs) >= want or not cut_off:
                break
            depth *= 4
        return _Pool(hits, fields, docs, plan, depth)

    def _cut(self, docs: list[RankedDocument], windows: str | None, k: int) -> list[RankedDocument]:
        """The first k documents (an equal share of each time window when windowing), ranked 1..k."""
        if windows:
            years = parse_window(windows)
            spans = self.collection.store.date_spans([d.doc_id for d in docs])
            for d in docs:
                d.window = window_of(spans.get(d.doc_id, (None,))[0], years)
            docs = equal_share(docs, lambda d: d.window or "", k)
        docs = docs[:k]
        for i, d in enumerate(docs):
            d.rank = i + 1
        return docs

    def _evidence(self, hits: dict[str, list[Hit]], once: _Once) -> QueryEvidence:
        """What this query shows about its channels (retrieval/query_fusion.py); the term statistics only when
        BM25 ran (the field merge asked them already)."""
        stats = once() if "bm25" in hits else None
        first = list(dict.fromkeys(h.doc_id for h in sorted(hits.get("dense", []), key=lambda h: h.rank)))
        languages = self.collection.store.languages_of(first[:CANDIDATES]) if stats else {}
        indexes = [field_language(text_field(languages.get(d))) for d in first[:CANDIDATES] if d in languages]
        return evidence(hits, stats, self.settings.bm25_k1, indexes)

    def time_windows(self, docs: list[RankedDocument], flt: Filter, years: int | None, chosen: str) -> dict:
        """Each time window's share of `docs` against its share of the documents `flt` admits (undated ones
        counted as such): how far the search pulls towards some period (`retrieval/window_share.py`)."""
        if flt not in self._years:
            self._years[flt] = self.collection.store.documents_per_year(flt)
        spans = self.collection.store.date_spans([d.doc_id for d in docs])
        found = [year_of(spans[d.doc_id][0]) if d.doc_id in spans else None for d in docs]
        return shares(found, self._years[flt], years, chosen).to_dict()

    def _ocr_floor(self, flt: Filter, minimum: float | None) -> tuple[Filter, bool]:
        """`flt` narrowed to the documents whose estimated OCR quality is at least `minimum`, exactly, as an
        allow-list; and whether no document passes."""
        if minimum is None:
            return flt, False
        if not 0 <= minimum <= 1:
            raise ConfigError(f"the OCR-quality floor is a number from 0 to 1, got {minimum}")
        passing = self.collection.store.ids_with_ocr_at_least(minimum)
        if flt.doc_ids:
            allowed = set(passing)
            passing = [i for i in flt.doc_ids if i in allowed]
        return flt.narrowed(doc_ids=tuple(passing)), not passing

    @property
    def has_vectors(self) -> bool:
        """Whether every chunk has its vector. A collection ingested with --no-dense has none yet, and one whose
        embedding was interrupted has only some: the dense channel stays out of both, since searching part of a
        collection would rank that part first (on ocr-known-item, 1,536 of 8,103 chunks embedded took the hybrid
        from 0.985 to 0.220 nDCG@10). Asked again until true, since `embed_missing` or an ingest may add vectors
        while this retriever lives."""
        if not self._has_vectors:
            store = self.collection.store
            self._has_vectors = (
                bool(self.collection.dim) and store.has_vectors() and not store.count_chunks(without_vectors=True)
            )
        return self._has_vectors

    def entity_channel(self) -> EntityChannel:
        """The entity channel over this collection's stored entities (the query read by the ingest's pipelines)."""
        ctx = QueryContext("", self.collection, self.settings, lambda: self.has_vectors, lambda: {})
        return EntityChannel.of(ctx)

    def _run_channels(
        self, query: str, channels: list[Channel], groups: list[Filter], depth: int
    ) -> tuple[dict[str, list[Hit]], dict[str, dict[str, list[Hit]]], list[dict[str, list[Hit]]]]:
        """Each channel's hits (all groups), each lexical channel's per-field hits (all groups), and each
        group's channel hits (what is fused)."""
        per_group: list[dict[str, list[Hit]]] = []
        fields: dict[str, dict[str, list[Hit]]] = {}
        for flt in groups:
            hits: dict[str, list[Hit]] = {}
            for channel in channels:
                found = channel.search(query, flt, depth, hits)
                for field_name, field_hits in found.fields.items():
                    fields.setdefault(channel.name, {}).setdefault(field_name, []).extend(field_hits)
                hits[channel.name] = found.hits
            per_group.append(hits)
        merged: dict[str, list[Hit]] = {}
        for hits in per_group:
            for name, hs in hits.items():
                merged.setdefault(name, []).extend(hs)
        return merged, fields, per_group

    def fusion_plan(self) -> FusionPlan:
        """The fusion `retrieval.fusion` names; for "calibrated", the weights of the collection's calibration when
        it still describes the collection, else every channel 1 (and why). Decided once per retriever."""
        if self._plan is None:
            self._plan = self._decide_fusion()
        return self._plan

    def _decide_fusion(self) -> FusionPlan:
        chosen = self.settings.ranking
        if not isinstance(chosen, CalibratedFusion):
            return _plan_as_set(chosen)
        method, normalisation = CALIBRATED_METHOD, calibrated_scales()
        rule = DEFAULT_RULE if chosen.query_weights else None
        found, why = calibration.load(self.collection)
        if found is None:
            if self.collection.store.count_documents() < calibration.MIN_DOCUMENTS:
                why = f"too small to calibrate (fewer than {calibration.MIN_DOCUMENTS} documents)"
            return FusionPlan(method, normalisation, None, "equal", f"every channel weighs 1: {why}", True, rule=rule)
        stale = found.staleness(calibration.collection_state(self.collection))
        if stale:
            return FusionPlan(
                method,
                normalisation,
                None,
                "equal",
                f"every channel weighs 1: the calibration was {stale} (run `tracerag calibrate`)",
                True,
                rule=rule,
            )
        return FusionPlan(method, normalisation, dict(found.weights), "calibration", found.summary(), True, rule=rule)

    def _fuse_groups(self, per_group: list[dict[str, list[Hit]]], plan: FusionPlan) -> list[RankedDocument]:
        """One corpus: plain fusion. Several: fuse each corpus, then take an equal share from each."""
        fused = [
            fuse(
                hits,
                self.settings.rrf_k,
                plan.method,
                weights=plan.weights_for(c for c, h in hits.items() if h),
                normalisation=plan.normalisation,
            )
            for hits in per_group
        ]
        if len(fused) == 1:
            return fused[0]
        corpus_of = {d.doc_id: i for i, docs in enumerate(fused) for d in docs}
        everything = sorted((d for docs in fused for d in docs), key=lambda d: (d.rank, -d.score, d.doc_id))
        return equal_share(everything, lambda d: str(corpus_of[d.doc_id]), len(everything))


class _Once:
    """A value computed on first ask and kept: the query's term statistics serve the merge and the fusion."""

    def __init__(self, make: Callable[[], Mapping[str, FieldStats]]):
        self._make = make
        self._value: Mapping[str, FieldStats] | None = None

    def __call__(self) -> Mapping[str, FieldStats]:
        if self._value is None:
            self._value = self._make()
        return self._value


def _plan_as_set(chosen: RrfFusion | WrrfFusion | CombSumFusion | CombMnzFusion) -> FusionPlan:
    """The fusion the settings name, as they name it: plain RRF weighs every channel 1."""
    method = FusionMethod(chosen.method)
    weights = {str(c): w for c, w in chosen.weights.items()} or None if not isinstance(chosen, RrfFusion) else None
    why = f"retrieval.fusion = {str(method)!r}" + (" with retrieval.weights" if weights else "")
    scale = chosen.normalisation if isinstance(chosen, CombSumFusion | CombMnzFusion) else Normalisation.MINMAX
    return FusionPlan(method, scale, weights, "settings" if weights else "equal", why)


def _scales(normalisation: Normalisation | dict[str, Normalisation]) -> str | dict[str, str]:
    if isinstance(normalisation, Normalisation):
        return str(normalisation)
    return {c: str(n) for c, n in normalisation.items()}


def _check_channels(channels: tuple[str, ...]) -> tuple[str, ...]:
    known = registered_channels()
    unknown = set(channels) - set(known)
    if unknown:
        raise ConfigError(f"unknown channels {sorted(unknown)}; expected some of {', '.join(known)}")
    return channels


def _disjoint(corpora: tuple[str, ...]) -> list[str]:
    """The corpora asked for, without repeats and without those inside another one asked for ("letemps/gdl"
    with "letemps"): overlapping groups would return the same document twice."""
    unique = list(dict.fromkeys(corpora))
    return [c for c in unique if not any(c.startswith(p + "/") for p in unique)]
