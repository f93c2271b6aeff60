"""The nouns every layer shares: documents, chunks, filters, hits and rankings; and those of a research run that
the agent, the judge and the trail all speak of: a verdict, a sub-question, a ranked source, a run's status.
Plain data, no I/O."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Literal, NamedTuple, TypedDict


@dataclass(frozen=True, slots=True)
class DateRange:
    """A closed range of ISO days. A partial historical date (`1887`, `1887-05`) is the range it covers."""

    start: str  # "1887-01-01"
    end: str  # "1887-12-31"

    def overlaps(self, other: DateRange) -> bool:
        return self.start <= other.end and other.start <= self.end


_HASH_SLICE = 1 << 20  # characters of a document's text encoded at a time by `Document.content_hash`


@dataclass(slots=True)
class Document:
    """One source as read: `text` is kept exactly; every chunk offset points into it."""

    id: str
    text: str
    corpus: str = "default"
    title: str | None = None
    date: str | None = None  # ISO, possibly partial: "1887", "1887-05", "1887-05-17"
    language: str | None = None  # ISO 639-1 ("fr", "de", "en", ...)
    source: dict[str, Any] = field(default_factory=dict)  # publication, file, page, URL, IIIF/ark id...
    fields: dict[str, Any] = field(default_factory=dict)  # structured fields (catalog records)
    ocr_quality: float | None = None

    def content_hash(self) -> str:
        """Hash of everything that shapes the index; equal hash means re-ingest is a no-op.

        It is the sha256 of the JSON list [text, corpus, title, date, language, source, fields, ocr_quality], with
        the text encoded a slice at a time: JSON escapes a string character by character, so the slices join into
        the same bytes, and a 200 MB text is never copied whole (a JSON copy and a UTF-8 copy doubled its memory).
        """
        rest = json.dumps(
            [self.corpus, self.title, self.date, self.language, self.source, self.fields, self.ocr_quality],
            sort_keys=True,
            ensure_ascii=False,
            default=str,
        )
        digest = hashlib.sha256(b'["')
        for i in range(0, len(self.text), _HASH_SLICE):
            digest.update(json.dumps(self.text[i : i + _HASH_SLICE], ensure_ascii=False)[1:-1].encode("utf-8"))
        digest.update(b'", ' + rest[1:].encode("utf-8"))
        return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class Chunk:
    """A span of a document. `text` is `document.text[start:end]`; `index_text` is what the engine indexes."""

    doc_id: str
    n: int
    start: int
    end: int
    text: str
    index_text: str

    @property
    def id(self) -> str:
        return chunk_id(self.doc_id, self.n)


def chunk_id(doc_id: str, n: int) -> str:
    """Stable chunk id: a trail written today points at the same span tomorrow."""
    return f"{doc_id}#{n}"


@dataclass(frozen=True, slots=True)
class Filter:
    """What a search may return. One type; each engine translates it.

    corpora: allowed sub-corpora; date_from/date_to: inclusive ISO bounds, a document matches when its date
    range overlaps them; languages: allowed languages; fields: exact values of structured fields;
    doc_ids: an allow-list of documents.
    """

    corpora: tuple[str, ...] = ()
    date_from: str | None = None
    date_to: str | None = None
    languages: tuple[str, ...] = ()
    fields: tuple[tuple[str, str], ...] = ()
    doc_ids: tuple[str, ...] = ()

    def is_empty(self) -> bool:
        return not (self.corpora or self.date_from or self.date_to or self.languages or self.fields or self.doc_ids)

    def narrowed(self, **changes: Any) -> Filter:
        from dataclasses import replace

        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "corpora": list(self.corpora),
            "date_from": self.date_from,
            "date_to": self.date_to,
            "languages": list(self.languages),
            "fields": dict(self.fields),
            "doc_ids": list(self.doc_ids),
        }


class Hit(NamedTuple):
    """One chunk found by one channel, at a rank (1-based) with that channel's own score. A named tuple: a search
    makes hundreds of them (each channel's hits, again when a channel's language fields merge)."""

    chunk_id: str
    doc_id: str
    channel: str
    rank: int
    score: float


@dataclass(frozen=True, slots=True)
class ChannelEvidence:
    """How one channel saw a document: its rank among documents, its score, and the chunk that earned it."""

    channel: str
    rank: int
    score: float
    chunk_id: str
    doc_id: str


# -- the names of a search: each closed set defined here, once, and used by the settings, the retrieval, the trail,
# the CLI and the API (the lowest layer that needs them; StrEnum members are their strings, in JSON and TOML too)


class ChannelName(StrEnum):
    """The built-in retrieval channels, in the order the settings list them (`retrieval.channels`). A search may
    run any channel the retrieval's registry holds (tracerag.retrieval.registry); the settings name these."""

    BM25 = "bm25"
    DENSE = "dense"
    DATE = "date"
    PHRASE = "phrase"
    ENTITY = "entity"


class FusionMethod(StrEnum):
    """How the channels' document rankings (each document by its best chunk) become one: the names `tracerag fuse
    --method` takes, and the methods a trail's fusion records."""

    RRF = "rrf"  # Cormack et al. 2009: Σ 1 / (k + rank), every channel 1
    WRRF = "wrrf"  # weighted RRF: Σ w / (k + rank)
    COMBSUM = "combsum"  # Fox & Shaw 1994: Σ w · normalised score
    COMBMNZ = "combmnz"  # Fox & Shaw 1994: (number of rankings that hold the key) · CombSUM


class Fusion(StrEnum):
    """The fusions `retrieval.fusion` may name: the calibrated one (CombSUM, each channel weighed by the
    collection's calibration) or one method as it is."""

    CALIBRATED = "calibrated"
    RRF = FusionMethod.RRF.value
    WRRF = FusionMethod.WRRF.value
    COMBSUM = FusionMethod.COMBSUM.value
    COMBMNZ = FusionMethod.COMBMNZ.value


class Normalisation(StrEnum):
    """How a ranking's scores are put on one scale before CombSUM / CombMNZ (Lee 1997 used min-max)."""

    MINMAX = "minmax"  # (s - min) / (max - min); a ranking whose scores are all equal gives each 1
    ZSCORE = "zscore"  # (s - mean) / standard deviation; all equal gives each 0
    MAX = "max"  # s / max, for scores whose 0 means "no match" (BM25, a date's closeness); max <= 0: min-max


class FieldMerge(StrEnum):
    """How a lexical channel's per-field rankings (one text index per language) become its one ranking
    (`retrieval.field_merge`; tracerag.retrieval.fields)."""

    MAX_RAW_SCORE = "max_raw_score"  # every field's hits by their raw BM25 score, as the engine once merged them
    QUERY_IDF = "query_idf"  # each field's scores over the query's IDF mass in that field


@dataclass(slots=True)
class RankedDocument:
    """A document in a fused ranking, with the provenance of every channel that found it."""

    doc_id: str
    rank: int
    score: float
    channels: list[ChannelEvidence]
    best_chunk_id: str
    window: str | None = None  # the time window that admitted it, when windowing is on


class ReadingRecord(TypedDict):
    """What a channel took from the query, or why it stayed silent, as a search's params hold it."""

    acts: bool
    why: str


class FusionRecord(TypedDict):
    """How a search fused its channels (retrieval/search.py's `FusionPlan.to_dict`), as its params hold it."""

    method: str  # a FusionMethod
    normalisation: str | dict[str, str] | None  # one Normalisation for every channel, one per channel, or none (RRF)
    weights: dict[str, float] | None
    weights_from: str  # "calibration", "settings" or "equal"
    why: str
    per_query: dict[str, Any] | None  # retrieval/query_fusion.py's `QueryWeights.to_dict`


class SearchParams(TypedDict, total=False):
    """A search as run, its keys declared once: what `--explain`, `--json`, the API and the trail show of it.
    `Retriever.search` writes the first block; a search with nothing to search (a filter no document satisfies)
    only some of it; the expansion adds its own keys (retrieval/expansion.py), the recorded search its run."""

    query: str
    k: int
    channels: list[str]
    active_channels: list[str]  # the channels that found something, in the order they ran
    rrf_k: int
    fusion: FusionRecord
    field_merge: str  # a FieldMerge
    depth: int  # chunks per channel at the depth that filled the pool
    filter: dict[str, Any]
    min_ocr_quality: float | None
    query_form: str | None  # the query as the index has it, when the OCR repairs changed it
    windows: str | None
    per_corpus: bool
    query_date: list[str] | None  # [start, end] of the date the query states
    channel_readings: dict[str, ReadingRecord]
    time_windows: dict[str, Any]  # retrieval/window_share.py's `Shares.to_dict`
    variant_ranks: dict[str, dict[str, int]]  # document -> query variant -> its rank there (expanded searches)
    expansion: dict[str, Any]  # what the expansion searched, its variants and weights
    run_id: str  # the trail that records the search


@dataclass(slots=True)
class Ranking:
    """A fused list of documents plus the per-channel rankings that made it (kept for --explain and trails)."""

    documents: list[RankedDocument]
    channel_hits: dict[str, list[Hit]] = field(default_factory=dict)
    # channel → text field → that field's own ranking (ranks within the field), for the channels that search one
    # text index per language (bm25, phrase): what their `channel_hits` were merged from, kept for the trail.
    field_hits: dict[str, dict[str, list[Hit]]] = field(default_factory=dict)
    params: SearchParams = field(default_factory=lambda: SearchParams())

    def doc_ids(self) -> list[str]:
        return [d.doc_id for d in self.documents]


# -- a research run: what the agent decides, the judge will decide, and the trail records ------------------------


class Verdict(StrEnum):
    # What a document is to the research question, on the evidence of one of its chunks. (No docstring: the review
    # answer's JSON Schema carries this enum, and a docstring would become part of every review prompt.)
    ACCEPT = "accept"  # a source: it bears on the question, and a quoted passage shows it
    HOLD = "hold"  # undecided (or no usable verdict, or an accept without evidence): judged again later
    REJECT = "reject"  # not a source; the document's other chunks may still be found and judged


class RunStatus(StrEnum):
    COMPLETE = "complete"  # the agent ran to the end
    NO_LLM = "no_llm"  # only the hybrid warm start: no language model was configured
    TRUNCATED = "truncated"  # a limit ended it early; the result holds what was found
    FAILED = "failed"  # an exception ended it; the result holds the warm start


@dataclass(frozen=True, slots=True)
class SubQuestion:
    """A part of a research question, searched on its own: aimed at one sub-corpus (None: all), with the names
    of people, places and organisations it turns on, as the question writes them."""

    question: str
    """The sub-question, in the question's language."""
    target_corpus: str | None = None
    """The sub-corpus it is aimed at (None: all)."""
    key_entities: tuple[str, ...] = ()
    """Names of people, places and organisations it turns on, as the question writes them."""

    # Read strictly wherever pydantic validates it (trail events): an unknown key is a damaged trail.
    __pydantic_config__ = {"extra": "forbid", "use_attribute_docstrings": True}

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "target_corpus": self.target_corpus, "key_entities": list(self.key_entities)}


# accepted by the agent, filled in from the fused warm starts, or a plain search's own ranking (`tracerag search`,
# no agent: "warm_start" there, as its runs before said, told a reader of the trail or an export of an agent)
SourceOrigin = Literal["agent", "warm_start", "search"]


@dataclass(frozen=True, slots=True)
class RankedSource:
    """One place of a run's final ranking: the document, the chunk whose verdict placed it, the sub-questions that
    accepted it with their reasons, and the character span of its evidence in the document."""

    rank: int
    """Its place in the final ranking, from 1."""
    doc_id: str
    """The document's id in the collection."""
    chunk_id: str | None
    """The chunk whose verdict placed it (None: none judged)."""
    origin: SourceOrigin
    """agent (accepted by the agent), warm_start (filled in from the fused searches) or search (a plain search)."""
    accepted_by: tuple[int, ...] = ()  # the sub-questions that accepted the document
    """The sub-questions (0-based) that accepted it."""
    reasons: tuple[str, ...] = ()
    """The agent's reasons, one per accepting sub-question."""
    span: tuple[int, int] | None = None
    """The quoted evidence's character span in the document."""
    promoted_from_hold: bool = False
    """True when it was held and accepted on re-evaluation."""
    score: float = 0.0
    """Its score in the ranking (the fused score for a filled-in source)."""

    __pydantic_config__ = {"extra": "forbid", "use_attribute_docstrings": True}

    def to_dict(self) -> dict[str, Any]:
        """As JSON takes it (tuples as lists)."""
        out = asdict(self)
        out["accepted_by"], out["reasons"] = list(self.accepted_by), list(self.reasons)
        out["span"] = list(self.span) if self.span is not None else None
        return out
