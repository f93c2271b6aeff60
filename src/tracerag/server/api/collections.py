"""The collections a server serves (what `tracerag info` shows, with the sub-corpus tree and the OCR-quality summary)
and their documents (full text, metadata, OCR estimate, source link, a cited span and its page regions).

A document id may hold `/`, `#` or spaces: the route takes the rest of the path (`{doc_id:path}`) and looks it
up in the store, never on disk, so no id can reach a file."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from tracerag.collection import Collection
from tracerag.errors import TraceError
from tracerag.ingest.alto_regions import NO_BOXES, check_base, page_regions
from tracerag.retrieval.collection_info import collection_info, collection_summary, corpus_tree
from tracerag.server.deps import CollectionName, DocumentId, State
from tracerag.server.schemas import ERRORS
from tracerag.server.state import NotFoundError
from tracerag.text import document_title

router = APIRouter(tags=["collections"], responses=ERRORS)

# The source keys that hold a document's own link, as the trail's exports read them (trail/export.py).
LINK_KEYS = ("url", "URL", "link")


def web_link(value: Any) -> str | None:
    """`value` when it is an http(s) URL, else None: a link from data is followed only to the web (a
    `javascript:` or `data:` URL is shown as text, never linked)."""
    if isinstance(value, str) and value.strip().lower().startswith(("http://", "https://")):
        return value.strip()
    return None


def source_link(source: dict[str, Any]) -> str | None:
    """The document's own link (its first link key with an http(s) value), or None."""
    return next((link for key in LINK_KEYS if (link := web_link(source.get(key)))), None)


class CorpusSummary(BaseModel):
    name: str = Field(description="The sub-corpus, as a corpus filter takes it.")
    documents: int = Field(description="Documents in the sub-corpus.")
    date_min: str | None = Field(description="Earliest document date (ISO, may be partial).")
    date_max: str | None = Field(description="Latest document date (ISO, may be partial).")
    languages: dict[str, int] = Field(description="Documents per stated language.")
    languages_detected: dict[str, int] = Field(description="Documents per language detected at ingest.")


class CorpusNode(BaseModel):
    name: str = Field(description="Full name: a filter on it admits every sub-corpus below it.")
    label: str = Field(description="The last part of the name.")
    documents: int = Field(description="Documents in it and below it.")
    children: list[CorpusNode] = Field(description="The sub-corpora below it.")


class OcrSummary(BaseModel):
    scored: int = Field(description="Documents with an OCR-quality score.")
    unscored: int = Field(description="Documents estimated without a score (no word list, too short).")
    unestimated: int = Field(description="Documents ingested before estimates were made.")
    min_q1_median_q3_max: list[float] | None = Field(description="The scores' five-number summary (0-1).")
    fixes: dict[str, int] = Field(description="OCR repairs made at ingest, by kind.")


class CollectionSummary(BaseModel):
    """What `tracerag info` shows of a collection."""

    name: str = Field(description="The collection's name in URLs (its folder's name).")
    documents: int = Field(description="Documents in the collection.")
    chunks: int = Field(description="Passages the documents were cut into (what is searched).")
    indexed_points: int = Field(description="Vectors in the index (one per embedded chunk).")
    chunks_without_vectors: int | None = Field(description="Chunks not embedded yet (None: no embedding model).")
    embedding: dict[str, Any] = Field(description="The embedding model (name, version, dimension).")
    engine: str = Field(description="Which engine holds the index: 'tantivy' (embedded) or 'qdrant' (a server).")
    corpora: list[CorpusSummary] = Field(description="Each sub-corpus's summary.")
    languages: dict[str, int] = Field(description="Documents per language over all sub-corpora.")
    date_min: str | None = Field(description="Earliest document date (ISO, may be partial).")
    date_max: str | None = Field(description="Latest document date (ISO, may be partial).")
    read_only: str | None = Field(description="Why the collection is read-only here (None: it is not).")
    activity: dict[str, Any] = Field(description="The writer at work on it and the process serving its index.")


class CollectionInfo(CollectionSummary):
    """A collection in full: its sub-corpus tree, its fusion plan and its OCR-quality summary."""

    corpus_tree: list[CorpusNode] = Field(description="The sub-corpora as a tree (a name's parts separated by `/`).")
    fusion: dict[str, Any] = Field(description="How searches weigh the channels, and why.")
    ocr_quality: dict[str, OcrSummary] | None = Field(
        description="Per sub-corpus (None: the collection was ingested before estimates were made)."
    )


def _summary(name: str, info: dict[str, Any]) -> dict[str, Any]:
    corpora = info["corpora"]
    languages: dict[str, int] = {}
    for c in corpora:
        for lang, n in {**c["languages"], **c["languages_detected"]}.items():
            languages[lang] = languages.get(lang, 0) + n
    lows = [c["date_min"] for c in corpora if c["date_min"]]
    highs = [c["date_max"] for c in corpora if c["date_max"]]
    return {
        **info,
        "engine": info["engine"]["kind"],  # not where: a folder or a server's address is this machine's business
        "name": name,
        "languages": dict(sorted(languages.items(), key=lambda kv: -kv[1])),
        "date_min": min(lows, default=None),
        "date_max": max(highs, default=None),
        "read_only": info["activity"]["read_only"],
    }


class SearchableCollection(CollectionSummary):
    """What a search form offers: the summary and the sub-corpus tree."""

    corpus_tree: list[CorpusNode]


def searchable(name: str, col: Collection) -> SearchableCollection:
    info = collection_summary(col)
    return SearchableCollection(**_summary(name, info), corpus_tree=corpus_tree(info["corpora"]))


def info_of(name: str, col: Collection) -> CollectionInfo:
    info = collection_info(col)
    return CollectionInfo(**_summary(name, info), corpus_tree=corpus_tree(info["corpora"]))


@router.get("/collections", summary="List the collections served", response_model=list[CollectionSummary])
def list_collections(state: State) -> list[CollectionSummary]:
    """A summary of every collection served (what `tracerag info` shows): documents, chunks, languages, dates, engine,
    and why one is read-only. 503 when a collection cannot be read now."""
    out = []
    for name in sorted(state.collections):
        with state.reading(name) as col:
            out.append(CollectionSummary(**_summary(name, collection_summary(col))))
    return out


@router.get("/collections/{name}", summary="One collection in full", response_model=CollectionInfo)
def get_collection(name: CollectionName, state: State) -> CollectionInfo:
    """The collection's summary with its sub-corpus tree, its fusion plan and its OCR-quality summary (`tracerag info`).
    404 when no collection of that name is served."""
    with state.reading(name) as col:
        return info_of(name, col)


class Span(BaseModel):
    start: int = Field(description="Character offset of the span in the document text.")
    end: int = Field(description="Its end (exclusive).")
    text: str = Field(description="The document text of the span.")


class Region(BaseModel):
    page_id: str = Field(description="The page's id in its ALTO file.")
    page_number: int = Field(description="The page's number in the document, from 1.")
    box: list[float] = Field(description="x, y, width, height in `unit`.")
    unit: str | None = Field(description="The unit of `box` (pixel, mm10, inch1200), as the ALTO file states it.")
    strings: int = Field(description="How many ALTO String boxes the region covers.")
    region: str | None = Field(description="The IIIF region parameter.")
    url: str | None = Field(description="The IIIF image of the region (http(s) only).")
    note: str = Field(description="What to know about the region (estimated, cut).")


class DocumentView(BaseModel):
    """A document: its full text, metadata and OCR-quality estimate; with `start`/`end`, the cited span and its
    page regions."""

    collection: str = Field(description="The collection's name.")
    doc_id: str = Field(description="The document's id in the collection.")
    title: str = Field(description="The document's title, else its first words, else its id (`title_source`).")
    title_source: str = Field(description="document, text or doc_id: as a search result's.")
    date: str | None = Field(
        description="The document's date (ISO 8601, may be partial: 1848, 1848-03); None when undated."
    )
    corpus: str = Field(description="The sub-corpus the document belongs to.")
    language: str | None = Field(description="The document's language (ISO 639-1); None when unknown.")
    text: str = Field(description="The document's full text.")
    source: dict[str, str | int | float | bool] = Field(description="The source's plain values (nested ones left out).")
    source_url: str | None = Field(description="The document's own http(s) link, if it has one.")
    fields: dict[str, Any] = Field(description="The document's extra fields, as ingested.")
    ocr: dict[str, Any] | None = Field(description="The OCR-quality estimate and its parts (None: not estimated).")
    ocr_quality_stated: float | None = Field(description="What the source itself says of its OCR, if anything.")
    span: Span | None = Field(description="The cited span, when `start`/`end` were given.")
    regions: list[Region] = Field(description="The span's page regions (empty: no span, or no boxes kept).")
    regions_note: str | None = Field(description="Why there are no page regions, when there cannot be any.")


def document_view(
    name: str, col: Collection, doc_id: str, start: int | None, end: int | None, iiif_base: str | None
) -> DocumentView:
    """The document `doc_id` of `col`, its span checked against its text (a TraceError naming start/end)."""
    store = col.store
    doc = store.get_documents([doc_id]).get(doc_id)
    if doc is None:
        raise NotFoundError(f"document {doc_id!r}: not in collection {name!r}")
    base = check_base(iiif_base, "iiif_base") or col.settings.regions.iiif_base
    span = None
    if start is not None or end is not None:
        lo = 0 if start is None else start
        hi = len(doc.text) if end is None else end
        if not 0 <= lo <= hi <= len(doc.text):
            raise TraceError(
                f"start/end: {lo}..{hi} is not a span of {doc_id!r} (its text has {len(doc.text)} characters)"
            )
        span = Span(start=lo, end=hi, text=doc.text[lo:hi])
    keeps = store.keeps_boxes()
    regions = (
        [
            Region(**r.to_dict())
            for r in page_regions(
                doc_id,
                doc.source,
                store.boxes_in(doc_id, span.start, span.end),
                iiif_base=base,
                dpi=col.settings.regions.dpi,
            )
        ]
        if keeps and span is not None
        else []
    )
    for r in regions:
        r.url = web_link(r.url)
    title, title_source = document_title(doc.title, doc.text, doc.id)  # as its search result showed it
    return DocumentView(
        collection=name,
        doc_id=doc.id,
        title=title,
        title_source=title_source,
        date=doc.date,
        corpus=doc.corpus,
        language=doc.language,
        text=doc.text,
        source={k: v for k, v in doc.source.items() if isinstance(v, str | int | float | bool)},
        source_url=source_link(doc.source),
        fields=doc.fields,
        ocr=store.ocr_estimates([doc_id]).get(doc_id),
        ocr_quality_stated=doc.ocr_quality,
        span=span,
        regions=regions,
        regions_note=None if keeps else NO_BOXES,
    )


@router.get(
    "/collections/{name}/documents/{doc_id:path}",
    summary="One document: text, metadata, a cited span",
    response_model=DocumentView,
)
def get_document(
    name: CollectionName,
    doc_id: DocumentId,
    state: State,
    start: Annotated[int | None, Query(ge=0, description="Start of a cited span (character offset).")] = None,
    end: Annotated[int | None, Query(ge=0, description="End of a cited span (exclusive).")] = None,
    iiif_base: Annotated[str | None, Query(description="IIIF image base for the span's page regions.")] = None,
) -> DocumentView:
    """The document's full text, metadata, source link and OCR estimate; with `start`/`end`, the cited span and its page
    regions (IIIF). 404 for an unknown collection or document; 400 when start/end are not a span of its text."""
    with state.reading(name) as col:
        return document_view(name, col, doc_id, start, end, iiif_base)
