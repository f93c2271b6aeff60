"""Row options every table reader of a directory shares (mapped CSV/JSONL, 211 exports): which rows are services
to list, which cells mean "no value", and which spellings of a value are one value.

In a mapping file (TOML; see `catalog.mapping` and the table in docs/guide/catalog-mapping.md)::

    filter = {Status = "Active"}             # keep a row only when Status is Active (a list: any of them)
    exclude = {Status = ["Inactive", "Closed"], Private = "Yes"}   # drop a row when a column has one of these
    null = ["-1", "Unknown", "N/A"]          # cells that mean no value, in every column read
    [aliases.city]                           # spellings no rule can merge, to the value the catalog keeps
    "Metro Riverton" = "Riverton"

Values compare with case and surrounding spaces ignored ("active" = "Active "), nothing else: "-1" is not "1".
A row filtered out is not an error: it is counted by reason (`ReadStats.filtered`), and the ingest reports it.
Aliases act on the record's own fields when it is read (so filters, counts and replies see one spelling); the
names people *say* that the data never writes ("Dale" for a county written "Lake-Dale") are the profile's
`place_aliases`, used when a request is read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tracerag.catalog.clean import place_key
from tracerag.errors import ConfigError

ALIAS_FIELDS = ("city", "county", "state", "organization", "languages", "accessibility")
ROW_OPTIONS = ("filter", "exclude", "null", "aliases")


def cell_key(value: Any) -> str:
    """How a cell compares with a value a person wrote (a filter, a null marker, an X mark, a status): spaces
    collapsed and casefolded, nothing else. Not `text.fold_key`, which compares *names* and drops punctuation and
    accents: there "-1" would equal "1" and "N/A" "n a", so a null marker "-1" would erase every cell "1"."""
    return " ".join(str(value).split()).casefold()


@dataclass(slots=True)
class Row:
    """One row of a table file: its first physical line (for messages) and its cells by column; a column the
    file lacks reads as ""."""

    line: int
    cells: dict[str, str]

    def __getitem__(self, key: str) -> str:
        return self.cells.get(key, "")


@dataclass
class ReadStats:
    """What a read found besides the records: rows filtered out by reason, and the addresses' country cells (for
    the profile)."""

    rows: int = 0
    filtered: Counter[str] = field(default_factory=Counter)
    countries: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True)
class RowOptions:
    keep: Mapping[str, frozenset[str]] = field(default_factory=dict)  # column -> accepted values (cell_key)
    drop: Mapping[str, frozenset[str]] = field(default_factory=dict)  # column -> values that exclude a row
    nulls: frozenset[str] = frozenset()  # cell_key of cells that mean no value
    aliases: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # field -> place_key(variant) -> value

    @classmethod
    def parse(cls, spec: Mapping[str, Any], *, defaults: RowOptions | None = None) -> RowOptions:
        """The row options of a mapping; a key given replaces the default's (`defaults`: a reader's own)."""
        base = defaults or cls()
        keep = _conditions(spec["filter"], "filter") if "filter" in spec else base.keep
        drop = _conditions(spec["exclude"], "exclude") if "exclude" in spec else base.drop
        nulls = base.nulls
        if "null" in spec:
            values = spec["null"]
            values = [values] if isinstance(values, str | int | float) else values
            if not isinstance(values, list) or not all(isinstance(v, str | int | float) for v in values):
                raise ConfigError(f"mapping: null must be a list of cell values, not {spec['null']!r}")
            nulls = frozenset(cell_key(v) for v in values)
        aliases = dict(base.aliases)
        if "aliases" in spec:
            table = spec["aliases"]
            if not isinstance(table, Mapping):
                raise ConfigError(f"mapping: aliases must be a table of fields ([aliases.city]), not {table!r}")
            for name, pairs in table.items():
                if name not in ALIAS_FIELDS:
                    raise ConfigError(f"mapping: aliases.{name}: expected one of {', '.join(ALIAS_FIELDS)}")
                if not isinstance(pairs, Mapping) or not all(isinstance(v, str) for v in pairs.values()):
                    raise ConfigError(f'mapping: aliases.{name} must map spellings to values ("A" = "B")')
                aliases[name] = {place_key(k): " ".join(v.split()) for k, v in pairs.items()}
        return cls(keep, drop, nulls, aliases)

    def columns(self) -> list[str]:
        """The columns the filters read (they must be in the header)."""
        return list(dict.fromkeys([*self.keep, *self.drop]))

    def excluded(self, values: Mapping[str, Any]) -> str | None:
        """Why a row is not a service to list ("Status is 'Inactive'"), or None to keep it."""
        for column, accepted in self.keep.items():
            if cell_key(values.get(column) or "") not in accepted:
                return f"{column} is not {' or '.join(repr(v) for v in sorted(accepted))}"
        for column, refused in self.drop.items():
            cell = cell_key(values.get(column) or "")
            if cell in refused:
                return f"{column} is {cell!r}"
        return None

    def is_null(self, cell: Any) -> bool:
        return bool(self.nulls) and cell_key(cell) in self.nulls

    def alias(self, name: str, value: str) -> str:
        table = self.aliases.get(name)
        if not table or not value:
            return value
        return table.get(place_key(value), value)


def _conditions(value: Any, key: str) -> dict[str, frozenset[str]]:
    if not isinstance(value, Mapping) or not value:
        raise ConfigError(f'mapping: {key} must be a table of column = value(s), e.g. {{Status = "Active"}}')
    out: dict[str, frozenset[str]] = {}
    for column, accepted in value.items():
        items = accepted if isinstance(accepted, list) else [accepted]
        if not items or not all(isinstance(v, str | int | float | bool) for v in items):
            raise ConfigError(f"mapping: {key}.{column} must be a value or a list of values, not {accepted!r}")
        out[str(column)] = frozenset(cell_key(str(v).lower() if isinstance(v, bool) else v) for v in items)
    return out
