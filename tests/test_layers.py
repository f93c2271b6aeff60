"""The import layers hold: no module imports a layer above its own, and no import closes a cycle.

Every module's imports are read with `ast`, module-level and function-level alike (a function-level import is how
the old CLI circle hid: `cli.py` imported `cli_agent.py` at the top, which imported `cli.py` inside a function), and
imports under `if TYPE_CHECKING:` too (a type named from above is still a dependency on above). Each import is
mapped to the top-level module or package of `src/tracerag` it reaches, and that to its layer in `LAYERS`: the one
table of the layers, the same as docs/architecture.md's (`python -m tests.test_layers` prints it as markdown). A
new top-level module or package needs a row there and here; a new module inside a package needs nothing. A unit may
also be a subpackage (`ingest.jobs`): its modules then belong to its layer, not to their parent package's, and the
parent and the subpackage are held to the layers like any two units (the readers of `ingest` may not import the
jobs above them, which write through the collection).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

SRC = Path(__file__).parents[1] / "src"
PAGE = Path(__file__).parents[1] / "docs" / "architecture.md"
PACKAGE = "tracerag"


@dataclass(frozen=True)
class Layer:
    """A layer: the top-level modules and packages of `src/tracerag` in it (`tracerag` is the package's own
    `__init__`; a dotted name is a subpackage placed apart from its parent), and which of them may import each
    other. A module may always import its own package or module, and any layer below its own; never a layer above."""

    name: str
    units: tuple[str, ...]
    # "any": its units may import each other (without a cycle); "ordered": a unit only those listed before it;
    # "none": its units never import each other (independent wings, each built on the layers below).
    within: Literal["any", "ordered", "none"] = "any"


# Bottom first.
LAYERS: tuple[Layer, ...] = (
    Layer("foundation", ("tracerag", "model", "errors", "text", "dates", "config", "locks", "options")),
    Layer("storage and reading", ("ingest", "store", "engine", "embed")),
    # The ingest jobs live in `ingest/` but write through the collection, so they sit above the readers.
    Layer("the collection", ("collection", "ingest.jobs", "migrate", "demo_data")),
    Layer("retrieval", ("retrieval",)),
    # The trail records model calls, so it may know `llm`; `llm` never imports the trail. A plain search (`search`)
    # asks `llm` for variants and records its run in the trail, so it comes after both.
    Layer("services", ("llm", "trail", "search"), within="ordered"),
    Layer("wings", ("agent", "catalog", "research"), within="none"),
    # `eval` may import everything below it; only the front doors are above it, so nothing else imports it.
    Layer("measurement", ("eval",)),
    # `cli` starts the server (`serve`, `demo --serve`) and the tool server (`mcp`), which works through the server's
    # service functions; the server never imports either.
    Layer("front doors", ("server", "mcp", "cli"), within="ordered"),
)


@dataclass(frozen=True)
class Import:
    importer: str  # dotted module name ("tracerag.agent.loop"; a package is its __init__: "tracerag.agent")
    imported: str  # the module of src it reaches
    path: Path  # the importer's file, relative to the source root
    line: int

    def where(self) -> str:
        return f"{self.path.as_posix()}:{self.line}"


def modules(src: Path = SRC) -> dict[str, Path]:
    """Dotted module name → file (relative to `src`), for every module of the package under `src`."""
    found = {}
    for path in sorted((src / PACKAGE).rglob("*.py")):
        parts = path.relative_to(src).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path.relative_to(src)
    return found


def imports(src: Path = SRC) -> list[Import]:
    """Every import of one module of the package by another, with the importer's file and line."""
    known = modules(src)
    out = []
    for importer, path in known.items():
        package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
        source = (src / path).read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source, filename=str(src / path))):
            for target in _targets(node, package, known):
                reached = _nearest(target, known)
                if reached is not None and reached != importer:
                    out.append(Import(importer, reached, path, node.lineno))
    return out


def _targets(node: ast.AST, package: str, known: dict[str, Path]) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:  # relative: `from . import x`, `from ..engine import wire`
        parts = package.split(".")
        base = ".".join(parts[: len(parts) - node.level + 1])
        base = f"{base}.{node.module}" if node.module else base
    else:
        base = node.module or ""
    # `from tracerag import model` imports the module `tracerag.model`; `from tracerag.model import Hit` a name.
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]


def _nearest(name: str, known: dict[str, Path]) -> str | None:
    """The module of the package that importing `name` runs (itself, or the package that holds the name)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def unit(module: str, placed: Iterable[str] = ()) -> str:
    """The unit a module belongs to: the longest of the `placed` subpackages holding it ("tracerag.ingest.jobs.run"
    → "ingest.jobs" when that is placed), else its top-level module or package ("tracerag.agent.loop" → "agent")."""
    parts = module.split(".")[1:] or [module]
    named = set(placed)
    for n in range(len(parts), 1, -1):
        if ".".join(parts[:n]) in named:
            return ".".join(parts[:n])
    return parts[0]


def _placed(layers: Sequence[Layer]) -> set[str]:
    return {u for layer in layers for u in layer.units}


def layer_violations(found: Iterable[Import], layers: Sequence[Layer] = LAYERS) -> list[str]:
    """One line per import that breaks the layers, naming the importer's file and line and the rule broken."""
    level = {u: (i, layer) for i, layer in enumerate(layers) for u in layer.units}
    problems = []
    for imp in found:
        a, b = unit(imp.importer, level), unit(imp.imported, level)
        if a == b or a not in level or b not in level:  # a module in no layer is `unplaced`
            continue
        (i, layer), (j, other) = level[a], level[b]
        said = f"{imp.where()}: {imp.importer} imports {imp.imported}"
        if j > i:
            problems.append(f"{said}: layer '{layer.name}' ({a}) imports layer '{other.name}' ({b}), which is above it")
        elif j == i and layer.within == "none":
            problems.append(f"{said}: the {layer.name} ({', '.join(layer.units)}) never import each other")
        elif j == i and layer.within == "ordered" and layer.units.index(b) > layer.units.index(a):
            problems.append(f"{said}: in layer '{layer.name}', {b} comes after {a}, so {a} may not import it")
    return sorted(set(problems))


def unplaced(known: dict[str, Path], layers: Sequence[Layer] = LAYERS) -> list[str]:
    """One line per top-level module or package that no layer names, with its file, and per subpackage a layer
    names that holds no module (a unit renamed or moved would otherwise leave its modules in their parent's layer)."""
    placed = _placed(layers)
    first: dict[str, Path] = {}
    for module, path in known.items():
        first.setdefault(unit(module, placed), path)
    missing = [
        f"{path.as_posix()}: '{name}' is in no layer of LAYERS (tests/test_layers.py)"
        for name, path in sorted(first.items())
        if name not in placed
    ]
    gone = [
        f"LAYERS (tests/test_layers.py) places '{name}', which holds no module"
        for name in sorted(placed)
        if "." in name and name not in first and name.rpartition(".")[0] in first
    ]
    return missing + gone


def cycles(found: Iterable[Import]) -> list[list[Import]]:
    """One import cycle (as the imports that close it) per group of modules that import each other in a circle."""
    edges: dict[str, dict[str, Import]] = {}
    for imp in found:
        edges.setdefault(imp.importer, {}).setdefault(imp.imported, imp)
    out = []
    for group in _strongly_connected(edges):
        start = min(group)
        out.append(_cycle_through(start, group, edges))
    return out


def _strongly_connected(edges: dict[str, dict[str, Import]]) -> list[set[str]]:
    """Tarjan's algorithm; only groups of two or more modules (an import of itself is dropped when read)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return groups


def _cycle_through(start: str, group: set[str], edges: dict[str, dict[str, Import]]) -> list[Import]:
    """The shortest path of imports from `start` back to itself inside its group (breadth first)."""
    came: dict[str, Import] = {}
    frontier = [start]
    while frontier:
        following = []
        for v in frontier:
            for w, imp in sorted(edges.get(v, {}).items()):
                if w not in group or w in came:
                    continue
                came[w] = imp
                if w == start:
                    path = [imp]
                    while path[0].importer != start:
                        path.insert(0, came[path[0].importer])
                    return path
                following.append(w)
        frontier = following
    raise AssertionError(f"{start} is in a strongly connected group without a cycle through it")


def describe(cycle: list[Import]) -> str:
    return "import cycle: " + " → ".join(f"{imp.importer} ({imp.where()})" for imp in cycle) + f" → {cycle[0].importer}"


def markdown(layers: Sequence[Layer] = LAYERS) -> str:
    """The layer table as docs/architecture.md shows it (copy it there when a row changes)."""
    within = {"any": "each other, without a cycle", "ordered": "each only those before it", "none": "never each other"}
    rows = ["| layer | packages and modules | may import |", "|---|---|---|"]
    for i, layer in enumerate(layers):
        names = [u for u in layer.units if u != PACKAGE]
        may = [] if i == 0 else ["layer 0" if i == 1 else f"layers 0–{i - 1}"]
        may += [within[layer.within]] if len(names) > 1 else []
        rows.append(f"| {i}. {layer.name} | {', '.join(f'`{u}`' for u in names)} | {'; '.join(may)} |")
    return "\n".join(rows)


# -- the package as it is --------------------------------------------------------------------------------------


def test_every_import_points_down_the_layers() -> None:
    found = imports()
    assert len(found) > 300, f"only {len(found)} imports read: is {SRC / PACKAGE} the package?"
    problems = unplaced(modules()) + layer_violations(found)
    assert not problems, "imports that break the layers:\n" + "\n".join(problems)


def test_no_import_closes_a_cycle() -> None:
    found = cycles(imports())
    assert not found, "\n".join(describe(c) for c in found)


def test_the_architecture_page_places_each_module_in_the_same_layer() -> None:
    """docs/architecture.md's table and LAYERS agree on every name both place (which names must be placed at all
    is tests/test_architecture.py's check)."""
    table = PAGE.read_text(encoding="utf-8").split("## Layers", 1)[1].split("\n## ", 1)[0]
    on_page = {}
    for row in re.findall(r"^\| (\d+)\. [^|]+\|([^|]+)\|", table, flags=re.M):
        for name in re.findall(r"`([\w.]+)`", row[1]):
            on_page[name] = int(row[0])
    here = {u: i for i, layer in enumerate(LAYERS) for u in layer.units}
    differ = {n: (on_page[n], here[n]) for n in on_page.keys() & here.keys() if on_page[n] != here[n]}
    assert len(on_page) >= 10, f"the page's layer table was not found or changed shape: {sorted(on_page)}"
    assert not differ, f"layer on the page vs in LAYERS: {differ}"


# -- the check itself can fail ---------------------------------------------------------------------------------


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in {"__init__.py": "", **files}.items():
        path = root / PACKAGE / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_an_upward_import_inside_a_function_is_named_with_its_line(tmp_path: Path) -> None:
    src = _package(
        tmp_path,
        {
            "model.py": '"""nouns"""\n\n\ndef helper():\n    from tracerag.agent.loop import run\n',
            "agent/__init__.py": "",
            "agent/loop.py": "from tracerag.model import Hit\n",
        },
    )
    problems = layer_violations(imports(src))
    assert problems == [
        "tracerag/model.py:5: tracerag.model imports tracerag.agent.loop: layer 'foundation' (model) imports "
        "layer 'wings' (agent), which is above it"
    ]


def test_relative_and_from_package_imports_are_resolved(tmp_path: Path) -> None:
    src = _package(
        tmp_path,
        {
            "retrieval/__init__.py": "",
            "retrieval/search.py": "from . import fusion\nfrom ..trail import events\n",
            "retrieval/fusion.py": "from tracerag import model\n",
            "model.py": "",
            "trail/__init__.py": "",
            "trail/events.py": "",
        },
    )
    found = {(i.importer, i.imported, i.line) for i in imports(src)}
    assert found == {
        ("tracerag.retrieval.search", "tracerag.retrieval.fusion", 1),
        ("tracerag.retrieval.search", "tracerag.trail.events", 2),
        ("tracerag.retrieval.fusion", "tracerag.model", 1),
    }
    assert layer_violations(imports(src)) == [
        "tracerag/retrieval/search.py:2: tracerag.retrieval.search imports tracerag.trail.events: layer "
        "'retrieval' (retrieval) imports layer 'services' (trail), which is above it"
    ]


def test_the_wings_and_the_services_keep_their_own_rules(tmp_path: Path) -> None:
    src = _package(
        tmp_path,
        {
            "catalog/__init__.py": "from tracerag.agent import verdicts\n",
            "agent/__init__.py": "",
            "agent/verdicts.py": "",
            "llm.py": "if False:\n    import tracerag.trail\n",
            "trail/__init__.py": "import tracerag.llm\n",
            "eval.py": "import tracerag.agent.verdicts\n",
        },
    )
    problems = layer_violations(imports(src))
    assert problems == [
        "tracerag/catalog/__init__.py:1: tracerag.catalog imports tracerag.agent.verdicts: the wings (agent, "
        "catalog, research) never import each other",
        "tracerag/llm.py:2: tracerag.llm imports tracerag.trail: in layer 'services', trail comes after llm, so llm "
        "may not import it",
    ]


def test_a_module_in_no_layer_is_named(tmp_path: Path) -> None:
    src = _package(
        tmp_path, {"webhooks/__init__.py": "", "webhooks/app.py": "from tracerag import model\n", "model.py": ""}
    )
    assert unplaced(modules(src)) == [
        "tracerag/webhooks/__init__.py: 'webhooks' is in no layer of LAYERS (tests/test_layers.py)"
    ]
    assert layer_violations(imports(src)) == []


def test_a_subpackage_placed_above_its_parent_is_held_to_its_own_layer(tmp_path: Path) -> None:
    """`ingest.jobs` writes through the collection (one layer up from the readers of `ingest`): the jobs may import
    the collection and the readers; a reader may import neither the jobs nor the collection."""
    src = _package(
        tmp_path,
        {
            "ingest/__init__.py": "",
            "ingest/jsonl.py": "from tracerag.ingest.jobs.run import ingest_into\n",
            "ingest/jobs/__init__.py": "",
            "ingest/jobs/run.py": "from tracerag.collection import Collection\nfrom tracerag.ingest import jsonl\n",
            "collection.py": "from tracerag import ingest\n",
        },
    )
    assert unplaced(modules(src)) == []
    assert layer_violations(imports(src)) == [
        "tracerag/ingest/jsonl.py:1: tracerag.ingest.jsonl imports tracerag.ingest.jobs.run: layer 'storage and "
        "reading' (ingest) imports layer 'the collection' (ingest.jobs), which is above it"
    ]
    assert unit("tracerag.ingest.jobs.run", ["ingest.jobs"]) == "ingest.jobs"
    assert unit("tracerag.ingest.jsonl", ["ingest.jobs"]) == "ingest"
    assert unit("tracerag") == "tracerag"


def test_a_placed_subpackage_that_is_gone_is_named(tmp_path: Path) -> None:
    src = _package(tmp_path, {"ingest/__init__.py": "", "ingest/run.py": "", "model.py": ""})
    assert unplaced(modules(src)) == ["LAYERS (tests/test_layers.py) places 'ingest.jobs', which holds no module"]


def test_a_cycle_through_a_function_level_import_is_found(tmp_path: Path) -> None:
    """The old CLI circle, in small: the app imports a command group, which imports the app inside a function."""
    src = _package(
        tmp_path,
        {
            "cli.py": "from tracerag import cli_agent\n",
            "cli_agent.py": "def command():\n    from tracerag.cli import app\n",
            "model.py": "",
        },
    )
    found = cycles(imports(src))
    assert [describe(c) for c in found] == [
        "import cycle: tracerag.cli (tracerag/cli.py:1) → tracerag.cli_agent (tracerag/cli_agent.py:2) → tracerag.cli"
    ]


if __name__ == "__main__":
    print(markdown())
