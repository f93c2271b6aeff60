"""Locate or fetch the sample data that `tracerag demo` indexes.

The demo must run the same everywhere, so it uses three small HIPE-2022 v2.1 newspaper files (fr, de, en)
pinned to one commit of their public home, with sizes and sha256 hard-coded: a file that differs by one byte
is refused rather than silently giving other results. They come, in this order of preference, from a folder
the user names (an offline copy), from the cache of an earlier download, or from the network.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import httpx
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from tracerag.errors import DataUnavailableError

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
