"""The tool server over streamable HTTP: the SDK's app behind the web server's token rule (`server/run.py`
`with_token`): on 127.0.0.1 a token is asked only when one is given; beyond it one is always asked (made for the
run when none is given, printed once). A token travels as `Authorization: Bearer TOKEN`, never in an address."""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable

from starlette.types import ASGIApp, Receive, Scope, Send

from tracerag.mcp.server import ToolServer
from tracerag.server.run import bind, with_token
from tracerag.server.security import LOOPBACK
from tracerag.server.state import ServerConfig

PATH = "/mcp"


class TokenGuard:
    """ASGI middleware: every HTTP request carries the token as a bearer, else it is answered 401."""

    def __init__(self, app: ASGIApp, token: str | None):
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        said = self._refusal(scope) if scope["type"] == "http" and self.token is not None else None
        if said is not None:
            body = json.dumps({"error": said})
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")],
                }
            )
            await send({"type": "http.response.body", "body": body.encode()})
            return
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope) -> str | None:
        """Why the request is refused (no token, or not this server's: compared in constant time), or None."""
        assert self.token is not None
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        scheme, _, offered = headers.get("authorization", "").partition(" ")
        offered = offered.strip() if scheme.lower() == "bearer" else ""
        if not offered:
            return "a token is required: send the header 'Authorization: Bearer TOKEN'"
        if hmac.compare_digest(offered.encode(), self.token.encode()):
            return None
        return "the token sent is not this server's (the one given with --token or TRACERAG_TOKEN, or printed at start)"


def http_app(tool_server: ToolServer, token: str | None, host: str) -> ASGIApp:
    """The SDK's streamable HTTP app at `/mcp` (with its DNS-rebinding guard on a loopback host), behind the token."""
    app = tool_server.server.streamable_http_app(streamable_http_path=PATH, host=host)
    return TokenGuard(app, token)


def serve_http(tool_server: ToolServer, config: ServerConfig, announce: Callable[[str], None]) -> None:
    """Serve until Ctrl-C, saying where (and, beyond loopback, the token made for the run)."""
    import uvicorn

    config = with_token(config, announce)
    sock = bind(config.host, config.port)
    port = sock.getsockname()[1]
    host = config.host if ":" not in config.host.strip("[]") else f"[{config.host.strip('[]')}]"
    app = http_app(tool_server, config.token, config.host)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on"))
    announce(f"MCP over HTTP at http://{host}:{port}{PATH}")
    if config.token:
        shown = "" if config.host in LOOPBACK else f" {config.token}"
        announce(f"  clients send the header 'Authorization: Bearer TOKEN'{' (TOKEN:' + shown + ')' if shown else ''}")
    announce("press Ctrl-C to stop")
    server.run(sockets=[sock])
