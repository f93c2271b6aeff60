"""The server's guards, applied to every request before any route: the Host header (no DNS rebinding onto a
loopback server), the token (when one is set), CSRF on state-changing requests, a rate limit per client, the body
size limit, and the response headers (a Content-Security-Policy that allows no inline script at all, so that text
from a document can never run, whatever a template does with it)."""

from __future__ import annotations

import hmac
import json
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any

from fastapi import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

TOKEN_COOKIE = "tracerag_token"
CSRF_COOKIE = "tracerag_csrf"
CSRF_HEADER = "x-csrf-token"
LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}
SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}
# img-src https: is for page regions from an IIIF image server; nothing else may come from elsewhere
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: https:; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)
PRINTED_PATH = "/"  # the page address `tracerag serve` prints, the only one that may carry ?token=
CSRF_FIELD = "csrf_token"  # a page's form (sent without JavaScript) echoes the CSRF cookie in this field
UPLOAD_PATHS = ("/api/collections/",)  # ... /{name}/ingest: the only routes that take files
UPLOAD_SUFFIX = "/ingest"


def new_token() -> str:
    return secrets.token_urlsafe(24)


@dataclass
class RateLimiter:
    """A token bucket per client: `per_minute` requests a minute, `burst` at once."""

    per_minute: int
    burst: int
    max_clients: int = 10_000  # buckets kept; beyond, the full ones (clients quiet long enough) are forgotten
    _buckets: dict[str, tuple[float, float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def allow(self, client: str, now: float | None = None) -> float:
        """0 when `client` may go on, else the seconds until it may."""
        now = time.monotonic() if now is None else now
        rate = self.per_minute / 60.0
        with self._lock:
            tokens, last = self._buckets.get(client, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - last) * rate)
            if tokens >= 1:
                self._buckets[client] = (tokens - 1, now)
                if len(self._buckets) > self.max_clients:
                    self._forget_full(now, rate)
                return 0.0
            self._buckets[client] = (tokens, now)
            return (1 - tokens) / rate

    def _forget_full(self, now: float, rate: float) -> None:
        """Drop the buckets that have filled up again: forgetting them changes nothing for their clients."""
        full = [c for c, (tokens, last) in self._buckets.items() if tokens + (now - last) * rate >= self.burst]
        for client in full:
            del self._buckets[client]


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


def _cookies(headers: dict[str, str]) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except Exception:  # a malformed cookie header counts as none
        return {}
    return {k: m.value for k, m in jar.items()}


def _host_only(host: str) -> str:
    host = host.strip().lower()
    if host.startswith("["):
        return host.split("]")[0] + "]"
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class Guard:
    """The ASGI middleware that applies the guards (see the module docstring). `token` None: none asked (the
    server then listens on loopback only, and the Host header must be a loopback name)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str | None,
        loopback_only: bool,
        max_body: int,
        max_upload: int,
        limiter: RateLimiter,
    ):
        self.app = app
        self.token = token
        self.loopback_only = loopback_only
        self.max_body = max_body
        self.max_upload = max_upload
        self.limiter = limiter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            # no route of this app is a websocket: one would get past every guard below, so none is let in
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":  # lifespan
            await self.app(scope, receive, send)
            return
        request = _Request.of(scope, send)
        refusal = self._refusal(request)
        if refusal is not None:
            await request.refuse(*refusal)
            return
        if self.token is not None and await _answered_by_token(request, self.token):
            return
        limit = self._limit(request.path)
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            await request.refuse(413, f"request body too large: {int(length)} bytes, at most {limit}")
            return
        passed, read = await _csrf_checked(request, receive, limit)
        if not passed:
            return
        app_receive = await _app_receive(request, receive, read, limit)
        if app_receive is not None:
            await self._forward(request, app_receive)

    def _refusal(self, request: _Request) -> tuple[int, str, dict[str, str] | None] | None:
        """Why a request is refused before its token is looked at (a host name, its path, its rate), or None."""
        if self.loopback_only and _host_only(request.headers.get("host", "")) not in LOOPBACK:
            return 421, "this server answers only to a loopback host name (127.0.0.1 or localhost)", None
        if any(ord(c) < 32 or ord(c) == 127 for c in request.path):
            # no name of anything served holds a control character; a NUL would reach a file system call
            return 400, "a control character in the request path", None
        client = (request.scope.get("client") or ("?", 0))[0]
        wait = self.limiter.allow(client)
        if wait:
            return 429, "too many requests: slow down", {"retry-after": str(max(1, round(wait)))}
        return None

    def _limit(self, path: str) -> int:
        """The most bytes a request's body may hold: an upload's limit on the ingest routes, else the body's."""
        return self.max_upload if path.startswith(UPLOAD_PATHS) and path.endswith(UPLOAD_SUFFIX) else self.max_body

    async def _forward(self, request: _Request, app_receive: Receive) -> None:
        """Hand the request to the app, with the CSRF token for its pages, and every response with the security
        headers (and the CSRF cookie when the browser has none yet); a body too large or a bug answered here."""
        csrf = request.cookies.get(CSRF_COOKIE) or secrets.token_urlsafe(18)
        request.scope.setdefault("state", {})["csrf_token"] = csrf
        extra = _response_headers(request.api, None if CSRF_COOKIE in request.cookies else csrf)
        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await request.send(message)

        try:
            await self.app(request.scope, app_receive, send_with_headers)
        except BodyTooLarge as exc:
            if not started:
                await request.refuse(413, f"request body too large: more than {exc.limit} bytes")
        except Exception:
            # a bug: answered here, in the API's shape and with the headers every answer has (the error middleware
            # outside would answer bare text without them), then passed on for the server's log
            if not started:
                await request.refuse(500, "internal error: the server's log has the details")
            raise


@dataclass(frozen=True)
class _Request:
    """One HTTP request as the guards read it, and the way to refuse it (in the API's shape on the API, else a
    page)."""

    scope: Scope
    send: Send
    headers: dict[str, str]
    cookies: dict[str, str]
    path: str
    method: str
    api: bool

    @classmethod
    def of(cls, scope: Scope, send: Send) -> _Request:
        headers = _headers(scope)
        path: str = scope.get("path", "/")
        method: str = scope.get("method", "GET")
        api = path.startswith("/api/") or path == "/api"
        return cls(scope, send, headers, _cookies(headers), path, method, api)

    async def refuse(
        self, status: int, message: str, extra: dict[str, str] | None = None, field: str | None = None
    ) -> None:
        await _error(self.send, status, message, api=self.api, extra=extra, field=field)


async def _answered_by_token(request: _Request, token: str) -> bool:
    """Whether the token check answered the request itself: refused (no token, the wrong one, or one in an address
    that may not carry it), or the printed address redirected without its token, now kept in a cookie."""
    query_token = _query_token(request.scope)
    if query_token is not None and not (request.path == PRINTED_PATH and request.method in SAFE_METHODS):
        # a token in an address stays in history, logs and Referer headers: only the address `serve`
        # printed may carry it, once, to be exchanged for the cookie
        await request.refuse(401, _address_token_refusal(request.api), {"www-authenticate": "Bearer"})
        return True
    offered = _bearer(request.headers) or request.cookies.get(TOKEN_COOKIE) or query_token
    if not offered or not hmac.compare_digest(offered.encode(), token.encode()):
        await request.refuse(401, _token_refusal(request.api, wrong=bool(offered)), {"www-authenticate": "Bearer"})
        return True
    if query_token is not None:
        # the printed address carries the token once: keep it in a cookie and drop it from the address
        await _redirect_without_token(request.send, request.scope, token)
        return True
    return False


async def _csrf_checked(request: _Request, receive: Receive, limit: int) -> tuple[bool, bytes | None]:
    """Whether a request passes the CSRF check (one that changes nothing always does), and the body of a page's
    form, read to find its token: the app is handed that body, since it cannot be read twice."""
    if request.method in SAFE_METHODS:
        return True, None
    read: bytes | None = None
    form_token = None
    if not request.api and _content_type(request.headers) == "application/x-www-form-urlencoded":
        # a page's form sent without JavaScript cannot set a header: it echoes the cookie in a field
        try:
            read = await _whole_body(_limited(receive, limit))
        except BodyTooLarge as exc:
            await request.refuse(413, f"request body too large: more than {exc.limit} bytes")
            return False, None
        form_token = _form_field(read, CSRF_FIELD)
    bearer = _bearer(request.headers) is not None
    problem = _csrf_problem(request.headers, request.cookies, bearer=bearer, form_token=form_token)
    if problem:
        await request.refuse(403, problem)
        return False, None
    return True, read


async def _app_receive(request: _Request, receive: Receive, read: bytes | None, limit: int) -> Receive | None:
    """Where the app reads the body from: the form the guards read, a JSON body read whole and checked for lone
    surrogates, or else the request's own body under its limit; None when the body was refused."""
    if read is not None:
        return _replay(read, receive)
    limited_receive = _limited(receive, limit)
    if request.method in SAFE_METHODS or _content_type(request.headers) != "application/json":
        return limited_receive
    try:
        body = await _whole_body(limited_receive)
    except BodyTooLarge as exc:
        await request.refuse(413, f"request body too large: more than {exc.limit} bytes")
        return None
    field = lone_surrogate(body)
    if field is not None:
        message = f"{field}: not text (a lone UTF-16 surrogate escape); send the characters themselves"
        await request.refuse(422, message, field=field)
        return None
    return _replay(body, receive)


def _response_headers(api: bool, new_csrf: str | None) -> list[tuple[bytes, bytes]]:
    """The headers every response of the app gets; `new_csrf`: the CSRF cookie to set, for a browser with none."""
    extra = [
        (b"content-security-policy", CSP.encode()),
        (b"x-content-type-options", b"nosniff"),
        (b"referrer-policy", b"no-referrer"),
        (b"x-frame-options", b"DENY"),
    ]
    if api:
        extra.append((b"cache-control", b"no-store"))
    if new_csrf is not None:
        extra.append((b"set-cookie", _cookie(CSRF_COOKIE, new_csrf)))
    return extra


class BodyTooLarge(HTTPException):
    """A body that outgrew its limit while it was read (a chunked body, or one longer than it said). An HTTP error,
    so that FastAPI's body parsing passes it on as it is (413), instead of calling it a body it could not parse."""

    def __init__(self, limit: int):
        super().__init__(413, f"request body too large: more than {limit} bytes")
        self.limit = limit


def _token_refusal(api: bool, *, wrong: bool) -> str:
    """Why a request without this server's token is refused, said for who sent it (a script, or a browser)."""
    what = "the token sent is not the one this server asks for" if wrong else "this server asks for a token"
    if api:
        return f"{what}: send 'Authorization: Bearer TOKEN', TOKEN as `tracerag serve` printed it (or --token)"
    return (
        f"{what}: open the address `tracerag serve` printed, the one ending in ?token=…; the browser keeps the token "
        "from then on"
    )


def _address_token_refusal(api: bool) -> str:
    how = (
        "send 'Authorization: Bearer TOKEN' (TOKEN as `tracerag serve` printed it, or --token), or the session "
        f"cookie {TOKEN_COOKIE} a browser gets from the printed address"
    )
    if api:
        return f"a token in the address (?token=) is refused on the API: {how}"
    return (
        "a token in the address (?token=) is accepted only on the address `tracerag serve` printed (/?token=…); "
        "open that one, the browser keeps the token from then on"
    )


def _content_type(headers: dict[str, str]) -> str:
    return headers.get("content-type", "").split(";")[0].strip().lower()


async def _whole_body(receive: Receive) -> bytes:
    parts = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(parts)


def _limited(receive: Receive, limit: int) -> Receive:
    """`receive` that raises BodyTooLarge once the body passes `limit` bytes (a chunked body states no length)."""
    received = 0

    async def limited() -> Message:
        nonlocal received
        message = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > limit:
                raise BodyTooLarge(limit)
        return message

    return limited


def _form_field(body: bytes, name: str) -> str | None:
    from urllib.parse import parse_qs

    values = parse_qs(body.decode("latin-1"), max_num_fields=1000).get(name)
    return values[0] if values else None


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that hands the app the body already read, then waits on the real one (a disconnect)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def lone_surrogate(body: bytes) -> str | None:
    """The field of a JSON body whose string holds a lone surrogate (`"\\ud800"`: valid JSON but no text, which
    no trail, page or answer can carry), "body" for the body itself; None when it holds none."""
    if not _SURROGATE_ESCAPE.search(body):
        return None  # the fast path: no surrogate escape at all (a raw surrogate cannot be in UTF-8)
    try:
        data = json.loads(body)
    except ValueError:
        return None  # not JSON: the route's own parsing says so

    def find(value: Any, where: str) -> str | None:
        if isinstance(value, str):
            return where if any(0xD800 <= ord(c) <= 0xDFFF for c in value) else None
        if isinstance(value, dict):
            for key, item in value.items():
                found = find(key, where) or find(item, f"{where}.{key}" if where else str(key))
                if found is not None:
                    return found
        if isinstance(value, list):
            for i, item in enumerate(value):
                found = find(item, f"{where}.{i}" if where else str(i))
                if found is not None:
                    return found
        return None

    found = find(data, "")
    return None if found is None else found or "body"


def _cookie(name: str, value: str) -> bytes:
    return f"{name}={value}; Path=/; HttpOnly; SameSite=Strict".encode()


def _bearer(headers: dict[str, str]) -> str | None:
    auth = headers.get("authorization", "")
    return auth[7:].strip() or None if auth.lower().startswith("bearer ") else None


def _query_token(scope: Scope) -> str | None:
    from urllib.parse import parse_qs

    values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token")
    return values[0] if values else None


def _csrf_problem(
    headers: dict[str, str], cookies: dict[str, str], *, bearer: bool, form_token: str | None = None
) -> str | None:
    """Why a state-changing request may not be from this app's own pages, or None. A request with a bearer token
    carries no ambient credential; JSON cannot be sent across sites without a CORS preflight, which this server
    never grants; a form or an upload must echo the CSRF cookie (SameSite=Strict: another site's request carries
    none) in the X-CSRF-Token header, or a page's form in its `csrf_token` field."""
    origin = headers.get("origin")
    if origin and origin != "null":
        from urllib.parse import urlsplit

        if urlsplit(origin).netloc.lower() != headers.get("host", "").lower():
            return f"cross-site request refused (Origin {origin})"
    if bearer:
        return None
    content_type = headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type == "application/json":
        return None
    sent, expected = headers.get(CSRF_HEADER) or form_token, cookies.get(CSRF_COOKIE)
    if not sent or not expected or not hmac.compare_digest(sent.encode(), expected.encode()):
        return "missing or wrong CSRF token: send the page's X-CSRF-Token header (or a JSON body); reload the page"
    return None


async def _error(
    send: Send,
    status: int,
    message: str,
    *,
    api: bool,
    extra: dict[str, str] | None = None,
    field: str | None = None,
) -> None:
    from html import escape

    if api:
        body = json.dumps({"error": message} | ({"field": field} if field else {})).encode()
        content_type = b"application/json"
    else:
        body = (
            f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>TRACE: {status}</title></head>"
            f"<body><main><h1>{status}</h1><p>{escape(message)}</p></main></body></html>"
        ).encode()
        content_type = b"text/html; charset=utf-8"
    headers: list[tuple[bytes, bytes]] = [
        (b"content-type", content_type),
        (b"content-length", str(len(body)).encode()),
        (b"content-security-policy", CSP.encode()),
        (b"x-content-type-options", b"nosniff"),
    ]
    headers += [(k.encode(), v.encode()) for k, v in (extra or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _redirect_without_token(send: Send, scope: Scope, token: str) -> None:
    from urllib.parse import parse_qsl, urlencode

    kept = [(k, v) for k, v in parse_qsl(scope.get("query_string", b"").decode("latin-1")) if k != "token"]
    # the raw path, as the client sent it, on this server: `//host` would be another site (a relative scheme)
    raw = scope.get("raw_path") or scope.get("path", "/").encode("utf-8")
    location = b"/" + raw.lstrip(b"/\\") + (f"?{urlencode(kept)}".encode("latin-1", "replace") if kept else b"")
    headers = [
        (b"location", location),
        (b"set-cookie", _cookie(TOKEN_COOKIE, token)),
        (b"content-length", b"0"),
        (b"content-security-policy", CSP.encode()),
        (b"referrer-policy", b"no-referrer"),
        (b"cache-control", b"no-store"),
    ]
    await send({"type": "http.response.start", "status": 303, "headers": headers})
    await send({"type": "http.response.body", "body": b""})
