"""The search page (`/`) and the document view (`/collections/{name}/documents/{doc_id}`), rendered on the server.

The search is a plain GET form, so that it works without JavaScript and its address is the search: a bookmark or
a link shared with a colleague runs it again (`/?q=fire&corpus=letemps&from=1880`). It runs through the API's
`run` (the same request model, the same library call, a run recorded in the trail); a bad option is said on the
page beside the form, naming the option. Document text reaches the page only through Jinja's autoescaping: a
snippet or a cited span is cut into pieces by character offsets on the server and each piece is escaped."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import ValidationError

from tracerag.config import CHANNELS
from tracerag.errors import TraceError
from tracerag.retrieval.search_filter import OptionNames
from tracerag.server.api.collections import document_view, searchable, web_link
from tracerag.server.api.search import SearchAnswer, SearchBody, TimeWindows, run
from tracerag.server.deps import State
from tracerag.server.errors import field_of, status_of, validation_message
from tracerag.server.state import ServerState

router = APIRouter(include_in_schema=False)

# The page's query parameters: short names, the CLI's where it has one (`from`, `to`), so that an address reads
# like the command line it matches.
LIST_PARAMS = {"corpus": "corpus", "language": "language", "channel": "channels", "expand": "expand", "add": "add"}
PLAIN_PARAMS = {"q": "query", "k": "k", "from": "date_from", "to": "date_to", "windows": "windows", "filter": "filter"}
PLAIN_PARAMS |= {"min_ocr": "min_ocr"}

# The form's labels by the request field each box fills: an error on the page names the box a person typed in
# ("From", not `date_from`); the API keeps its field names.
LABELS = {
    "query": "Words", "k": "Results", "date_from": "From", "date_to": "To", "windows": "Windows",
    "filter": "Boolean filter", "min_ocr": "Least OCR quality", "add": "Add a word", "expand": "Expansion",
    "channels": "Channels", "corpus": "Sub-corpora", "language": "Languages", "fields": "field",
}  # fmt: skip
PAGE_NAMES = OptionNames(
    date_from=LABELS["date_from"], date_to=LABELS["date_to"], fields=LABELS["fields"], corpus=LABELS["corpus"],
    language=LABELS["language"], doc_ids="doc_ids", iiif_base="iiif_base",
)  # fmt: skip


def pieces(text: str, spans: list[list[int]] | list[tuple[int, int]]) -> list[tuple[str, bool]]:
    """`text` cut at `spans` into (piece, marked) pairs, in order; overlapping spans merged. The template escapes
    each piece and wraps the marked ones in <mark>: offsets, never string replacement in HTML."""
    out: list[tuple[str, bool]] = []
    at = 0
    for start, end in sorted((int(s), int(e)) for s, e in spans):
        start = max(start, at)
        if end <= start:
            continue
        if start > at:
            out.append((text[at:start], False))
        out.append((text[start:end], True))
        at = end
    if at < len(text):
        out.append((text[at:], False))
    return out


def document_href(name: str, doc_id: str, start: int | None = None, end: int | None = None) -> str:
    """The document view's address; the id is quoted whole ("/" and "#" too), so no id reads as a path."""
    href = f"/collections/{quote(name, safe='')}/documents/{quote(doc_id, safe='')}"
    if start is not None and end is not None:
        href += "?" + urlencode({"start": start, "end": end}) + "#span"
    return href


def window_chart(windows: TimeWindows | None) -> dict[str, Any] | None:
    """The windowing diagnostic as SVG geometry: per window, a bar for its share of the results and one for its
    share of the documents searched, on one scale (the largest share spans the chart)."""
    if windows is None or not windows.rows:
        return None
    bar_h, gap, label_w, width = 10, 8, 90, 300
    top = max(max(r.result_share, r.corpus_share) for r in windows.rows) or 1.0
    rows = []
    for i, r in enumerate(windows.rows):
        y = i * (2 * bar_h + gap)
        rows.append(
            {
                "row": r,
                "y": y,
                "text_y": y + bar_h + 4,
                "result_w": round(width * r.result_share / top, 1),
                "corpus_w": round(width * r.corpus_share / top, 1),
                "corpus_y": y + bar_h,
            }
        )
    return {
        "rows": rows,
        "label_w": label_w,
        "bar_h": bar_h,
        "width": label_w + width + 10,
        "height": len(rows) * (2 * bar_h + gap),
        "windows": windows,
    }


def _body(request: Request) -> dict[str, Any]:
    params = request.query_params
    body: dict[str, Any] = {}
    for param, key in PLAIN_PARAMS.items():
        value = params.get(param, "").strip()
        if value:
            body[key] = value
    for param, key in LIST_PARAMS.items():
        values = [v.strip() for v in params.getlist(param) if v.strip()]
        if values:
            body[key] = values
    fields = [v for v in params.getlist("field") if v.strip()]
    if fields:
        body["fields"] = dict(f.partition("=")[::2] for f in fields)
    return body


def _collection(state: ServerState, request: Request) -> str | None:
    asked = request.query_params.get("c")
    if asked:
        state.path_of(asked)  # an unknown name is a 404 page naming the ones served
        return asked
    return min(state.collections) if state.collections else None


@router.get("/")
def search_page(request: Request, state: State) -> Response:
    name = _collection(state, request)
    form = _body(request)
    context: dict[str, Any] = {
        "page": "search",
        "collections": sorted(state.collections),
        "collection": name,
        "form": form,
        "params": request.query_params,
        "channels": CHANNELS,
        "answer": None,
        "error": None,
        "error_field": None,
    }
    status = 200
    if name is None:
        context["error"] = "this server serves no collection: start it with `tracerag serve -c DIR`"
        return _render(request, context, 200)
    with state.reading(name) as col:
        info = searchable(name, col)
    context["info"] = info
    context["tree_nodes"] = _numbered([n.model_dump() for n in info.corpus_tree])
    if form.get("query"):
        try:
            answer = run(state, name, SearchBody(**form), PAGE_NAMES)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = field_of(first["loc"])
            context["error_field"] = _page_name(field)
            context["error"] = f"{LABELS.get(field.partition('.')[0], field)}: {validation_message(first)}"
            status = 422
        except TraceError as exc:
            context["error"] = str(exc)
            status = status_of(exc)
        else:
            context["answer"] = answer
            context["results"] = _results(name, answer)
            context["chart"] = window_chart(answer.time_windows)
    return _render(request, context, status)


def _numbered(nodes: list[dict[str, Any]], counter: list[int] | None = None) -> list[dict[str, Any]]:
    """The corpus tree with an element id on each node (a corpus name may hold any character; an id may not)."""
    counter = counter if counter is not None else [0]
    for node in nodes:
        counter[0] += 1
        node["id"] = f"corpus-{counter[0]}"
        _numbered(node["children"], counter)
    return nodes


def _page_name(field: str) -> str:
    """A request field as the page's form names it (`date_from` is the `from` box)."""
    head, _, rest = field.partition(".")
    names = {v: k for k, v in {**PLAIN_PARAMS, **LIST_PARAMS}.items()}
    return names.get(head, head) + (f".{rest}" if rest else "")


def _results(name: str, answer: SearchAnswer) -> list[dict[str, Any]]:
    return [
        {
            "r": r,
            "href": document_href(name, r.doc_id, r.best_chunk.start, r.best_chunk.end),
            "kwic": pieces(r.kwic.text, r.kwic.spans),
        }
        for r in answer.results
    ]


def _render(request: Request, context: dict[str, Any], status: int) -> Response:
    templates = request.app.state.templates
    return templates.TemplateResponse(request, "search.html", context, status_code=status)


@router.get("/collections/{name}/documents/{doc_id:path}")
def document_page(request: Request, name: str, doc_id: str, state: State) -> Response:
    params = request.query_params
    start, end = (_offset(params.get(key), key) for key in ("start", "end"))
    with state.reading(name) as col:
        view = document_view(name, col, doc_id, start, end, params.get("iiif_base") or None)
    span = view.span
    context = {
        "page": "search",
        "view": view,
        "text": pieces(view.text, [(span.start, span.end)] if span else []),
        "links": {k: web_link(v) for k, v in view.source.items()},
        "back": "/?" + urlencode({"c": name}),
    }
    templates = request.app.state.templates
    return templates.TemplateResponse(request, "document.html", context)


def _offset(value: str | None, name: str) -> int | None:
    if value is None or value == "":
        return None
    if not value.isdigit():
        raise TraceError(f"{name}: expected a character offset (a whole number at least 0), got {value!r}")
    return int(value)
