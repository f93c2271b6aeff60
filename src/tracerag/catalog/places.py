"""The areas a directory says a service covers, read from its coverage cells into `ServiceRecord.service_areas`.

The cells come from the coverage columns of a 211 export, HSDS `service_area` rows or a mapped column
(`service_areas`). With the record's own region, city, county and postal code they are the record's areas
(`filters.record_areas`), on which an AREA constraint is matched: a request naming a place that only a coverage
column holds ("Ridge County") finds the records covering it and those located in it.

Coverage cells are lists ("LK - Ridge County; LK - Vale County;", "Ridge County, Vale County"): split
at semicolons, commas and line breaks; an entry "XX - Name" (a region code, a dash, a name: the 211 export's
form) is the place Name within region XX, so Name is the area (a service covering one county of a region does
not cover the region). Entries longer than a place name (a sentence of free text) are left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["MAX_AREA_WORDS", "coverage_entries"]

MAX_AREA_WORDS = 5  # "Fort of North Ridge County": longer entries are sentences, not place names
_ENTRY_SEPARATOR = re.compile(r"[;,\n]+")
_REGION_PREFIX = re.compile(r"^[A-Z]{2,3}\s+-\s+(?P<name>.+)$")


def coverage_entries(cells: Iterable[str]) -> list[str]:
    """The place names of coverage cells, in order, once each, as written (spaces collapsed)."""
    out: list[str] = []
    for cell in cells:
        for part in _ENTRY_SEPARATOR.split(cell or ""):
            entry = " ".join(part.split()).strip(" .-")
            m = _REGION_PREFIX.match(entry)
            if m:
                entry = m.group("name").strip(" .-")
            if entry and len(entry.split()) <= MAX_AREA_WORDS and entry not in out:
                out.append(entry)
    return out
