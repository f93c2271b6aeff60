"""The pseudo-queries a calibration measures the channels on (`retrieval/calibration.py`): made from the
collection itself, each with the documents that answer it, so that no collection needs relevance judgments.

Each kind stands for a way people search (`KINDS`), so that the weights predict what people ask and not only
what a pasted span finds:

- `span`: twelve words pasted from a text (a known item);
- `keywords`: three of a text's rarer words;
- `phrase`: two adjacent words around a rare one (a name, a phrase);
- `shuffled`: a span's words in another order (a passage remembered, not copied);
- `entity`: one of the collection's own entity names (where it has entities), held by at most
  `ENTITY_MAX_DOCUMENTS` documents, every one of which answers it (a name in hundreds of documents says nothing
  about which channel finds it);
- `question`: a question a person would ask that a passage answers, in the passage's language, written by the
  configured model (a `Questioner`: retrieval never imports `llm`, `research/pseudo_questions.py` makes one).
  Without a model the kind is absent and the calibration says so.

The span, keywords, phrase, shuffled and question kinds are cut from documents drawn with the seed, one kind per
drawn document in turn; the draw is the same with or without a model, so a model changes no other kind's queries.
Which words are rare is read from the drawn chunks themselves (in how many of them a word occurs), so no word
list of any language is needed.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if (
    TYPE_CHECKING
):  # QUERIES_PER_KIND and SEED are `tracerag calibrate`'s option defaults: its --help loads no collection
    from tracerag.collection import Collection
    from tracerag.store import DocumentStore

SEED = 0
QUERIES_PER_KIND = 100
SPAN_WORDS = 12  # a known-item span: the median of the spans people paste (8-15 words on ocr-known-item)
KEYWORDS = 3
PHRASE_WORDS = 2
ENTITY_MAX_DOCUMENTS = 3  # an entity query's answers: few enough that finding one of them is finding the name
QUESTION_PASSAGE_CHARS = 1500  # what the model is shown of a chunk: enough for a question, bounded in tokens
QUESTION_GIVE_UP = 3  # failures in a row after which the model is asked no more (it is down, or cannot do it)

# why a calibration without a questioner has no questions (ingest and embed ask no model; `tracerag calibrate` says
# more precisely why it had none)
NO_QUESTIONER = "no model asked (`tracerag calibrate` asks llm.model's)"
DRAWN = ("span", "keywords", "phrase", "shuffled", "question")  # the kinds cut from drawn documents, in turn
KINDS = ("span", "keywords", "phrase", "shuffled", "entity", "question")
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True, slots=True)
class PseudoQuery:
    kind: str  # one of KINDS
    text: str
    doc_id: str  # the document it was made from (an entity query: the first of its answers)
    answers: frozenset[str] = frozenset()  # every document that answers it; empty means {doc_id}

    @property
    def relevant(self) -> frozenset[str]:
        return self.answers or frozenset({self.doc_id})


@dataclass(frozen=True, slots=True)
class Asked:
    """A questioner's answer: the question, or why there is none (recorded, and the passage skipped)."""

    question: str | None
    failure: str | None = None


class Questioner(Protocol):
    """Writes a question a person would ask that `passage` answers, in `language` (a code, or None: unknown)."""

    @property
    def model(self) -> str: ...  # named in the calibration's report

    def __call__(self, passage: str, language: str | None) -> Asked: ...


@dataclass
class Made:
    """The pseudo-queries, and for each kind that has fewer than asked (or none), why."""

    queries: list[PseudoQuery]
    notes: dict[str, str]


def pseudo_queries(collection: Collection, per_kind: int = QUERIES_PER_KIND, seed: int = SEED) -> list[PseudoQuery]:
    """Up to `per_kind` queries of each kind that needs no model (see `make`)."""
    return make(collection, per_kind, seed).queries


def make(
    collection: Collection,
    per_kind: int = QUERIES_PER_KIND,
    seed: int = SEED,
    questioner: Questioner | None = None,
) -> Made:
    """Up to `per_kind` queries of each kind, the same for the same seed (and the same model answers)."""
    store = collection.store
    rng = random.Random(seed)
    ids = store.document_ids()
    drawn = rng.sample(ids, min(len(ids), per_kind * len(DRAWN)))
    chunks_by_doc: dict[str, list] = {}
    for chunk in store.chunks_of(drawn):
        chunks_by_doc.setdefault(chunk.doc_id, []).append(chunk)
    texts = {d: rng.choice(chunks_by_doc[d]).index_text for d in drawn if d in chunks_by_doc}
    frequency: dict[str, int] = {}
    for text in texts.values():
        for word in {w.casefold() for w in _WORD.findall(text)}:
            frequency[word] = frequency.get(word, 0) + 1
    out: list[PseudoQuery] = []
    to_ask: list[str] = []
    order = [d for d in drawn if d in texts]
    for i, doc_id in enumerate(order):
        kind = DRAWN[i % len(DRAWN)]
        if kind == "question":
            to_ask.append(doc_id)
            continue
        text = _cut(kind, texts[doc_id], frequency, rng)
        if text:
            out.append(PseudoQuery(kind, text, doc_id))
    notes: dict[str, str] = {}
    entities, why = entity_queries(store, per_kind, random.Random(f"{seed}/entity"))
    out += entities
    if why:
        notes["entity"] = why
    if questioner is None:
        notes["question"] = NO_QUESTIONER
    else:
        questions, why = _questions(store, {d: texts[d] for d in to_ask}, questioner)
        out += questions
        if why:
            notes["question"] = why
    return Made(out, notes)


def _cut(kind: str, text: str, frequency: Mapping[str, int], rng: random.Random) -> str | None:
    if kind in ("span", "shuffled"):
        words = text.split()
        if len(words) < 3:
            return None
        start = rng.randrange(max(1, len(words) - SPAN_WORDS + 1))
        span = words[start : start + SPAN_WORDS]
        if kind == "shuffled":
            span = _reordered(span, rng)
        return " ".join(span)
    words = _WORD.findall(text)
    candidates = [i for i, w in enumerate(words) if len(w) >= 3 and not w.isdigit()]
    if not candidates:
        return None
    # rarest first among words other drawn chunks also hold (a word in one chunk only is as often OCR noise as
    # a name); ties at random, so that the draw does not favour any position in the text
    shuffled = rng.sample(candidates, len(candidates))
    ranked = sorted(
        shuffled, key=lambda i: (frequency.get(words[i].casefold(), 0) < 2, frequency.get(words[i].casefold(), 0))
    )
    if kind == "keywords":
        chosen: list[int] = []
        for i in ranked:
            if all(words[i].casefold() != words[j].casefold() for j in chosen):
                chosen.append(i)
            if len(chosen) == KEYWORDS:
                break
        return " ".join(words[i] for i in sorted(chosen))
    first = ranked[0]
    start = min(first, max(0, len(words) - PHRASE_WORDS))
    return " ".join(words[start : start + PHRASE_WORDS])


def _reordered(words: list[str], rng: random.Random) -> list[str]:
    """The words in another order: shuffled until the order differs (a span of one repeated word cannot)."""
    if len(set(words)) < 2:
        return words
    out = list(words)
    while out == words:
        rng.shuffle(out)
    return out


def entity_queries(store: DocumentStore, per_kind: int, rng: random.Random) -> tuple[list[PseudoQuery], str]:
    """Up to `per_kind` of the collection's entity names held by 1 to ENTITY_MAX_DOCUMENTS documents, each
    answered by every document holding it; and why fewer, if fewer. The name is the form's most frequent surface."""
    forms = [
        f for f in store.entity_forms() if len(f.folded) >= 3 and any(not w.isdigit() for w in _WORD.findall(f.folded))
    ]
    if not forms:
        return [], "the collection has no entities (`tracerag entities` finds them)"
    # a form in more chunks than this is in more documents than ENTITY_MAX_DOCUMENTS or repeated within them:
    # looked up only if the rarer ones run out
    rare = [f for f in forms if f.chunks <= 4 * ENTITY_MAX_DOCUMENTS]
    pool = rng.sample(rare, len(rare))
    docs_of: dict[str, set[str]] = {}
    out: list[PseudoQuery] = []
    for start in range(0, len(pool), 4 * per_kind):
        part = pool[start : start + 4 * per_kind]
        for _, doc_id, folded, _ in store.entity_chunks([f.folded for f in part]):
            docs_of.setdefault(folded, set()).add(doc_id)
        for f in part:
            docs = docs_of.get(f.folded, set())
            name = " ".join(f.surface.split())  # a name broken over two lines of the text is searched as one
            if 1 <= len(docs) <= ENTITY_MAX_DOCUMENTS and name:
                out.append(PseudoQuery("entity", name, min(docs), frozenset(docs)))
            if len(out) == per_kind:
                return out, ""
    held = f"held by 1 to {ENTITY_MAX_DOCUMENTS} documents"
    return out, f"only {len(out)} of the collection's {len(forms):,} entity names are {held}"


def _questions(
    store: DocumentStore, passages: Mapping[str, str], questioner: Questioner
) -> tuple[list[PseudoQuery], str]:
    """A question for each passage, in its document's language; a failure skips the passage and is counted, and
    QUESTION_GIVE_UP failures in a row stop the asking (a model that is down would fail every one, slowly)."""
    languages = {d: doc.language for d, doc in store.get_documents(list(passages), text=False).items()}
    out: list[PseudoQuery] = []
    failures: list[str] = []
    in_a_row = 0
    asked = 0
    for doc_id, passage in passages.items():
        asked += 1
        answer = questioner(passage[:QUESTION_PASSAGE_CHARS], languages.get(doc_id) or None)
        question = (answer.question or "").strip()
        if question:
            out.append(PseudoQuery("question", question, doc_id))
            in_a_row = 0
            continue
        failures.append(answer.failure or "no question")
        in_a_row += 1
        if in_a_row >= QUESTION_GIVE_UP:
            break
    if not failures:
        return out, ""
    why = f"{len(failures)} of {asked} passages got no question from {questioner.model} (first: {failures[0]})"
    if asked < len(passages):
        why += f"; stopped after {QUESTION_GIVE_UP} failures in a row"
    return out, why
