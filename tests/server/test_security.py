"""The server's guards, through the real app: the token (bearer, cookie, the printed address's `?token=` turned
into a cookie), the Host header on loopback (DNS rebinding), the Content-Security-Policy on every kind of answer,
CSRF on state-changing requests, the size limits (with a length that says so and with a chunked body that lies),
the rate limit, and the templates and scripts, which must hold no inline script, handler or style."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import BaseModel

import tracerag.server.security as security
from tracerag.config import ServerSettings, Settings
from tracerag.errors import ConfigError
from tracerag.server import ServerConfig, create_app, errors
from tracerag.server.run import address, with_token
from tracerag.server.security import CSP, CSRF_COOKIE, TOKEN_COOKIE, Guard, RateLimiter

SERVER = Path(security.__file__).parent
TOKEN = "s3cret-token-for-tests"


def _app_client(config: ServerConfig, **settings: object) -> TestClient:
    changed = config.settings.server.model_copy(update=settings)
    config = ServerConfig(**{**config.__dict__, "settings": config.settings.model_copy(update={"server": changed})})
    return TestClient(create_app(config), base_url="http://127.0.0.1")


@pytest.fixture()
def token_client(server_config: ServerConfig) -> Iterator[TestClient]:
    """The app opened beyond loopback with a token, as `serve --host 0.0.0.0 --token ...` builds it."""
    config = ServerConfig(**{**server_config.__dict__, "token": TOKEN, "host": "0.0.0.0"})
    with TestClient(create_app(config), base_url="http://192.0.2.7:8765") as c:
        yield c


# -- binding and the token ---------------------------------------------------------------------------------------


def test_the_default_address_is_loopback() -> None:
    assert ServerSettings().host == "127.0.0.1"
    assert Settings().server.host == "127.0.0.1"


def test_beyond_loopback_without_a_token_one_is_made_and_said_once(server_config: ServerConfig) -> None:
    said: list[str] = []
    opened = with_token(ServerConfig(**{**server_config.__dict__, "host": "0.0.0.0"}), said.append)
    assert opened.token and len(opened.token) >= 24
    assert said and "token" in said[0] and not any(opened.token in line for line in said)
    # the one place it is shown: the address printed next (test_serve checks the whole output)
    assert address(opened, 8765) == f"http://0.0.0.0:8765/?token={opened.token}"
    # another start, another token: never a fixed one
    assert with_token(ServerConfig(**{**server_config.__dict__, "host": "0.0.0.0"}), said.append).token != opened.token


def test_on_loopback_no_token_is_made_and_a_given_one_is_kept(server_config: ServerConfig) -> None:
    said: list[str] = []
    assert with_token(server_config, said.append).token is None and not said
    kept = with_token(ServerConfig(**{**server_config.__dict__, "host": "0.0.0.0", "token": TOKEN}), said.append)
    assert kept.token == TOKEN and not said
    with pytest.raises(ConfigError, match="--token"):
        with_token(ServerConfig(**{**server_config.__dict__, "token": "  "}), said.append)


@pytest.mark.parametrize("path", ["/api/health", "/static/app.css", "/api/openapi.json", "/nothing-here"])
def test_with_a_token_every_answer_needs_it(token_client: TestClient, path: str) -> None:
    refused = token_client.get(path, follow_redirects=False)
    assert refused.status_code == 401, path
    assert refused.headers["www-authenticate"] == "Bearer"
    assert refused.headers["content-security-policy"] == CSP
    wrong = token_client.get(path, headers={"Authorization": "Bearer " + TOKEN[:-1] + "x"}, follow_redirects=False)
    assert wrong.status_code == 401
    # a missing token and a wrong one are told apart; a browser is told to open the printed address
    assert "asks for a token" in refused.text and "is not the one" in wrong.text
    said = "Authorization: Bearer" if path.startswith("/api/") else "open the address `tracerag serve` printed"
    assert said in refused.text, refused.text
    by_bearer = token_client.get(path, headers={"Authorization": f"Bearer {TOKEN}"}, follow_redirects=False)
    assert by_bearer.status_code != 401
    token_client.cookies.set(TOKEN_COOKIE, TOKEN)
    by_cookie = token_client.get(path, follow_redirects=False)
    assert by_cookie.status_code == by_bearer.status_code


def test_the_printed_address_sets_a_cookie_and_drops_the_token_from_it(token_client: TestClient) -> None:
    first = token_client.get(f"/?token={TOKEN}&q=harbour", follow_redirects=False)
    assert first.status_code == 303
    assert first.headers["location"] == "/?q=harbour"
    assert TOKEN not in first.headers["location"]
    cookie = first.headers["set-cookie"]
    assert cookie.startswith(f"{TOKEN_COOKIE}={TOKEN};") and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert first.headers["content-security-policy"] == CSP
    # the browser follows it with the cookie: no token in the address any more, and it is let in
    then = token_client.get("/nothing-here?q=harbour", follow_redirects=False)
    assert then.status_code == 404
    assert token_client.get("/api/health").status_code == 200


@pytest.mark.parametrize("path", ["/nothing-here", "/trails", "//evil.example/x"])
def test_only_the_printed_address_may_carry_the_token(token_client: TestClient, path: str) -> None:
    # any other page with ?token= is refused, not redirected: the token stays out of every other address
    # the URL type of the test client's own HTTP library (httpx, or httpx2 where the MCP SDK brought it)
    url = type(token_client.base_url)("http://192.0.2.7:8765/").copy_with(raw_path=f"{path}?token={TOKEN}".encode())
    answer = token_client.get(url, follow_redirects=False)
    assert answer.status_code == 401 and "location" not in answer.headers
    assert "accepted only on the address `tracerag serve` printed (/?token=" in unescape(answer.text)
    assert "set-cookie" not in answer.headers or TOKEN not in answer.headers["set-cookie"]


def test_the_redirect_stays_on_this_server(token_client: TestClient) -> None:
    # the printed address's redirect is to a path on this host, whatever else the address holds
    answer = token_client.get(f"/?token={TOKEN}&next=//evil.example/", follow_redirects=False)
    assert answer.status_code == 303
    assert answer.headers["location"].startswith("/?") and "evil" not in answer.headers["location"].split("=")[0]


def test_the_api_refuses_a_token_in_the_address_saying_how_to_send_it(token_client: TestClient) -> None:
    for token in (TOKEN, "wrong"):
        answer = token_client.get(f"/api/health?token={token}", follow_redirects=False)
        assert answer.status_code == 401 and answer.headers["www-authenticate"] == "Bearer"
        said = answer.json()["error"]
        assert "refused on the API" in said and "Authorization: Bearer TOKEN" in said and TOKEN_COOKIE in said
    # a POST to the printed address with the token in it is refused too (only the GET is exchanged)
    assert token_client.post(f"/?token={TOKEN}", follow_redirects=False).status_code == 401
    assert token_client.get("/api/health", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_the_token_is_compared_in_constant_time(token_client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real = security.hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(security.hmac, "compare_digest", spy)
    assert token_client.get("/api/health", headers={"Authorization": "Bearer guess"}).status_code == 401
    assert (b"guess", TOKEN.encode()) in compared


# -- the Host header -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.1:8765", "localhost:8765", "[::1]:8765", "LOCALHOST"])
def test_a_loopback_host_name_is_answered(client: TestClient, host: str) -> None:
    assert client.get("/api/health", headers={"Host": host}).status_code == 200


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8765", "127.0.0.1.evil.example", "localhost.", ""])
def test_any_other_host_name_is_refused_on_loopback(client: TestClient, host: str) -> None:
    # a DNS-rebinding page reaches 127.0.0.1 under its own name: the Host header gives it away
    answer = client.get("/api/health", headers={"Host": host})
    assert answer.status_code == 421
    assert "loopback" in answer.json()["error"]


def test_with_a_token_any_host_name_is_answered(token_client: TestClient) -> None:
    answer = token_client.get("/api/health", headers={"Host": "lab.example:8765", "Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 200


# -- the Content-Security-Policy -------------------------------------------------------------------------------


def test_every_kind_of_answer_carries_the_policy(client: TestClient, server_config: ServerConfig) -> None:
    answers = {
        "api": client.get("/api/health"),
        "schema": client.get("/api/openapi.json"),
        "api error": client.get("/api/jobs/nosuchjob"),
        "invalid": client.get("/api/jobs", params={"kind": ["a", "b"]}, headers={"Accept": "text/html"}),
        "page error": client.get("/nothing-here"),
        "static": client.get("/static/app.js"),
        "static missing": client.get("/static/nothing.js"),
        "refused host": client.get("/api/health", headers={"Host": "evil.example"}),
        "refused csrf": client.post("/api/health", data={"a": "b"}),
        "refused size": client.post("/api/health", content=b"x" * (2 << 20), headers={"Content-Type": "text/plain"}),
        "search page": client.get("/", params={"q": "harbour"}),
    }
    for what, answer in answers.items():
        assert answer.headers.get("content-security-policy") == CSP, what
        assert answer.headers.get("x-content-type-options") == "nosniff", what
    assert "script-src 'self'" in CSP and "unsafe-inline" not in CSP and "style-src 'self'" in CSP
    assert answers["static"].status_code == 200 and answers["static missing"].status_code == 404


def _templates() -> list[Path]:
    return sorted((SERVER / "templates").rglob("*.html"))


def test_the_templates_hold_no_inline_script_handler_or_style() -> None:
    """Under the CSP an inline script or style would not run anyway; this finds one before a browser does, in
    every template there is (a new page is covered when it is added)."""
    templates = _templates()
    assert {"base.html", "error.html"} <= {t.name for t in templates}
    problems = []
    for template in templates:
        text = template.read_text(encoding="utf-8")
        for match in re.finditer(r"<script\b[^>]*>", text, re.IGNORECASE):
            if not re.search(r"\bsrc\s*=", match.group(0), re.IGNORECASE):
                problems.append(f"{template.name}: inline <script>: {match.group(0)}")
        for match in re.finditer(r"<[a-zA-Z][^>]*?\s(on[a-z]+)\s*=", text):
            problems.append(f"{template.name}: event handler attribute {match.group(1)}=")
        for match in re.finditer(r"<[a-zA-Z][^>]*?\sstyle\s*=", text, re.IGNORECASE):
            problems.append(f"{template.name}: style= attribute: {match.group(0)[:60]}")
        if re.search(r"<style\b", text, re.IGNORECASE):
            problems.append(f"{template.name}: a <style> element")
        for match in re.finditer(r"\|\s*safe\b|Markup\(", text):
            problems.append(f"{template.name}: {match.group(0)} (autoescape turned off for data)")
        if re.search(r"javascript:", text, re.IGNORECASE):
            problems.append(f"{template.name}: a javascript: URL")
    assert not problems, "\n".join(problems)


def test_the_scanner_finds_what_it_looks_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan above is only worth something if it fails on a bad template."""
    bad = tmp_path / "templates"
    bad.mkdir()
    for name in ("base.html", "error.html"):
        (bad / name).write_text("<p>ok</p>", encoding="utf-8")
    (bad / "page.html").write_text('<script>alert(1)</script><b onclick="x()" style="color:red">', encoding="utf-8")
    monkeypatch.setattr(f"{__name__}.SERVER", tmp_path)
    with pytest.raises(AssertionError) as failed:
        test_the_templates_hold_no_inline_script_handler_or_style()
    message = str(failed.value)
    assert "inline <script>" in message and "onclick=" in message and "style=" in message


def test_the_scripts_never_write_markup() -> None:
    """Text from documents reaches a page only as text: no script sets innerHTML/outerHTML (other than to empty
    it), inserts HTML or writes the document."""
    problems = []
    for script in sorted((SERVER / "static").rglob("*.js")):
        for n, line in enumerate(script.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("//")[0]
            if re.search(r"\.(inner|outer)HTML\s*\+?=(?!=)\s*(?!\"\"|''|``)", code):
                problems.append(f"{script.name}:{n}: {line.strip()}")
            if re.search(r"insertAdjacentHTML|document\.write|\beval\(|new Function\(", code):
                problems.append(f"{script.name}:{n}: {line.strip()}")
    assert not problems, "\n".join(problems)


# -- CSRF ------------------------------------------------------------------------------------------------------


def test_a_page_has_the_csrf_token_of_its_cookie(client: TestClient) -> None:
    answer = client.get("/nothing-here")
    cookie = answer.cookies.get(CSRF_COOKIE)
    assert cookie
    assert f'<meta name="csrf-token" content="{cookie}">' in answer.text
    assert "HttpOnly" in answer.headers["set-cookie"] and "SameSite=Strict" in answer.headers["set-cookie"]


def test_a_form_or_upload_without_the_csrf_header_is_refused(client: TestClient) -> None:
    # POST /api/health exists for GET only: an answer of 405 means the guard let the request through
    client.cookies.set(CSRF_COOKIE, "cookie-value")
    form = client.post("/api/health", data={"a": "b"})
    assert form.status_code == 403 and "CSRF" in form.json()["error"]
    upload = client.post("/api/health", files={"f": ("a.txt", b"x")})
    assert upload.status_code == 403
    plain = client.post("/api/health", content=b"x", headers={"Content-Type": "text/plain"})
    assert plain.status_code == 403
    wrong = client.post("/api/health", data={"a": "b"}, headers={"X-CSRF-Token": "other-value"})
    assert wrong.status_code == 403
    right = client.post("/api/health", data={"a": "b"}, headers={"X-CSRF-Token": "cookie-value"})
    assert right.status_code == 405
    right_upload = client.post("/api/health", files={"f": ("a.txt", b"x")}, headers={"X-CSRF-Token": "cookie-value"})
    assert right_upload.status_code == 405


def test_a_header_without_its_cookie_is_refused(client: TestClient) -> None:
    client.cookies.clear()
    assert client.post("/api/health", data={"a": "b"}, headers={"X-CSRF-Token": "guess"}).status_code == 403


def test_json_passes_and_a_cross_site_origin_does_not(client: TestClient) -> None:
    assert client.post("/api/health", json={"a": 1}).status_code == 405
    same = client.post("/api/health", json={"a": 1}, headers={"Origin": "http://127.0.0.1"})
    assert same.status_code == 405
    # a page with Referrer-Policy no-referrer sends Origin: null on its own POSTs
    assert client.post("/api/health", json={"a": 1}, headers={"Origin": "null"}).status_code == 405
    cross = client.post("/api/health", json={"a": 1}, headers={"Origin": "http://evil.example"})
    assert cross.status_code == 403 and "cross-site" in cross.json()["error"]
    client.cookies.set(CSRF_COOKIE, "v")
    cross_form = client.post(
        "/api/health", data={"a": "b"}, headers={"Origin": "http://evil.example", "X-CSRF-Token": "v"}
    )
    assert cross_form.status_code == 403


def test_a_bearer_token_needs_no_csrf_header(token_client: TestClient) -> None:
    answer = token_client.post("/api/health", data={"a": "b"}, headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 405
    # the cookie is an ambient credential: with it alone, a form still needs the header
    token_client.cookies.set(TOKEN_COOKIE, TOKEN)
    by_cookie = token_client.post("/api/health", data={"a": "b"})
    assert by_cookie.status_code == 403


# -- size and rate limits --------------------------------------------------------------------------------------


@pytest.fixture()
def small_client(server_config: ServerConfig) -> Iterator[TestClient]:
    """Limits of 1 KiB for a body and 1 MiB for an upload."""
    with _app_client(server_config, max_request_kb=1, max_upload_mb=1) as c:
        yield c


def test_a_body_said_too_long_is_refused_before_it_is_read(small_client: TestClient) -> None:
    answer = small_client.post("/api/health", json={"x": "a" * 2000})
    assert answer.status_code == 413
    said = re.search(r"(\d+) bytes, at most 1024", answer.json()["error"])
    assert said and int(said.group(1)) > 2000
    assert small_client.post("/api/health", json={"x": "a" * 500}).status_code == 405


def test_an_internal_error_is_answered_with_the_headers_and_in_the_api_s_shape() -> None:
    app = FastAPI()
    app.state.templates = None

    @app.get("/api/broken")
    def broken() -> None:
        raise RuntimeError("a bug")

    errors.install(app)
    app.add_middleware(
        Guard, token=None, loopback_only=True, max_body=1024, max_upload=1024, limiter=RateLimiter(1000, 100)
    )
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as c:
        answer = c.get("/api/broken")
    assert answer.status_code == 500
    assert answer.json() == {"error": "internal error: the server's log has the details"}
    assert answer.headers["content-security-policy"] == CSP and "a bug" not in answer.text


class _Note(BaseModel):
    text: str


def test_a_chunked_body_that_outgrows_the_limit_is_refused() -> None:
    """FastAPI reads a JSON body in the route; the guard counts what it reads. The app is a route of its own under
    the same guard and error edge as the server's (no JSON route of the server's own is needed for it)."""
    app = FastAPI()
    app.state.templates = None

    @app.post("/api/note")
    def note(body: _Note) -> dict[str, int]:
        return {"length": len(body.text)}

    errors.install(app)
    limiter = RateLimiter(100_000, 1000)
    app.add_middleware(Guard, token=None, loopback_only=True, max_body=1024, max_upload=1 << 20, limiter=limiter)

    def chunks(n: int) -> Iterator[bytes]:  # no Content-Length: sent chunked, its length said nowhere
        yield b'{"text": "'
        for _ in range(n):
            yield b"a" * 500
        yield b'"}'

    with TestClient(app, base_url="http://127.0.0.1") as c:
        json_type = {"Content-Type": "application/json"}
        assert c.post("/api/note", content=chunks(1), headers=json_type).json() == {"length": 500}
        answer = c.post("/api/note", content=chunks(10), headers=json_type)
        assert answer.status_code == 413, answer.text  # not 400 "There was an error parsing the body"
        assert "too large" in answer.json()["error"]
        assert answer.headers["content-security-policy"] == CSP


def test_a_chunked_multipart_body_that_outgrows_the_upload_limit_is_refused(small_client: TestClient) -> None:
    boundary = "b0undary"
    small_client.cookies.set(CSRF_COOKIE, "v")

    def chunks() -> Iterator[bytes]:
        yield f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="a.jsonl"\r\n\r\n'.encode()
        for _ in range(3):
            yield b"x" * (512 * 1024)
        yield f"\r\n--{boundary}--\r\n".encode()

    answer = small_client.post(
        "/api/collections/newspapers/ingest",
        content=chunks(),
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}", "X-CSRF-Token": "v"},
    )
    assert answer.status_code == 413, answer.text


def test_an_upload_may_be_larger_than_a_body_but_not_than_its_own_limit(small_client: TestClient) -> None:
    small_client.cookies.set(CSRF_COOKIE, "v")
    headers = {"X-CSRF-Token": "v"}
    big = small_client.post(
        "/api/collections/newspapers/ingest", files={"files": ("a.jsonl", b"x" * (2 << 20))}, headers=headers
    )
    assert big.status_code == 413
    # 4 KiB is beyond a body's limit but within an upload's: refused further on, for what it holds, not its size
    within = small_client.post(
        "/api/collections/newspapers/ingest",
        files={"files": ("a.jsonl", b"x" * 4096)},
        data={"format": "nonsense"},
        headers=headers,
    )
    assert within.status_code == 400 and "format" in within.json()["error"]


def test_too_many_requests_are_told_when_to_come_back(server_config: ServerConfig) -> None:
    with _app_client(server_config, rate_per_minute=60) as c:  # a burst of 10, then one a second
        codes = [c.get("/api/health").status_code for _ in range(11)]
        assert codes[:10] == [200] * 10
        assert codes[10] == 429
        refused = c.get("/api/health")
        assert refused.status_code == 429
        assert int(refused.headers["retry-after"]) >= 1
        assert "too many requests" in refused.json()["error"]


def test_the_rate_limiter_refills_and_keeps_clients_apart() -> None:
    limiter = RateLimiter(per_minute=60, burst=2)
    assert limiter.allow("a", now=0) == 0 and limiter.allow("a", now=0) == 0
    assert limiter.allow("a", now=0) == pytest.approx(1.0)
    assert limiter.allow("b", now=0) == 0  # another client has its own bucket
    assert limiter.allow("a", now=1.0) == 0  # a second later, one more request
    assert limiter.allow("a", now=1.0) > 0


def test_the_rate_limiter_forgets_quiet_clients_only() -> None:
    limiter = RateLimiter(per_minute=60, burst=2, max_clients=3)
    for n in range(3):
        limiter.allow(f"quiet{n}", now=0)
    limiter.allow("busy", now=10)
    limiter.allow("busy", now=10)
    limiter.allow("new", now=10)  # beyond max_clients: the quiet ones, full again by now, are forgotten
    assert "busy" in limiter._buckets and not any(c.startswith("quiet") for c in limiter._buckets)
    assert limiter.allow("busy", now=10) > 0  # forgetting did not give the busy client a fresh bucket


def test_no_websocket_gets_past_the_guards(client: TestClient) -> None:
    """The app has no websocket route; a websocket scope would skip every guard, so none is accepted."""
    from starlette.websockets import WebSocketDisconnect

    with pytest.raises(WebSocketDisconnect) as closed, client.websocket_connect("/api/health"):
        pass
    assert closed.value.code == 1008


def test_a_lone_surrogate_in_any_json_body_is_refused_naming_its_field(client: TestClient) -> None:
    # valid JSON, but no text: a trail, a page or an answer could not carry it (it was a 500 in the catalog chat)
    name = client.get("/api/collections").json()[0]["name"]
    for body, field in (
        ('{"query": "incendie \\ud800"}', "query"),
        ('{"query": "incendie", "corpus": ["x", "\\udc00"]}', "corpus.1"),
        ('"\\ud83d"', "body"),
    ):
        response = client.post(
            f"/api/collections/{name}/search", content=body, headers={"Content-Type": "application/json"}
        )
        assert response.status_code == 422, (body, response.text)
        assert response.json()["field"] == field
    # a surrogate pair is one character, and passes
    paired = client.post(
        f"/api/collections/{name}/search",
        content='{"query": "incendie \\ud83d\\ude00"}',
        headers={"Content-Type": "application/json"},
    )
    assert paired.status_code == 200, paired.text
    assert security.lone_surrogate(b'{"a": "plain"}') is None


def test_a_body_that_is_no_json_is_said_so_with_where_it_broke(client: TestClient) -> None:
    name = client.get("/api/collections").json()[0]["name"]
    broken = client.post(
        f"/api/collections/{name}/search", content=b'{"query": "fire",', headers={"Content-Type": "application/json"}
    )
    assert broken.status_code == 422
    body = broken.json()
    assert body["field"] == "body" and "not valid JSON at character" in body["error"], body
