"""How an ask run that did not go as planned reads on the ask page: without a model the run says that it is
`tracerag serve` that takes `--llm`; a model server that does not answer is a failed run that says to start it
(at its URL) or restart `tracerag serve` with another; and in the browser the page says at the end what happened
(no plan: no model; no verdicts), in words, with the code in parentheses, keeps the run in its address, and shows
the question of a run it shows again."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from tests.server.ask_setup import (  # noqa: F401  (fixtures)
    NAME,
    QUESTION,
    AskSetup,
    ask,
    ask_config_fixture,
    ask_setup_fixture,
)
from tests.server.browser import axe, chromium, page, shot  # noqa: F401
from tests.server.conftest import LiveServer
from tracerag.server import ServerConfig, create_app


def config_with(ask_setup: AskSetup, **llm: object) -> ServerConfig:
    settings = ask_setup.settings.model_copy(update={"llm": ask_setup.settings.llm.model_copy(update=llm)})
    return ServerConfig(collections=(ask_setup.collection,), settings=settings)


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released): a connection to it is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_without_a_model_the_run_says_serve_takes_the_model(ask_setup: AskSetup):
    with TestClient(create_app(config_with(ask_setup, model=None)), base_url="http://127.0.0.1") as client:
        job, events = ask(client, "harbour fire")
    assert "`tracerag serve` with --llm" in events[0]["message"]
    result = job["result"]
    assert result["status"] == "no_llm"
    assert result["advice"].startswith("The model is the server's: restart `tracerag serve` with --llm openai:MODEL")


def test_an_unreachable_model_server_says_start_it_or_restart_serve(ask_setup: AskSetup):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    config = config_with(ask_setup, model="openai:some-model", base_url=url, max_retries=0, timeout_s=5.0)
    with TestClient(create_app(config), base_url="http://127.0.0.1") as client:
        job, _events = ask(client, "harbour fire")
    assert job["status"] == "done", job["error"]
    result = job["result"]
    assert result["status"] == "failed" and result["message"].startswith("LLMCallFailed"), result["message"]
    assert result["advice"] == (
        f"Start the model server at {url}, or restart `tracerag serve` with --llm/--base-url naming one that runs."
    )
    # a run that ended otherwise has nothing to be told
    with TestClient(create_app(ServerConfig(collections=(ask_setup.collection,), settings=ask_setup.settings)),
                    base_url="http://127.0.0.1") as client:  # fmt: skip
        job, _events = ask(client)
    assert job["result"]["status"] == "complete" and job["result"]["advice"] == ""


@pytest.fixture(scope="module")
def no_model_server(ask_setup: AskSetup) -> Iterator[LiveServer]:
    with LiveServer(config_with(ask_setup, model=None)) as live:
        yield live


def test_a_run_without_a_model_ends_in_words_and_stays_in_the_address(no_model_server: LiveServer, page):  # noqa: F811
    page.goto(no_model_server.url + "/ask")
    page.get_by_label("Question").fill(QUESTION)
    page.get_by_role("button", name="Ask").click()
    page.locator("#ask-sources > li").first.wait_for()

    assert page.locator("#ask-plan > li").all_inner_texts() == ["no plan: the run had no model"]
    assert page.locator("#ask-verdicts").inner_text() == "none: no model ran"
    assert page.locator("#ask-llm").inner_text() == "none: no model ran"
    status = page.locator("#ask-status").inner_text()
    assert status.startswith("the run ended: no model: these are the hybrid search results") and "(no_llm)" in status
    message = page.locator("#ask-message").inner_text()
    assert "restart `tracerag serve` with --llm" in message and "Configure one with" not in message
    run_id = page.locator("#ask-run").inner_text()
    assert re.fullmatch(r"\d{8}T\d{6}-[0-9a-f]{6}", run_id)
    page.wait_for_url(f"**/ask?collection={NAME}&run={run_id}")
    shot(page, "ask-no-model")

    page.reload()  # the address shows the run again, with its question
    page.locator("#ask-sources > li").first.wait_for()
    assert page.get_by_label("Question").input_value() == QUESTION
    assert page.locator("#ask-shown-question").inner_text() == QUESTION
    assert axe(page) == []
    assert page.js_errors == []
