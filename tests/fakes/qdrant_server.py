"""A small in-process Qdrant REST server for tests: real HTTP on 127.0.0.1, the endpoints TRACE's cluster engine
calls, each request body parsed with qdrant-client's own models (generated from the server's OpenAPI schema, most
of them `extra="forbid"`) and answered by qdrant-client's local mode behind it.

What it does not have that a server has: sharding, replication and write ordering are recorded (`created`,
`requests`) and given back in the collection's info, never acted on; payload indexes other than text ones do
nothing (local mode scans). Text indexes: local mode scores a text query only over the default analysis, so a text
index made with folding or a stemmer is recorded, and its field's texts, text queries and text or phrase matches
are analysed here with Edge's analyser (`qdrant_server.analysed_for_local`), as the engine does in local mode:
a search answers as a server with those analysers would.

Switches: `fail(*faults, on=PATTERN, after=N)`: the next requests whose "METHOD /path" contains PATTERN (default:
any), the first N of them left alone, get these faults, one each, in order: "429" (with `Retry-After: retry_after`),
"500", "502", "503", "401", "404", "drop" (the connection closed without an answer), "lost" (the request done, then
the connection closed: its answer lost), "slow" (answers after `slow_s`: a client timeout). Records: `requests`
("METHOD /path?query" of each request), `api_keys` (the `api-key` header of each), `created` (the body of each
collection creation).

    with FakeQdrant() as fake:
        engine = QdrantServerEngine(connect(fake.url, None, 5), "c", 4, settings=..., url=fake.url, create=True)
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import urllib.parse
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pydantic import BaseModel
from qdrant_client import QdrantClient, models

from tracerag.engine.qdrant_server import analysed_for_local

FAULTS = ("429", "500", "502", "503", "401", "404", "drop", "lost", "slow")
_ROUTE = re.compile(r"^/collections/(?P<name>[^/]+)(?P<rest>(/[^?]*)?)$")


def _plain(value: Any) -> Any:
    """A result as the JSON a server answers with."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _done() -> dict[str, Any]:
    return {"operation_id": 0, "status": "completed"}


class FakeQdrant:
    def __init__(self) -> None:
        self.local = QdrantClient(":memory:")
        self.retry_after = "1"
        self.slow_s = 3.0
        self.requests: list[str] = []
        self.api_keys: list[str | None] = []
        self.created: dict[str, dict[str, Any]] = {}
        self._analysed: dict[str, set[str]] = {}  # collection → text fields with folding or a stemmer
        self._schemas: dict[str, dict[str, Any]] = {}  # collection → field → index params, as made
        self._faults: deque[list] = deque()  # [fault, pattern, matching requests still to let through]
        self._lock = threading.Lock()  # local mode is not made for threads: one request at a time
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "use FakeQdrant in a `with` block"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def fail(self, *faults: str, on: str = "", after: int = 0) -> None:
        unknown = set(faults) - set(FAULTS)
        assert not unknown, f"unknown faults {unknown}: expected {FAULTS}"
        with self._lock:
            self._faults.extend([fault, on, after if i == 0 else 0] for i, fault in enumerate(faults))

    def __enter__(self) -> FakeQdrant:
        self._server = _Server(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.local.close()

    # -- request threads ------------------------------------------------------------------------------

    def answer(
        self, method: str, target: str, body: Any, api_key: str | None
    ) -> tuple[int, dict[str, str], bytes | None]:
        """(status, headers, body); body None: drop the connection."""
        path, _, query = target.partition("?")
        said = f"{method} {path}"
        with self._lock:
            self.requests.append(f"{said}?{query}" if query else said)
            self.api_keys.append(api_key)
            fault = None
            if self._faults and self._faults[0][1] in said:
                if self._faults[0][2]:
                    self._faults[0][2] -= 1
                else:
                    fault = self._faults.popleft()[0]
        if fault == "drop":
            return 0, {}, None
        if fault == "slow" and self._stopping.wait(self.slow_s):
            return 503, {}, _error("stopping")
        if fault == "429":
            return 429, {"Retry-After": self.retry_after}, _error("too many requests")
        if fault in ("500", "502", "503"):
            return int(fault), {}, _error("service unavailable: a replica is down")
        if fault == "401":
            return 401, {}, _error("Must provide an API key or an Authorization bearer token")
        if fault == "404":
            return 404, {}, _error("Not found: collection does not exist")
        match = _ROUTE.match(path)
        if not match:
            return 404, {}, _error(f"no route {method} {path}")
        name, rest = urllib.parse.unquote(match["name"]), match["rest"] or ""
        params = urllib.parse.parse_qs(query)
        try:
            with self._lock:
                result = self._route(method, name, rest, body, params)
        except KeyError as exc:
            return 404, {}, _error(f"Not found: {exc}")
        except (ValueError, TypeError) as exc:  # a body the server's models refuse, or local mode's own refusal
            return 400, {}, _error(f"Bad request: {exc}")
        if fault == "lost":
            return 0, {}, None
        payload = {"result": _plain(result), "status": "ok", "time": 0.0}
        return 200, {}, json.dumps(payload).encode()

    def _route(self, method: str, name: str, rest: str, body: Any, params: dict[str, list[str]]) -> Any:
        local = self.local
        if (method, rest) == ("GET", "/exists"):
            return {"exists": local.collection_exists(name)}
        if (method, rest) == ("PUT", ""):
            spec = models.CreateCollection.model_validate(body)
            local.create_collection(name, vectors_config=spec.vectors or {})
            self.created[name] = body
            self._analysed[name], self._schemas[name] = set(), {}
            return True
        if (method, rest) == ("DELETE", ""):
            self._analysed.pop(name, None)
            return local.delete_collection(name)
        if not local.collection_exists(name):
            raise KeyError(f"collection {name}")
        if (method, rest) == ("GET", ""):
            return self._info(name)
        if (method, rest) == ("PUT", "/index"):
            spec = models.CreateFieldIndex.model_validate(body)
            schema = spec.field_schema
            if isinstance(schema, models.TextIndexParams) and (schema.ascii_folding or schema.stemmer):
                self._analysed[name].add(spec.field_name)
                schema = models.TextIndexParams(
                    type=models.TextIndexType.TEXT, tokenizer=models.TokenizerType.WORD, lowercase=True, scoring=True
                )
            self._schemas[name][spec.field_name] = spec.field_schema
            if isinstance(schema, models.TextIndexParams):  # local mode has no use for the others (it scans)
                local.create_payload_index(name, spec.field_name, field_schema=schema)
            return _done()
        if (method, rest) == ("PUT", "/points"):
            points = models.PointsList.model_validate(body).points
            for p in points:
                p.payload = {k: self._text(name, k, v) for k, v in (p.payload or {}).items()}
            local.upsert(name, points=points)
            return _done()
        if (method, rest) == ("PUT", "/points/vectors"):
            local.update_vectors(name, points=models.UpdateVectors.model_validate(body).points)
            return _done()
        if (method, rest) == ("POST", "/points/delete"):
            selector = models.FilterSelector.model_validate(body)
            local.delete(name, points_selector=models.FilterSelector(filter=self._filter(name, selector.filter)))
            return _done()
        if (method, rest) == ("POST", "/points/count"):
            spec = models.CountRequest.model_validate(body)
            return local.count(name, count_filter=self._filter(name, spec.filter), exact=bool(spec.exact))
        if (method, rest) == ("POST", "/facet"):
            spec = models.FacetRequest.model_validate(body)
            return local.facet(
                name, key=spec.key, facet_filter=self._filter(name, spec.filter), limit=spec.limit or 10, exact=True
            )
        if (method, rest) == ("POST", "/points/query/batch"):
            batch = models.QueryRequestBatch.model_validate(body)
            return [self._query(name, q) for q in batch.searches]
        if (method, rest) == ("POST", "/points/query"):
            return self._query(name, models.QueryRequest.model_validate(body))
        if (method, rest) == ("POST", "/points"):
            spec = models.PointRequest.model_validate(body)
            return local.retrieve(name, ids=spec.ids, with_payload=spec.with_payload, with_vectors=spec.with_vector)
        if (method, rest) == ("POST", "/points/scroll"):
            spec = models.ScrollRequest.model_validate(body)
            records, after = local.scroll(
                name,
                scroll_filter=self._filter(name, spec.filter),
                limit=spec.limit or 10,
                offset=spec.offset,
                with_payload=spec.with_payload,
                with_vectors=spec.with_vector,
            )
            return {"points": _plain(records), "next_page_offset": after}
        raise KeyError(f"route {method} /collections/{name}{rest}")

    def _info(self, name: str) -> dict[str, Any]:
        """The collection's info, with the shape it was created with and the payload indexes made."""
        info = _plain(self.local.get_collection(name))
        asked = self.created.get(name, {})
        for key in ("shard_number", "replication_factor", "write_consistency_factor"):
            if asked.get(key) is not None:
                info["config"]["params"][key] = asked[key]
        info["payload_schema"] = {
            field: {"data_type": _plain(schema)["type"], "params": _plain(schema), "points": 0}
            for field, schema in self._schemas.get(name, {}).items()
        }
        return info

    def _text(self, name: str, field: str, value: Any) -> Any:
        if field in self._analysed.get(name, ()) and isinstance(value, str):
            return analysed_for_local(value, field)
        return value

    def _filter(self, name: str, flt: models.Filter | None) -> models.Filter | None:
        """Text and phrase matches on an analysed field, analysed as its index would."""
        if flt is None:
            return None
        for conditions in (flt.must, flt.should, flt.must_not):
            for c in conditions if isinstance(conditions, list) else []:
                if isinstance(c, models.FieldCondition) and c.key in self._analysed.get(name, ()):
                    if isinstance(c.match, models.MatchText):
                        c.match = models.MatchText(text=analysed_for_local(c.match.text, c.key))
                    elif isinstance(c.match, models.MatchPhrase):
                        c.match = models.MatchPhrase(phrase=analysed_for_local(c.match.phrase, c.key))
        return flt

    def _query(self, name: str, q: models.QueryRequest) -> models.QueryResponse:
        query = q.query
        if isinstance(query, models.TextQuery) and q.using in self._analysed.get(name, ()):
            text = query.text
            if isinstance(text, models.TextQueryInput):
                text = models.TextQueryInput(query=analysed_for_local(text.query, q.using), scoring=text.scoring)
            else:
                text = analysed_for_local(text, q.using)
            query = models.TextQuery(text=text)
        return self.local.query_points(
            name,
            query=query,
            using=q.using,
            query_filter=self._filter(name, q.filter),
            limit=q.limit or 10,
            with_payload=q.with_payload if q.with_payload is not None else False,
            with_vectors=q.with_vector if q.with_vector is not None else False,
        )


def _error(message: str) -> bytes:
    return json.dumps({"status": {"error": message}, "time": 0.0}).encode()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that timed out and left is expected


def _handler(fake: FakeQdrant) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _serve(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                status, headers, data = 400, {}, _error("not JSON")
            else:
                status, headers, data = fake.answer(self.command, self.path, body, self.headers.get("api-key"))
            if data is None:
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(2)
                return
            with contextlib.suppress(OSError):
                self.send_response(status)
                for key, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        do_GET = do_PUT = do_POST = do_DELETE = _serve  # noqa: N815 - http.server's names

    return Handler
