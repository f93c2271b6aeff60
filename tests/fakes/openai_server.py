"""A scripted, in-process OpenAI-compatible chat server for tests: real HTTP on 127.0.0.1, no network.

The code under test talks to it exactly as to a hosted API (httpx, JSON, status codes, headers, timeouts); the
test decides every answer with a *handler*::

    def handler(body: dict, n: int) -> Reply | str:
        # body: the decoded JSON request (model, messages, response_format, ...); n: 0-based request index
        ...

    with FakeOpenAI(handler) as fake:
        llm = StructuredLLM(OpenAICompatProvider("m", fake.base_url))
        ...
        assert len(fake.requests) == 2          # every request body, in arrival order

Handlers:

* `scripted(r1, r2, ...)`: the n-th request gets the n-th reply (a `Reply` or plain answer text); a request beyond
  the script is a test bug and fails the test (see below).
* any function of the request, e.g. an agent test answering by what the prompt asks::

      def answer(body, n):
          prompt = last_user(body)
          if "plan" in prompt:
              return json_reply({"sub_questions": ["..."]})
          return json_reply({"verdicts": []}, usage=(120, 30))

`Reply` shapes one response: `status` (non-2xx sends an OpenAI-style error body unless `raw_body` is given),
`content` (the assistant text), `headers` (e.g. `{"Retry-After": "0.05"}`), `delay_s` (sleep before answering:
timeouts), `usage` ((prompt, completion) tokens; None leaves "usage" out), `raw_body` (str/bytes/dict sent as is,
for malformed answers) and `model` (default: the model the request named).

If a handler raises, the server answers HTTP 599 (not retried by clients, so the failure shows at once) with the
exception in the body, keeps it in `.errors`, and - with `strict=True`, the default - re-raises it when the
`with` block ends normally. Each response closes its connection, so no handler thread outlives a request; the
server stops at the end of the block (or `stop()`), waking handlers that are still delaying.

For a pytest fixture::

    @pytest.fixture
    def fake():
        with FakeOpenAI(scripted("hello")) as server:
            yield server
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["HANDLER_ERROR_STATUS", "FakeOpenAI", "Handler", "Reply", "json_reply", "last_user", "scripted"]

HANDLER_ERROR_STATUS = 599


@dataclass
class Reply:
    """One scripted response to POST /v1/chat/completions."""

    status: int = 200
    content: str | None = ""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    usage: tuple[int, int] | None = (10, 5)
    raw_body: str | bytes | dict[str, Any] | list[Any] | None = None
    model: str | None = None


Handler = Callable[[dict[str, Any], int], "Reply | str"]


def scripted(*replies: Reply | str) -> Handler:
    """A handler giving `replies` in order (a str is `Reply(content=str)`); one request too many fails the test."""

    def handler(body: dict[str, Any], n: int) -> Reply | str:
        if n >= len(replies):
            raise AssertionError(f"scripted: request {n} arrived but only {len(replies)} replies were scripted")
        return replies[n]

    return handler


def json_reply(obj: Any, **kwargs: Any) -> Reply:
    """A 200 reply whose assistant text is `obj` as JSON; `kwargs` are other `Reply` fields."""
    return Reply(content=json.dumps(obj, ensure_ascii=False), **kwargs)


def last_user(body: dict[str, Any]) -> str:
    """The content of the last user message of a request body ('' when there is none)."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            return str(message.get("content") or "")
    return ""


class FakeOpenAI:
    """The server. Attributes: `base_url` ("http://127.0.0.1:PORT/v1"), `requests` (bodies), `request_headers`,
    `errors` (exceptions the handler raised). Thread-safe: clients may call it concurrently."""

    def __init__(self, handler: Handler, *, model: str = "fake-model", strict: bool = True):
        self.handler = handler
        self.model = model
        self.strict = strict
        self.requests: list[dict[str, Any]] = []
        self.request_headers: list[dict[str, str]] = []
        self.errors: list[BaseException] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("FakeOpenAI is not running: use it in a `with` block or call start()")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> FakeOpenAI:
        server = _Server(("127.0.0.1", 0), _make_request_handler(self))
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.01}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.stop()
        if exc_type is None and self.strict and self.errors:
            raise AssertionError(f"the fake server's handler failed: {self.errors[0]!r}") from self.errors[0]

    # -- called from the request threads -------------------------------------------------------------------

    def _answer(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, str], bytes, float]:
        with self._lock:
            n = len(self.requests)
            self.requests.append(body)
            self.request_headers.append(headers)
        try:
            reply = self.handler(body, n)
            if isinstance(reply, str):
                reply = Reply(content=reply)
            if not isinstance(reply, Reply):
                raise TypeError(f"handler returned {type(reply).__name__}, expected Reply or str")
        except Exception as exc:  # reported to the test, not swallowed
            with self._lock:
                self.errors.append(exc)
            text = "fake server handler raised:\n" + "".join(traceback.format_exception(exc))
            return HANDLER_ERROR_STATUS, {"Content-Type": "text/plain"}, text.encode(), 0.0
        out_headers = {"Content-Type": "application/json", **reply.headers}
        if reply.raw_body is not None:
            raw = reply.raw_body
            data = raw if isinstance(raw, bytes) else raw.encode() if isinstance(raw, str) else json.dumps(raw).encode()
        elif reply.status >= 400:
            message = reply.content or f"fake error {reply.status}"
            data = json.dumps({"error": {"message": message, "type": "fake_error", "code": reply.status}}).encode()
        else:
            data = json.dumps(self._completion(body, n, reply), ensure_ascii=False).encode()
        return reply.status, out_headers, data, reply.delay_s

    def _completion(self, body: dict[str, Any], n: int, reply: Reply) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": f"chatcmpl-fake-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": reply.model or body.get("model") or self.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.content},
                    "finish_reason": "stop",
                }
            ],
        }
        if reply.usage is not None:
            prompt, completion = reply.usage
            out["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
        return out


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (timeout) before the answer was written is expected, not an error.
        pass


def _make_request_handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class RequestHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, headers: dict[str, str], data: bytes) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
            self.close_connection = True

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/v1/models":
                data = json.dumps({"object": "list", "data": [{"id": fake.model, "object": "model"}]}).encode()
                self._send(200, {"Content-Type": "application/json"}, data)
            else:
                self._send(404, {"Content-Type": "text/plain"}, b"not found")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send(404, {"Content-Type": "text/plain"}, f"no route {self.path}".encode())
                return
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                self._send(400, {"Content-Type": "text/plain"}, b"request body is not JSON")
                return
            status, headers, data, delay_s = fake._answer(body, dict(self.headers.items()))
            if delay_s > 0 and fake._stopping.wait(delay_s):
                return  # the server is stopping: drop the answer
            with contextlib.suppress(OSError):  # the client timed out and closed the connection
                self._send(status, headers, data)

    return RequestHandler
