"""The cluster backend from the command line, against a Qdrant server played by `tests/fakes/qdrant_server.py` over
real HTTP: `ingest --engine qdrant --url --api-key` makes a collection whose index is on the server (the key never
written), `info` says where, `search` finds there; `migrate` moves an embedded collection and resumes after a
server that kept failing; bad or conflicting asks exit 2 saying why."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("qdrant_client", reason="qdrant-client is not installed (pip install 'tracerag[qdrant]')")

from tests.conftest import require_datasets  # noqa: E402
from tests.fakes.qdrant_server import FakeQdrant  # noqa: E402
from tracerag.cli import app  # noqa: E402

runner = CliRunner()
FILE = "HIPE-2022-v2.1-hipe2020-dev-fr.tsv"
pytestmark = [pytest.mark.needs_data("hipe2022"), pytest.mark.filterwarnings("ignore:Api key is used")]


@pytest.fixture
def qdrant():
    with FakeQdrant() as fake:
        yield fake


def data() -> str:
    return str(require_datasets("hipe2022") / "hipe2022" / FILE)


def tracerag(*args: str, env: dict[str, str] | None = None):
    result = runner.invoke(app, list(args), env={"COLUMNS": "300", **(env or {})})
    result.said = " ".join(result.output.split())  # what it said, whatever the lines it was wrapped into
    return result


def manifest(path: Path) -> dict:
    return tomllib.loads((path / "collection.toml").read_text(encoding="utf-8"))


def test_ingest_to_a_server_then_info_and_search(qdrant, tmp_path):
    col = tmp_path / "hipe"
    made = tracerag(
        "ingest", data(), "-c", str(col), "--embed-model", "none", "--limit", "30",
        "--engine", "qdrant", "--url", qdrant.url, "--api-key", "s3cret", "--qdrant-collection", "hipe_fr",
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    recorded = manifest(col)
    assert recorded["collection"]["engine"] == "qdrant"
    assert recorded["qdrant"]["url"] == qdrant.url and recorded["qdrant"]["collection"] == "hipe_fr"
    assert "s3cret" not in (col / "collection.toml").read_text() and not (col / "index").exists()
    assert set(qdrant.api_keys) == {"s3cret"}

    info = tracerag("info", "-c", str(col), env={"QDRANT_API_KEY": "s3cret"})
    assert info.exit_code == 0, info.output
    assert f"engine: Qdrant server {qdrant.url}, collection hipe_fr (1 shard, replication 1" in info.said
    as_json = json.loads(tracerag("info", "-c", str(col), "--json", env={"QDRANT_API_KEY": "s3cret"}).stdout)
    assert as_json["engine"]["collection"] == "hipe_fr" and as_json["indexed_points"] == as_json["chunks"] > 30

    found = tracerag("search", "conseil", "-c", str(col), "--json", env={"QDRANT_API_KEY": "s3cret"})
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)["results"]

    refused = tracerag("search", "conseil", "-c", str(col), env={"QDRANT_API_KEY": "wrong"})
    assert set(qdrant.api_keys) == {"s3cret", "wrong"}  # the fake takes any key; a server would refuse: 401 test
    assert refused.exit_code == 0

    other = tracerag("ingest", data(), "-c", str(col), "--limit", "3", "--url", "http://elsewhere:6333")
    assert other.exit_code == 2 and f"index is on {qdrant.url}, not on http://elsewhere:6333" in other.said


def test_bad_asks_exit_2_saying_why(qdrant, tmp_path):
    bad_url = tracerag("ingest", data(), "-c", str(tmp_path / "a"), "--limit", "3", "--url", "qdrant:6333")
    assert bad_url.exit_code == 2 and "engine.url = 'qdrant:6333': expected an http:// or https:// URL" in bad_url.said
    no_url = tracerag("ingest", data(), "-c", str(tmp_path / "a"), "--limit", "3", "--engine", "qdrant")
    assert no_url.exit_code == 2 and "engine.kind = 'qdrant' needs engine.url" in no_url.said
    assert not (tmp_path / "a").exists()

    edge = tmp_path / "edge"
    assert tracerag("ingest", data(), "-c", str(edge), "--embed-model", "none", "--limit", "3").exit_code == 0
    moved = tracerag("ingest", data(), "-c", str(edge), "--limit", "3", "--url", qdrant.url)
    assert moved.exit_code == 2 and f"tracerag migrate -c {edge} --to qdrant --url {qdrant.url}" in moved.said
    wrong_target = tracerag("migrate", "-c", str(edge), "--to", "elasticsearch", "--url", qdrant.url)
    assert wrong_target.exit_code == 2 and "'qdrant'" in wrong_target.said


def test_a_first_ingest_that_reads_nothing_leaves_no_server_collection(qdrant, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    out = tracerag("ingest", str(empty), "-c", str(tmp_path / "c"), "--format", "txt", "--url", qdrant.url)
    assert out.exit_code == 2, out.output
    assert any(r.startswith("PUT /collections/tracerag_c_") for r in qdrant.requests)  # it was made, then
    assert qdrant.local.get_collections().collections == []  # dropped
    assert not (tmp_path / "c").exists()


def test_an_unreachable_server_at_ingest(tmp_path):
    out = tracerag(
        "ingest", data(), "-c", str(tmp_path / "c"), "--limit", "3", "--url", "http://127.0.0.1:9",
        env={"TRACERAG_ENGINE__RETRIES": "1", "TRACERAG_ENGINE__BACKOFF_S": "0"},
    )  # fmt: skip
    assert out.exit_code == 2
    assert "Qdrant at http://127.0.0.1:9" in out.said and "no answer after 2 tries" in out.said
    assert not (tmp_path / "c").exists()


def test_migrate_resumes_after_a_server_that_kept_failing(qdrant, tmp_path):
    col = tmp_path / "hipe"
    assert tracerag("ingest", data(), "-c", str(col), "--embed-model", "none", "--limit", "40").exit_code == 0
    before = json.loads(tracerag("search", "conseil fédéral", "-c", str(col), "--json").stdout)["results"]
    assert before
    collection = f"tracerag_hipe_{manifest(col)['collection']['id'][:12]}"
    env = {"TRACERAG_ENGINE__RETRIES": "1", "TRACERAG_ENGINE__BACKOFF_S": "0", "TRACERAG_ENGINE__BATCH_POINTS": "20"}
    qdrant.fail("503", "503", on=f"PUT /collections/{collection}/points", after=1)  # the first page goes, not the next

    failed = tracerag("migrate", "-c", str(col), "--to", "qdrant", "--url", qdrant.url, env=env)
    assert failed.exit_code == 2
    assert f"Qdrant at {qdrant.url}, collection {collection}" in failed.said
    assert "503 Service Unavailable (after 1 retries)" in failed.said
    assert manifest(col)["collection"]["engine"] == "tantivy"
    assert tracerag("search", "conseil fédéral", "-c", str(col)).exit_code == 0  # still searched where it was

    resumed = tracerag("migrate", "-c", str(col), "--to", "qdrant", "--url", qdrant.url, "--json", env=env)
    assert resumed.exit_code == 0, resumed.output
    report = json.loads(resumed.stdout)
    assert report["resumed"] and report["collection"] == collection
    assert report["moved_now"] == report["points"] - 20 and report["points_per_second"]
    assert manifest(col)["collection"]["engine"] == "qdrant"
    after = json.loads(tracerag("search", "conseil fédéral", "-c", str(col), "--json").stdout)["results"]
    # The server's BM25 is Qdrant's, not tantivy's (document lengths kept exactly, not in tantivy's one-byte
    # norms): the moved index answers as one ingested straight into the server does.
    direct = tmp_path / "direct"
    made = tracerag(
        "ingest", data(), "-c", str(direct), "--embed-model", "none", "--limit", "40", "--url", qdrant.url,
        "--engine", "qdrant", "--qdrant-collection", "direct",
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    straight = json.loads(tracerag("search", "conseil fédéral", "-c", str(direct), "--json").stdout)["results"]
    assert [r["doc_id"] for r in after] == [r["doc_id"] for r in straight]
    assert [r["score"] for r in after] == pytest.approx([r["score"] for r in straight], rel=1e-5)  # float32 sums
    assert {r["doc_id"] for r in after} & {r["doc_id"] for r in before}

    done = tracerag("migrate", "-c", str(col), "--to", "qdrant", "--url", qdrant.url)
    assert done.exit_code == 2 and "already on" in done.said


def test_migrate_says_what_it_moved(qdrant, tmp_path):
    col = tmp_path / "hipe"
    assert tracerag("ingest", data(), "-c", str(col), "--embed-model", "none", "--limit", "10").exit_code == 0
    # new collections go to a server by the environment: this one is moved there all the same
    env = {"TRACERAG_ENGINE__KIND": "qdrant", "TRACERAG_ENGINE__URL": qdrant.url}
    out = tracerag("migrate", "-c", str(col), "--to", "qdrant", "--url", qdrant.url, env=env)
    assert out.exit_code == 0, out.output
    assert f"to {qdrant.url}, collection tracerag_hipe_" in out.said and "points/s" in out.said
    assert "counts checked on the server: points, vectors, chunks per language (fr " in out.said
    assert "no longer used: remove it" in out.said
