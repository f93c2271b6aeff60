"""A researcher's spelling and synonym map, applied to a query when it is searched (the index is untouched, so
the map can change between two searches without re-ingesting).

The file is TSV, one group of equivalent forms per line: `grève<TAB>greve<TAB>grêve`. Any form of a group found
in a query (on word boundaries, in the folded key form of `text.fold_key`) brings the group's other forms into
it; a form may be several words. Blank lines and lines starting with `#` are skipped. A line with fewer than two
forms, or a form that two groups claim, is an error naming the file and line, and the map is refused whole, so a
typo never silently drops half of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tracerag.errors import TraceError
from tracerag.text import fold_key


class SynonymMapError(TraceError):
    """A synonym map that cannot be used: the message names the file and line."""


@dataclass(frozen=True)
class Applied:
    """One form of the map found in the query, and the forms it added."""

    found: str
    added: tuple[str, ...]
    line: int  # of the map


@dataclass(frozen=True)
class SynonymMap:
    groups: tuple[tuple[str, ...], ...]  # each group's forms as written
    lines: tuple[int, ...]  # the line of each group in its file
    source: str = ""
    _index: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def read(cls, path: Path) -> SynonymMap:
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise SynonymMapError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        except OSError as exc:
            raise SynonymMapError(f"{path}: cannot read the synonym map ({exc.strerror})") from None
        return cls.parse(text, str(path))

    @classmethod
    def parse(cls, text: str, source: str = "<map>") -> SynonymMap:
        groups: list[tuple[str, ...]] = []
        lines: list[int] = []
        index: dict[str, int] = {}
        for n, raw in enumerate(text.splitlines(), start=1):
            if not raw.strip() or raw.lstrip().startswith("#"):
                continue
            forms = tuple(f.strip() for f in raw.split("\t") if f.strip())
            if len(forms) < 2:
                raise SynonymMapError(
                    f"{source}:{n}: expected at least two forms separated by tabs, got {raw.strip()!r}"
                    + (" (spaces are not separators)" if "\t" not in raw and " " in raw.strip() else "")
                )
            for form in forms:
                key = fold_key(form)
                if not key:
                    raise SynonymMapError(f"{source}:{n}: the form {form!r} has no letter or digit")
                if key in index and index[key] != len(groups):
                    raise SynonymMapError(
                        f"{source}:{n}: {form!r} is already in the group of line {lines[index[key]]}; "
                        "merge the two lines"
                    )
                index[key] = len(groups)
            groups.append(forms)
            lines.append(n)
        return cls(tuple(groups), tuple(lines), source, index)

    def __len__(self) -> int:
        return len(self.groups)

    def apply(self, query: str) -> tuple[str, list[Applied]]:
        """The query with every group it touches completed: the forms it lacks appended, each once; and what
        was found and added. A query the map does not touch comes back unchanged."""
        words = fold_key(query).split()
        padded = f" {' '.join(words)} "
        applied: list[Applied] = []
        present = set()
        # longest forms first, so that "saint lo" is found before "lo"
        for key in sorted(self._index, key=lambda k: (-len(k.split()), k)):
            if f" {key} " in padded:
                present.add(key)
        added_groups: set[int] = set()
        extra: list[str] = []
        for key in sorted(present, key=lambda k: padded.index(f" {k} ")):
            g = self._index[key]
            if g in added_groups:
                continue
            added_groups.add(g)
            new: list[str] = []
            for form in self.groups[g]:
                key_of_form = fold_key(form)
                if key_of_form not in present:  # forms that fold alike ("Saint-Lô", "Saint Lo") are added once
                    present.add(key_of_form)
                    new.append(form)
            if new:
                applied.append(Applied(key, tuple(new), self.lines[g]))
                extra.extend(new)
        if not extra:
            return query, []
        return query + " " + " ".join(extra), applied
