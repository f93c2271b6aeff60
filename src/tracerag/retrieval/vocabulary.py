"""The collection's own vocabulary: a fastText model (gensim) trained on the collection's text, whose nearest
neighbours of a word include the past's own spellings of it and its OCR misreadings, along with words that merely
share its letters, shown with their corpus frequencies so that the researcher picks which to add.

Kept in the collection's `vocabulary/` folder (`collection.VOCABULARY_DIR`): `words.kv` (gensim's KeyedVectors,
each word's count with it) and `vocabulary.json` (format, settings, what the collection held when trained). Like
`calibration.json`, a model that no longer describes the collection (documents grew or shrank by more than a
quarter, another format) is said to be stale and why; a stale one still answers, and says so.

Words are the lower-cased runs of letters of each document's text (digits and punctuation split words), with
accents kept: "grève" and "greve" are two words here, which is the point. Skip-gram, since the OCR variants and
old spellings a researcher wants are rare words, which skip-gram learns better than CBOW (Mikolov et al. 2013).
fastText rather than plain word2vec: its character n-grams tie a word to its OCR splits and joins and its old
spellings ("gouvernement" → "gouvernemens", "vernement"; "paris" → "deparis"), the neighbours a researcher of
OCR'd papers wants; and a query word the model never saw (a misreading) still has neighbours, all of them words of
the collection. Measured on HIPE-2022 French (293 documents, 184k words): word2vec's neighbours of "gouvernement"
were "efforce", "britannique", "boun"; fastText's are above. Hashed n-grams in `NGRAM_BUCKETS` buckets keep the
stored model to 22-33 MB on the benchmarks (20 MB of n-grams, the rest the words). One worker and a fixed
seed, so that a model trained twice on the same text is the same model.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracerag.collection import VOCABULARY_DIR
from tracerag.config import ExpansionSettings
from tracerag.errors import CollectionError, ReadOnlyError, TraceError

if TYPE_CHECKING:
    from gensim.models import KeyedVectors

    from tracerag.collection import Collection
    from tracerag.store import DocumentStore

MODEL_FILE = "words.kv"
META_FILE = "vocabulary.json"
FORMAT = 1  # of vocabulary.json and words.kv together
STALE_SHARE = 0.25  # as calibration.json: a quarter more or fewer documents and the neighbours may have moved
SEED = 0
RETRAIN = "retrain with `tracerag expand --train`"
NGRAM_BUCKETS = 50_000  # hashed character n-grams: 50k x 100 floats, 20 MB on disk
_WORD = re.compile(r"[^\W\d_]+")  # runs of letters: an apostrophe splits ("l'armée" → "l", "armée")


def words(text: str) -> list[str]:
    """The words of a text as the model knows them: lower-cased runs of letters, accents kept."""
    return [w.lower() for w in _WORD.findall(text) if len(w) > 1]


class VocabularyMissing(TraceError):
    """The collection has no vocabulary model yet (or an unreadable one): the message says how to train it."""


@dataclass(frozen=True)
class Neighbour:
    word: str
    similarity: float  # cosine in the model
    count: int  # occurrences in the collection's text


@dataclass
class VocabularyInfo:
    """What `vocabulary.json` holds: enough to say whether the model still describes its collection."""

    documents: int
    tokens: int
    words: int
    settings: dict[str, Any]
    created: str
    seconds: float
    gensim: str
    format: int = FORMAT
    seed: int = SEED
    extra: dict[str, Any] = field(default_factory=dict)

    def staleness(self, documents_now: int) -> str | None:
        before = self.documents
        if before and abs(documents_now - before) > STALE_SHARE * before:
            return f"trained on {before:,} documents, the collection now holds {documents_now:,}"
        return None


class Vocabulary:
    """A trained model and what it was trained on."""

    def __init__(self, vectors: KeyedVectors, info: VocabularyInfo, folder: Path | None = None):
        self.vectors = vectors
        self.info = info
        self.folder = folder

    def count(self, word: str) -> int:
        return int(self.vectors.get_vecattr(word, "count")) if word in self.vectors.key_to_index else 0

    def __contains__(self, word: str) -> bool:
        return word in self.vectors.key_to_index

    def neighbours(self, word: str, n: int = 10) -> list[Neighbour]:
        """The `n` words of the collection nearest `word` (lower-cased), best first, the word itself left out. A
        word the model never saw is placed by its character n-grams; one with none of them known has none."""
        key = word.lower()
        if key not in self.vectors:  # fastText: in the vocabulary, or some of its character n-grams are
            return []
        return [Neighbour(w, round(float(sim), 4), self.count(w)) for w, sim in self.vectors.most_similar(key, topn=n)]

    def summary(self, documents_now: int | None = None) -> str:
        i = self.info
        line = (
            f"fastText trained {i.created[:10]} on {i.documents:,} documents ({i.tokens:,} words, "
            f"{i.words:,} distinct kept)"
        )
        stale = i.staleness(documents_now) if documents_now is not None else None
        return line + (f"; stale: {stale} (retrain with `tracerag expand --train`)" if stale else "")


def _write_corpus(texts: Iterable[str], path: Path, progress: Callable[[int], None] | None) -> int:
    """The texts as gensim's corpus file: one document a line, its words space-separated. Written here, in the
    caller's thread: gensim reads an iterable corpus in a thread of its own, and the store's SQLite connection
    belongs to this one. Returns the number of documents."""
    n = 0
    with path.open("w", encoding="utf-8") as fh:
        for n, text in enumerate(texts, start=1):
            fh.write(" ".join(words(text)) + "\n")
            if progress is not None and n % 500 == 0:
                progress(n)
    return n


def train(
    texts: Callable[[], Iterable[str]],
    settings: ExpansionSettings,
    progress: Callable[[int], None] | None = None,
) -> Vocabulary:
    """A fastText model over the texts `texts()` yields, by `settings`."""
    from gensim.models import FastText

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tracerag-vocabulary-") as tmp:
        corpus = Path(tmp) / "corpus.txt"
        documents = _write_corpus(texts(), corpus, progress)
        model = FastText(
            vector_size=settings.vector_size,
            window=5,
            min_count=settings.min_count,
            sg=1,
            workers=1,
            seed=SEED,
            epochs=settings.epochs,
            bucket=NGRAM_BUCKETS,
            min_n=3,
            max_n=5,
        )
        model.build_vocab(corpus_file=str(corpus))
        if not model.wv.key_to_index:
            raise TraceError(
                f"no word occurs {settings.min_count} times in the collection: nothing to train a vocabulary model "
                "on (lower expansion.min_count)"
            )
        model.train(corpus_file=str(corpus), total_words=model.corpus_total_words, epochs=model.epochs)
    info = VocabularyInfo(
        documents=documents,
        tokens=int(model.corpus_total_words),
        words=len(model.wv.key_to_index),
        settings=settings.model_dump(include={"vector_size", "min_count", "epochs"}),
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        seconds=round(time.perf_counter() - started, 2),
        gensim=metadata.version("gensim"),
    )
    return Vocabulary(model.wv, info)


def texts_of(store: DocumentStore) -> Callable[[], Iterator[str]]:
    def each() -> Iterator[str]:
        for doc in store.iter_documents():
            yield doc.text

    return each


def folder_of(collection: Collection) -> Path:
    return collection.path / VOCABULARY_DIR


def save(vocabulary: Vocabulary, folder: Path) -> Path:
    """Write the model and its description into `folder`, replacing what was there only once both are written."""
    folder = Path(folder)
    tmp = folder.with_name(folder.name + ".tmp")
    try:
        tmp.mkdir(parents=True, exist_ok=True)
        vocabulary.vectors.save(str(tmp / MODEL_FILE))
        (tmp / META_FILE).write_text(json.dumps(asdict(vocabulary.info), indent=2), encoding="utf-8")
        if folder.exists():
            old = folder.with_name(folder.name + ".old")
            folder.replace(old)
            tmp.replace(folder)
            for f in old.iterdir():
                f.unlink()
            old.rmdir()
        else:
            tmp.replace(folder)
    except OSError as exc:
        raise CollectionError(f"{folder}: cannot write the vocabulary model ({exc.strerror})") from None
    vocabulary.folder = folder
    return folder


def train_collection(
    collection: Collection, progress: Callable[[int], None] | None = None, folder: Path | None = None
) -> Vocabulary:
    """Train on the collection's documents and store the model in it (or in `folder`); only a writer may write
    into the collection."""
    if folder is None and collection.mode != "write":
        raise ReadOnlyError(
            f"{collection.path}: training the vocabulary model writes the collection; open it for writing"
        )
    vocabulary = train(texts_of(collection.store), collection.settings.expansion, progress)
    save(vocabulary, folder or folder_of(collection))
    return vocabulary


def load(folder: Path) -> Vocabulary:
    """The model stored in `folder`; VocabularyMissing saying why there is none usable."""
    folder = Path(folder)
    meta = folder / META_FILE
    if not meta.is_file():
        raise VocabularyMissing(
            f"{folder.parent}: no vocabulary model: train one with `tracerag expand --train -c {folder.parent}` "
            "(or set expansion.vocabulary_at_ingest)"
        )
    try:
        data = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise VocabularyMissing(f"{meta}: unreadable ({exc}): {RETRAIN}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise VocabularyMissing(
            f"{meta}: format {found}, this TRACE reads {FORMAT}: retrain with `tracerag expand --train`"
        )
    try:
        info = VocabularyInfo(**data)
    except TypeError as exc:
        raise VocabularyMissing(f"{meta}: {exc}: {RETRAIN}") from None
    from gensim.models import KeyedVectors

    try:
        vectors = KeyedVectors.load(str(folder / MODEL_FILE))
    except (OSError, ValueError, EOFError) as exc:
        raise VocabularyMissing(
            f"{folder / MODEL_FILE}: unreadable ({exc}): retrain with `tracerag expand --train`"
        ) from None
    return Vocabulary(vectors, info, folder)
