"""The trial's collection: the HIPE-OCRepair 2026 impresso snippets (en, de, fr newspapers, 1801-1959) and the
ICDAR 2017 pages (en, fr, undated), read in place from $TRACERAG_DATASETS/hipe-ocrepair2026 and written as one
JSON Lines file for `tracerag ingest` (the OCR text, not the gold transcription: what a collection holds).

    python benchmarks/mcp_trial/make_collection.py /tmp/mcptrial/ocr.jsonl
    tracerag ingest /tmp/mcptrial/ocr.jsonl -c /tmp/mcptrial/ocr

The demo collection is built from HIPE-2022, so this one is data the tools were not developed on."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

FILES = ("impresso-snippets_v1.0_test_en", "impresso-snippets_v1.0_test_de", "impresso-snippets_v1.0_test_fr",
         "icdar2017_v1.1_test_en", "icdar2017_v1.1_test_fr")  # fmt: skip


def records(root: Path):
    for name in FILES:
        path = root / "hipe-ocrepair2026" / f"hipe-ocrepair-bench_v0.9_{name}.jsonl"
        for line in path.open(encoding="utf-8"):
            rec = json.loads(line)
            meta = rec["document_metadata"]
            date = meta.get("date")
            yield {
                "id": meta["document_id"],
                "text": rec["ocr_hypothesis"]["transcription_unit"],
                "corpus": f"{meta['primary_dataset_name']}-{meta['language']}",
                "language": meta["language"],
                "date": date if date and date != "n/a" else None,
                "title": meta.get("publication_title") if meta.get("publication_title") not in (None, "n/a") else None,
                "source": {"dataset": meta["primary_dataset_name"], "file": meta.get("primary_dataset_filename", "")},
            }


def main() -> None:
    out = Path(sys.argv[1])
    out.parent.mkdir(parents=True, exist_ok=True)
    root = Path(os.environ.get("TRACERAG_DATASETS", "/work/shared/datasets"))
    with out.open("w", encoding="utf-8") as f:
        n = 0
        for rec in records(root):
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
            n += 1
    print(f"{n} records -> {out}")


if __name__ == "__main__":
    main()
