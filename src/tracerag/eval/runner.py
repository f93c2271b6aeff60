"""Run retrieval configurations over a benchmark: build (once) the benchmark's collection, search every query
with each named run, and return TREC-style runs. Metrics and reports read these runs; nothing here scores.
"""

from __future__ import annotations

import hashlib
import math
import random
import sys
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tracerag.collection import MANIFEST, OLD_ENGINE, Collection, IngestReport
from tracerag.config import FUSIONS, Settings
from tracerag.errors import CollectionError, ConfigError, TraceError
from tracerag.eval.datasets import Benchmark
from tracerag.eval.trec import Run
from tracerag.llm import StructuredLLM
from tracerag.model import Fusion, Ranking
from tracerag.retrieval import Retriever, SearchRequest, calibration
from tracerag.retrieval.fusion import max_pool


@dataclass(frozen=True)
class RunSpec:
    name: str
    channels: tuple[str, ...]
    windows: str | None = None
    fusion: str | None = None  # retrieval.fusion for this run (None: the settings')
    # query expansion: "vocab" (the collection's vocabulary model), "llm" (variants), "translate" (the query in the
    # collection's other languages)
    expand: tuple[str, ...] = ()
    query_weights: bool | None = None  # retrieval.query_weights for this run (None: the settings')


_ALL = ("bm25", "dense", "date", "phrase")
# Built-in runs: which channels, whether temporal windowing is on, and the fusion. "hybrid" is the default fusion
# (`retrieval.fusion`, calibrated unless set otherwise); "hybrid-rrf" the plain RRF baseline beside it.
RUNS: dict[str, RunSpec] = {
    s.name: s
    for s in (
        RunSpec("bm25", ("bm25",)),
        RunSpec("dense", ("dense",)),
        RunSpec("phrase", ("phrase",)),
        RunSpec("bm25+date", ("bm25", "date")),
        RunSpec("hybrid", _ALL),
        RunSpec("hybrid+windows", _ALL, "5y"),
        RunSpec("hybrid-rrf", _ALL, fusion="rrf"),
        # the default fusion with the calibrated weights for every query (no fusion per query): what it replaced
        RunSpec("hybrid-fixed", _ALL, query_weights=False),
        RunSpec("hybrid-combsum", _ALL, fusion="combsum"),
        RunSpec("hybrid-combmnz", _ALL, fusion="combmnz"),
        # query expansion (retrieval/expansion.py): the hybrid fused by RRF with the query's vocabulary-neighbour
        # variants; with an LLM's variants too (expansion-llm: a model is needed, --llm)
        RunSpec("expansion", _ALL, expand=("vocab",)),
        RunSpec("bm25+expansion", ("bm25",), expand=("vocab",)),
        RunSpec("expansion-llm", _ALL, expand=("llm", "vocab")),
        # the hybrid fused with the query in the collection's other languages (a model is needed, --llm)
        RunSpec("hybrid+translate", _ALL, expand=("translate",)),
        # the entity channel (predicted entities: ingest/entities.py), alone and with the hybrid's channels
        RunSpec("entity", ("entity",)),
        RunSpec("hybrid+entity", (*_ALL, "entity")),
    )
}


def run_specs(names: Sequence[str], extra: dict[str, RunSpec] | None = None) -> list[RunSpec]:
    """Specs of the named runs: the built-in ones, or those of a run configuration file (`extra`)."""
    known = RUNS | (extra or {})
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ConfigError(f"unknown run(s) {unknown}; expected some of {', '.join(known)}")
    return [known[n] for n in names]


def load_run_config(path: Path) -> dict[str, RunSpec]:
    """Named configurations from a TOML file, one table per run:

    [runs.lexical]
    channels = ["bm25", "phrase"]
    [runs.hybrid-10y]
    channels = ["bm25", "dense", "date", "phrase"]
    windows = "10y"
    fusion = "rrf"           # optional: retrieval.fusion for this run
    query_weights = false    # optional: retrieval.query_weights for this run
    """
    from tracerag.retrieval.search import KNOWN_CHANNELS
    from tracerag.retrieval.windows import parse_window

    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read run configurations: {exc}") from exc
    specs = {}
    for name, table in data.get("runs", {}).items():
        channels = table.get("channels")
        if not channels or not isinstance(channels, list) or set(channels) - set(KNOWN_CHANNELS):
            raise ConfigError(f"{path}: runs.{name}.channels must list some of {', '.join(KNOWN_CHANNELS)}")
        unknown_keys = set(table) - {"channels", "windows", "fusion", "query_weights"}
        if unknown_keys:
            raise ConfigError(
                f"{path}: runs.{name}: unknown keys {sorted(unknown_keys)} (channels, windows, fusion, query_weights)"
            )
        windows = table.get("windows")
        if windows is not None:
            parse_window(windows)
        fusion = table.get("fusion")
        if fusion is not None and fusion not in FUSIONS:
            raise ConfigError(f"{path}: runs.{name}.fusion must be one of {', '.join(FUSIONS)}, got {fusion!r}")
        query_weights = table.get("query_weights")
        if query_weights is not None and not isinstance(query_weights, bool):
            raise ConfigError(f"{path}: runs.{name}.query_weights must be true or false, got {query_weights!r}")
        specs[name] = RunSpec(name, tuple(channels), windows, fusion, query_weights=query_weights)
    if not specs:
        raise ConfigError(f"{path}: no [runs.NAME] table")
    return specs


def select_queries(
    benchmark: Benchmark, *, limit: int | None = None, sample: int | None = None, seed: int = 0
) -> list[str]:
    """Query ids to evaluate: those with judgments, in id order, then the first `limit` or a seeded sample."""
    ids = sorted(q for q in benchmark.queries if benchmark.qrels.get(q))
    if sample is not None and sample < len(ids):
        ids = sorted(random.Random(seed).sample(ids, sample))
    if limit is not None:
        ids = ids[:limit]
    return ids


def collection_dir(root: Path, benchmark: Benchmark, settings: Settings) -> Path:
    """One collection per benchmark corpus and index-shaping settings, reused across eval runs."""
    digest = hashlib.sha256(
        (benchmark.name + "\n" + "\n".join(sorted(d.id for d in benchmark.documents))).encode()
    ).hexdigest()[:10]
    return Path(root) / f"{benchmark.name}-{digest}-{settings.index_hash()}"


def build_collection(
    benchmark: Benchmark,
    root: Path,
    settings: Settings,
    *,
    dense: bool,
    progress: Callable[[int, int], None] | None = None,
    embed_progress: Callable[[int, int], None] | None = None,
    entities: bool = False,
    entity_progress: Callable[[str, int, int], None] | None = None,
    notify: Callable[[str], None] | None = None,
) -> tuple[Collection, IngestReport]:
    """Open the benchmark's collection for reading, after ingesting what it lacks (a no-op when it is complete).
    Another eval building the same collection is waited for; once built, evals share it as readers. With
    `entities` (a run names the entity channel), the named entities of chunks not yet looked at are found too:
    a collection built before the channel gets them without being rebuilt or re-embedded. One built by the
    previous embedded engine is converted first (`notify` is told; default: stderr)."""
    path = collection_dir(root, benchmark, settings)
    if made_by_old_engine(path):
        # The harness's own collection, not a user's: converted from its store (minutes at most, no embedding)
        # rather than refused, so that an eval cache built before issue 24 keeps its vectors.
        from tracerag.migrate import migrate_to_embedded

        (notify or _to_stderr)(
            f"{path}: this eval collection was built by the previous embedded engine (Qdrant Edge); converting "
            "it from its document store (the harness's own cache; nothing is embedded again)"
        )
        try:
            migrate_to_embedded(path, settings, wait=True)
        except CollectionError:
            if made_by_old_engine(path):
                raise
            # another eval converted it while this one waited for the writer lock
    with Collection.open(path, settings, mode="write", create=True, wait=True) as col:
        store = col.store
        if dense and col.dim and (not store.has_vectors() or store.count_chunks(without_vectors=True)):
            _adopt_earlier_vectors(col, path)  # only while something is left to embed: a complete build needs none
        report = col.ingest(benchmark.documents, dense=dense, progress=progress)
        if dense and col.dim and col.store.count_chunks(without_vectors=True):
            # built lexically before (a --no-dense eval of the same corpus): embed what lacks a vector now
            col.embed_missing(progress=embed_progress)
        if entities:
            col.find_entities(entity_progress)
        if settings.retrieval.fusion == Fusion.CALIBRATED:
            calibration.refresh(col)  # as an ingest does: the default search of a user's collection is calibrated
    return Collection.open(path, settings, mode="read"), report


def search_all(
    collection: Collection,
    benchmark: Benchmark,
    query_ids: Sequence[str],
    spec: RunSpec,
    *,
    depth: int = 100,
    progress: Callable[[], None] | None = None,
    channel_runs: dict[str, Run] | None = None,
    llm: StructuredLLM | None = None,
) -> Run:
    """One run: query id → [(doc id, score)] best first, `depth` documents each.

    A fused run's score is 1/rank: windowing reorders documents against their fused score, and TREC tools sort by
    score. A one-channel run without windows writes the channel's own scores (each document's best chunk), so that
    score-based fusion (`tracerag fuse --method combsum`) can read them. When `channel_runs` is given, it is filled
    with each channel's own document ranking in the same searches (channel → run, the channel's scores), so that a
    fused run can be rebuilt from its channels by `tracerag fuse`."""
    retrieval = collection.settings.retrieval
    if spec.fusion is not None:
        retrieval = retrieval.model_copy(update={"fusion": spec.fusion})
    if spec.query_weights is not None:
        retrieval = retrieval.model_copy(update={"query_weights": spec.query_weights})
    retriever = Retriever(collection, retrieval)
    own_scores = len(spec.channels) == 1 and not spec.windows and not spec.expand
    expand = _expander(collection, spec, llm) if spec.expand else None
    run: Run = {}
    for qid in query_ids:
        request = SearchRequest(
            benchmark.queries[qid].text, k=depth, channels=spec.channels, windows=spec.windows or ""
        )
        ranking = expand(retriever, request) if expand else retriever.search(request)
        if own_scores:
            run[qid] = strictly_decreasing((d.doc_id, d.channels[0].score) for d in ranking.documents)
        else:
            run[qid] = [(d.doc_id, 1.0 / d.rank) for d in ranking.documents]
        if channel_runs is not None:
            for channel in spec.channels:
                pooled = max_pool(ranking.channel_hits.get(channel, []))
                channel_runs.setdefault(channel, {})[qid] = strictly_decreasing((e.doc_id, e.score) for e in pooled)
        if progress:
            progress()
    return run


def _expander(
    collection: Collection, spec: RunSpec, llm: StructuredLLM | None
) -> Callable[[Retriever, SearchRequest], Ranking]:
    """The search of an expansion run: the query and its variants fused by RRF (`retrieval/expansion.py`). The
    vocabulary model is the collection's own when it has one, else one trained on its documents and kept in the
    cache beside it (an eval never writes into the benchmark's collection); LLM variants and translations need
    `llm`. A run names what it expands with: "llm" here is the variants alone, whatever `expansion.translate`
    says, so that expansion-llm measures what it did."""
    from tracerag.retrieval import vocabulary as vocab
    from tracerag.retrieval.expansion import search_expanded, vocabulary_variants
    from tracerag.search.expansions import collection_span
    from tracerag.search.translations import translations
    from tracerag.search.variants import query_variants

    cfg = collection.settings.expansion
    model = None
    if "vocab" in spec.expand:
        try:
            model = vocab.load(vocab.folder_of(collection))
        except vocab.VocabularyMissing:
            folder = collection.settings.cache_dir / "vocabulary" / collection.path.name
            try:
                model = vocab.load(folder)
            except vocab.VocabularyMissing:
                model = vocab.train(vocab.texts_of(collection.store), cfg)
                vocab.save(model, folder)
    if {"llm", "translate"} & set(spec.expand) and llm is None:
        raise ConfigError(f"run {spec.name!r} asks a model for query variants: give one (--llm or llm.model)")
    languages = collection_span(collection)[0] if "translate" in spec.expand else []

    def search(retriever: Retriever, request: SearchRequest) -> Ranking:
        variants = []
        if llm is not None and "llm" in spec.expand:
            variants += query_variants(llm, request.query, cfg.variants).variants  # a failure: the original alone
        if llm is not None and "translate" in spec.expand:
            variants += translations(llm, request.query, languages).variants
        if model is not None:
            variants += vocabulary_variants(request.query, model, cfg.vocab_variants, cfg.min_similarity)
        return search_expanded(retriever, request, variants, original_weight=cfg.original_weight).ranking

    return search


def strictly_decreasing(ranking: Iterable[tuple[str, float]]) -> list[tuple[str, float]]:
    """A channel's documents with its scores, each made smaller than the one before by the least float step where
    the channel ranked equal scores apart (the date channel breaks its ties by the pool's rank): every TREC tool,
    which sorts by score and then by document id, then reads the channel's own order, scores unchanged to 1e-16."""
    out: list[tuple[str, float]] = []
    for doc_id, score in ranking:
        if out and score >= out[-1][1]:
            score = math.nextafter(out[-1][1], -math.inf)
        out.append((doc_id, score))
    return out


def made_by_old_engine(path: Path) -> bool:
    """Whether `path` holds a collection whose index the previous embedded engine made (its collection.toml names
    that engine, or none: those predate the server engine); an unreadable manifest is left to `Collection.open`."""
    try:
        manifest = tomllib.loads((Path(path) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return False
    return manifest.get("collection", {}).get("engine", OLD_ENGINE) == OLD_ENGINE


def _to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _adopt_earlier_vectors(col: Collection, path: Path) -> None:
    """Embedding is the slow part of a benchmark (~2 chunks/s here): every benchmark collection built before
    lends the vectors of the texts both hold, so a rebuild at another index version or with other settings embeds
    only what changed, and a benchmark sharing documents with another (hipe-entities-dated and hipe-entities
    hold the same corpus; ocr-known-item holds HIPE-2022 as distractors) embeds them once. Another model's
    collection lends nothing."""
    for other in sorted(path.parent.iterdir()):
        if other == path or not Collection.exists(other):
            continue
        try:
            col.adopt_vectors(other)
        except TraceError:
            continue  # another model, or a damaged or unfinished build: nothing to lend
