"""What more than one command prints or shows progress for: an ingest (its progress and report), embedding
missing vectors, a search result. `ingest`, `demo` and `search` all use them, and command modules do not import
each other, so they live here, over the app module's consoles and progress bars."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rich.text import Text

from tracerag.cli.app import counted, data_text, err, out, progress_bar, write_json
from tracerag.text import json_dumps, safe_line

# Every command module imports this one, `--help` included: the library loads inside the functions that use it.
if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

    from tracerag.collection import Collection, IngestReport
    from tracerag.retrieval.weights import Calibration


class IngestProgress:
    """The progress of an ingest on a bar: documents and chunks, and how far into a document too large for one
    sub-batch of chunks. `update` and `within` are `Collection.ingest`'s `progress` and `document_progress`; the
    bar shows from `start`, once the collection is open (a refusal to open it is then one line on stderr)."""

    def __init__(self, progress: Progress):
        self._progress = progress
        self._task = progress.add_task("ingest", total=None, extra="")
        self._chunks = 0  # chunks indexed so far

    def start(self) -> None:
        self._progress.start()

    def update(self, docs: int, chunks: int) -> None:
        self._progress.update(self._task, completed=docs, extra=counted(chunks, "chunk"))
        self._chunks = chunks

    def within(self, doc_id: str, done: int, total: int) -> None:
        if done < total:
            self._progress.update(
                self._task, extra=f"{counted(self._chunks, 'chunk')} · {safe_line(doc_id)} {done / total:.0%}"
            )

    def finish(self, report: IngestReport) -> None:
        self._progress.update(self._task, completed=report.read, total=report.read)


@contextmanager
def ingest_progress() -> Iterator[IngestProgress]:
    progress = progress_bar()
    try:
        yield IngestProgress(progress)
    finally:
        progress.stop()  # nothing to do when it never started


def run_ingest(col: Collection, records: Iterable[Any], *, dense: bool) -> IngestReport:
    """`col.ingest` on an open collection, with its progress shown."""
    with ingest_progress() as hooks:
        hooks.start()
        report = col.ingest(records, dense=dense, progress=hooks.update, document_progress=hooks.within)
        hooks.finish(report)
    return report


def print_ingest_report(report: IngestReport, json_out: bool, ray: Mapping[str, Any] | None = None) -> None:
    """The report of an ingest; `ray`: where a distributed one ran and what its workers did (`RayRun.to_dict`)."""
    summary = report.to_dict()
    if json_out:
        write_json(summary | ({"ray": dict(ray)} if ray is not None else {}))
        return
    for e in report.skipped:  # a file name, a record's id or value: data
        err.print(Text.assemble(("skipped", "yellow"), " ", safe_line(str(e))))
    for w in report.warnings:  # kept, but repaired or guessed: the user may want to fix the source
        err.print(Text.assemble(("warning", "yellow"), " ", safe_line(str(w))))
    rate = (
        f"{summary['documents_per_second']} documents/s, {summary['chunks_per_second']} chunks/s, "
        f"{summary['embedded_per_second']} embedded/s"
        if report.seconds
        else "-"
    )
    out.print(
        f"read {report.read} · added {report.added} · updated {report.updated} · unchanged {report.unchanged} · "
        f"resumed {report.resumed} · skipped {len(report.skipped)} · warnings {len(report.warnings)} · "
        f"{counted(report.chunks, 'chunk')} ({report.embedded} embedded) in {report.seconds:.1f} s ({rate})"
    )
    if ray is not None:
        out.print(data_text(f"ray: {ray_summary(ray)}"))
    if report.languages:
        out.print(data_text("languages: " + language_counts(report.languages, report.detected)))


def ray_summary(ray: Mapping[str, Any]) -> str:
    """`local Ray (2 CPUs, …) · 28 files in 14 parts · 1 embedding worker × 2 threads, 2.2 texts/s each while
    embedding · started in 6.0 s · the writer waited 20.1 s for the workers`: where a distributed ingest ran, what its
    workers did, and whether they or the writer set the pace."""
    parts = [ray["where"], f"{counted(ray['files'], 'file')} in {counted(ray['parts'], 'part')}"]
    if ray["embedding_workers"]:
        threads = f" × {counted(ray['threads_per_worker'], 'thread')}" if ray["threads_per_worker"] else ""
        rate = ray["embedded_per_worker_second"]
        each = f", {rate} texts/s each while embedding" if rate else ""
        parts.append(f"{counted(ray['embedding_workers'], 'embedding worker')}{threads}{each}")
    parts.append(f"started in {ray['start_seconds']:.1f} s")
    parts.append(f"the writer waited {ray['writer_waited_seconds']:.1f} s for the workers")
    return " · ".join(parts)


def language_counts(languages: Mapping[str, int], detected: Mapping[str, int]) -> str:
    """`fr 293 (12 detected), de 242`: documents per language, and how many of them had it detected at ingest."""
    return ", ".join(
        f"{lang} {n}" + (f" ({detected[lang]} detected)" if detected.get(lang) else "")
        for lang, n in sorted(languages.items())
    )


def embed_missing(col: Collection) -> None:
    """Embed every chunk still without a vector, showing progress and throughput (nothing to do on a re-run)."""
    total = col.store.count_chunks(without_vectors=True)
    if not total:
        out.print("every chunk already has its vector")
        return
    start = time.perf_counter()
    with progress_bar() as progress:
        task = progress.add_task("embed", total=total, extra="")

        def update(done: int, of: int) -> None:
            rate = done / max(time.perf_counter() - start, 1e-9)
            progress.update(task, completed=done, total=of, extra=f"{rate:.1f} chunks/s")

        done = col.embed_missing(progress=update)
    print_embedded(done, time.perf_counter() - start)


@contextmanager
def calibration_progress() -> Iterator[Callable[[int, int], None]]:
    """A progress bar for a calibration (with dense, ~3 pseudo-queries/s on 2 cores): yields what to tell it after
    each pseudo-query; a calibration that had nothing to do leaves no empty bar behind."""
    with progress_bar() as progress:
        task = progress.add_task("calibrate", total=None, extra="pseudo-queries")
        yield lambda done, total: progress.update(task, completed=done, total=total)
        if not progress.tasks[-1].completed:
            progress.remove_task(task)


def refresh_calibration(col: Collection) -> None:
    """After an ingest or an embed: calibrate the channel weights again when they are missing or stale
    (`calibration.refresh`), and say it."""
    from tracerag.retrieval import calibration

    with calibration_progress() as update:
        found = calibration.refresh(col, progress=update)
    print_calibrated(found)


def after_ingest(col: Collection) -> None:
    """What the writer does at the end of `tracerag ingest`: the calibration, then the vocabulary model if asked."""
    refresh_calibration(col)
    refresh_vocabulary(col)


def refresh_vocabulary(col: Collection) -> None:
    """After an ingest, with `expansion.vocabulary_at_ingest`: train the collection's vocabulary model again
    (`tracerag expand`), and say it with its throughput."""
    if not col.settings.expansion.vocabulary_at_ingest:
        return
    from tracerag.retrieval import vocabulary

    with err.status("training the vocabulary model…"):
        info = vocabulary.train_collection(col).info
    err.print(f"vocabulary model trained in {info.seconds:.1f} s: {info.words:,} words kept of {info.tokens:,}")


def print_calibrated(found: Calibration | None) -> None:
    """One line on stderr when an ingest or embed calibrated the channel weights again."""
    if found is not None:
        weights = ", ".join(f"{c} {w:.2f}" for c, w in found.weights.items())
        total = sum(found.queries.values())
        err.print(f"channel weights calibrated on {total} pseudo-queries in {found.seconds:.1f} s: {weights}")


def describe_engine(engine: dict[str, Any]) -> str:
    """Which engine holds a collection's index, and where, in words (`Collection.stats()["engine"]`)."""
    if engine.get("kind") != "qdrant":
        return f"tantivy + faiss, embedded ({engine.get('index')})"
    shape = []
    if engine.get("shard_number"):
        shape.append(counted(engine["shard_number"], "shard"))
    if engine.get("replication_factor"):
        shape.append(f"replication {engine['replication_factor']}")
    if engine.get("write_consistency_factor"):
        shape.append(f"write consistency {engine['write_consistency_factor']}")
    where = f"Qdrant server {engine.get('url')}, collection {engine.get('collection')}"
    return f"{where} ({', '.join(shape)})" if shape else where


def print_embedded(done: int, seconds: float) -> None:
    out.print(f"embedded {counted(done, 'chunk')} in {seconds:.1f} s ({done / seconds if seconds else 0:.1f} chunks/s)")


def render(result: dict[str, Any], explain_: bool, console: Console) -> None:
    """Results as a readable list; with `explain_`, each document's channels, span and metadata. Everything that
    comes from the collection or the query is data: literal `Text`, controls shown as escapes."""
    _print_summary(result, console)
    if explain_:
        _print_search_explained(result["params"], console)
    marks = marking(console)
    from tracerag.retrieval.explain import searched_queries

    queries = searched_queries(result)
    for r in result["results"]:
        _print_result(r, queries, marks, explain_, console)


def _print_summary(result: dict[str, Any], console: Console) -> None:
    """The query, how many documents, the channels that acted, the time; how --windows ordered them; the date the
    query names."""
    params = result["params"]
    console.print(
        Text.assemble(
            (safe_line(params["query"]), "bold"),
            f"  ·  {counted(len(result['results']), 'document')}  ·  channels ",
            safe_line(", ".join(params.get("active_channels", [])) or "none"),
            f"  ·  {result['seconds'] * 1000:.0f} ms",
        )
    )
    # --windows reorders the results: say so, as the web page does (with variants, the fusion orders them again)
    if params.get("windows") and result["results"]:
        variants = [v for v in (result.get("expansion") or {}).get("variants") or [] if v.get("query")]
        console.print(
            data_text(
                f"each query's results balanced across time windows of {params['windows']}, then fused: in "
                "fused-score order"
                if variants
                else f"balanced across time windows of {params['windows']}, not sorted by score"
            )
        )
    if params.get("query_date"):
        console.print(data_text(f"date in query: {params['query_date'][0]} … {params['query_date'][1]}"))


def _print_search_explained(params: dict[str, Any], console: Console) -> None:
    """How the channels were fused; what the date and phrase channels took from the query, or why not; the time
    windows' shares; the page regions."""
    from tracerag.retrieval.explain import fusion_summary

    fusion = params.get("fusion")
    if fusion:
        print_wrapped(data_text(f"fusion: {fusion_summary(fusion)}"), console, "  ", first=Text(""))
    for name, reading in params.get("channel_readings", {}).items():
        console.print(data_text(f"{name}: {reading['why']}", "" if reading["acts"] else "dim"))
    if params.get("time_windows"):
        print_time_windows(params["time_windows"], console)
    if params.get("regions"):
        console.print(data_text(params["regions"], "dim"))


def _print_result(r: dict[str, Any], queries: list[str], marks: str | None, explain_: bool, console: Console) -> None:
    """One result: its rank and title, where it is from, its snippets in reading order; without a marked word, why
    it is there; with `explain_`, its scores, channels, regions, OCR quality and metadata."""
    meta = " · ".join(x for x in (r["corpus"], r["date"], r["language"], r["window"] and f"window {r['window']}") if x)
    console.print()
    title = title_text(r, queries, marks)
    print_wrapped(title, console, first=Text(f"{r['rank']:>2}. ", "bold cyan"))
    ident = "" if r["title_source"] == "doc_id" else safe_line(r["doc_id"])
    print_wrapped(Text(" · ".join(x for x in (ident, safe_line(meta)) if x), style="dim"), console)
    for sn in sorted(r.get("snippets", []), key=lambda sn: sn["start"]):  # best first in the data, read in order
        print_wrapped(kwic_text(sn, marks), console)
    if explain_:
        _print_result_explained(r, console)
    elif not any(sn["spans"] for sn in r.get("snippets", [])):
        print_wrapped(Text(found_by(r, titled=any(s.style for s in title.spans)), style="dim"), console)


def _print_result_explained(r: dict[str, Any], console: Console) -> None:
    """Where a result is in its source, its score and best chunk, each channel's rank, its page regions, its OCR
    quality and its source's metadata."""
    chunk = r["best_chunk"]
    print_wrapped(Text(safe_line(source_place(r))), console)
    print_wrapped(
        Text.assemble(
            f"score {r['score']:.5f} · best chunk ",
            safe_line(f"{chunk['chunk_id']} chars {chunk['start']}–{chunk['end']}"),
        ),
        console,
    )
    for c in r["channels"]:
        print_wrapped(
            Text.assemble(
                (f"{safe_line(c['channel']):<7}", "green"),
                f" rank {c['rank']:>3}  score {c['score']:.4f}  ",
                safe_line(f"{c['chunk_id']} [{c['span'][0]}–{c['span'][1]}]"),
                # a lexical channel: the language index that ranked it, whose scores are its own scale
                # the two spaces outside safe_line, which strips a line's ends
                "  " + safe_line(f"({c['field']} index, rank {c['field_rank']})") if "field" in c else "",
            ),
            console,
        )
    for region in r.get("regions", []):
        where = f"page {region['page_id']} ({region['page_number']}): box "
        where += ",".join(f"{v:g}" for v in region["box"]) + f" {region['unit'] or '?'}"
        console.print(Text.assemble("    ", safe_line(where), "  ", safe_line(region["url"] or region["note"])))
    if r.get("ocr"):
        print_wrapped(Text(safe_line(ocr_line(r["ocr"], r.get("ocr_quality_stated")))), console)
    shown = {k: v for k, v in r["source"].items() if k in ("file", "publication", "dataset", "page_id")}
    if shown or r["fields"]:
        print_wrapped(Text("metadata: " + safe_line(json_dumps(shown | r["fields"]))), console)


INDENT = "    "  # a result's lines under its rank


def marking(console: Console) -> str | None:
    """How a snippet marks the query's words on `console`: a style on a terminal that shows styles, else None:
    brackets (`[grève]`), which survive a pipe, a file and NO_COLOR."""
    if console.is_terminal and not console.no_color and console.color_system is not None:
        return "bold reverse"
    return None


def kwic_text(sn: Mapping[str, Any], style: str | None) -> Text:
    """One keyword-in-context snippet (`retrieval/explain.add_snippets`) as one line of text: its matched
    words styled with `style`, or in brackets without one; "…" where the text goes on; controls shown as escapes
    and whitespace runs made one space, piece by piece so that the spans still fall on their words."""
    text, out, at = sn["text"], Text("…" if sn["cut_before"] else ""), 0
    for start, end in sn["spans"]:
        out.append(_piece(text[at:start]))
        word = safe_line(text[start:end])
        out.append(word if style else f"[{word}]", style=style or "")
        at = end
    out.append(_piece(text[at:]))
    if sn["cut_after"]:
        out.append("…")
    return out


def title_text(r: Mapping[str, Any], queries: list[str], style: str | None) -> Text:
    """A result's title in bold, the query's words in it marked as in a snippet: the title is indexed with every
    chunk of its document, so it may be all that matched (an article's paragraphs under its title)."""
    from tracerag.retrieval.kwic import matches, query_keys

    title = r["title"] or ""
    spans = [list(s) for s in matches(title, query_keys(queries, r["language"]), r["language"])]
    if r["title_source"] == "doc_id" or not spans:
        return Text(safe_line(title), style="bold")
    out = kwic_text({"text": title, "spans": spans, "cut_before": False, "cut_after": False}, style)
    out.stylize("bold")
    return out


def found_by(r: Mapping[str, Any], *, titled: bool) -> str:
    """Why a result whose snippets mark no word is there: the channels that found it, and where its words are."""
    ranks = ", ".join(f"{c['channel']} #{c['rank']}" for c in r["channels"])
    if titled:
        return f"the query's words are in its title; found by {ranks}"
    lexical = any(c["channel"] not in ("dense", "date") for c in r["channels"])
    why = "" if lexical else " (by meaning)"
    return f"no query word in this passage; found by {ranks}{why}"


def _piece(text: str) -> str:
    """`safe_line` that keeps one space where the text began or ended with whitespace (a word's neighbour)."""
    inner = safe_line(text)
    if not inner:
        return " " if text[:1].isspace() else ""
    return (" " if text[:1].isspace() else "") + inner + (" " if text[-1:].isspace() else "")


def print_wrapped(text: Text, console: Console, indent: str = INDENT, first: Text | None = None) -> None:
    """`text` wrapped at word boundaries to the console's width (80 columns when piped), each line indented (the
    first by `first`, as wide as `indent`, when given: a result's rank)."""
    width = max(20, console.width - len(indent))
    for i, line in enumerate(text.wrap(console, width, overflow="fold")):
        line.rstrip()
        console.print(Text.assemble(first if i == 0 and first is not None else indent, line), soft_wrap=True)


def source_place(r: Mapping[str, Any]) -> str:
    """Where a result is in its source: `file HIPE….tsv, line 1234` (the line its first snippet starts on, else the
    line its document starts on), as far as the reader recorded it."""
    source = r["source"]
    lines = sorted(sn["line"] for sn in r.get("snippets", []) if sn.get("line") is not None)
    parts = [f"file {source['file']}"] if source.get("file") else []
    if lines:
        parts.append(("line " if len(lines) == 1 else "lines ") + ", ".join(map(str, lines)))
    elif source.get("line") is not None:
        parts.append(f"document from line {source['line']}")
    return "source: " + (", ".join(parts) if parts else "not recorded by its reader")


def ocr_line(ocr: dict[str, Any], stated: float | None = None) -> str:
    """One result's OCR-quality estimate with its parts (and the source's own figure, when it states one)."""
    if ocr["score"] is None:
        line = f"ocr quality: none ({ocr['note']}; garbage {ocr['garbage_rate']:.0%})"
    else:
        line = (
            f"ocr quality {ocr['score']:.2f} = lexicon share {ocr['lexicon_share']:.2f} × (1 − garbage "
            f"{ocr['garbage_rate']:.2f}) over {ocr['words']:,} words ({ocr['lexicon']})"
        )
    if ocr.get("fixes"):
        line += " · repaired: " + ", ".join(f"{kind} {n}" for kind, n in ocr["fixes"].items())
    return line + (f" · stated by the source {stated:g}" if stated is not None else "")


def print_time_windows(windows: dict[str, Any], console: Console) -> None:
    """Each time window's share of the results against its share of the documents searched, one row a window: a
    ratio far above 1 is a period the search pulls towards, 0 one it never reaches (docs/guide/workflow.md, time
    windows)."""
    console.print(
        data_text(
            f"time windows ({windows['window']}, {windows['chosen'] or 'as given'}): share of the "
            f"{counted(windows['results'], 'result')} vs of the {windows['searched']:,} documents searched"
        )
    )
    for row in windows["rows"]:
        ratio = "" if row["ratio"] is None else f"  ×{row['ratio']:.2f}"
        label = data_text(row["window"])  # numbers are ours; the label is padded outside it (data is one line)
        figures = f"{row['results']:>5} {row['result_share']:>6.1%}   "
        figures += f"{row['documents']:>8,} {row['corpus_share']:>6.1%}{ratio}"
        line = Text.assemble("    ", label, " " * max(1, 10 - len(label)), figures)
        line.stylize("" if row["results"] else "dim")
        console.print(line)
