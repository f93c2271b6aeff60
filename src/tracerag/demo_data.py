"""Where `tracerag demo` finds its data, and what it shows on it.

The demo must run on a machine that has never seen the data or the network, so a small sample ships inside the
package (`tracerag/data/demo`: real OCR output, public domain or CC0, its sources in `SOURCE.md`). Looked for in
this order: the folder the user names (`--data DIR` or TRACERAG_DEMO_DATA: a local copy of the three HIPE-2022
files below), `--download` (those files fetched from their public home at a pinned commit, cached), the HIPE
files of the evaluation datasets folder when it is there, and else the packaged sample. The network is used only
when asked for.

The HIPE files are pinned to one commit with sizes and sha256 hard-coded: a file that differs by one byte is
refused rather than silently giving other results.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from tracerag.errors import ConfigError, DataUnavailableError
from tracerag.ingest import Item, read_documents
from tracerag.model import Document

COMMIT = "147f5bc3c7fb7e5c6b024a9ffd6503cd019fb9ea"
"""The commit of hipe-eval/HIPE-2022-data the checksums below were taken from; also names the cache folder."""

DEFAULT_BASE_URL = f"https://raw.githubusercontent.com/hipe-eval/HIPE-2022-data/{COMMIT}"

TIMEOUT = httpx.Timeout(30.0, connect=10.0)
_CHUNK = 1 << 16


@dataclass(frozen=True)
class DemoFile:
    """One pinned demo file: where it lives in the data repository and what it must hash to."""

    name: str
    url_path: str  # relative to the repository root, appended to the base URL
    size: int
    sha256: str


# The smallest dev file per language (about 1.4 MB together): enough documents for a meaningful demo, quick
# to download and to embed on a CPU. newseye fr is CC-BY 4.0, which suits a demo better than letemps' NC.
DEMO_FILES: tuple[DemoFile, ...] = (
    DemoFile(
        name="HIPE-2022-v2.1-newseye-dev-fr.tsv",
        url_path="data/v2.1/newseye/fr/HIPE-2022-v2.1-newseye-dev-fr.tsv",
        size=629_123,
        sha256="7bbe79533f29e468c33d81fed51154d01a63e0a1cb247f16618a4fd95da9c118",
    ),
    DemoFile(
        name="HIPE-2022-v2.1-sonar-dev-de.tsv",
        url_path="data/v2.1/sonar/de/HIPE-2022-v2.1-sonar-dev-de.tsv",
        size=450_397,
        sha256="9ccfa577c92cff0e952a6984412e60d15fc1a0df9423606a8e475d328f5d2c7b",
    ),
    DemoFile(
        name="HIPE-2022-v2.1-topres19th-dev-en.tsv",
        url_path="data/v2.1/topres19th/en/HIPE-2022-v2.1-topres19th-dev-en.tsv",
        size=330_560,
        sha256="ee9cb47f9f4ce238d780d642d4ab0ea60f0c7ec3bc7f85b12eece9854042f36a",
    ),
)


def default_cache_dir() -> Path:
    """The default download folder, keyed by commit so that a new pin never reuses old files."""
    return Path.home() / ".cache" / "tracerag" / "demo" / COMMIT


def _find(folder: Path, spec: DemoFile) -> Path:
    """A flat folder of TSV files and a clone of the data repository both work as a local copy."""
    flat = folder / spec.name
    if not flat.exists() and (folder / spec.url_path).exists():
        return folder / spec.url_path
    return flat


def demo_files(folder: Path) -> list[Path]:
    """The demo files inside `folder`, in a fixed order, so the demo collection is the same every time."""
    return [_find(folder, spec) for spec in DEMO_FILES]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _problem(path: Path, spec: DemoFile) -> str | None:
    """Why `path` is not the pinned file, or None when it is. The size test spares hashing a wrong file."""
    if not path.is_file():
        return "missing"
    size = path.stat().st_size
    if size != spec.size:
        return f"{size} bytes instead of {spec.size}"
    actual = _sha256(path)
    if actual != spec.sha256:
        return f"sha256 {actual} instead of {spec.sha256}"
    return None


def _ways_out(cache_dir: Path) -> str:
    names = ", ".join(spec.name for spec in DEMO_FILES)
    return (
        "Either pass --data DIR (or set TRACERAG_DEMO_DATA) to a local folder holding the HIPE-2022 v2.1 "
        f"TSV files ({names}), or run `tracerag demo` once on a connected machine (the files are cached "
        f"in {cache_dir})."
    )


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _check_data_dir(data_dir: Path) -> Path:
    if not data_dir.is_dir():
        raise DataUnavailableError(f"demo data folder {data_dir} does not exist or is not a folder")
    problems = [
        f"{path}: {problem} (expected {spec.size} bytes, sha256 {spec.sha256})"
        for spec in DEMO_FILES
        if (problem := _problem(path := _find(data_dir, spec), spec)) is not None
    ]
    if problems:
        raise DataUnavailableError(
            f"demo data folder {data_dir} does not hold the HIPE-2022 v2.1 files the demo needs "
            f"(commit {COMMIT}):\n  " + "\n  ".join(problems)
        )
    return data_dir


def _download(client: httpx.Client, url: str, spec: DemoFile, target: Path, progress: Progress) -> None:
    """Stream to a private `.part` file and rename it only once verified: the cache never holds a bad file."""
    fd, part_name = tempfile.mkstemp(dir=target.parent, prefix=f"{spec.name}.", suffix=".part")
    part = Path(part_name)
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out, client.stream("GET", url) as response:
            response.raise_for_status()
            task = progress.add_task(spec.name, total=spec.size)  # only once the server answered
            for chunk in response.iter_bytes(_CHUNK):
                out.write(chunk)
                digest.update(chunk)
                progress.advance(task, len(chunk))
        actual = digest.hexdigest()
        if actual != spec.sha256:
            raise DataUnavailableError(
                f"checksum mismatch for {url}: expected sha256 {spec.sha256}, got {actual} "
                f"({part.stat().st_size} bytes, expected {spec.size}); the file was discarded"
            )
        part.replace(target)
    finally:
        part.unlink(missing_ok=True)


def locate_demo_data(
    data_dir: Path | None,
    cache_dir: Path,
    *,
    base_url: str = DEFAULT_BASE_URL,
    offline: bool = False,
    console: Console | None = None,
) -> Path:
    """Return a folder holding the verified demo files (read them with `demo_files`).

    `data_dir` (from `--data` or TRACERAG_DEMO_DATA) wins and is never written to; without it the cache is
    used, and only the files it lacks or holds damaged are downloaded. Raises DataUnavailableError when that
    fails.
    """
    if data_dir is not None:
        return _check_data_dir(data_dir)

    missing = [spec for spec in DEMO_FILES if _problem(cache_dir / spec.name, spec) is not None]
    if not missing:
        return cache_dir
    if offline:
        raise DataUnavailableError(
            "could not download the demo data: offline mode is on and the cache "
            f"{cache_dir} lacks {', '.join(spec.name for spec in missing)}.\n{_ways_out(cache_dir)}"
        )

    cache_dir.mkdir(parents=True, exist_ok=True)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    base = base_url.rstrip("/")
    try:
        with (
            httpx.Client(timeout=TIMEOUT, follow_redirects=True) as client,
            Progress(*columns, console=console or Console(stderr=True)) as progress,
        ):
            for spec in missing:
                _download(client, f"{base}/{spec.url_path}", spec, cache_dir / spec.name, progress)
    except httpx.HTTPError as exc:
        raise DataUnavailableError(
            f"could not download the demo data from {base}: {_one_line(exc)}\n{_ways_out(cache_dir)}"
        ) from exc
    return cache_dir


# -- what the demo runs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class DemoQuery:
    """One explained search of the demo: the query, what it shows off (printed above it), and whether it is run
    again with the dense channel once the vectors exist."""

    text: str
    shows: str
    windows: str | None = None
    hybrid: bool = False


@dataclass(frozen=True)
class DemoSource:
    """The data one demo run uses. `kind` also names the default collection folder, so that switching sources
    never mixes two samples in one collection."""

    kind: str  # "sample" or "hipe"
    description: str
    location: Path
    licence: str
    queries: tuple[DemoQuery, ...]
    read: Callable[[int | None], Iterator[Item]]

    def documents(self, per_part: int | None = None) -> Iterator[Item]:
        """The documents in a fixed order; `per_part` keeps the first N of each file (HIPE) or sub-corpus (sample)."""
        if per_part is not None and per_part < 1:
            raise ConfigError(f"--per-file must be at least 1, not {per_part}")
        return self.read(per_part)


def _first(records: Iterable[Item], limit: int | None) -> Iterator[Item]:
    """The first `limit` documents of `records`, with every error met on the way (nothing is hidden)."""
    n = 0
    for r in records:
        if limit is not None and n >= limit:
            return
        if isinstance(r, Document):
            n += 1
        yield r


# Chosen on those three HIPE files: French (accents folded), German with a date (date channel, 10-year windows),
# a name as OCR'd, English; the English question about a German session shows what the dense channel adds.
HIPE_QUERIES = (
    DemoQuery("Sorbonne conférence", "French, accents folded"),
    DemoQuery("Reichstag Sitzung 1896", "German with a year: the date channel, 10-year windows", windows="10y"),
    DemoQuery("Goluchowski", "a name as the OCR wrote it"),
    DemoQuery("Weymouth harbour", "English"),
    DemoQuery("debate in the German parliament", "an English question over German text", hybrid=True),
)
HIPE_LICENCE = "CC BY-NC-SA 4.0 (HIPE-2022 v2.1, hipe-eval/HIPE-2022-data): not for commercial use"


def hipe_source(folder: Path) -> DemoSource:
    """The three pinned HIPE-2022 files in `folder` (already verified by the caller)."""

    def read(per_part: int | None) -> Iterator[Item]:
        for path in demo_files(folder):
            yield from _first(read_documents(path, "hipe"), 12 if per_part is None else per_part)

    return DemoSource(
        kind="hipe",
        description=f"three HIPE-2022 v2.1 newspaper files (fr, de, en), commit {COMMIT[:10]}",
        location=folder,
        licence=HIPE_LICENCE,
        queries=HIPE_QUERIES,
        read=read,
    )


# -- the packaged sample --------------------------------------------------------------------------------

SAMPLE_MANIFEST = "sample.json"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SampleDocument(_Strict):
    """One file of the sample and the metadata it is ingested with (the readers take the rest from the file)."""

    file: str
    format: str
    corpus: str
    date: str | None = None
    language: str | None = None
    title: str | None = None
    source: dict[str, Any] = Field(default_factory=dict)


class SampleQuery(_Strict):
    text: str
    shows: str
    windows: str | None = None
    hybrid: bool = False


class SampleManifest(_Strict):
    description: str
    licence: str
    documents: list[SampleDocument]
    queries: list[SampleQuery]


def packaged_sample_dir() -> Path:
    """The sample folder inside the installed package (a plain folder: the package is never zipped)."""
    return Path(str(files("tracerag").joinpath("data", "demo")))


def load_manifest(folder: Path) -> SampleManifest:
    path = folder / SAMPLE_MANIFEST
    try:
        return SampleManifest.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except OSError as exc:
        raise DataUnavailableError(f"{path}: cannot read the demo sample's manifest ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise DataUnavailableError(f"{path}:{exc.lineno}: damaged demo sample manifest: {exc.msg}") from None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise DataUnavailableError(f"{path}: damaged demo sample manifest: {problems}") from None


def _sample_document(folder: Path, entry: SampleDocument) -> Iterator[Item]:
    options = {"corpus": entry.corpus, "language": entry.language}
    if entry.format == "alto":
        options["date"] = entry.date
    for item in read_documents(folder / entry.file, entry.format, **options):
        if isinstance(item, Document):
            # The manifest describes the document; what the reader found in the file (spans, ids) stays.
            item.date = entry.date
            item.title = entry.title
            item.source = {**entry.source, **item.source}
        yield item


def sample_source(folder: Path | None = None) -> DemoSource:
    """The packaged sample (or a copy of it in `folder`)."""
    folder = folder or packaged_sample_dir()
    manifest = load_manifest(folder)

    def read(per_part: int | None) -> Iterator[Item]:
        by_corpus: dict[str, list[SampleDocument]] = {}
        for entry in manifest.documents:
            by_corpus.setdefault(entry.corpus, []).append(entry)
        for entries in by_corpus.values():
            for entry in entries[:per_part]:
                yield from _sample_document(folder, entry)

    return DemoSource(
        kind="sample",
        description=manifest.description,
        location=folder,
        licence=manifest.licence,
        queries=tuple(DemoQuery(**q.model_dump()) for q in manifest.queries),
        read=read,
    )


# -- choosing the source --------------------------------------------------------------------------------


def resolve_demo_source(
    data_dir: Path | None,
    datasets_dir: Path | None,
    cache_dir: Path,
    *,
    download: bool = False,
    base_url: str = DEFAULT_BASE_URL,
    console: Console | None = None,
) -> tuple[DemoSource, list[str]]:
    """The demo's data and the notes worth telling the user (a datasets copy that could not be used).

    `data_dir` (`--data` or TRACERAG_DEMO_DATA) must hold the HIPE files and is an error otherwise; `download`
    fetches them (cached, checksummed); the HIPE files of `datasets_dir` are used when they are all there and
    intact; else the packaged sample. Nothing but `download` touches the network.
    """
    if data_dir is not None and download:
        raise ConfigError("--data and --download both name where the demo data comes from; pass one of them")
    if data_dir is not None:
        return hipe_source(locate_demo_data(data_dir, cache_dir, offline=True)), []
    if download:
        return hipe_source(locate_demo_data(None, cache_dir, base_url=base_url, console=console)), []
    notes: list[str] = []
    if datasets_dir is not None and (datasets_dir / "hipe2022").is_dir():
        try:
            return hipe_source(locate_demo_data(datasets_dir / "hipe2022", cache_dir, offline=True)), []
        except DataUnavailableError as exc:
            notes.append(f"not using {datasets_dir / 'hipe2022'}: {exc}")
    return sample_source(), notes


# -- what the dense channel changed ---------------------------------------------------------------------


def describe_change(lexical: Sequence[str], hybrid: Sequence[str], dense_ranks: Mapping[str, int]) -> list[str]:
    """What adding the dense channel did to a top-k, in a few lines: documents it brought in, documents that
    moved, documents it pushed out. `dense_ranks` is each hybrid result's rank in the dense channel."""
    if list(lexical) == list(hybrid):
        return ["same documents in the same order: the lexical channels already agreed with the dense one"]
    lines = []
    for rank, doc_id in enumerate(hybrid, 1):
        dense = f" (dense rank {dense_ranks[doc_id]})" if doc_id in dense_ranks else ""
        if doc_id not in lexical:
            lines.append(f"new at {rank}: {doc_id}{dense}")
        elif (before := lexical.index(doc_id) + 1) != rank:
            lines.append(f"{'up' if rank < before else 'down'} {before} → {rank}: {doc_id}{dense}")
    lines += [f"out of the top {len(hybrid)}: {doc_id}" for doc_id in lexical if doc_id not in hybrid]
    return lines
