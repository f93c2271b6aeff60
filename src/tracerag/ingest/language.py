"""The language of a document that does not state one, detected from its own text at ingest, so that it is
indexed with its language's stemmer instead of the unstemmed `text_xx` field (users rarely label languages).

The detector is py3langid (langid.py's model, 97 languages, shipped in its 4.6 MB wheel; deterministic). Measured
on the 1,293 labelled HIPE-2022 documents (OCR'd newspapers in fr, de, en, fi, sv), whole texts: it names 1,292
right (0.9992; a French page taken for Luxembourgish) at ~290 documents/s after 1.3 s to load; lingua 2.1 names
1,291 (0.9985) at ~31 documents/s from a 96 MB wheel that takes 40 s to load all its languages. As used here (the
sample and the threshold below) it names 1,292 right, none wrong, and leaves one undetected.

A label in the data always wins: only a document without a language is detected, and it is marked
`fields["language_source"] = "detected"` (filterable, shown by `tracerag info`).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence
from typing import Any

from tracerag.errors import ConfigError

LANGUAGE_SOURCE = "language_source"  # the `Document.fields` key saying where a document's language came from
DETECTED = "detected"  # its value when the language was detected, not read from the data

# Below this probability (py3langid's, normalised over the candidates) a document stays undetected, as before
# detection existed: a wrong stemmer costs more than none. On the 1,293 HIPE documents it leaves one undetected (a
# 39-character brief) and none wrong; on random 40-character spans of them it keeps 0.93, right for 0.988 of
# those (0.944 without a threshold), on 160-character spans 0.990, right for 0.995.
MIN_CONFIDENCE = 0.2
# A document is judged on up to this many evenly spaced windows of its text: a 200 MB text is not read whole,
# and a page whose first lines are in another language is judged by the rest.
_WINDOWS = 4
_WINDOW_CHARS = 1_000


@functools.cache
def _model() -> Any:  # py3langid's LanguageIdentifier (untyped): loaded once per process (1.3 s)
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def known_languages() -> tuple[str, ...]:
    """The language codes the detector can name (ISO 639-1 where one exists)."""
    return tuple(sorted(_model().nb_classes))


def sample(text: str) -> str:
    """What the detector reads of `text`: all of it when short, else `_WINDOWS` windows spread over it."""
    if len(text) <= _WINDOWS * _WINDOW_CHARS:
        return text
    step = (len(text) - _WINDOW_CHARS) // (_WINDOWS - 1)
    return "\n".join(text[i * step : i * step + _WINDOW_CHARS] for i in range(_WINDOWS))


class LanguageDetector:
    """`detect(text)` → a language code, or None when the text does not say clearly enough.

    `candidates` restricts the choice (e.g. ("fr", "de", "en") for a collection known to hold only those); empty,
    every language the model knows. An unknown code is a ConfigError naming the setting.
    """

    def __init__(self, candidates: Sequence[str] = ()):
        model = _model()
        unknown = sorted(set(candidates) - set(model.nb_classes))
        if unknown:
            raise ConfigError(
                f"ingest.languages: {', '.join(unknown)} not known to the language detector; expected codes among "
                f"{', '.join(known_languages())}"
            )
        self.candidates = tuple(candidates)
        self._model = model
        if len(set(candidates)) == 1:
            self._only: str | None = candidates[0]
        else:
            self._only = None
            if candidates:
                self._model = copy.copy(model)  # set_languages replaces its arrays: the shared model stays whole
                self._model.set_languages(sorted(set(candidates)))

    def detect(self, text: str) -> str | None:
        part = sample(text)
        if not any(c.isalpha() for c in part):
            return None
        if self._only is not None:
            return self._only
        language, confidence = self._model.classify(part)
        return str(language) if confidence >= MIN_CONFIDENCE else None
