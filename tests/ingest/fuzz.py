"""A seeded generator of malformed reader input in every format, mixed with good files whose records are known.

`make_corpus(root, seed)` writes one folder per format (`jsonl/`, `csv/`, `txt/`, `alto/`, `hipe/`) and returns a
`Corpus` saying what the readers must make of it:

- `expected[fmt]`: every record that must come out as a `Document`, by id, with its exact text (records kept with
  a repair, such as a replaced byte or a dropped date, are here with the text they must have);
- `faults[fmt]`: every fault put in, as (file, line or None): each must be reported, as a `RecordError` or a
  `RecordWarning`, at that file (and line, where the format has lines);
- `malformed`: how many files hold at least one fault.

The faults are those of real collections and of hostile ones: truncated files, binary garbage, mixed and wrong
encodings, wrong CSV widths and TSV headers, unclosed quotes, deeply nested JSON and XML, entity bombs, huge
fields, NUL and other control bytes, empty files, byte-order marks, CR-only and CRLF line ends. Deterministic for a
seed: the same files, byte for byte.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import quoteattr

# Words that every encoding used here can hold (cp1252 included), and more that only UTF-8 can.
LATIN = [
    "conseil",
    "Genève",
    "délibéré",
    "été",
    "fédéral",
    "séance",
    "député",
    "hôtel",
    "élève",
    "théâtre",
    "naïve",
    "cœur",
    "œuvre",
    "Zürich",
    "Straße",
    "Grüße",
    "müssen",
    "Gemeinde",
    "Bürger",
    "Versammlung",
    "année",
    "intérêt",
    "publique",
    "ministère",
    "français",
    "à",
    "où",
    "çà",
    "señor",
    "niño",
    "Ærø",
]
PLAIN = [
    "the",
    "council",
    "met",
    "on",
    "Tuesday",
    "last",
    "and",
    "the",
    "motion",
    "was",
    "carried",
    "by",
    "a",
    "large",
    "majority",
]
WIDE = ["Ελλάδα", "Москва", "東京", "한국", "ﬁnance", "😀", "½", "Ǆ", "Łódź"]
HYPHENS = ("-", "¬")
DATES = ("1887", "1887-05", "1887-05-17", "1888-1", "1901-12-31", "18xx", "189x", "1887-XX")
BAD_DATES = ("1887-13", "1887-02-30", "18x7", "spring 1881", "1887-13-45")
CP1252 = "cp1252"


@dataclass
class Corpus:
    root: Path
    expected: dict[str, dict[str, str]] = field(default_factory=dict)
    origin: dict[str, Path] = field(default_factory=dict)  # the file each expected record is in
    faults: dict[str, list[tuple[Path, int | None]]] = field(default_factory=dict)
    malformed: int = 0
    files: int = 0


class _Gen:
    def __init__(self, root: Path, seed: int):
        self.rng = random.Random(seed)
        self.corpus = Corpus(root)
        self.n = 0
        self.current = root  # the file being made

    # -- helpers ----------------------------------------------------------------------------------------------

    def uid(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}-{self.n:05d}"

    def words(self, k: int, *, latin_only: bool = False) -> list[str]:
        pool = LATIN + PLAIN if latin_only else LATIN + PLAIN + WIDE
        out = [self.rng.choice(pool) for _ in range(k)]
        out[0] = self.rng.choice(LATIN[:12])  # at least one accented word: a UTF-8 file then says so
        return out

    def text(self, *, latin_only: bool = False, lines: bool = True) -> str:
        parts = []
        for _ in range(self.rng.randint(1, 4)):
            parts.append(" ".join(self.words(self.rng.randint(3, 12), latin_only=latin_only)))
        sep = self.rng.choice(["\n", " ", ". "]) if lines else " "
        return sep.join(parts) + "."

    def garbage(self, k: int) -> bytes:
        return bytes(self.rng.randrange(256) for _ in range(k))

    def expect(self, fmt: str, doc_id: str, text: str) -> None:
        assert doc_id not in self.corpus.expected.setdefault(fmt, {}), doc_id
        self.corpus.expected[fmt][doc_id] = text
        self.corpus.origin[doc_id] = self.current

    def fault(self, fmt: str, path: Path, line: int | None = None) -> None:
        self.corpus.faults.setdefault(fmt, []).append((path, line))

    def write(self, path: Path, data: bytes, *, malformed: bool) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        self.corpus.files += 1
        self.corpus.malformed += malformed

    def line_ends(self, text: str, style: str) -> str:
        return text.replace("\n", {"lf": "\n", "crlf": "\r\n", "cr": "\r"}[style])

    # -- JSONL ----------------------------------------------------------------------------------------------------

    def jsonl_file(self, folder: Path, faults: int) -> None:
        path = self.current = folder / f"{self.uid('j')}.jsonl"
        style = self.rng.choice(["lf", "lf", "crlf", "cr"])
        bom = self.rng.random() < 0.15
        lines: list[bytes] = []
        kinds = [self.rng.choice(_JSONL_FAULTS) for _ in range(faults)]
        slots = sorted(self.rng.sample(range(faults + self.rng.randint(1, 5)), faults))
        kind_at = dict(zip(slots, kinds, strict=True))
        total = max(slots, default=-1) + 1 + self.rng.randint(0, 2)
        truncate = False
        for i in range(total):
            n = len(lines) + 1
            kind = kind_at.get(i)
            if kind == "truncated":
                truncate = True
                continue  # the last line, below
            lines.append(self.jsonl_line(path, n, kind))
        if truncate:
            n = len(lines) + 1
            doc_id = self.uid("jt")
            full = json.dumps({"id": doc_id, "text": self.text(lines=False)}, ensure_ascii=False).encode("utf-8")
            lines.append(full[: self.rng.randint(1, len(full) - 2)])
            self.fault("jsonl", path, n)
        body = self.line_ends("\n", style).encode("ascii").join(lines)
        if not truncate:
            body += self.line_ends("\n", style).encode("ascii")
        self.write(path, (codecs.BOM_UTF8 if bom else b"") + body, malformed=faults > 0)

    def jsonl_line(self, path: Path, n: int, kind: str | None) -> bytes:
        rng = self.rng
        doc_id = self.uid("jd")
        text = self.text(lines=rng.random() < 0.3)  # JSON escapes the line breaks
        record: dict = {"id": doc_id, "text": text}
        if rng.random() < 0.5:
            record["date"] = rng.choice(DATES)
        if rng.random() < 0.3:
            record["title"] = " ".join(self.words(3))
        if rng.random() < 0.3:
            record["source"] = {"page": rng.randint(1, 9), "publication": " ".join(self.words(2))}
        if rng.random() < 0.2:
            record["ocr_quality"] = round(rng.random(), 3)
        ascii_only = rng.random() < 0.3

        def dump(obj: object) -> bytes:
            return json.dumps(obj, ensure_ascii=ascii_only).encode("utf-8")

        if kind is None:
            self.expect("jsonl", doc_id, text)
            return dump(record)
        self.fault("jsonl", path, n)
        if kind == "garbage":
            junk = bytes(b for b in self.garbage(rng.randint(5, 200)) if b not in b"\r\n")
            return junk + b"x"  # never blank
        if kind == "not_object":
            return rng.choice([b"[1, 2, 3]", b'"a string"', b"42", b"null", b"true"])
        if kind == "no_id":
            del record["id"]
            return dump(record)
        if kind == "no_text":
            del record["text"]
            return dump(record)
        if kind == "empty_text":
            return dump({**record, "text": "  \n "})
        if kind == "bad_id":
            return dump({**record, "id": rng.choice([True, 1.5, None, [], ""])})
        if kind == "bad_value":
            key, value = rng.choice([("ocr_quality", 1.5), ("source", "Le Temps"), ("title", 12), ("fields", [1])])
            return dump({**record, key: value})
        if kind == "deep":
            depth = rng.choice([5_000, 100_000])
            return dump(record)[:-1] + b', "source": {"x": ' + b"[" * depth + b"]" * depth + b"}}"
        if kind == "raw_nul":
            return dump(record).replace(b'"text": "', b'"text": "\x00', 1)
        if kind == "bad_date":
            self.expect("jsonl", doc_id, text)
            return dump({**record, "date": rng.choice(BAD_DATES)})
        if kind == "bad_byte":  # a Latin-1 byte inside a UTF-8 record
            cut = rng.randint(0, len(text))
            self.expect("jsonl", doc_id, text[:cut] + "\ufffd" + text[cut:])
            return dump({**record, "text": text[:cut] + "@BAD@" + text[cut:]}).replace(b"@BAD@", b"\xe9")
        if kind == "surrogate":  # an escape that makes a lone surrogate
            self.expect("jsonl", doc_id, text + " \ufffd")
            return dump({**record, "text": text + " @SURROGATE@"}).replace(b"@SURROGATE@", b"\\udce9")
        if kind == "huge":
            big = (text + " ") * (2_000_000 // (len(text) + 1))
            self.expect("jsonl", doc_id, big)
            self.corpus.faults["jsonl"].pop()  # a huge record is not a fault: it must simply come out whole
            return dump({**record, "text": big})
        if kind == "escaped_nul":
            self.expect("jsonl", doc_id, "\x00" + text)
            self.corpus.faults["jsonl"].pop()  # \\u0000 is valid JSON: kept as it is
            return dump({**record, "text": "\x00" + text})
        raise AssertionError(kind)

    # -- CSV --------------------------------------------------------------------------------------------------

    def csv_file(self, folder: Path, faults: int) -> None:
        path = self.current = folder / f"{self.uid('c')}.csv"
        rng = self.rng
        encoding = rng.choice(["utf-8"] * 6 + [CP1252, "utf-16"])
        style = rng.choice(["lf", "lf", "crlf", "cr"])
        whole = rng.choice(["", "", "", "empty", "header_only", "no_text_column", "garbage"]) if faults else ""
        if whole == "empty":
            self.write(path, b"", malformed=True)
            self.fault("csv", path)
            return
        if whole == "garbage":
            self.write(path, self.garbage(rng.randint(10, 3000)), malformed=True)
            self.fault("csv", path)
            return
        header = ["id", "text", "date", "genre"]
        if whole == "no_text_column":
            header = ["id", "body", "date", "genre"]
        out = io.StringIO()
        end = {"lf": "\n", "crlf": "\r\n", "cr": "\r"}[style]  # rows and the line breaks inside fields alike
        out.write(",".join(header) + end)
        line = 2
        rows = rng.randint(2, 8)
        kinds = {i: rng.choice(_CSV_FAULTS) for i in rng.sample(range(rows), min(faults, rows))}
        if whole:
            kinds = {}
        bad_bytes: list[int] = []  # offsets in the encoded file where "\x07" stands for a byte that is not UTF-8
        for i in range(rows):
            kind = kinds.get(i)
            if kind == "truncated" and i != rows - 1:
                kind = None
            doc_id = self.uid("cd")
            text = self.line_ends(self.text(latin_only=encoding == CP1252), style)
            date = rng.choice(DATES)
            row = [doc_id, text, date, rng.choice(["letter", "report", ""])]
            if kind is None and whole != "no_text_column":
                self.expect("csv", doc_id, text)
            elif kind is not None:
                self.fault("csv", path, line)
                if kind == "width":
                    row = row + ["extra"] if rng.random() < 0.5 else row[:2]
                elif kind == "no_id":
                    row[0] = " "
                elif kind == "no_text":
                    row[1] = ""
                elif kind == "bad_date":
                    row[2] = rng.choice(BAD_DATES)
                    self.expect("csv", doc_id, text)
                elif kind == "bad_byte" and encoding == "utf-8":
                    cut = rng.randint(0, len(text))
                    row[1] = text[:cut] + "\x07" + text[cut:]
                    self.expect("csv", doc_id, text[:cut] + "\ufffd" + text[cut:])
                    bad_bytes.append(1)
                elif kind == "bad_byte":
                    self.corpus.faults["csv"].pop()
                    self.expect("csv", doc_id, text)
                elif kind == "nul":
                    row[1] = text + "\x00"
                    self.corpus.faults["csv"].pop()  # a NUL is a character: kept as it is
                    self.expect("csv", doc_id, text + "\x00")
                elif kind == "unclosed":
                    # the quote opens and never closes: reported, and the rows after it still come out
                    out.write(f'{doc_id},"{_one_line(text)},{date},x{end}')
                    line += 1
                    continue
                elif kind == "quote_then_text":
                    out.write(f'{doc_id},"{_one_line(text)}"tail,{date},x{end}')
                    line += 1
                    continue
                elif kind == "truncated":
                    quoted = f'{doc_id},"{text.replace(chr(34), "")} and more words to cut'
                    out.write(quoted[: rng.randint(len(doc_id) + 3, len(quoted) - 1)])
                    line += 1
                    continue
            buf = io.StringIO()
            csv.writer(buf, lineterminator=end, quoting=rng.choice([csv.QUOTE_MINIMAL, csv.QUOTE_ALL])).writerow(row)
            out.write(buf.getvalue())
            line += len(_LINE_BREAK.findall(buf.getvalue()))
        text = out.getvalue()
        if whole == "no_text_column":
            self.fault("csv", path, 1)
        if whole == "header_only":  # a header and no rows is a valid, empty table: not a fault
            text = ",".join(header) + end
            self._forget("csv", rows)
        data = text.encode(encoding)
        data = data.replace(b"\x07", b"\xe9") if bad_bytes else data
        if encoding == "utf-8" and rng.random() < 0.2:
            data = codecs.BOM_UTF8 + data
        self.write(path, data, malformed=bool(faults) and whole != "header_only")

    def _forget(self, fmt: str, rows: int) -> None:
        """The last `rows` expected records were not written after all."""
        expected = self.corpus.expected.get(fmt, {})
        for key in list(expected)[-rows:]:
            del expected[key]

    # -- TXT ----------------------------------------------------------------------------------------------------

    def txt_folder(self, root: Path, files: int, faults: int) -> None:
        rng = self.rng
        root.mkdir(parents=True, exist_ok=True)
        meta_rows: list[list[str]] = []
        meta_lines: list[str] = []
        fault_slots = set(rng.sample(range(files), min(faults, files)))
        for i in range(files):
            sub = rng.choice(["", "letters", "press/1887"])
            name = self.uid("t")
            rel = f"{sub}/{name}" if sub else name
            path = self.current = root / f"{rel}.txt"
            text = self.text(latin_only=True)
            kind = rng.choice(_TXT_FAULTS) if i in fault_slots else None
            encoding = rng.choice(["utf-8"] * 5 + ["utf-8-sig", "utf-16", CP1252])
            style = rng.choice(["lf", "lf", "crlf", "cr"])
            text = self.line_ends(text, style)
            data = text.encode(encoding)
            expected: str | None = text
            if kind == "empty":
                data, expected = rng.choice([b"", b"  \n\t\r\n"]), None
                self.fault("txt", path)
            elif kind == "garbage":
                data, expected = b"\x89PNG\r\n\x1a\n" + self.garbage(rng.randint(50, 2000)), None
                self.fault("txt", path)
            elif kind == "bad_byte":
                text = self.text() + " été à Genève, très élevé."  # plenty of UTF-8 around the bad byte
                cut = rng.randint(0, len(text))
                data = (text[:cut] + "\x07" + text[cut:]).encode("utf-8").replace(b"\x07", b"\xff")
                expected = text[:cut] + "\ufffd" + text[cut:]
                self.fault("txt", path, text[:cut].count("\n") + 1)
            elif kind == "nul":
                data = (text + "\x00" + text).encode("utf-8")
                expected = text + "\x00" + text  # a NUL in a text is odd but it is text: kept
            elif kind == "sidecar_broken":
                self.write(path.with_suffix(".json"), b'{"title": "x",', malformed=True)
                self.fault("txt", path.with_suffix(".json"))
                expected = None
            elif kind == "sidecar_deep":
                self.write(
                    path.with_suffix(".json"), b'{"source": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", malformed=True
                )
                self.fault("txt", path.with_suffix(".json"))
                expected = None
            elif kind == "sidecar_array":
                self.write(path.with_suffix(".json"), b"[1, 2]", malformed=True)
                self.fault("txt", path.with_suffix(".json"))
                expected = None
            elif kind == "sidecar_bad_date":
                self.write(
                    path.with_suffix(".json"), json.dumps({"date": rng.choice(BAD_DATES)}).encode(), malformed=True
                )
                self.fault("txt", path.with_suffix(".json"))
            elif kind == "meta_bad_date":
                meta_rows.append([rel, "Titre", rng.choice(BAD_DATES), "fr"])
                self.fault("txt", root / "metadata.csv", len(meta_rows) + 1)
            elif kind == "meta_bad_value":
                meta_lines.append(json.dumps({"id": rel, "ocr_quality": 7}))
                self.fault("txt", root / "metadata.jsonl", len(meta_lines))
                expected = None  # a row that describes its document wrongly leaves it out
            elif rng.random() < 0.3:
                meta_rows.append([rel, " ".join(self.words(2, latin_only=True)), rng.choice(DATES), "fr"])
            self.write(path, data, malformed=kind is not None)
            if expected is not None:
                self.expect("txt", rel, expected)
        # bad rows of their own in the root metadata
        for _ in range(faults // 4):
            kind = rng.choice(["width", "no_key", "dup"])
            if kind == "width":
                meta_rows.append([self.uid("ghost"), "x"])
            elif kind == "no_key":
                meta_rows.append(["", "Sans id", "1887", "fr"])
            elif meta_rows:
                meta_rows.append(list(meta_rows[0]))
            else:
                continue
            self.fault("txt", root / "metadata.csv", len(meta_rows) + 1)
            meta_lines.append(rng.choice(['{"id": "broken', "[1]", '{"title": "no key"}']))
            self.fault("txt", root / "metadata.jsonl", len(meta_lines))
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(["id", "title", "date", "language"])
        for row in meta_rows:
            writer.writerow(row)
        self.write(root / "metadata.csv", buf.getvalue().encode("utf-8"), malformed=faults > 0)
        self.write(root / "metadata.jsonl", ("\n".join(meta_lines) + "\n").encode("utf-8"), malformed=faults > 0)

    # -- ALTO ---------------------------------------------------------------------------------------------------

    def alto_file(self, folder: Path, faults: int) -> None:
        rng = self.rng
        path = self.current = folder / f"{self.uid('a')}.xml"
        ns = rng.choice(
            [
                "http://www.loc.gov/standards/alto/ns-v4#",
                "http://www.loc.gov/standards/alto/ns-v3#",
                "http://schema.ccs-gmbh.com/ALTO",
                "",
            ]
        )
        kind = rng.choice(_ALTO_FAULTS) if faults else None
        latin_only = kind in ("latin1_declared_utf8", "undeclared_latin1")
        xml, text = self.alto_page(latin_only=latin_only, control=kind == "control")
        root_attr = f' xmlns="{ns}"' if ns else ""
        declaration = '<?xml version="1.0" encoding="UTF-8"?>\n'
        doc = f'<alto{root_attr}><Layout><Page ID="P1"><PrintSpace>{xml}</PrintSpace></Page></Layout></alto>\n'
        data = (declaration + doc).encode("utf-8")
        expected: str | None = text
        if kind is not None:
            self.fault("alto", path)
        if kind == "truncated":
            data, expected = data[: rng.randint(10, len(data) - 9)], None
        elif kind == "broken":
            data, expected = data.replace(b"</TextLine>", b"</TextLin>", 1), None
        elif kind == "wrong_root":
            data, expected = data.replace(b"<alto", b"<mets", 1).replace(b"</alto>", b"</mets>"), None
        elif kind == "no_text":
            data, expected = (declaration + f"<alto{root_attr}><Layout><Page/></Layout></alto>").encode(), None
        elif kind == "empty":
            data, expected = b"", None
        elif kind == "garbage":
            data, expected = self.garbage(rng.randint(10, 3000)), None
        elif kind == "deep":
            data, expected = (f"<alto{root_attr}>" + "<x>" * 5000 + "</x>" * 5000 + "</alto>").encode(), None
        elif kind == "bomb":
            lol = '<!ENTITY l0 "lol">' + "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10))
            data = (f'<?xml version="1.0"?><!DOCTYPE alto [{lol}]>' + doc.replace(">", ">&l9;", 1)).encode()
            expected = None
        elif kind == "latin1_declared_utf8":
            data = (declaration + doc).encode(CP1252)
        elif kind == "undeclared_latin1":
            data = doc.encode(CP1252)
        elif kind == "utf8_declared_latin1":
            data = ('<?xml version="1.0" encoding="ISO-8859-1"?>\n' + doc).encode("utf-8")
            if data.isascii():
                self.corpus.faults["alto"].pop()  # nothing to mis-decode
        elif kind == "control":
            pass  # text has the control characters removed, as expected
        elif kind == "utf16":
            data = ('<?xml version="1.0" encoding="UTF-16"?>\n' + doc).encode("utf-16")
            self.corpus.faults["alto"].pop()  # valid XML in UTF-16: not a fault
        self.write(path, data, malformed=kind is not None)
        if expected is not None:
            self.expect("alto", path.stem, expected)

    def alto_page(self, *, latin_only: bool, control: bool) -> tuple[str, str]:
        """(the TextBlocks' XML, the text the reader must rebuild from them)."""
        rng = self.rng
        blocks_xml, blocks_text = [], []
        for b in range(rng.randint(1, 3)):
            lines_xml, lines_text = [], []
            for ln in range(rng.randint(1, 5)):
                words = self.words(rng.randint(1, 7), latin_only=latin_only)
                if rng.random() < 0.2:
                    words.append("Fantine & <Cosette>")  # escaped in XML, plain in the text
                parts, shown = [], []
                for w_i, word in enumerate(words):
                    word = word.replace(" ", "_")
                    content = word
                    if control and w_i == 0:
                        content = "\x01" + word + "\x0c"
                        shown.append(word)
                    else:
                        shown.append(word)
                    if w_i:
                        parts.append("<SP/>" if rng.random() < 0.9 else "")
                    parts.append(f"<String CONTENT={quoteattr(content)}/>")
                line_text = " ".join(shown)
                if rng.random() < 0.3:  # a hyphen at the line end, sometimes also inside the word (written twice)
                    hyphen = rng.choice(HYPHENS)
                    if rng.random() < 0.5:
                        parts[-1] = parts[-1].replace('"/>', f'{hyphen}"/>', 1) if '"/>' in parts[-1] else parts[-1]
                        line_text += hyphen
                    else:
                        line_text += hyphen
                    parts.append(f'<HYP CONTENT="{hyphen}"/>')
                lines_xml.append(f'<TextLine ID="L{b}_{ln}">{"".join(parts)}</TextLine>')
                lines_text.append(line_text)
            if rng.random() < 0.1:
                lines_xml.append('<TextLine><String CONTENT=""/></TextLine>')  # no words: no line
            blocks_xml.append(f'<TextBlock ID="B{b}">{"".join(lines_xml)}</TextBlock>')
            blocks_text.append("\n".join(lines_text))
        return "".join(blocks_xml), "\n\n".join(blocks_text)

    # -- HIPE ---------------------------------------------------------------------------------------------------

    def hipe_file(self, folder: Path, faults: int) -> None:
        rng = self.rng
        path = self.current = folder / f"HIPE-fuzz-{self.uid('h')}-dev-fr.tsv"
        header = "\t".join(["TOKEN", *_HIPE_COLUMNS, "MISC"])
        whole = rng.choice(["", "", "", "", "wrong_header", "empty", "garbage"]) if faults else ""
        if whole in ("empty", "garbage"):
            self.write(path, b"" if whole == "empty" else self.garbage(rng.randint(10, 2000)), malformed=True)
            self.fault("hipe", path)
            return
        lines = [header]
        if whole == "wrong_header":
            lines = ["WORD\tNE\tMISC"]
            self.fault("hipe", path, 1)
        docs = rng.randint(1, 4)
        kinds = {i: rng.choice(_HIPE_FAULTS) for i in rng.sample(range(docs), min(faults, docs))} if not whole else {}
        bad_byte_lines: list[int] = []
        for i in range(docs):
            kind = kinds.get(i)
            doc_id = self.uid("hd")
            id_line = len(lines) + 1
            if kind == "no_id":
                lines.append("# hipe2022:document_id = ")
            else:
                lines.append(f"# hipe2022:document_id = {doc_id}")
            date = rng.choice(BAD_DATES) if kind == "bad_date" else rng.choice(DATES + ("NA",))
            lines.append(f"# hipe2022:date = {date}")
            date_line = len(lines)
            lines.append("# hipe2022:language = fr")
            lines.append("# a bare comment")
            if kind == "no_tokens":
                if not whole:
                    self.fault("hipe", path, id_line)
                continue
            text, first_bad = self.hipe_tokens(lines, bad_byte=kind == "bad_byte", short=rng.random() < 0.2)
            if whole:
                continue
            if kind == "no_id":
                self.fault("hipe", path, id_line)
                continue
            if kind == "bad_date":
                self.fault("hipe", path, date_line)
            if kind == "bad_byte":
                self.fault("hipe", path, first_bad)
                bad_byte_lines.append(first_bad)
            self.expect("hipe", doc_id, text)
        style = rng.choice(["lf", "lf", "crlf", "cr"])
        data = self.line_ends("\n".join(lines) + "\n", style).encode("utf-8").replace(b"\x07", b"\xe9")
        if rng.random() < 0.15:
            data = codecs.BOM_UTF8 + data
        self.write(path, data, malformed=bool(faults))

    def hipe_tokens(self, lines: list[str], *, bad_byte: bool, short: bool) -> tuple[str, int | None]:
        rng = self.rng
        text, pending, first_bad = "", None, None
        for t in range(rng.randint(1, 25)):
            token = rng.choice(self.words(1) + [",", ".", "l'", "###pol=München", "par¬", "¬"])
            if bad_byte and t == 0:
                token = "Mus\x07e"
                first_bad = len(lines) + 1
            flags = rng.choice(["_", "_", "_", "NoSpaceAfter", "EndOfLine", "NoSpaceAfter|EndOfLine", "EndOfSentence"])
            if pending is not None:
                text += pending
            text += token.replace("\x07", "\ufffd")
            cells = [token, "O", "O", "O", "O", "O", "O", "_", "_", flags]
            if short:
                cells = cells[:3]  # a row shorter than its header: no MISC, so a space after it
                flags = "_"
            lines.append("\t".join(cells))
            pending = "\n" if "EndOfLine" in flags else "" if "NoSpaceAfter" in flags else " "
        return text, first_bad


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def _one_line(text: str) -> str:
    return _LINE_BREAK.sub(" ", text).replace('"', "")


_JSONL_FAULTS = [
    "truncated",
    "garbage",
    "not_object",
    "no_id",
    "no_text",
    "empty_text",
    "bad_id",
    "bad_value",
    "deep",
    "raw_nul",
    "bad_date",
    "bad_byte",
    "surrogate",
    "huge",
    "escaped_nul",
]
_CSV_FAULTS = ["width", "no_id", "no_text", "bad_date", "bad_byte", "nul", "unclosed", "quote_then_text", "truncated"]
_TXT_FAULTS = [
    "empty",
    "garbage",
    "bad_byte",
    "nul",
    "sidecar_broken",
    "sidecar_deep",
    "sidecar_array",
    "sidecar_bad_date",
    "meta_bad_date",
    "meta_bad_value",
]
_ALTO_FAULTS = [
    "truncated",
    "broken",
    "wrong_root",
    "no_text",
    "empty",
    "garbage",
    "deep",
    "bomb",
    "latin1_declared_utf8",
    "undeclared_latin1",
    "utf8_declared_latin1",
    "control",
    "utf16",
]
_HIPE_COLUMNS = [
    "NE-COARSE-LIT",
    "NE-COARSE-METO",
    "NE-FINE-LIT",
    "NE-FINE-METO",
    "NE-FINE-COMP",
    "NE-NESTED",
    "NEL-LIT",
    "NEL-METO",
]
_HIPE_FAULTS = ["no_id", "no_tokens", "bad_date", "bad_byte"]


def make_corpus(root: Path, seed: int, *, scale: int = 1) -> Corpus:
    """Write the corpus under `root`: per format about 250 files with faults and 60 good ones (times `scale`)."""
    gen = _Gen(root, seed)
    makers: dict[str, Callable[[int], None]] = {
        "jsonl": lambda faults: gen.jsonl_file(root / "jsonl", faults),
        "csv": lambda faults: gen.csv_file(root / "csv", faults),
        "alto": lambda faults: gen.alto_file(root / "alto", faults),
        "hipe": lambda faults: gen.hipe_file(root / "hipe", faults),
    }
    for make in makers.values():
        for i in range(310 * scale):
            make(0 if i % 5 == 0 else gen.rng.randint(1, 3))
    gen.txt_folder(root / "txt", 300 * scale, 240 * scale)
    return gen.corpus
