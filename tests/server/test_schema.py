"""schemathesis over the app's own OpenAPI schema (/api/openapi.json), against the ASGI app: whatever a client
sends that the schema allows (and much that it does not), no operation answers 5xx. Examples are bounded per
operation so the whole run stays around a minute on two cores; every operation the other parts add is covered as
soon as it is in the schema.

The app serves a collection of this module's own (real documents and the hostile one): an operation that writes
(an ingest, a decision) writes there, never into server_collection."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from tracerag.collection import Collection
from tracerag.config import Settings
from tracerag.ingest import read_documents
from tracerag.model import Document
from tracerag.server import ServerConfig, create_app
from tracerag.server.security import CSRF_COOKIE

from .conftest import HOSTILE

EXAMPLES = 50  # per operation (fewer where the schema allows fewer): ~1,000 requests, ~10 s here
CSRF = "schema-test"
SERVED = "newspapers"
# operations given random collection names only: each case of an ingest into the collection served would start a
# child process (test_ingest.py takes the ingest through its real cases)
SHALLOW = {"/api/collections/{name}/ingest"}


@pytest.fixture(scope="module")
def schema_app(hipe_dir: Path, server_catalog: Path, server_settings: Settings, tmp_path_factory: Any) -> Iterator[Any]:
    path = tmp_path_factory.mktemp("schema") / "newspapers"
    docs = (
        d for d in read_documents(hipe_dir / "HIPE-2022-v2.1-letemps-dev-fr.tsv", "hipe") if isinstance(d, Document)
    )
    hostile = (d for d in read_documents(HOSTILE, "jsonl") if isinstance(d, Document))
    with Collection.open(path, server_settings, mode="write", create=True, embed_model="none") as col:
        col.ingest([*islice(docs, 8), *hostile], dense=False)
    app = create_app(ServerConfig(collections=(path,), settings=server_settings, catalog=server_catalog))
    yield app
    app.state.server.close()


@pytest.fixture(scope="module")
def api_schema(schema_app: Any) -> Any:
    # the guard answers only loopback host names (the test client says "testserver")
    return schemathesis.openapi.from_asgi("/api/openapi.json", schema_app, headers={"Host": "127.0.0.1"})


def five_hundreds(api_schema: Any, examples: int = EXAMPLES) -> tuple[int, int, list[str]]:
    """(operations, requests, failures): each operation in turn, its cases drawn by hypothesis from the schema
    (schemathesis's pytest plugin does not run under this pytest, so the operations are walked here); every 5xx
    with the request that reproduces it."""
    from hypothesis import given
    from schemathesis.checks import not_a_server_error

    operations = [result.ok() for result in api_schema.get_all_operations()]
    failures: list[str] = []
    calls = 0

    def served(case: Any) -> Any:
        """The collection served, in every case that names one (random names all stop at a 404, and the route
        table test gives every route those): the cases then reach what the routes do."""
        for key in ("name", "collection"):
            if key in (case.path_parameters or {}):
                case.path_parameters[key] = SERVED
        return case

    def checker(operation: Any) -> Any:
        strategy = operation.as_strategy()
        if operation.path not in SHALLOW:
            strategy = strategy.map(served)

        @given(case=strategy)
        @settings(
            max_examples=examples,
            deadline=None,
            derandomize=True,  # the same requests every run: a failure here is reproducible, never flaky
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def check(case: Any) -> None:
            nonlocal calls
            calls += 1
            # as the app's own pages send a form or an upload: with the CSRF header and its cookie (a JSON body
            # needs neither), so that a request reaches its route instead of stopping at the guard
            try:
                response = case.call(headers={"X-CSRF-Token": CSRF, "Host": "127.0.0.1"}, cookies={CSRF_COOKIE: CSRF})
            except Exception as exc:  # the ASGI client raises what the app did not handle: a 500 to a real client
                failures.append(f"500 {operation.label} ({type(exc).__name__}: {exc}): {case.as_curl_command()}")
                return
            try:
                case.validate_response(response, checks=[not_a_server_error])
            except AssertionError:
                failures.append(f"{response.status_code} {operation.label}: {case.as_curl_command()}")

        return check

    for operation in operations:
        checker(operation)()
    return len(operations), calls, failures


def test_no_operation_answers_5xx(api_schema: Any) -> None:
    operations, calls, failures = five_hundreds(api_schema)
    print(f"{calls} requests over {operations} operations")
    assert operations >= 10 and calls >= operations * 3
    assert not failures, f"{len(failures)} 5xx of {calls} requests:\n" + "\n".join(sorted(set(failures))[:30])


def test_a_5xx_is_found() -> None:
    """Not a test that cannot fail: an operation that breaks on some input is caught, with its request."""
    from fastapi import FastAPI

    app = FastAPI()

    @app.get("/api/items/{n}")
    def item(n: int) -> dict[str, int]:
        return {"inverse": 100 // (n % 3)}  # a ZeroDivisionError for every third n

    found = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations, calls, failures = five_hundreds(found, examples=30)
    assert operations == 1 and failures and failures[0].startswith("500 GET /api/items/{n} (ZeroDivisionError")


def test_the_schema_documents_every_api_route_and_its_errors(api_schema: Any, schema_app: Any) -> None:
    raw = schema_app.openapi()
    paths = raw["paths"]
    assert "/api/collections/{name}/ingest" in paths and "/api/jobs/{job_id}/events" in paths
    ingest = paths["/api/collections/{name}/ingest"]["post"]
    assert "multipart/form-data" in ingest["requestBody"]["content"]
    assert {"202", "404", "413", "503"} <= set(ingest["responses"])
    form = raw["components"]["schemas"]["IngestForm"]
    assert all(field.get("description") for field in form["properties"].values())
