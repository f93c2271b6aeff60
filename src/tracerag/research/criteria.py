"""The researcher's criteria: what counts, what does not, and a 0-10 scale with anchors, read from TOML or text.

A criteria file is the researcher's, so its errors name the file, the line and the key (TOML syntax errors come
with tomllib's line and column). Plain text is taken whole as what counts, under the default anchors. A criteria's
`digest` keys the judge's cache: the same criteria, chunk text and model give the same judgment.

```toml
question = "Strikes in the textile industry"   # optional: what the candidates are judged for
counts = ["a strike, lockout or walk-out in a textile mill", "the strikers' demands"]
excludes = ["strikes in other industries", "advertisements"]
[scale]                                          # optional: anchors on the 0-10 scale
0 = "nothing to do with it"
5 = "mentions a textile strike in passing"
10 = "a first-hand report of a textile strike"
```
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracerag.errors import ConfigError

SCALE = range(0, 11)
DEFAULT_ANCHORS: dict[int, str] = {
    0: "has no bearing on what counts",
    5: "bears on it in part or in passing",
    10: "is exactly what counts, stated in the text",
}
KEYS = ("question", "counts", "excludes", "scale")


@dataclass(frozen=True)
class Criteria:
    """What a candidate is judged against. `source` says where it was read (for messages and the trail)."""

    counts: tuple[str, ...]
    excludes: tuple[str, ...] = ()
    anchors: Mapping[int, str] = field(default_factory=lambda: dict(DEFAULT_ANCHORS))
    question: str = ""
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "counts": list(self.counts),
            "excludes": list(self.excludes),
            "scale": {str(k): v for k, v in sorted(self.anchors.items())},
        }

    @property
    def digest(self) -> str:
        """A hash of what the judge is told (not of where it was read): the cache's criteria key."""
        canonical = json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def load_criteria(path: Path) -> Criteria:
    """Criteria from a `.toml` file, or from any other file as plain text (what counts)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the criteria ({exc.strerror})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: criteria are not UTF-8 (byte {exc.start})") from None
    if path.suffix.lower() == ".toml":
        return parse_toml(text, str(path))
    return from_text(text, str(path))


def from_text(text: str, source: str = "text") -> Criteria:
    """Plain-text criteria: the whole text is what counts, judged on the default anchors."""
    stripped = text.strip()
    if not stripped:
        raise ConfigError(f"{source}: the criteria are empty")
    return Criteria(counts=(stripped,), source=source)


def parse_toml(text: str, source: str) -> Criteria:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:  # "Invalid value (at line 2, column 9)": the line goes up front
        line = re.search(r"at line (\d+)", str(exc))
        raise ConfigError(f"{source}{':' + line.group(1) if line else ''}: not valid TOML ({exc})") from None
    for key in data:
        if key not in KEYS:
            raise ConfigError(f"{_where(text, source, key)}: unknown key {key!r}; expected one of {', '.join(KEYS)}")
    counts = _strings(data.get("counts", []), text, source, "counts")
    if not counts:
        raise ConfigError(f"{_where(text, source, 'counts')}: 'counts' must list at least one thing that counts")
    excludes = _strings(data.get("excludes", []), text, source, "excludes")
    question = data.get("question", "")
    if not isinstance(question, str):
        raise ConfigError(f"{_where(text, source, 'question')}: 'question' must be a string")
    anchors = _anchors(data.get("scale", {}), text, source)
    return Criteria(tuple(counts), tuple(excludes), anchors or dict(DEFAULT_ANCHORS), question.strip(), source)


def _strings(value: Any, text: str, source: str, key: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{_where(text, source, key)}: {key!r} must be a string or a list of strings")
    return [v.strip() for v in value if v.strip()]


def _anchors(value: Any, text: str, source: str) -> dict[int, str]:
    if not isinstance(value, dict):
        raise ConfigError(f"{_where(text, source, 'scale')}: 'scale' must be a table of score = \"anchor\"")
    anchors = {}
    for key, anchor in value.items():
        if not (key.isdigit() and int(key) in SCALE):
            raise ConfigError(f"{_where(text, source, key)}: scale.{key}: a score is a whole number from 0 to 10")
        if not isinstance(anchor, str) or not anchor.strip():
            raise ConfigError(f"{_where(text, source, key)}: scale.{key}: the anchor must be a non-empty string")
        anchors[int(key)] = anchor.strip()
    return anchors


def _where(text: str, source: str, key: str) -> str:
    """`file:line` of the line that sets `key` (bare or quoted, as a key or a table), else the file alone."""
    pattern = re.compile(rf"^\s*(\[\s*)?[\"']?{re.escape(key)}[\"']?\s*(=|\])", re.M)
    found = pattern.search(text)
    return f"{source}:{text.count(chr(10), 0, found.start()) + 1}" if found else source
