"""Each document's OCR-quality estimate and the OCR repairs its index text received (ingest/ocr_quality.py,
ingest/ocr_fixes.py), per document and per sub-corpus.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from tracerag.ingest.ocr_quality import OcrQuality
from tracerag.store.sqlite import StoreBase, batches


class OcrTables(StoreBase):
    """The `ocr_estimates` table."""

    def put_ocr_estimates(self, items: Sequence[tuple[str, OcrQuality, dict[str, int]]]) -> None:
        """(doc id, estimate, repairs by kind) for documents already stored; replaces what they had."""
        rows = [
            (
                i,
                q.score,
                q.lexicon_share,
                q.garbage_rate,
                q.words,
                q.tokens,
                q.language,
                q.lexicon,
                q.note,
                json.dumps(dict(sorted(fixes.items()))),
            )
            for i, q, fixes in items
        ]
        with self._transaction():
            self._db.executemany("INSERT OR REPLACE INTO ocr_estimates VALUES (?,?,?,?,?,?,?,?,?,?)", rows)

    def _has_ocr_table(self) -> bool:
        """Whether the store has `ocr_estimates` (a store made before it, opened read-only, has not)."""
        return self._db.execute("SELECT 1 FROM sqlite_master WHERE name = 'ocr_estimates'").fetchone() is not None

    def ids_without_ocr_estimate(self) -> list[str]:
        if not self._has_ocr_table():
            return []
        return [
            r[0]
            for r in self._db.execute(
                "SELECT id FROM documents WHERE id NOT IN (SELECT doc_id FROM ocr_estimates) ORDER BY id"
            )
        ]

    def ocr_estimates(self, doc_ids: Sequence[str]) -> dict[str, dict]:
        """doc id -> the estimate's fields (score, lexicon_share, garbage_rate, words, tokens, language, lexicon,
        note) and `fixes`; documents without an estimate are absent."""
        out: dict[str, dict] = {}
        if not self._has_ocr_table():
            return out
        for part in batches(list(doc_ids), 500):
            marks = ",".join("?" * len(part))
            cursor = self._db.execute(f"SELECT * FROM ocr_estimates WHERE doc_id IN ({marks})", part)
            names = [c[0] for c in cursor.description]
            for row in cursor:
                record = dict(zip(names, row, strict=True))
                record["fixes"] = json.loads(record["fixes"])
                out[record.pop("doc_id")] = record
        return out

    def ids_with_ocr_at_least(self, minimum: float) -> list[str]:
        """The documents whose estimated OCR quality is at least `minimum`, exactly (no estimate: not among them)."""
        if not self._has_ocr_table():
            return []
        return [
            r[0]
            for r in self._db.execute("SELECT doc_id FROM ocr_estimates WHERE score >= ? ORDER BY doc_id", (minimum,))
        ]

    def ocr_by_corpus(self) -> dict[str, dict] | None:
        """Per sub-corpus: the estimates' scores (sorted), how many documents have an estimate without a score
        (`unscored`: no lexicon, no language, too few words) or none yet (`unestimated`: ingested before estimates
        were made, until the next ingest), and the repairs made, by kind. None: a store made before estimates
        existed, opened read-only (it has no table for them)."""
        out: dict[str, dict] = {}
        if not self._has_ocr_table():
            return None
        for corpus, estimated, score, fixes in self._db.execute(
            "SELECT d.corpus, e.doc_id, e.score, e.fixes FROM documents d LEFT JOIN ocr_estimates e ON e.doc_id = d.id"
        ):
            entry = out.setdefault(corpus, {"scores": [], "unscored": 0, "unestimated": 0, "fixes": {}})
            if estimated is None:
                entry["unestimated"] += 1
            elif score is None:
                entry["unscored"] += 1
            else:
                entry["scores"].append(score)
            for kind, n in json.loads(fixes or "{}").items():
                entry["fixes"][kind] = entry["fixes"].get(kind, 0) + n
        for entry in out.values():
            entry["scores"].sort()
        return out
