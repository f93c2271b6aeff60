"""docs/architecture.md stays true to the code: it names every module under src/tracerag (and no module that is
gone), and its layer table places every top-level module and package. A module added, removed or renamed
without the page saying so fails here, with the names to add or remove."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[1]
PACKAGE = ROOT / "src" / "tracerag"
PAGE = ROOT / "docs" / "architecture.md"

_MODULE = re.compile(r"`(tracerag/[\w/]+\.py)`")


def _page() -> str:
    return PAGE.read_text(encoding="utf-8")


def _modules_in_code() -> set[str]:
    return {f"tracerag/{p.relative_to(PACKAGE).as_posix()}" for p in PACKAGE.rglob("*.py")}


def test_the_page_names_every_module_and_only_modules_that_exist() -> None:
    named = set(_MODULE.findall(_page()))
    code = _modules_in_code()
    assert not code - named, "modules the architecture page does not name: " + ", ".join(sorted(code - named))
    assert not named - code, "the architecture page names modules that do not exist: " + ", ".join(sorted(named - code))


def test_the_layer_table_places_every_top_level_module_and_package() -> None:
    table = _page().split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in table.splitlines() if re.match(r"\| \d\.", line)]
    named = {name for row in rows for name in re.findall(r"`([\w.]+)`", row.split("|")[2])}
    # A dotted name is a subpackage placed apart from its parent (`ingest.jobs`).
    placed = {name for name in named if "." not in name}
    subpackages = {name for name in named if "." in name}
    top = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"} | {
        p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()
    }
    assert not top - placed, "top-level modules the layer table does not place: " + ", ".join(sorted(top - placed))
    assert not placed - top, "the layer table places modules that do not exist: " + ", ".join(sorted(placed - top))
    gone = {name for name in subpackages if not (PACKAGE.joinpath(*name.split(".")) / "__init__.py").exists()}
    assert not gone, "the layer table places subpackages that do not exist: " + ", ".join(sorted(gone))


def test_a_module_added_without_the_page_fails(tmp_path, monkeypatch) -> None:
    """The check itself can fail: a copy of the package with one more module is caught."""
    import shutil

    copy = tmp_path / "tracerag"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "retrieval" / "not_named_anywhere.py").write_text('"""new"""\n', encoding="utf-8")
    monkeypatch.setattr(__import__(__name__, fromlist=["PACKAGE"]), "PACKAGE", copy)
    try:
        test_the_page_names_every_module_and_only_modules_that_exist()
    except AssertionError as error:
        assert "tracerag/retrieval/not_named_anywhere.py" in str(error)
    else:
        raise AssertionError("a module missing from the page was not caught")
