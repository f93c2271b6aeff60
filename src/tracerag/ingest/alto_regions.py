"""Page regions of a cited span, from ALTO String coordinates, and the IIIF link to that region of the scan.

ALTO gives every String a box (HPOS, VPOS, WIDTH, HEIGHT) in the file's MeasurementUnit (pixel, mm10: tenths of a
millimetre, inch1200: 1/1200 inch). The reader keeps each String's box by its character span (`BOXES`, with the
Pages in `PAGES`); the store keeps the boxes in a table of their own. A cited span's region is then the union of
the boxes of the Strings it overlaps, one per page (a document may run over several pages).

An IIIF Image API region is in pixels of the full image (`x,y,w,h`) or in percent of it (`pct:x,y,w,h`). Pixel
boxes are used as they are; mm10 and inch1200 become pixels when the scans' resolution is known (`regions.dpi`),
else a percentage of the Page's WIDTH/HEIGHT, which ALTO states in the same unit and which covers the image; with
neither, there is no region, and the note says why. The URL is `{base}/{region}/max/0/default.jpg`, the way
Gallica and impresso link to scans.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tracerag.errors import ConfigError

if TYPE_CHECKING:  # the store imports this module's box types: opening a collection to search loads no lxml
    from lxml import etree

BOXES = "string_boxes"  # source key: [[start, end, page, x, y, w, h], ...] while a document travels to the store
PAGES = "pages"  # source key: [{"id", "number", "width", "height", "unit"}, ...], kept with the document
UNITS = {"pixel": None, "mm10": 254.0, "inch1200": 1200.0}  # units per inch (pixels: the scan's own)
PLACEHOLDERS = ("doc_id", "page_id", "page_number")  # what an IIIF base may name, e.g. ".../{page_id}"
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")

StoredBox = tuple[int, float, float, float, float]  # (page index, x, y, w, h) as the store returns it


def _number(value: str | None) -> float | None:
    try:
        number = float(value) if value is not None else None
    except ValueError:
        return None
    return number if number is not None and math.isfinite(number) and number >= 0 else None


def box_of(el: etree._Element) -> list[float] | None:
    """[x, y, w, h] of an ALTO String or HYP, or None when it lacks a coordinate (or one is not a number)."""
    values = [_number(el.get(name)) for name in ("HPOS", "VPOS", "WIDTH", "HEIGHT")]
    if any(v is None for v in values):
        return None
    return [v for v in values if v is not None]


def page_info(tree: etree._Element, ns: str, pages: Sequence[etree._Element]) -> list[dict[str, Any]]:
    """Each Page's ID, image number (PHYSICAL_IMG_NR, else its position), size and the file's MeasurementUnit."""
    found = next(tree.iter(f"{ns}MeasurementUnit"), None)
    unit = (found.text or "").strip().lower() or None if found is not None else None
    out = []
    for i, page in enumerate(pages):
        number = page.get("PHYSICAL_IMG_NR", "")
        out.append(
            {
                "id": page.get("ID") or f"page{i + 1}",
                "number": int(number) if number.isdigit() else i + 1,
                "width": _number(page.get("WIDTH")),
                "height": _number(page.get("HEIGHT")),
                "unit": unit,
            }
        )
    return out or [{"id": "page1", "number": 1, "width": None, "height": None, "unit": unit}]


@dataclass(frozen=True, slots=True)
class PageRegion:
    """Where a span lies on one page: its box in the file's unit, the IIIF region and URL when there are."""

    page_id: str
    page_number: int
    box: tuple[float, float, float, float]  # x, y, w, h in `unit`
    unit: str | None
    strings: int  # how many String boxes the union covers
    region: str | None  # the IIIF region parameter: "x,y,w,h" (pixels) or "pct:x,y,w,h"
    url: str | None
    note: str  # how the region was made, or why there is none

    def to_dict(self) -> dict[str, Any]:
        return {
            "page_id": self.page_id,
            "page_number": self.page_number,
            "box": [round(v, 2) for v in self.box],
            "unit": self.unit,
            "strings": self.strings,
            "region": self.region,
            "url": self.url,
            "note": self.note,
        }


def union(boxes: Iterable[StoredBox]) -> dict[int, tuple[tuple[float, float, float, float], int]]:
    """Per page index: the smallest box holding every box on it, and how many boxes it holds."""
    edges: dict[int, list[float]] = {}
    counts: dict[int, int] = {}
    for page, x, y, w, h in boxes:
        e = edges.get(page)
        if e is None:
            edges[page] = [x, y, x + w, y + h]
        else:
            edges[page] = [min(e[0], x), min(e[1], y), max(e[2], x + w), max(e[3], y + h)]
        counts[page] = counts.get(page, 0) + 1
    return {p: ((e[0], e[1], e[2] - e[0], e[3] - e[1]), counts[p]) for p, e in sorted(edges.items())}


def iiif_region(
    box: tuple[float, float, float, float], page: Mapping[str, Any], dpi: float | None
) -> tuple[str | None, str]:
    """The IIIF region of `box` on `page`, and how it was made (or why there is none). Pixel edges are rounded
    outwards and percentages widened to the next hundredth, so the region always holds the whole box."""
    unit = page.get("unit")
    width, height = page.get("width"), page.get("height")
    x, y, w, h = box
    if width and height:  # OCR boxes a little outside the page are cut at its edge, as the image is
        x, y = min(max(x, 0.0), width), min(max(y, 0.0), height)
        w, h = min(box[0] + w, width) - x, min(box[1] + h, height) - y
    if unit == "pixel" or (unit in UNITS and dpi):
        scale = 1.0 if unit == "pixel" else float(dpi or 0) / float(UNITS[unit] or 1)
        left, top = math.floor(x * scale), math.floor(y * scale)
        right, bottom = math.ceil((x + w) * scale), math.ceil((y + h) * scale)
        how = "pixels, as ALTO gives them" if unit == "pixel" else f"{unit} at {dpi:g} dpi (regions.dpi), in pixels"
        return f"{left},{top},{right - left},{bottom - top}", how
    said = f"unit {unit}" if unit else "no MeasurementUnit stated"
    if width and height:
        left, top = math.floor(x / width * 10000), math.floor(y / height * 10000)
        right, bottom = math.ceil((x + w) / width * 10000), math.ceil((y + h) / height * 10000)
        pct = ",".join(f"{v / 100:g}" for v in (left, top, right - left, bottom - top))
        why = "no scan resolution known (regions.dpi)" if unit in UNITS else "its pixels cannot be known"
        return f"pct:{pct}", f"percent of the page's WIDTH/HEIGHT: {said}, {why}"
    return None, f"no region: {said} and the Page states no WIDTH/HEIGHT to scale by"


def image_base(template: str, doc_id: str, page: Mapping[str, Any]) -> str:
    """An IIIF image base with its placeholders filled: `{doc_id}`, `{page_id}`, `{page_number}`."""
    values = {"doc_id": doc_id, "page_id": str(page.get("id", "")), "page_number": str(page.get("number", ""))}
    unknown = sorted({name for name in _PLACEHOLDER.findall(template) if name not in values})
    if unknown:
        raise ConfigError(
            f"IIIF base {template!r}: unknown placeholder {', '.join('{' + n + '}' for n in unknown)}; "
            f"expected some of {', '.join('{' + n + '}' for n in PLACEHOLDERS)}"
        )
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template).rstrip("/")


def check_base(template: str | None, what: str = "--iiif-base") -> str | None:
    """An IIIF base as given, checked before any search: an http(s) URL with only known placeholders."""
    if template is None or not template.strip():
        return None
    template = template.strip()
    if not template.startswith(("http://", "https://")):
        raise ConfigError(f"{what} {template!r}: expected an http:// or https:// IIIF image base")
    image_base(template, "", {})
    return template


def region_url(base: str, region: str) -> str:
    """The IIIF Image API URL of `region` of the image at `base`."""
    return f"{base.rstrip('/')}/{region}/max/0/default.jpg"


def base_for(source: Mapping[str, Any], given: str | None) -> str | None:
    """The IIIF image base of a document: its own `source.iiif` (it names that very scan), else the one given
    (`--iiif-base`, else the `regions.iiif_base` setting): a collection-wide template for documents that do not."""
    own = source.get("iiif")
    if isinstance(own, str) and own.startswith(("http://", "https://")):
        return own
    return given


def page_regions(
    doc_id: str,
    source: Mapping[str, Any],
    boxes: Iterable[StoredBox],
    *,
    iiif_base: str | None = None,
    dpi: float | None = None,
) -> list[PageRegion]:
    """The regions of a span on each page it covers, from the String boxes it overlaps (`DocumentStore.boxes_in`)
    and the document's `source` (its `PAGES`, its own `iiif` base). No boxes: no region (an empty list)."""
    pages = source.get(PAGES) or []
    base = base_for(source, iiif_base)
    out = []
    for index, (box, strings) in union(boxes).items():
        page: Mapping[str, Any] = (
            pages[index] if 0 <= index < len(pages) else {"id": f"page{index + 1}", "number": index + 1}
        )
        region, note = iiif_region(box, page, dpi)
        url = region_url(image_base(base, doc_id, page), region) if base and region else None
        if region and not base:
            note += "; no IIIF base (--iiif-base, regions.iiif_base or the document's source.iiif)"
        out.append(
            PageRegion(
                page_id=str(page.get("id")),
                page_number=int(page.get("number") or index + 1),
                box=box,
                unit=page.get("unit"),
                strings=strings,
                region=region,
                url=url,
                note=note,
            )
        )
    return out


NO_BOXES = (
    "no page regions: this collection keeps no ALTO String boxes (its documents are not ALTO, their ALTO has no "
    "coordinates, or they were ingested before boxes were kept: only then does re-ingesting the ALTO files add them)"
)
