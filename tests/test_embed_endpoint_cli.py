"""End to end: `tracerag ingest` and `tracerag search` with an endpoint model, then another model refused."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tests.fakes.embeddings_server import FakeEmbeddings
from tracerag.cli import app

JSONL = Path(__file__).resolve().parent / "fixtures" / "jsonl"


def test_ingest_and_search_through_an_endpoint(tmp_path: Path) -> None:
    runner = CliRunner()
    with FakeEmbeddings(dim=24) as fake:
        env = {
            "COLUMNS": "400",
            "TRACERAG_EMBED__BASE_URL": fake.base_url,
            "TRACERAG_EMBED__PASSAGE_PREFIX": "passage: ",
        }
        col = tmp_path / "c"
        out = runner.invoke(app, ["ingest", str(JSONL), "-c", str(col), "--embed-model", "openai:fake-embed"], env=env)
        assert out.exit_code == 1, out.output  # the fixture has skipped records
        manifest = (col / "collection.toml").read_text()
        assert 'spec = "openai:fake-embed"' in manifest and "dim = 24" in manifest
        assert 'passage_prefix = "passage: "' in manifest
        assert any(t.startswith("passage: ") for t in fake.inputs)
        out = runner.invoke(app, ["search", "incendie de l'Opéra", "-c", str(col), "--json"], env=env)
        assert out.exit_code == 0, out.output
        results = json.loads(out.stdout)["results"]
        assert results and any("dense" in json.dumps(r) for r in results)
        other = runner.invoke(
            app, ["ingest", str(JSONL), "-c", str(col), "--embed-model", "openai:other-embed"], env=env
        )
        assert other.exit_code == 2 and "built with embedding model 'openai:fake-embed'" in other.output
        fake.dim = 12  # the server now serves another model under the same name
        out = runner.invoke(app, ["search", "incendie", "-c", str(col)], env=env)
        assert out.exit_code != 0 and "12-d vectors" in out.output
