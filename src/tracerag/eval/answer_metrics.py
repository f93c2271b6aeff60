"""The figures of graded answers (eval/answers.py) that need no model: gold-answer matching, means with bootstrap
confidence intervals, abstention precision and recall, and two runs compared question by question.

- Exact match and token F1 follow SQuAD's official script: lower-cased, punctuation and the language's articles
  dropped (`articles.toml`; SQuAD drops English ones, and punctuation becomes a space here, so that an elided
  article such as French "l'" goes too), whitespace collapsed; the best over the gold answers counts.
- A mean's 95% interval is the percentile bootstrap over questions (seeded: a report is reproducible).
- Abstention: the questions that should be abstained on are the positives; precision is the share of the
  abstentions that were right, recall the share of those questions that got one.
- A comparison pairs the questions both runs scored and tests the mean difference with the retrieval eval's
  paired tests (`metrics.paired_pvalue`).
"""

from __future__ import annotations

import math
import tomllib
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np

from tracerag.eval.metrics import paired_pvalue

CONFIDENCE = 0.95
RESAMPLES = 2000  # bootstrap resamples of a confidence interval


@cache
def _articles() -> dict[str, frozenset[str]]:
    text = (resources.files("tracerag.eval") / "articles.toml").read_text(encoding="utf-8")
    return {lang: frozenset(words) for lang, words in tomllib.loads(text).items()}


def normalise_answer(text: str, language: str = "en") -> list[str]:
    """The answer's tokens as SQuAD compares them (see the module doc); `language` picks the articles dropped."""
    text = "".join(" " if unicodedata.category(c).startswith("P") else c for c in text.lower())
    articles = _articles().get(language.lower()[:2], frozenset())
    return [w for w in text.split() if w not in articles]


def exact_match(prediction: str, golds: Sequence[str], language: str = "en") -> float:
    """1.0 when the normalised prediction equals one of the normalised gold answers."""
    mine = normalise_answer(prediction, language)
    return float(any(mine == normalise_answer(g, language) for g in golds))


def token_f1(prediction: str, golds: Sequence[str], language: str = "en") -> float:
    """The best F1 of the prediction's tokens against one gold answer's (SQuAD's `f1_score`, best over golds)."""
    mine = normalise_answer(prediction, language)
    best = 0.0
    for gold in golds:
        theirs = normalise_answer(gold, language)
        common = sum((Counter(mine) & Counter(theirs)).values())
        if not mine or not theirs:
            best = max(best, float(mine == theirs))
        elif common:
            precision, recall = common / len(mine), common / len(theirs)
            best = max(best, 2 * precision * recall / (precision + recall))
    return best


def contains_answer(prediction: str, golds: Sequence[str], language: str = "en") -> float:
    """1.0 when a normalised gold answer appears, as a run of whole tokens, in the normalised prediction: a
    sentence-long draft rarely matches a short gold span exactly, yet holds it."""
    mine = f" {' '.join(normalise_answer(prediction, language))} "
    return float(any((g := " ".join(normalise_answer(gold, language))) and f" {g} " in mine for gold in golds))


@dataclass(frozen=True)
class Mean:
    """A mean over `n` questions with its bootstrap interval (`low`, `high`); None where no question scored."""

    mean: float | None
    low: float | None
    high: float | None
    n: int

    def as_dict(self) -> dict[str, float | int | None]:
        return {"mean": self.mean, "low": self.low, "high": self.high, "n": self.n}


def mean_ci(values: Sequence[float], *, seed: int = 0, resamples: int = RESAMPLES) -> Mean:
    """The mean of `values` and its percentile-bootstrap 95% interval."""
    if not values:
        return Mean(None, None, None, 0)
    data = np.asarray(values, dtype=float)
    mean = math.fsum(values) / len(values)
    means = data[np.random.default_rng(seed).integers(0, len(data), size=(resamples, len(data)))].mean(axis=1)
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    # the percentile interval of a constant sample is that constant; rounding must not put the mean outside it
    return Mean(mean, min(float(low), mean), max(float(high), mean), len(values))


@dataclass(frozen=True)
class Abstention:
    rate: float | None  # abstentions / questions
    precision: float | None  # right abstentions / abstentions (None: it never abstained)
    recall: float | None  # right abstentions / questions to abstain on (None: the set has none)
    abstained: int
    expected: int
    questions: int

    def as_dict(self) -> dict[str, float | int | None]:
        return dict(vars(self))


def abstention(pairs: Sequence[tuple[bool, bool]]) -> Abstention:
    """From (abstained, should_abstain) per question."""
    abstained = sum(a for a, _ in pairs)
    expected = sum(s for _, s in pairs)
    right = sum(a and s for a, s in pairs)
    return Abstention(
        abstained / len(pairs) if pairs else None,
        right / abstained if abstained else None,
        right / expected if expected else None,
        abstained,
        expected,
        len(pairs),
    )


MIN_PAIRED = 5  # questions both runs scored, fewer and no p-value is given


@dataclass(frozen=True)
class Comparison:
    """Run B against run A on one metric, over the questions both scored."""

    metric: str
    a: float
    b: float
    n: int
    p: float | None  # None: too few questions to test

    @property
    def better(self) -> str | None:
        """Which run has the higher mean ("a" or "b"), None when they are equal; the p-value says if it counts."""
        return None if math.isclose(self.a, self.b, abs_tol=1e-12) else ("b" if self.b > self.a else "a")

    def as_dict(self) -> dict[str, object]:
        return {**vars(self), "better": self.better}


def compare_runs(
    rows_a: Mapping[str, Mapping[str, float | None]],
    rows_b: Mapping[str, Mapping[str, float | None]],
    metrics: Sequence[str],
    *,
    test: str = "bootstrap",
    seed: int = 0,
) -> list[Comparison]:
    """Per metric, the questions (by id) that both runs scored on it, their means and the paired test's p-value
    (None under `MIN_PAIRED` questions: a bootstrap of one difference says p = 0); a metric no question has in both
    runs is left out."""
    out = []
    for metric in metrics:
        ids = [q for q in rows_a if q in rows_b and rows_a[q].get(metric) is not None]
        ids = [q for q in ids if rows_b[q].get(metric) is not None]
        if not ids:
            continue
        a = np.array([float(rows_a[q][metric]) for q in ids])  # type: ignore[arg-type]
        b = np.array([float(rows_b[q][metric]) for q in ids])  # type: ignore[arg-type]
        p = paired_pvalue(a, b, test, seed=seed) if len(ids) >= MIN_PAIRED else None  # type: ignore[arg-type]
        out.append(Comparison(metric, float(a.mean()), float(b.mean()), len(ids), p))
    return out
