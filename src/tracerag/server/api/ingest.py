"""POST /api/collections/{name}/ingest: files uploaded into a collection the server serves, as a background job.

The files are saved under the job's own temporary folder, each under a sanitised name (its last path part, only
letters, digits, `.`, `_` and `-`, never hidden), and read as `tracerag ingest` reads a folder. The ingest runs in
a child process (server/ingest_worker.py), the collection's writer: the server's readers go on searching
meanwhile. Its progress events (documents done of the total, chunks, each skipped record with its file and line)
become the job's events; its result is the ingest report. A collection with a writer at work answers 503 at once
(saying who); a writer that appears between that check and the child's open fails the job, saying the same.

Making a new collection is out of scope: a route names a collection served, never a folder."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Form, UploadFile
from pydantic import BaseModel, ConfigDict, Field

from tracerag.errors import CollectionBusyError, ConfigError, TraceError
from tracerag.ingest import FORMATS, detect_format
from tracerag.locks import Holder
from tracerag.server.deps import CollectionName, State
from tracerag.server.jobs import Job
from tracerag.server.schemas import ERRORS, JobInfo
from tracerag.server.state import ServerState

router = APIRouter(tags=["collections"], responses=ERRORS)
_starting = threading.Lock()  # the busy check and the start of an ingest job, as one step

COPY_BLOCK = 1 << 20
# the folder the files are saved in, and the child's working folder: the txt reader names a document's corpus after
# it when none is given (no other reader sees it)
UPLOAD_DIR = "upload"
MAX_NAME = 120  # characters kept of an uploaded file's name (its suffix always kept: it tells the format)
WORKER_LOG_TAIL = 2_000  # characters of the child's stderr quoted when it dies without saying why


class IngestJobFailed(TraceError):
    """The ingest child reported an error, or died: the job's error."""


class IngestForm(BaseModel):
    """The upload: the files, and the reader options `tracerag ingest` takes (unset: the reader's default)."""

    model_config = ConfigDict(extra="forbid")

    files: list[UploadFile] = Field(
        description="The files to read: .jsonl, .csv, .txt, ALTO .xml or HIPE .tsv (one format per upload)."
    )
    format: str | None = Field(None, description="jsonl, csv, txt, alto or hipe (default: guessed from the names).")
    dense: bool = Field(True, description="Embed the chunks now (false: lexical only; `tracerag embed` adds them).")
    corpus: str | None = Field(None, description="Sub-corpus name for all records (jsonl, csv, txt, alto).")
    language: str | None = Field(None, description="Language for all records (jsonl, csv, txt, alto).")
    encoding: str | None = Field(None, description="Encoding of the files (default: UTF-8, else detected).")
    delimiter: str | None = Field(None, description="CSV: the delimiter, one character (default ',').")
    id_column: str | None = Field(None, description="CSV: id column (default 'id', else 'doc_id').")
    text_column: str | None = Field(None, description="CSV: text column (default 'text').")
    title_column: str | None = Field(None, description="CSV: title column ('' for none).")
    date_column: str | None = Field(None, description="CSV: date column ('' for none).")
    corpus_column: str | None = Field(None, description="CSV: sub-corpus column ('' for none).")
    language_column: str | None = Field(None, description="CSV: language column ('' for none).")
    unit: str | None = Field(None, description="ALTO: one document per 'page' or per 'block'.")
    date: str | None = Field(None, description="ALTO: date of the pages.")

    def reader_options(self) -> dict[str, Any]:
        options = self.model_dump(exclude={"files", "format", "dense"}, exclude_none=True)
        if options.get("delimiter") == "\\t":
            options["delimiter"] = "\t"
        return options


@router.post(
    "/collections/{name}/ingest",
    summary="Ingest uploaded files into a collection",
    response_model=JobInfo,
    status_code=202,
)
def ingest(
    name: CollectionName, form: Annotated[IngestForm, Form(media_type="multipart/form-data")], state: State
) -> JobInfo:
    """Start an ingest of the uploaded files into collection `name`; follow it at /api/jobs/{id}/events."""
    path = state.path_of(name)
    if form.format is not None and form.format not in FORMATS:
        raise ConfigError(f"format: {form.format!r} is not one of {', '.join(FORMATS)}")
    if form.delimiter is not None and len(form.reader_options()["delimiter"]) != 1:
        raise ConfigError(f"delimiter: {form.delimiter!r}: expected one character")
    _refuse_if_busy(state, name)  # before the upload is saved; again below, where it counts
    folder = Path(tempfile.mkdtemp(prefix="tracerag-upload-"))
    try:
        names = save_uploads(form.files, folder / UPLOAD_DIR, state.settings.server.max_upload_mb * 1024 * 1024)
        inputs = plan_inputs(names, folder / UPLOAD_DIR, form.format)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    request = {
        "collection": str(path),
        "inputs": inputs,
        "options": form.reader_options(),
        "dense": form.dense,
        "settings": state.settings.model_dump(mode="json"),
        "label": ", ".join(names) if len(names) <= 3 else f"{names[0]} and {len(names) - 1} other files",
    }

    def work(job: Job) -> dict[str, Any] | None:
        try:
            return run_worker(job, {**request, "job": job.id}, folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    try:
        with _starting:  # two uploads at once: the second sees the first's job, and is refused
            _refuse_if_busy(state, name)
            job = state.jobs.start("ingest", work, collection=name)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return JobInfo(**job.summary())


def _refuse_if_busy(state: ServerState, name: str) -> None:
    """503 at once when this server already runs an ingest into `name`, or another process writes it."""
    for job in state.jobs.list("ingest"):
        if job.collection == name and job.status.value == "running":
            raise CollectionBusyError(f"collection {name!r}: ingest job {job.id} is still running; retry after it")
    with state.reading(name) as col:
        writer = col.activity()["writer"]
    if writer:
        raise CollectionBusyError(f"collection {name!r} is being written by {Holder(**writer).describe()}; retry later")


def safe_name(filename: str | None, taken: set[str]) -> str:
    """A file name that cannot leave its folder: the last part of what the client sent (either slash), only
    letters, digits, `.`, `_`, `-`, never hidden, never empty, unique in `taken` (which it joins)."""
    last = re.split(r"[\\/]", filename or "")[-1].replace("\x00", "")
    cleaned = re.sub(r"[^\w.\-]", "_", last, flags=re.ASCII)
    stem, dot, suffix = cleaned.rpartition(".")
    if not dot:
        stem, suffix = cleaned, ""
    stem = stem.lstrip(".") or "upload"  # never hidden; `.jsonl` keeps the suffix that tells its format
    suffix = suffix[:16]
    stem = stem[: MAX_NAME - len(suffix) - 1]
    candidate, n = f"{stem}.{suffix}" if suffix else stem, 1
    while candidate.lower() in taken:
        n += 1
        candidate = f"{stem}-{n}.{suffix}" if suffix else f"{stem}-{n}"
    taken.add(candidate.lower())
    return candidate


def save_uploads(files: list[UploadFile], folder: Path, limit: int) -> list[str]:
    """Copy the uploads into `folder` under safe names; the names, in order. Refuses more than `limit` bytes in
    all (the request's own size limit already holds; this holds whatever the client says of its parts)."""
    folder.mkdir(parents=True)
    taken: set[str] = set()
    names = []
    total = 0
    for upload in files:
        name = safe_name(upload.filename, taken)
        target = folder / name
        if target.resolve().parent != folder.resolve():  # cannot happen with a safe name; said, not assumed
            raise ConfigError(f"files: {upload.filename!r}: not a plain file name")
        with target.open("xb") as out:
            while block := upload.file.read(COPY_BLOCK):
                total += len(block)
                if total > limit:
                    raise ConfigError(f"files: more than {limit // (1024 * 1024)} MiB uploaded (server.max_upload_mb)")
                out.write(block)
        names.append(name)
    if not names:
        raise ConfigError("files: no file uploaded")
    return names


def plan_inputs(names: list[str], folder: Path, fmt: str | None) -> list[tuple[str, str]]:
    """(file, format) for each uploaded file to read: each read on its own, as `tracerag ingest FILE` reads it
    (a folder would skip, unsaid, the files its reader does not look at). The format is the one asked, else told by
    the name; a text file's `.json` sidecar (its metadata) is read with it, not on its own."""
    texts = {Path(n).stem for n in names if Path(n).suffix.lower() == ".txt"}
    inputs = []
    for name in names:
        if Path(name).suffix.lower() == ".json" and Path(name).stem in texts and fmt in (None, "txt"):
            continue
        if fmt is not None:
            inputs.append((name, fmt))
            continue
        try:
            inputs.append((name, detect_format(folder / name)))
        except ConfigError:
            raise ConfigError(
                f"files: {name}: cannot tell its format from its name (.jsonl, .csv, .txt, .xml, .tsv); give format"
            ) from None
    return inputs


def run_worker(job: Job, request: dict[str, Any], folder: Path) -> dict[str, Any] | None:
    """Run the ingest child on `folder`'s files; its events become the job's; its report is the result."""
    log = folder / "worker.log"
    report: dict[str, Any] | None = None
    failure: dict[str, Any] | None = None
    with log.open("w+", encoding="utf-8") as stderr:
        proc = subprocess.Popen(
            # -P: the working folder (the uploads) is not on the import path, so no upload is ever imported
            [sys.executable, "-P", "-m", "tracerag.server.ingest_worker"],
            cwd=folder / UPLOAD_DIR,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            encoding="utf-8",
        )
        assert proc.stdin is not None and proc.stdout is not None
        try:
            # the request goes on stdin, not the command line (settings may name endpoints); stdin stays open:
            # its end tells the child that the server is gone
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
            for line in proc.stdout:
                event = _event(line)
                if event is None:
                    continue
                kind = str(event.pop("kind"))
                if kind == "end" or "seq" in event or "time" in event:
                    continue  # the job's own: its end, its numbering and its clock are never the child's to say
                if kind == "report":
                    report = event["report"]
                elif kind == "failed":
                    failure = event
                job.emit(kind, **event)
            code = proc.wait()
        finally:
            with contextlib.suppress(OSError):
                proc.stdin.close()
            if proc.poll() is None:  # the job thread itself failed: the child must not outlive it
                proc.terminate()
                proc.wait(30)
        if failure is not None:
            raise IngestJobFailed(str(failure.get("error")))
        if code != 0 or report is None:
            stderr.seek(0)
            tail = stderr.read()[-WORKER_LOG_TAIL:].strip()
            raise IngestJobFailed(f"the ingest process ended with code {code} without a report: {tail or 'no output'}")
    return report


def _event(line: str) -> dict[str, Any] | None:
    try:
        event = json.loads(line)
    except json.JSONDecodeError:
        return None
    return event if isinstance(event, dict) and isinstance(event.get("kind"), str) else None
