"""HIPE-2022 reader: exact text on a hand-written file, and on the real data checked against an independent parse."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from tracerag.errors import RecordError
from tracerag.ingest import hipe
from tracerag.model import Document

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "hipe" / "mini.tsv"

# Counted once over HIPE-2022 v2.1 (28 files): `# hipe2022:document_id` headers per language ...
HEADER_COUNTS = {"de": 242, "en": 581, "fi": 93, "fr": 293, "sv": 84}
# ... all of which come out: 31 newseye documents state an unknown date ("NA" fr, "--" sv) and are kept undated.
DOCUMENT_COUNTS = HEADER_COUNTS
UNDATED = 31


def _sep(misc: str) -> str:
    flags = misc.split("|")
    if "EndOfLine" in flags:
        return "\n"
    return "" if "NoSpaceAfter" in flags else " "


def _parse_independently(path: Path) -> dict[str, dict]:
    """Document id -> language and token rows, by a plain line loop (not the module's code)."""
    docs: dict[str, dict] = {}
    current: dict | None = None
    with path.open(encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    header = lines[0].split("\t")
    i_tag, i_nel = header.index("NE-COARSE-LIT"), header.index("NEL-LIT")
    for line in lines[1:]:
        if "\t" in line:
            cells = line.split("\t")
            current["rows"].append((cells[0], cells[i_tag], cells[i_nel], cells[-1]))
        elif line.startswith("# hipe2022:document_id = "):
            current = {"rows": [], "language": None}
            docs[line.split(" = ", 1)[1].strip()] = current
        elif line.startswith("# hipe2022:language = "):
            current["language"] = line.split(" = ", 1)[1].strip()
    return docs


def _mentions(rows: list[tuple[str, str, str, str]]) -> list[tuple[str, str | None]]:
    """(surface with its spacing, wikidata id) of each NE-COARSE-LIT mention, rebuilt from the rows."""
    out: list[list] = []
    prev_type = None
    for token, tag, nel, misc in rows:
        kind = tag[2:] if tag[:2] in ("B-", "I-") else None
        if kind is not None and tag.startswith("I-") and prev_type == kind:
            out[-1][0] += out[-1][2] + token
            out[-1][2] = _sep(misc)
            if out[-1][1] == "_":
                out[-1][1] = nel
        elif kind is not None:
            out.append([token, nel, _sep(misc)])
        prev_type = kind
    return [(surface, nel if nel.startswith("Q") else None) for surface, nel, _ in out]


@pytest.fixture(scope="module")
def real(hipe_dir: Path) -> dict[str, list[Document | RecordError]]:
    by_file: dict[str, list[Document | RecordError]] = {}
    for f in sorted(hipe_dir.glob("*.tsv")):
        by_file[f.name] = list(hipe.read(f))
    return by_file


@pytest.fixture(scope="module")
def expected(hipe_dir: Path) -> dict[str, dict[str, dict]]:
    return {f.name: _parse_independently(f) for f in sorted(hipe_dir.glob("*.tsv"))}


def test_mini_fixture_exact_text_and_errors() -> None:
    out = list(hipe.read(FIXTURE))
    kinds = [type(r).__name__ for r in out]
    assert kinds == ["Document", "RecordWarning", "Document", "RecordError", "Document", "Document"]
    doc1, bad_date, undated_bad, empty, doc2, undated = out
    assert (undated.id, undated.date, undated.text) == ("mini-undated", None, "Sans date")

    assert doc1.id == "mini-1"
    assert doc1.text == "Le conseil\nde Genève, M. Favon.\n# ###pol=München fin"
    assert (doc1.date, doc1.language, doc1.corpus, doc1.title) == ("1887-05-17", "fr", "letemps/gdl", None)
    assert doc1.ocr_quality is None
    src = doc1.source
    assert (src["file"], src["line"], src["dataset"], src["publication"], src["split"]) == (
        "mini.tsv",
        3,
        "letemps",
        "GDL",
        "dev",
    )
    assert src["version"] == "v1.0"
    spans = [(doc1.text[e["start"] : e["end"]], e["type"], e["wikidata"]) for e in src["entities"]]
    assert spans == [("Genève", "loc", "Q71"), ("M. Favon", "pers", None), ("###pol=München", "loc", "Q1726")]

    # a malformed date costs the document its date only
    assert (bad_date.file, bad_date.line, bad_date.record) == (str(FIXTURE), 24, "mini-bad-date")
    assert "1887-13" in bad_date.reason and "kept undated" in bad_date.reason
    assert (undated_bad.id, undated_bad.date, undated_bad.text) == ("mini-bad-date", None, "Perdu .")
    assert isinstance(empty, RecordError)
    assert (empty.line, empty.record) == (30, "mini-empty")
    assert "no tokens" in empty.reason

    assert doc2.text == "POOLE\nTuesday last"
    assert (doc2.date, doc2.language) == ("1888-02", "en")
    assert doc2.corpus == "topres19th/the-poole-and-south-western-herald-etc"
    assert doc2.ocr_quality == pytest.approx(0.9115)
    assert doc2.source["publication"] == "The Poole and South-Western Herald, etc."
    assert doc2.source["place_publication"] == "Poole"
    assert doc2.source["split"] is None  # no header, and the file name does not say
    assert doc2.source["entities"] == [{"start": 0, "end": 5, "type": "LOC", "wikidata": "Q203349"}]


def test_non_utf8_byte_is_replaced_and_the_document_kept(tmp_path: Path) -> None:
    good = FIXTURE.read_bytes().split(b"\n# hipe2022:document_id = mini-bad-date")[0]
    f = tmp_path / "HIPE-x-dev-fr.tsv"
    f.write_bytes(good + b"\n# hipe2022:document_id = next\nMus\xe9e\tO\t_\t_\t_\t_\t_\t_\t_\t_\n")
    out = list(hipe.read(f))
    assert isinstance(out[0], Document) and out[0].id == "mini-1"
    assert out[0].source["split"] == "dev"
    assert [type(r).__name__ for r in out[1:]] == ["RecordWarning", "Document"]
    warning, kept = out[1:]
    assert (warning.file, warning.line, warning.record) == (str(f), 24, "next")
    assert "1 byte that is not UTF-8 replaced by U+FFFD" in warning.reason
    assert (kept.id, kept.text) == ("next", "Mus\ufffde")


def test_missing_header_row_and_missing_id(tmp_path: Path) -> None:
    no_header = tmp_path / "a.tsv"
    no_header.write_text("# hipe2022:document_id = x\nword\tO\t_\n", encoding="utf-8")
    no_id = tmp_path / "b.tsv"
    no_id.write_text(
        "TOKEN\tNE-COARSE-LIT\tMISC\nword\tO\t_\n# hipe2022:document_id = y\n# hipe2022:date = 1900\nok\tO\t_\n",
        encoding="utf-8",
    )
    out = list(hipe.read(tmp_path))
    assert isinstance(out[0], RecordError) and out[0].file == str(no_header)
    assert isinstance(out[1], RecordError) and "document_id" in out[1].reason and out[1].line == 2
    assert isinstance(out[2], Document) and (out[2].id, out[2].text, out[2].corpus) == ("y", "ok", "hipe2022")
    assert len(out) == 3


def test_real_text_matches_tokens_and_flags(real: dict, expected: dict) -> None:
    checked = files = 0
    for name, records in real.items():
        docs = [r for r in records if isinstance(r, Document)]
        assert docs, name
        files += 1
        for doc in docs:
            rows = expected[name][doc.id]["rows"]
            tokens = [r[0] for r in rows]
            assert re.sub(r"\s", "", doc.text) == re.sub(r"\s", "", "".join(tokens)), doc.id
            pos = 0
            for i, (token, _, _, misc) in enumerate(rows):
                assert doc.text[pos : pos + len(token)] == token, (doc.id, i)
                pos += len(token)
                if i < len(rows) - 1:
                    sep = _sep(misc)
                    assert doc.text[pos : pos + len(sep)] == sep, (doc.id, i)
                    pos += len(sep)
            assert pos == len(doc.text), doc.id
            checked += 1
    assert files == 28 and checked == sum(DOCUMENT_COUNTS.values())


def test_real_counts_per_language(hipe_dir: Path, real: dict) -> None:
    header_counts: Counter[str] = Counter()
    language_of: dict[str, str] = {}
    for f in sorted(hipe_dir.glob("*.tsv")):
        doc_id = None
        with f.open(encoding="utf-8") as fh:
            for line in fh:
                if "\t" in line:
                    continue
                if line.startswith("# hipe2022:document_id = "):
                    doc_id = line.split(" = ", 1)[1].strip()
                elif line.startswith("# hipe2022:language = ") and doc_id is not None:
                    header_counts[line.split(" = ", 1)[1].strip()] += 1
                    language_of[doc_id] = line.split(" = ", 1)[1].strip()
                    doc_id = None
    assert dict(header_counts) == HEADER_COUNTS

    docs: Counter[str] = Counter()
    undated = 0
    for records in real.values():
        for r in records:
            assert isinstance(r, Document), r
            docs[r.language] += 1
            undated += r.date is None
    assert dict(docs) == DOCUMENT_COUNTS
    assert undated == UNDATED


def test_real_corpora(real: dict) -> None:
    corpora = {r.corpus for records in real.values() for r in records if isinstance(r, Document)}
    assert {
        "letemps/gdl",
        "letemps/jdg",
        "hipe2020/nzz",
        "newseye/fraktur",
        "sonar/vossischezeitung",
        "topres19th/dorset-county-chronicle-etc",
    } <= corpora
    assert len(corpora) == 51  # newseye/marie-claire only has undated documents
    assert all(re.fullmatch(r"[a-z0-9_-]+/[a-z0-9_-]+", c) for c in corpora)


def test_real_entity_spans(real: dict, expected: dict) -> None:
    linked: dict[str, set[str]] = {}
    n = 0
    for name, records in real.items():
        for doc in records:
            if not isinstance(doc, Document):
                continue
            got = [(doc.text[e["start"] : e["end"]], e["wikidata"]) for e in doc.source["entities"]]
            assert got == _mentions(expected[name][doc.id]["rows"]), doc.id
            for surface, qid in got:
                if qid:
                    linked.setdefault(qid, set()).add(surface)
            n += len(got)
    assert n > 30_000
    assert "Munich" in linked["Q1726"]  # EXP-1888-08-03-a-i0030: "au grand cortège dc Munich."
