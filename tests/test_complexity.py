"""No function or method of src/tracerag ranks above complexity D (radon's cyclomatic complexity, 30 or less):
a longer chain of decisions is broken at its seams into functions of one job each. The offenders are listed as
`path:line name rank(score)`, as `radon cc -s -n E src/tracerag` shows them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from radon.complexity import cc_rank, cc_visit
from radon.visitors import Class, Function

ROOT = Path(__file__).parents[1]
PACKAGE = ROOT / "src" / "tracerag"
WORST = "D"  # radon's ranks: A (1-5) ... D (21-30), E (31-40), F (41 and more)


def _functions(blocks: list[Function | Class]) -> Iterator[Function]:
    """Every function and method (`cc_visit` lists a class's methods beside it; a class's own rank is its methods'
    mean, not a function's); a closure counts in its function's complexity, as `radon cc` counts it."""
    return (block for block in blocks if isinstance(block, Function))


def _offenders(package: Path, root: Path = ROOT) -> list[str]:
    found = []
    for path in sorted(package.rglob("*.py")):
        for f in _functions(cc_visit(path.read_text(encoding="utf-8"))):
            rank = cc_rank(f.complexity)
            if rank > WORST:
                found.append(f"{path.relative_to(root).as_posix()}:{f.lineno} {f.fullname} {rank}({f.complexity})")
    return found


def test_no_function_ranks_above_d() -> None:
    offenders = _offenders(PACKAGE)
    assert not offenders, f"{len(offenders)} functions rank above {WORST}:\n" + "\n".join(offenders)


def test_an_offender_is_named(tmp_path) -> None:
    """The check itself can fail: a method of 31 branches is caught, named by its file, line and class."""
    branches = "".join(f"        if x == {i}:\n            return {i}\n" for i in range(30))
    (tmp_path / "tangled.py").write_text(f"class Knot:\n    def tie(self, x):\n{branches}        return -1\n")
    assert _offenders(tmp_path, tmp_path) == ["tangled.py:2 Knot.tie E(31)"]
