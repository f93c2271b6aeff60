"""How a Qdrant text index analyses words, for the cluster engine (`engine/qdrant_server.py`): Qdrant's own analyser,
from `qdrant-edge-py` (the Qdrant engine in-process, pinned; the `qdrant` extra), with the settings the server's text
indexes are made with (Word tokenizer, lowercase, ASCII folding, the language's Snowball stemmer, no stopwords).

The server scores a query as a set of words and does not say how it cut them, so the engine cuts them the same way
here: to count a word the query repeats (`engine/lexical.py`), to give each query term's statistics
(`field_stats`), and to give qdrant-client's local mode, which cannot fold or stem, text already analysed.
"""

from __future__ import annotations

import functools

import regex
from qdrant_edge import Bm25, Bm25Config, DisabledStemmer, SnowballLanguage, SnowballParams, StopwordsSet, TokenizerType

from tracerag.engine.points import STEMMERS

# language code -> its text index's Snowball stemmer (None: "xx", every other language, is folded, not stemmed)
LANGUAGES: dict[str, SnowballLanguage | None] = {
    code: getattr(SnowballLanguage, name.capitalize()) if name else None for code, name in STEMMERS.items()
}


@functools.cache
def _analyzer(language: str) -> Bm25:
    """Qdrant's own analyzer with the settings of the server's text index of `language`: its sparse vector's
    indices are the hashes of the tokens that index stores, so two words count as one term exactly when the index
    makes one token of them (folding, stemming and all; tests/engine/test_query_tf.py checks it on words)."""
    stemmer = LANGUAGES[language]
    return Bm25(
        Bm25Config(
            tokenizer=TokenizerType.Word,
            lowercase=True,
            ascii_folding=True,
            stopwords=StopwordsSet(),
            stemmer=SnowballParams(stemmer) if stemmer is not None else DisabledStemmer(),
        )
    )


# The pieces the Word tokenizer cuts text into: runs of what Rust's `char::is_alphanumeric` keeps (Unicode
# Alphabetic or Numeric). Not Python's `[^\W_]`: it splits the combining letters of OCR'd German ("Voͤrse", U+0364),
# which Qdrant keeps in the word; a chunk of such words had another length here, and another BM25 score.
_WORD_PIECE = regex.compile(r"[\p{Alphabetic}\p{N}]+")


def query_terms(text: str, language: str) -> list[tuple[str, int]]:
    """The terms of a query as the text index of `language` analyses them, in order of first occurrence: each
    term's first surface word and how many times the query holds it ("Strikes strike" is one English term,
    twice). A word the analyzer drops is left out."""
    analyzer = _analyzer(language)
    counts: dict[tuple[int, ...], list] = {}
    for word in _WORD_PIECE.findall(text):
        token = tuple(analyzer.embed_query(word).indices)
        if token:
            counts.setdefault(token, [word, 0])[1] += 1
    return [(word, n) for word, n in counts.values()]


def token_ids(text: str, language: str) -> list[int]:
    """The tokens the text index of `language` makes of `text`, in order, each as the analyzer's id of it (a hash
    of the token): two words are one token exactly when the index makes one token of them. What a client that
    cannot analyse like the index (qdrant-client's local mode, `engine/qdrant_server.py`) indexes instead."""
    analyzer = _analyzer(language)
    return [i for word in _WORD_PIECE.findall(text) for i in analyzer.embed_query(word).indices]
