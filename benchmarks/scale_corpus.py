"""The corpus of `scale.py`: real sentences from the shared datasets, recombined into documents of realistic length
and metadata, with real OCR errors added, so that 1M chunks have the term statistics of a real collection.

How a document is made (deterministic: one seeded stream, so the corpus of N chunks is the first documents of the
corpus of any larger N):

1. Sources: every document of HIPE-2022 (OCR'd newspapers, fr/de/en/fi/sv, 1780-2018, with named entities), the
   noisy side of hipe-ocrepair (dta19 de, icdar2017 en/fr, impresso de/en/fr), Cranfield (English abstracts) and
   PIAF (French Wikipedia paragraphs), split into sentences at `.!?;` followed by a space.
2. A template document is drawn with probability proportional to its length (so the generated mix of languages,
   sources and OCR quality follows the source text). The new document takes its language, its sub-corpus (the
   source's newspaper or subset, e.g. `hipe2020/gdl`, `dta19-l1`, `piaf`) and its date: the template's year with a
   day drawn in that year (undated sources stay undated); its length is the template's times a log-normal factor
   (sigma 0.5), between 200 and 30,000 characters.
3. Its text is runs of 1-8 consecutive sentences (paragraphs, joined by a blank line): 60% of the runs from the
   template itself, the others from other documents of the same language. Sentences keep their own line breaks.
4. OCR errors: each word is corrupted with probability `noise` (default 0.03) by one character edit drawn from the
   edits that separate hipe-ocrepair's OCR text from its gold transcription (word pairs aligned, then characters:
   `e`->`c`, `rn`->`m`, `ſ`->`f`, a dropped letter, ...), weighted by how often each happened. The source text
   is ~16 MB; 1M chunks are ~900 MB, so each sentence comes back ~60 times: without new word forms the vocabulary
   would stop growing at the source's, where a real collection keeps finding new (mostly misrecognised) forms.

The chunks are TRACE's own (`Collection._chunk`: its chunker, normaliser and settings), so every stack indexes the
same chunk texts that TRACE indexes. Term statistics (vocabulary growth, Heaps' law fit, rank-frequency, Zipf fit)
are counted on the generated documents and on the source text with one tokenizer (lowercased runs of letters).
"""

from __future__ import annotations

import bisect
import difflib
import json
import math
import random
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

_SENT = re.compile(r"(?<=[.!?;])\s+")
_WORD = re.compile(r"[^\W\d_]+")
_WORDISH = re.compile(r"\S+")


@dataclass
class Source:
    text: str
    language: str
    corpus: str
    date: str | None
    kind: str  # hipe, ocrepair, cranfield, piaf
    sentences: list[str] = field(default_factory=list)


def load_sources(datasets: Path) -> tuple[list[Source], list[str], list[tuple[str, str]], list[tuple[str, str]]]:
    """Source documents, HIPE's entity surface forms, and the datasets' own queries (cranfield, piaf: text, lang)."""
    from tracerag.eval.datasets import load_benchmark, ocr_records

    sources: list[Source] = []
    entities: set[str] = set()
    hipe = load_benchmark("hipe-entities", datasets)
    for d in hipe.documents:
        sources.append(Source(d.text, d.language or "xx", d.corpus, d.date, "hipe"))
        for e in d.source.get("entities", []):
            s = " ".join(d.text[e["start"] : e["end"]].replace("¬", "").split())
            if 4 <= len(s) <= 40 and re.search(r"[^\W\d_]{4}", s):
                entities.add(s)
    for d, _gold in ocr_records(datasets):
        sources.append(Source(d.text, d.language or "xx", d.corpus, d.date, "ocrepair"))
    queries = []
    for name, kind in (("cranfield", "cranfield"), ("piaf-fr", "piaf")):
        bench = load_benchmark(name, datasets)
        for d in bench.documents:
            text = f"{d.title}. {d.text}" if d.title and kind == "piaf" else d.text
            sources.append(Source(text, d.language or "xx", d.corpus, d.date, kind))
        queries += [(q.text, q.language or "xx") for q in bench.queries.values()]
    for s in sources:
        s.sentences = [x for x in _SENT.split(s.text) if len(x.strip()) >= 3]
    sources = [s for s in sources if s.sentences]
    return sources, sorted(entities), queries, []


def ocr_edits(datasets: Path, limit: int = 400) -> list[tuple[str, str, int]]:
    """Character edits (gold -> OCR) between hipe-ocrepair's aligned words, with their counts."""
    from tracerag.eval.datasets import ocr_records

    edits: Counter[tuple[str, str]] = Counter()
    for i, (doc, gold) in enumerate(ocr_records(datasets)):
        if i >= limit:
            break
        g, o = gold.split(), doc.text.split()
        sm = difflib.SequenceMatcher(None, g, o, autojunk=False)
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            if tag != "replace" or i2 - i1 != j2 - j1:
                continue
            for gw, ow in zip(g[i1:i2], o[j1:j2], strict=True):
                if gw == ow or abs(len(gw) - len(ow)) > 2:
                    continue
                cm = difflib.SequenceMatcher(None, gw, ow, autojunk=False)
                for t, a1, a2, b1, b2 in cm.get_opcodes():
                    a, b = gw[a1:a2], ow[b1:b2]
                    # letters only: hyphenation marks (¬) and transcription conventions (combining e) are no OCR error
                    if t != "equal" and 0 < len(a) <= 2 and len(b) <= 2 and a.isalpha() and (b == "" or b.isalpha()):
                        edits[(a, b)] += 1
    return [(a, b, n) for (a, b), n in edits.most_common() if n >= 2]


class Noise:
    """One character edit per corrupted word, drawn from the real OCR edits by frequency."""

    def __init__(self, edits: list[tuple[str, str, int]], rate: float):
        self.rate = rate
        self.edits = [(a, b) for a, b, _ in edits]
        self.cum = list(np.cumsum([n for *_, n in edits]).tolist())

    def word(self, w: str, rng: random.Random) -> str:
        for _ in range(4):
            a, b = self.edits[bisect.bisect_right(self.cum, rng.random() * self.cum[-1])]
            pos = w.find(a)
            if pos >= 0:
                return w[:pos] + b + w[pos + len(a) :]
        return w

    def text(self, text: str, rng: random.Random) -> str:
        if not self.rate:
            return text
        return _WORDISH.sub(lambda m: self.word(m.group(0), rng) if rng.random() < self.rate else m.group(0), text)


class Generator:
    """The document stream (see the module docstring)."""

    def __init__(self, sources: list[Source], noise: Noise, seed: int):
        self.sources = sources
        self.noise = noise
        self.rng = random.Random(seed)
        self.cum = list(np.cumsum([len(s.text) for s in sources]).tolist())
        self.by_lang: dict[str, list[int]] = {}
        for i, s in enumerate(sources):
            self.by_lang.setdefault(s.language, []).append(i)

    def _run(self, src: Source) -> str:
        n = self.rng.randint(1, 8)
        start = self.rng.randrange(len(src.sentences))
        return " ".join(src.sentences[start : start + n])

    def documents(self) -> Iterator[dict]:
        i = 0
        rng = self.rng
        while True:
            t = self.sources[bisect.bisect_right(self.cum, rng.random() * self.cum[-1])]
            target = min(30_000, max(200, int(len(t.text) * math.exp(rng.gauss(0, 0.5)))))
            parts, size = [], 0
            same = self.by_lang[t.language]
            while size < target:
                src = t if rng.random() < 0.6 else self.sources[same[rng.randrange(len(same))]]
                p = self._run(src)
                parts.append(p)
                size += len(p) + 2
            text = self.noise.text("\n\n".join(parts), rng)
            date = None
            if t.date:
                year = int(t.date[:4])
                day = rng.randrange(365)
                date = str(np.datetime64(f"{year:04d}-01-01") + np.timedelta64(day, "D"))
            yield {"id": f"g{i:07d}", "text": text, "corpus": t.corpus, "language": t.language, "date": date}
            i += 1


def chunker(settings):
    """TRACE's own chunking of a document into index texts (`Preparation.chunks`, as the ingest chunks it)."""
    from tracerag.ingest.prepare import Preparation

    prep = Preparation(settings)

    def chunks(doc) -> list[str]:
        return [c.index_text for c in prep.chunks(doc)]

    return chunks


class TermStats:
    """Vocabulary size at log-spaced token counts, and term frequencies (one tokenizer for source and corpus)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.tokens = 0
        self.curve: list[tuple[int, int]] = []
        self._next = 1000

    def add(self, text: str) -> None:
        words = _WORD.findall(text.lower())
        while words and self.tokens + len(words) >= self._next:
            cut = self._next - self.tokens
            self.counts.update(words[:cut])
            self.tokens += cut
            words = words[cut:]
            self.curve.append((self.tokens, len(self.counts)))
            self._next = int(self._next * 1.25) + 1
        self.counts.update(words)
        self.tokens += len(words)

    def summary(self, top_ranks: int = 200_000) -> dict:
        curve = self.curve + [(self.tokens, len(self.counts))]
        xs = np.log([n for n, _ in curve if n >= 10_000])
        ys = np.log([v for n, v in curve if n >= 10_000])
        beta, logk = np.polyfit(xs, ys, 1) if len(xs) >= 2 else (float("nan"), float("nan"))
        freqs = np.array(sorted(self.counts.values(), reverse=True), dtype=np.float64)
        ranks = np.arange(1, len(freqs) + 1)
        sel = (ranks >= 10) & (ranks <= min(10_000, len(freqs)))
        s = -np.polyfit(np.log(ranks[sel]), np.log(freqs[sel]), 1)[0] if sel.sum() > 2 else float("nan")
        pick = np.unique(np.geomspace(1, len(freqs), 200).astype(int)) - 1 if len(freqs) else np.array([], int)
        hapax = int((freqs == 1).sum())
        return {
            "tokens": self.tokens,
            "types": len(self.counts),
            "hapax_share": round(hapax / max(1, len(freqs)), 3),
            "heaps": {"K": round(float(math.exp(logk)), 2), "beta": round(float(beta), 3), "fit_from_tokens": 10_000},
            "zipf_s": round(float(s), 3),
            "curve": curve,
            "rank_freq": [(int(r + 1), int(freqs[r])) for r in pick[:top_ranks]],
            "top": self.counts.most_common(20),
        }


def generate(work: Path, n_max: int, seed: int, noise_rate: float, datasets: Path, settings, progress=None) -> dict:
    """Write docs.jsonl, chunks.jsonl (+ byte offsets), chunk_docs.npy, vectors.f32 and terms.json under `work`."""
    sources, entities, ds_queries, _ = load_sources(datasets)
    edits = ocr_edits(datasets)
    gen = Generator(sources, Noise(edits, noise_rate), seed)
    chunk = chunker(settings)
    from tracerag.dates import parse_partial_date
    from tracerag.model import Document

    src_stats = TermStats()
    order = list(range(len(sources)))
    random.Random(seed).shuffle(order)
    for i in order:
        src_stats.add(sources[i].text)
    stats = TermStats()
    n = 0
    doc_of_chunk: list[int] = []
    offsets: list[int] = []
    n_docs = 0
    with (work / "docs.jsonl").open("w", encoding="utf-8") as fd, (work / "chunks.jsonl").open("wb") as fc:
        for d in gen.documents():
            texts = chunk(Document(id=d["id"], text=d["text"], corpus=d["corpus"], language=d["language"]))
            if not texts:
                continue
            if n + len(texts) > n_max:
                break
            fd.write(json.dumps(d, ensure_ascii=False) + "\n")
            span = parse_partial_date(d["date"]) if d["date"] else None
            for k, t in enumerate(texts):
                rec = {
                    "id": f"{d['id']}#{k}",
                    "doc": d["id"],
                    "text": t,
                    "corpus": d["corpus"],
                    "lang": d["language"],
                    "ds": span.start if span else None,
                    "de": span.end if span else None,
                }
                offsets.append(fc.tell())
                fc.write((json.dumps(rec, ensure_ascii=False) + "\n").encode("utf-8"))
                doc_of_chunk.append(n_docs)
            stats.add(d["text"])
            n += len(texts)
            n_docs += 1
            if progress and n_docs % 500 == 0:
                progress(n, n_max)
    np.save(work / "chunk_offsets.npy", np.asarray(offsets, dtype=np.int64))
    np.save(work / "chunk_docs.npy", np.asarray(doc_of_chunk, dtype=np.int32))
    info = {
        "n_chunks": n,
        "n_documents": n_docs,
        "seed": seed,
        "noise_rate": noise_rate,
        "ocr_edits_learned": len(edits),
        "ocr_edits_top": [f"{a}->{b} ({c})" for a, b, c in edits[:12]],
        "sources": dict(Counter(s.kind for s in sources)),
        "source_chars": sum(len(s.text) for s in sources),
        "source_sentences": sum(len(s.sentences) for s in sources),
        "entities": len(entities),
    }
    (work / "terms.json").write_text(json.dumps({"source": src_stats.summary(), "generated": stats.summary()}))
    (work / "extras.json").write_text(json.dumps({"entities": entities, "dataset_queries": ds_queries}))
    (work / "corpus.json").write_text(json.dumps(info, indent=1))
    return info


DIM = 384  # the dense vectors of every stack (scale.py makes them: random unit vectors per chunk text)


class Chunks:
    """Random access to the generated chunks (first n of them)."""

    def __init__(self, work: Path, n: int):
        self.path = work / "chunks.jsonl"
        self.offsets = np.load(work / "chunk_offsets.npy", mmap_mode="r")
        self.n = min(n, len(self.offsets))

    def get(self, i: int) -> dict:
        with self.path.open("rb") as fh:
            fh.seek(int(self.offsets[i]))
            return json.loads(fh.readline())

    def __iter__(self) -> Iterator[dict]:
        with self.path.open("rb") as fh:
            for _ in range(self.n):
                yield json.loads(fh.readline())


def documents(work: Path, n_docs: int) -> Iterator:
    """The first `n_docs` generated documents as tracerag Documents."""
    from tracerag.model import Document

    with (work / "docs.jsonl").open(encoding="utf-8") as fh:
        for _, line in zip(range(n_docs), fh, strict=False):
            d = json.loads(line)
            yield Document(id=d["id"], text=d["text"], corpus=d["corpus"], date=d["date"], language=d["language"])
