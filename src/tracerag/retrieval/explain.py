"""A ranking as plain data: what `--explain` shows and `--json` prints (its schema: docs/guide/search.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tracerag.collection import Collection
from tracerag.engine.text_index import language_of
from tracerag.ingest.alto_regions import NO_BOXES, check_base, page_regions
from tracerag.model import Document, Hit, RankedDocument, Ranking
from tracerag.retrieval.kwic import rarity, snippets
from tracerag.text import TITLE_PREFIX_CHARS, document_title

if TYPE_CHECKING:
    from tracerag.store import DocumentStore, StoredChunk

SCHEMA_VERSION = 2  # 2: results' `score` (was `rrf_score`: the fused score is not always RRF's), params.fusion


def explain(
    ranking: Ranking, collection: Collection, *, channel_depth: int = 20, iiif_base: str | None = None
) -> dict[str, Any]:
    """Every result with its fused rank and RRF score, each channel that found it (rank, score, chunk; for a
    lexical channel also the text field that ranked the chunk and its rank there), its best chunk with the exact
    character span into the document text, and the metadata filters act on. `channel_rankings` holds each
    channel's top chunks before fusion, `field_rankings` each lexical channel's fields before they were merged.

    The engine and the store are two files: while a writer replaces a document, a reader can see the engine's
    old chunks after the store already holds the new ones. Such a result is left out (and counted in
    `params.dropped_in_flux`) rather than shown with a span that no longer exists.

    Each result's `regions` are where its best chunk lies on the page scans (`ingest/alto_regions.py`), with an
    IIIF link when an image base is known (`iiif_base`, else `regions.iiif_base`; a document's own source.iiif
    first); a collection that keeps no String boxes has none, and `params.regions` says so.
    """
    store = collection.store
    found = _Found.read(ranking, store)
    regions = collection.settings.regions
    base = check_base(iiif_base) or regions.iiif_base
    has_boxes = store.keeps_boxes()
    results: list[dict[str, Any]] = []
    dropped = 0
    for d in ranking.documents:
        if not found.complete(d):
            dropped += 1
            continue
        doc, best = found.docs[d.doc_id], found.chunks[d.best_chunk_id]
        shown = []
        if has_boxes:  # where the best chunk lies on the page scans
            boxes = store.boxes_in(d.doc_id, best.start, best.end)
            shown = [r.to_dict() for r in page_regions(d.doc_id, doc.source, boxes, iiif_base=base, dpi=regions.dpi)]
        results.append(found.result(d, len(results) + 1, shown))
    add_snippets(collection, results, _queries(ranking.params), {i: doc.source for i, doc in found.docs.items()})
    return {
        "schema": SCHEMA_VERSION,
        "collection": str(collection.path),
        "params": ranking.params
        | ({"dropped_in_flux": dropped} if dropped else {})
        | ({} if has_boxes else {"regions": NO_BOXES}),
        "results": results,
        "channel_rankings": {
            name: [_hit_entry(h) for h in sorted(hits, key=lambda h: h.rank)[:channel_depth]]
            for name, hits in ranking.channel_hits.items()
        },
        "field_rankings": {
            name: {
                field: [_hit_entry(h) for h in sorted(hits, key=lambda h: h.rank)[:channel_depth]]
                for field, hits in sorted(fields.items())
            }
            for name, fields in ranking.field_hits.items()
        },
    }


@dataclass(frozen=True)
class _Found:
    """What the store holds for a ranking's documents, each kind read in one go: the documents (without their
    text), their OCR estimates, the chunks the results cite, the best chunks' text, the openings that title an
    untitled document; and which field of a lexical channel ranked each chunk, and where."""

    docs: dict[str, Document]
    ocr: dict[str, dict]
    chunks: dict[str, StoredChunk]
    cited: dict[tuple[str, int, int], str]
    openings: dict[tuple[str, int, int], str]
    field_of: dict[tuple[str, str], tuple[str, int]]

    @classmethod
    def read(cls, ranking: Ranking, store: DocumentStore) -> _Found:
        # Which field of a lexical channel ranked a chunk, and where: shown beside the channel's merged rank.
        field_of = {
            (channel, h.chunk_id): (field, h.rank)
            for channel, fields in ranking.field_hits.items()
            for field, hits in fields.items()
            for h in hits
        }
        doc_ids = [d.doc_id for d in ranking.documents]
        docs = store.get_documents(doc_ids, text=False)  # a result shows a span, not a (possibly 200 MB) text
        ocr = store.ocr_estimates(doc_ids)  # the OCR-quality estimate and its parts (ingest/ocr_quality.py)
        chunk_ids = {d.best_chunk_id for d in ranking.documents}
        chunk_ids |= {e.chunk_id for d in ranking.documents for e in d.channels}
        chunks = store.get_chunks(sorted(chunk_ids))
        best = [(c.doc_id, c.start, c.end) for c in (chunks.get(d.best_chunk_id) for d in ranking.documents) if c]
        cited = store.text_spans(best)
        # a document without a title of its own is shown by its first words, as every other page shows it
        openings = store.text_spans(
            (i, 0, TITLE_PREFIX_CHARS) for i, doc in docs.items() if not (doc.title and doc.title.strip())
        )
        return cls(docs, ocr, chunks, cited, openings, field_of)

    def complete(self, d: RankedDocument) -> bool:
        """Whether the store holds the document and every chunk its result cites (see `explain`: in flux)."""
        return (
            d.doc_id in self.docs
            and d.best_chunk_id in self.chunks
            and all(e.chunk_id in self.chunks for e in d.channels)
        )

    def result(self, d: RankedDocument, rank: int, regions: list[dict[str, Any]]) -> dict[str, Any]:
        """One result of `explain`, its snippets still to add."""
        doc, best = self.docs[d.doc_id], self.chunks[d.best_chunk_id]
        title, title_source = document_title(doc.title, self.openings.get((d.doc_id, 0, TITLE_PREFIX_CHARS)), d.doc_id)
        return {
            "rank": rank,
            "doc_id": d.doc_id,
            "score": round(d.score, 6),  # the fused score, by params.fusion.method
            "corpus": doc.corpus,
            "date": doc.date,
            "language": doc.language,
            "title": title,
            "title_source": title_source,  # "document", "text" (its first words) or "doc_id"
            "window": d.window,
            "source": {k: v for k, v in doc.source.items() if isinstance(v, str | int | float | bool)},
            "fields": doc.fields,
            "ocr": self.ocr.get(d.doc_id),
            "ocr_quality_stated": doc.ocr_quality,  # what the source itself says, if anything
            "best_chunk": {
                "chunk_id": best.id,
                "start": best.start,
                "end": best.end,
                "text": self.cited.get((best.doc_id, best.start, best.end), ""),
            },
            "regions": regions,
            "channels": [
                {
                    "channel": e.channel,
                    "rank": e.rank,
                    "score": round(e.score, 6),
                    "chunk_id": e.chunk_id,
                    "span": [self.chunks[e.chunk_id].start, self.chunks[e.chunk_id].end],
                }
                | _field_entry(self.field_of.get((e.channel, e.chunk_id)))
                for e in sorted(d.channels, key=lambda e: e.channel)
            ],
        }


def _hit_entry(h: Hit) -> dict[str, Any]:
    return {"rank": h.rank, "chunk_id": h.chunk_id, "doc_id": h.doc_id, "score": round(h.score, 6)}


def _field_entry(found: tuple[str, int] | None) -> dict[str, Any]:
    return {} if found is None else {"field": found[0], "field_rank": found[1]}


def fusion_summary(fusion: Mapping[str, Any]) -> str:
    """A ranking's `params["fusion"]` in one line: "combsum (minmax), weights bm25 1.00 · dense 0.53: why"."""
    scales = fusion.get("normalisation")
    if isinstance(scales, Mapping):  # one per channel: "bm25, phrase, date: max; dense: minmax"
        by_scale: dict[str, list[str]] = {}
        for channel, scale in scales.items():
            by_scale.setdefault(scale, []).append(channel)
        scales = "; ".join(f"{', '.join(cs)}: {scale}" for scale, cs in by_scale.items())
    method = fusion["method"] + (f" ({scales})" if scales else "")
    weights = fusion.get("weights")
    shown = ", weights " + " · ".join(f"{c} {w:.2f}" for c, w in weights.items()) if weights else ""
    return f"{method}{shown}: {fusion['why']}"


SNIPPETS = 2  # keyword-in-context windows per result: the best two, so a second group of matched words shows too
SNIPPET_CHARS = 160  # of context each: two lines of an 80-column terminal


def add_snippets(
    col: Collection, results: list[dict[str, Any]], queries: list[str], sources: Mapping[str, Mapping[str, Any]]
) -> None:
    """Give each result its `snippets`: the keyword-in-context windows of its best chunk (`retrieval/kwic.py`),
    each with its document offsets, the matched words' spans, and the line of the source file it starts on
    where the reader recorded how to find it (`line_at`). The windows are chosen by the query terms' IDF in the
    result's own index (`kwic.rarity`): the snippet shows the query's rare words before its function words."""
    stats = col.engine.field_stats(" ".join(queries)) if results else {}
    weights = {field: rarity(field_stats, field) for field, field_stats in stats.items()}
    # the text between the line map's last entry before a chunk and the chunk, to count lines over
    before = {
        r["doc_id"]: (entry[0], r["best_chunk"]["start"])
        for r in results
        if (entry := _entry_before(sources[r["doc_id"]], r["best_chunk"]["start"])) is not None
    }
    leads = col.store.text_spans((doc_id, lo, hi) for doc_id, (lo, hi) in before.items())
    for r in results:
        best, doc_id = r["best_chunk"], r["doc_id"]
        lead = leads.get((doc_id, *before[doc_id]), "") if doc_id in before else ""
        r["snippets"] = [
            {
                "text": sn.text,
                "start": sn.start,
                "end": sn.end,
                "spans": [list(span) for span in sn.spans],
                "cut_before": sn.cut_before,
                "cut_after": sn.cut_after,
                "line": line_at(sources[doc_id], sn.start, best["start"] - len(lead), lead + best["text"]),
            }
            for sn in snippets(
                best["text"],
                queries,
                r["language"],
                width=SNIPPET_CHARS,
                count=SNIPPETS,
                offset=best["start"],
                weights=weights.get(language_of(r["language"])),
            )
        ]


def _entry_before(source: Mapping[str, Any], offset: int) -> list[int] | None:
    found = None
    for entry in source.get("line_offsets") or ():
        if entry[0] > offset:
            break
        found = entry
    return found


def line_at(source: Mapping[str, Any], offset: int, text_start: int, text: str) -> int | None:
    """The line of the source file (`source["file"]`) where the document's character `offset` is, from the map a
    line-based reader records (`source["line_offsets"]`, `ingest/hipe.py`): the last entry's line at or before
    `offset`, plus the runs of whitespace from it to `offset`, counted in `text` (the document's text from
    `text_start`, which must reach back to the entry). None when the reader recorded no map."""
    entry = _entry_before(source, offset)
    if entry is None or entry[0] < text_start:
        return None
    between = text[entry[0] - text_start : offset - text_start]
    runs = sum(1 for i, ch in enumerate(between) if ch.isspace() and (i == 0 or not between[i - 1].isspace()))
    return int(entry[1]) + runs


def searched_queries(result: dict[str, Any]) -> list[str]:
    """Every query a search ran: the one searched (with the researcher's additions) and each variant's."""
    return _queries(result["params"] | ({"expansion": result["expansion"]} if result.get("expansion") else {}))


def _queries(params: Mapping[str, Any]) -> list[str]:
    expansion = params.get("expansion") or {}
    queries = [expansion.get("searched") or params.get("query", "")]
    queries += [v["query"] for v in expansion.get("variants", []) if v.get("query")]
    return [q for q in dict.fromkeys(queries) if q]
