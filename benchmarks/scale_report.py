"""Markdown and plots of `scale.py`'s results (JSON in, text and PNG out; no measuring here)."""

from __future__ import annotations

from pathlib import Path

PEERS = ("bm25s", "tantivy", "lancedb", "lucene")
LABEL = {
    "trace": "TRACE",
    "bm25s": "bm25s+numpy",
    "tantivy": "tantivy+faiss",
    "lancedb": "LanceDB",
    "lucene": "Lucene (Pyserini)",
}
BUILD = {"trace": "trace_lex", "bm25s": "bm25s_build", "tantivy": "tantivy_build", "lancedb": "lancedb_build"}
BUILD["lucene"] = "lucene_build"
SEARCH = {s: f"{s}_search" for s in LABEL}


def _fmt(v) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if v != v:
            return "—"
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}" if abs(v) < 10 else f"{v:.1f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def _get(d: dict | None, *path):
    for p in path:
        if not isinstance(d, dict) or p not in d:
            return None
        d = d[p]
    return d


def _tput(r: dict | None, key: str, threads: int):
    for t in _get(r, "throughput", key) or []:
        if t["threads"] == threads:
            return t["qps"]
    return None


def metrics(entry: dict, emb: dict | None) -> list[tuple[str, str, dict[str, object], bool]]:
    """(group, metric, value per stack, higher_is_better) for one size."""
    R = entry["results"]
    n = entry["n_chunks"]

    def role(stack: str, name: str) -> dict | None:
        r = _get(R, stack, name)
        return r if isinstance(r, dict) and "failed" not in r else None

    rows: list[tuple[str, str, dict[str, object], bool]] = []

    def row(group: str, metric: str, values: dict[str, object], higher: bool = False) -> None:
        if any(v is not None for v in values.values()):
            rows.append((group, metric, values, higher))

    lex = {s: _get(role(s, BUILD[s]), "ingest_s" if s == "trace" else "lexical_s") for s in LABEL}
    row("ingest", "lexical ingest / index build (s)", lex)
    row("ingest", "lexical throughput (chunks/s)", {s: (n / v if v else None) for s, v in lex.items()}, True)
    full = {s: _get(role(s, BUILD[s]), "build_s") for s in LABEL if s not in ("trace", "lucene")}
    one_pass = _get(role("trace", "trace_dense"), "ingest_s")
    embed = _get(role("trace", "trace_embed"), "embed_s")
    two_step = lex["trace"] + embed if lex.get("trace") and embed else None
    full["trace"] = one_pass or two_step
    label = "ingest / build with vectors, model time excluded (s)"
    row("ingest", label + ("" if one_pass else "; TRACE: lexical ingest + embed"), full)
    row("ingest", "TRACE two steps: lexical ingest, then embed_missing (s)", {"trace": two_step})
    row(
        "ingest",
        "throughput with vectors, model excluded (chunks/s)",
        {s: (n / v if v else None) for s, v in full.items()},
        True,
    )
    if emb and emb.get("chunks_per_s"):
        rate = emb["chunks_per_s"]
        row(
            "ingest",
            f"projected with the real model at {rate} chunks/s (chunks/s)",
            {s: (1 / (v / n + 1 / rate) if v else None) for s, v in full.items()},
            True,
        )
    opt = _get(role("trace", "trace_dense"), "optimize", "seconds")
    if opt is None:
        opt = _get(role("trace", "trace_embed"), "breakdown_s", "engine optimize")
    row("ingest", "of which TRACE engine optimize, HNSW build (s)", {"trace": opt})
    lexical_hwm = {"trace": _get(role("trace", "trace_lex"), "rss_hwm_mb")}
    lexical_hwm["lucene"] = _get(role("lucene", BUILD["lucene"]), "rss_hwm_mb")
    row("memory", "peak RSS, lexical ingest / index build (MiB)", lexical_hwm)
    hwm = {s: _get(role(s, BUILD[s]), "rss_hwm_mb") for s in LABEL if s not in ("trace", "lucene")}
    hwm["trace"] = _get(role("trace", "trace_dense"), "rss_hwm_mb") or _get(role("trace", "trace_embed"), "rss_hwm_mb")
    row("memory", "peak RSS, ingest / build with vectors (MiB)", hwm)
    row("memory", "RSS after open (MiB)", {s: _get(role(s, SEARCH[s]), "rss_after_open_mb") for s in LABEL})
    row("memory", "peak RSS, serving every query (MiB)", {s: _get(role(s, SEARCH[s]), "rss_hwm_mb") for s in LABEL})
    disk = {s: _get(role(s, BUILD[s]), "disk_mb") for s in LABEL if s not in ("trace", "lucene")}
    disk["trace"] = _get(role("trace", "trace_dense"), "disk_mb") or _get(role("trace", "trace_embed"), "disk_mb")
    row("disk", "on disk, with vectors (MiB)", disk)
    row(
        "disk",
        "on disk, lexical only (MiB)",
        {
            "trace": _get(role("trace", "trace_lex"), "disk_mb"),
            "lucene": _get(role("lucene", BUILD["lucene"]), "disk_mb"),
        },
    )
    row("open", "open, ready to search (s)", {s: _get(role(s, SEARCH[s]), "open_s") for s in LABEL})
    for key, label in (
        ("bm25", "BM25 channel (top 100)"),
        ("dense", "dense kNN (top 100, vector given)"),
        ("phrase", "phrase channel (2-6 word queries)"),
        ("date", "date channel (dated queries, BM25 pool)"),
        ("fused_hybrid_given", "fused BM25+dense, query vector given"),
        ("fused_all_given", "fused all channels, query vector given"),
        ("fused_lexical", "fused lexical channels (BM25, date, phrase; no vectors)"),
        ("fused_hybrid_e2e", "fused BM25+dense, end to end (model embeds the query)"),
    ):
        for stat in ("p50_ms", "p95_ms", "p99_ms"):
            row(
                "latency",
                f"{label} {stat[:3]} (ms)",
                {s: _get(role(s, SEARCH[s]), "latency", key, stat) for s in LABEL},
            )
    for key, label in (
        ("bm25", "BM25"),
        ("fused_hybrid_given", "fused, vector given"),
        ("fused_lexical", "fused lexical"),
    ):
        for th in (1, 2):
            row(
                "throughput",
                f"{label}, {th} client thread{'s' if th > 1 else ''} (queries/s)",
                {s: _tput(role(s, SEARCH[s]), key, th) for s in LABEL},
                True,
            )
    for key, label in (("bm25", "BM25"), ("dense", "dense"), ("fused", "fused")):
        row(
            "filtered",
            f"{label} with a filter p50 (ms)",
            {s: _get(role(s, SEARCH[s]), "filtered", key, "p50_ms") for s in LABEL},
        )
        row(
            "filtered",
            f"{label} with a filter p99 (ms)",
            {s: _get(role(s, SEARCH[s]), "filtered", key, "p99_ms") for s in LABEL},
        )
        row(
            "filtered",
            f"{label} with a filter: complete (% of queries with min(k, available) results)",
            {s: _get(role(s, SEARCH[s]), "filtered", key, "complete_pct") for s in LABEL},
            True,
        )
    return rows


def _ratio(t, p) -> str:
    if not isinstance(t, int | float) or not isinstance(p, int | float) or not p:
        return "—"
    return f"{t / p:.2f}"


def targets(entry: dict) -> list[tuple[str, str, str, str]]:
    """Issue 24's targets at this size (100k: against tantivy + faiss measured in the same run; 1M: absolute):
    (target, measured, met, note)."""
    R = entry["results"]
    s = _get(R, "trace", "trace_search") or {}
    lex = _get(R, "trace", "trace_lex") or {}
    dense = _get(R, "trace", "trace_dense") or _get(R, "trace", "trace_embed") or {}
    peer = _get(R, "tantivy", "tantivy_search") or {}
    peer_build = _get(R, "tantivy", "tantivy_build") or {}
    out = []

    def add(name: str, value, ok) -> None:
        out.append(
            (
                name,
                value if isinstance(value, str) else _fmt(value),
                "—" if ok is None else "met" if ok else "MISSED",
                "",
            )
        )

    def vs_peer(name: str, t, p, bound: float) -> None:
        ok = None if t is None or not p else t / p <= bound
        add(f"{name} ≤ {bound:g}× tantivy+faiss (TRACE / peer ms)", f"{_fmt(t)} / {_fmt(p)} = {_ratio(t, p)}×", ok)

    lat = lambda r, key, stat: _get(r, "latency", key, stat)  # noqa: E731
    if entry["n_chunks"] < 500_000:
        vs_peer("BM25 p50", lat(s, "bm25", "p50_ms"), lat(peer, "bm25", "p50_ms"), 1.5)
        vs_peer("dense p50", lat(s, "dense", "p50_ms"), lat(peer, "dense", "p50_ms"), 1.5)
        vs_peer("fused p50", lat(s, "fused_hybrid_given", "p50_ms"), lat(peer, "fused_hybrid_given", "p50_ms"), 1.5)
        vs_peer("fused p99", lat(s, "fused_hybrid_given", "p99_ms"), lat(peer, "fused_hybrid_given", "p99_ms"), 3)
        one, two = _tput(s, "bm25", 1), _tput(s, "bm25", 2)
        add(
            "BM25 q/s, 2 client threads ≥ 1.6× one thread",
            f"{_fmt(two)} / {_fmt(one)} = {_ratio(two, one)}×",
            None if one is None or two is None else two >= 1.6 * one,
        )
        cps = lex.get("chunks_per_s")
        add("lexical ingest ≥ 5,000 chunks/s", cps, None if cps is None else cps >= 5000)
        t, p = dense.get("disk_mb"), peer_build.get("disk_mb")
        add(
            "on disk with vectors ≤ 1.5× the peer (TRACE / peer MiB)",
            f"{_fmt(t)} / {_fmt(p)} = {_ratio(t, p)}×",
            None if t is None or not p else t / p <= 1.5,
        )
    else:
        p50, p99 = lat(s, "fused_hybrid_given", "p50_ms"), lat(s, "fused_hybrid_given", "p99_ms")
        add("fused p50 ≤ 10 ms (vector given)", p50, None if p50 is None else p50 <= 10)
        add("fused p99 ≤ 50 ms (vector given)", p99, None if p99 is None else p99 <= 50)
        op = s.get("open_s")
        add("open ≤ 1 s", op, None if op is None else op <= 1)
        rss = s.get("rss_hwm_mb")
        add("serving peak RSS ≤ 2 GB (2,048 MiB)", rss, None if rss is None else rss <= 2048)
        cps = lex.get("chunks_per_s")
        add("lexical ingest ≥ 5,000 chunks/s", cps, None if cps is None else cps >= 5000)
    f = s.get("filtered") or {}
    pct = {k: _get(f, k, "complete_pct") for k in ("bm25", "dense", "fused")}
    if any(v is not None for v in pct.values()):
        add(
            "filtered searches 100% complete (% of queries: bm25 / dense / fused)",
            " / ".join(_fmt(v) for v in pct.values()),
            all(v == 100 for v in pct.values() if v is not None),
        )
    return out


def markdown(res: dict, base: Path) -> str:
    hw, v, c = res["hardware"], res["versions"], res["corpus"]
    terms = res["terms"]
    emb = res.get("embedding") or {}
    out = [
        "# TRACE at scale: 10k, 100k and 1M chunks against its peers",
        "",
        f"Run {res['started']} with `{res['command']}`; {res.get('wall_s', 0) / 60:.0f} min. One run; each latency "
        f"is one timed pass over the size's queries after {10} warm-up queries, single queries, k={res['k']} "
        f"(channels: top {res['depth']}).",
        "",
        f"**Hardware**: {hw['cpu']}, {hw['nproc']} cores, {hw['ram_gib']} GiB RAM, shared with other work "
        f"(the machine is noisy: compare stacks within one run); Python {hw['python']}; {hw['os']}.  ",
        "**Versions**: " + ", ".join(f"{k} {x}" for k, x in v.items() if x) + f"; tracerag commit "
        f"{res['git']['commit']}" + (" with local changes in src/" if res["git"]["src_modified"] else "") + ".",
        "",
        "## Data",
        "",
        f"**Corpus** (`benchmarks/scale_corpus.py`, seed {c['seed']}): real sentences of the shared datasets "
        f"({', '.join(f'{k} {n:,} documents' for k, n in c['sources'].items())}; {c['source_chars'] / 1e6:.1f} M "
        f"characters, {c['source_sentences']:,} sentences) recombined into new documents: each takes a source "
        "document (drawn by length) as template for its language, sub-corpus, date (same year, a day drawn in it; "
        "undated sources stay undated) and length (times a log-normal factor), and is made of runs of 1-8 "
        "consecutive sentences, 60% from the template and the rest from other documents of its language. "
        f"{100 * c['noise_rate']:.0f}% of the words then get one real OCR error: a character edit drawn from the "
        f"{c['ocr_edits_learned']} edits that separate hipe-ocrepair's OCR from its gold text, by frequency "
        f"(most frequent: {', '.join(c['ocr_edits_top'][:8])}). Chunks are TRACE's own (its chunker and normaliser), "
        "and every stack indexes the same chunk texts. The corpus of N chunks is the first whole documents of one "
        f"stream ({c['n_chunks']:,} chunks, {c['n_documents']:,} documents).",
        "",
        "**Term statistics** (lowercased letter runs; source text in a shuffled document order, generated "
        "documents in order; Heaps' law V = K·n^β fitted from 10k tokens; Zipf exponent fitted on ranks 10-10,000; "
        f"see `{base.name}_terms.png`):",
        "",
        "| text | tokens | types | hapax share | Heaps K | Heaps β | Zipf s |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, t in (("source (all datasets)", terms["source"]), ("generated corpus", terms["generated"])):
        out.append(
            f"| {name} | {t['tokens']:,} | {t['types']:,} | {t['hapax_share']} | {t['heaps']['K']} | "
            f"{t['heaps']['beta']} | {t['zipf_s']} |"
        )
    src = terms["source"]
    gen = terms["generated"]
    pred = src["heaps"]["K"] * gen["tokens"] ** src["heaps"]["beta"]
    out += [
        "",
        f"The source's own Heaps fit predicts {pred:,.0f} types at the generated corpus' {gen['tokens']:,} tokens; "
        f"the generated corpus has {gen['types']:,} ({gen['types'] / pred:.2f} of it).",
        "",
        "**Vectors**: random unit vectors (384-d, float32), one per distinct chunk text (seeded by the text's "
        "hash), at every size; the query vector is its source chunk's vector plus noise (cosine ≈ 0.86), so each "
        "query has a true neighbour. Random vectors have no cluster structure (a hard case for HNSW and IVF). "
        "TRACE makes them at ingest through a stand-in for its model; that time is subtracted from its ingest.",
    ]
    if emb and "chunks_per_s" in emb:
        out.append(
            f"The real model ({emb['model']}, batch {emb['batch_size']}, {emb['threads']} threads) embedded "
            f"{emb['chunks']} generated chunks (mean {emb['chars_mean']} characters) at **{emb['chunks_per_s']} "
            f"chunks/s** in this run; query embedding p50 {emb['query_embed']['p50_ms']} ms. Embedding N chunks "
            "would take "
            + "; ".join(f"{e['n_chunks']:,}: {e['n_chunks'] / emb['chunks_per_s'] / 3600:.1f} h" for e in res["sizes"])
            + "."
        )
    first = res["sizes"][0] if res["sizes"] else {}
    out += [
        "",
        f"**Queries** per size ({first.get('queries', '?')}): drawn from that size's chunks: HIPE entity surface "
        "forms the chunk holds, 2-4 word spans as written, an entity or word pair with the chunk's year (the date "
        "channel's queries), and the datasets' own questions (Cranfield, PIAF); "
        f"by kind {first.get('queries_by_kind')}. **Filtered** ({first.get('filtered', '?')}): half a date range "
        "around the source chunk's date (1 month to 40 years, drawn log-uniformly), half its sub-corpus. "
        "Completeness: a channel owes min(k, available) hits, where available is, for BM25, the chunks inside "
        "the filter holding one of the query's words of 4+ letters that no bm25s stopword list holds (a lower "
        "bound of what any BM25 matches), for dense, the chunks inside the filter, and for the fused search, "
        "the documents inside the filter (counted by a scan of the chunks).",
        "",
        "**Stacks**: TRACE (`Collection.ingest`, `Retriever.search` with channels bm25+dense, or all of bm25, "
        "dense, date, phrase; its default fusion); bm25s + numpy + RRF (the authors' former stack: bm25s k1=1.2 "
        "b=0.75 over folded text, brute-force float32 matrix, `tracerag.retrieval.fusion.fuse` RRF); tantivy + "
        "faiss (tantivy BM25 over lowercased, ASCII-folded text; faiss HNSW M=16, efConstruction 40, efSearch 128; "
        "same RRF); LanceDB hybrid (native FTS + IVF-PQ, its own hybrid query and RRF reranker, filters as "
        "prefilters); Lucene (Pyserini/Anserini, English analyzer, BM25 k1=1.2 b=0.75; lexical only). Every build "
        "and every search runs in its own child process; peak RSS is the child's VmHWM.",
        "",
        "Ratios are TRACE / peer: for times, memory and disk above 1 means TRACE is slower or bigger; for "
        "throughputs below 1 means TRACE is slower.",
    ]
    for entry in res["sizes"]:
        R = entry["results"]
        stacks = [s for s in LABEL if s in R]
        out += ["", f"## N = {entry['n_chunks']:,} chunks ({entry['n_docs']:,} documents)", ""]
        failed = [
            f"{LABEL[s]} {role}: {r.get('failed') or r.get('skipped')}"
            for s in stacks
            for role, r in (R[s].items() if "skipped" not in R[s] else [("all", R[s])])
            if isinstance(r, dict) and ("failed" in r or "skipped" in r)
        ]
        peers = [s for s in stacks if s != "trace"]
        prev = previous_values(res, entry, emb)
        head = "| group | metric | " + " | ".join(LABEL[s] for s in stacks)
        head += "".join(f" | TRACE/{LABEL[p]}" for p in peers)
        head += " | TRACE, previous engine | TRACE/previous |" if prev else " |"
        out += [head, "|---|---|" + "---:|" * (len(stacks) + len(peers) + (2 if prev else 0))]
        for group, metric, vals, _ in metrics(entry, emb):
            cells = [_fmt(vals.get(s)) for s in stacks]
            ratios = [_ratio(vals.get("trace"), vals.get(p)) for p in peers]
            if prev:
                ratios += [_fmt(prev.get(metric)), _ratio(vals.get("trace"), prev.get(metric))]
            out.append(f"| {group} | {metric} | " + " | ".join(cells + ratios) + " |")
        if prev:
            pv = res["previous"]
            out += [
                "",
                f"TRACE, previous engine: from {pv['file']} (run {pv.get('started')}, commit "
                f"{_get(pv, 'git', 'commit')}, `{pv.get('command')}`), same corpus and queries; another run on the "
                "same shared machine, so its load differed.",
            ]
        if failed:
            out += ["", "Not measured: " + "; ".join(failed)]
        loads = [
            f"{LABEL[s]} {role.split('_', 1)[1]} {r['load_avg_1min'][0]}→{r['load_avg_1min'][1]}"
            for s in stacks
            for role, r in (R[s].items() if "skipped" not in R[s] else [])
            if isinstance(r, dict) and r.get("load_avg_1min")
        ]
        if loads:
            out += [
                "",
                "Machine load (1-minute load average at the start → end of each child; 2 cores): " + ", ".join(loads),
            ]
        if _get(R, "trace", "trace_search", "lexical_only"):
            out += [
                "",
                "TRACE was measured without vectors at this size (`--lexical-only-from`): no dense or hybrid figures.",
            ]
        tg = targets(entry)
        if tg:
            out += ["", f"Targets at N = {entry['n_chunks']:,}:", "", "| target | measured | |", "|---|---|---|"]
            out += [f"| {a} | {b} | {c_} |" for a, b, c_, _ in tg]
        out += ingest_steps(entry)
        out += trace_details(entry)
        notes = [
            x for s in peers for x in (_get(R, s, SEARCH[s], "notes") or []) + (_get(R, s, BUILD[s], "notes") or [])
        ]
        reused = [LABEL[s] for s in peers if _get(R, s, BUILD[s], "reused_from_earlier_run")]
        if reused:
            notes.append("build figures reused from an earlier run (--reuse): " + ", ".join(reused))
        if notes:
            out += [""] + [f"- {x}" for x in dict.fromkeys(notes)]
    if res.get("notes"):
        out += ["", "## Notes", ""] + [f"- {x}" for x in res["notes"]]
    out += ["", f"Plots: `{base.name}_terms.png`, `{base.name}_latency.png`, `{base.name}_ingest.png`."]
    return "\n".join(out) + "\n"


def previous_values(res: dict, entry: dict, emb: dict | None) -> dict[str, object]:
    """TRACE's figure per metric in the earlier run of `res["previous"]` at this size (empty without one)."""
    old = _get(res, "previous", "sizes", str(entry["n_chunks"]))
    if not old:
        return {}
    return {metric: vals.get("trace") for _, metric, vals, _ in metrics({**entry, "results": {"trace": old}}, emb)}


def ingest_steps(entry: dict) -> list[str]:
    lex = _get(entry, "results", "trace", "trace_lex")
    den = _get(entry, "results", "trace", "trace_dense")
    if not isinstance(lex, dict) or "breakdown_s" not in lex:
        return []
    den = den if isinstance(den, dict) and "breakdown_s" in den else {"breakdown_s": {}, "calls": {}}
    out = [
        "",
        "TRACE ingest time by step (s); calls and mean ms per call over the first and last 10% of calls (lexical)"
        + (
            f"; documents prepared (chunked, normalised, OCR-estimated) by {lex['prep_workers']} worker process(es)"
            " alongside the writer, whose steps these are:"
            if lex.get("prep_workers")
            else ":"
        ),
        "",
        "| step | lexical only (s) | with vectors (s) | calls | first 10% (ms) | last 10% (ms) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    keys = list(dict.fromkeys(list(lex["breakdown_s"]) + list(den["breakdown_s"])))
    for k in keys:
        g = lex["calls"].get(k, {})
        out.append(
            f"| {k} | {_fmt(lex['breakdown_s'].get(k))} | {_fmt(den['breakdown_s'].get(k))} | {_fmt(g.get('calls'))} "
            f"| {_fmt(g.get('first_10pct_mean_ms'))} | {_fmt(g.get('last_10pct_mean_ms'))} |"
        )
    out.append(f"| total (ingest, vectors excluded) | {lex['ingest_s']} | {den.get('ingest_s', '—')} | | | |")
    emb = _get(entry, "results", "trace", "trace_embed")
    if isinstance(emb, dict) and "breakdown_s" in emb:
        out += [
            "",
            f"TRACE `embed_missing` after the lexical ingest ({emb['embed_s']} s, vectors excluded), by step (s): "
            + ", ".join(f"{k} {_fmt(v)}" for k, v in emb["breakdown_s"].items()),
        ]
    return out


def trace_details(entry: dict) -> list[str]:
    s = _get(entry, "results", "trace", "trace_search")
    out: list[str] = []
    if not isinstance(s, dict) or "latency" not in s:
        return out
    out += [
        "",
        f"TRACE open: {s['open_s']} s to `Collection.open` and open the index; RSS {s.get('rss_before_open_mb')} MiB "
        f"before, {s['rss_after_open_mb']} MiB after, by mapping: "
        + ", ".join(f"{k} {v}" for k, v in s["rss_after_open_by_mapping"].items())
        + f". First search {s['first_search_s']} s. Mean hits at depth 100: {s['mean_hits']}; fused searches "
        f"with fewer than k documents: {s.get('fused_short_of_k', '—')}.",
    ]
    out += query_fusion_lines(s.get("query_fusion_cost"))
    f = s.get("filtered")
    if f:
        sel = f["selectivity"]
        out.append(
            f"Filtered queries: {f['queries']} ({f['by_type']}); filters admit from {sel['chunks_in_filter_min']:,} "
            f"chunks (median {sel['chunks_in_filter_median']:,}); {sel['filters_under_k_docs']} admit fewer than k "
            "documents."
        )
    for key, label in (
        ("profile", "ingest (lexical)"),
        ("profile_bm25", "BM25 queries"),
        ("profile_fused", "fused queries"),
    ):
        src = _get(entry, "results", "trace", "trace_lex") if key == "profile" else s
        p = _get(src, key)
        if not p or not p.get("samples"):
            continue
        out += ["", f"TRACE profile, {label} (py-spy, {p['samples']:,} samples; % of samples, inclusive):", ""]
        out += [f"- {pct}% {fn}" for fn, pct in p["inclusive_pct"][:18]]
    return out


def query_fusion_lines(c: dict | None) -> list[str]:
    """The paired timing of fusion per query (scale.py `query_fusion_cost`), as a paragraph and a small table."""
    if not c:
        return []
    d, m, alone = c["difference_ms"], c["matched"], c["evidence_and_weights_alone"]
    text = [
        f"Fusion per query (`retrieval.query_weights`), fused {'+'.join(c['channels'])} with the query vector given: "
        f"{c['pairs']} pairs ({c['rounds']} passes over the queries), on and off in turn in one process, the order "
        f"alternating. Per-query difference on − off: p50 {_fmt(d['p50'])} ms"
    ]
    if "p50_ci95" in d:
        text.append(f" (95% bootstrap interval {_fmt(d['p50_ci95'][0])} to {_fmt(d['p50_ci95'][1])})")
    text.append(f"; p25 {_fmt(d['p25'])}, p75 {_fmt(d['p75'])}, mean {_fmt(d['mean'])}.")
    cd = c.get("cpu_difference_ms")
    if cd:
        text.append(
            f" CPU time of the process (all threads), per query, on − off: p50 {_fmt(cd['p50'])} ms (95% interval "
            f"{_fmt(cd['p50_ci95'][0])} to {_fmt(cd['p50_ci95'][1])}; p25 {_fmt(cd['p25'])}, p75 {_fmt(cd['p75'])})."
        )
    f = c.get("fastest_difference_ms")
    if f:
        text.append(
            f" Each side's fastest of its {c['rounds']} passes, per query, on − off: p50 {_fmt(f['p50'])} ms "
            f"(p25 {_fmt(f['p25'])}, p75 {_fmt(f['p75'])}; {f['queries']} queries)."
        )
    text.append(
        f" The evidence and the weights timed alone: p50 {_fmt(alone['p50_ms'])} ms, p95 {_fmt(alone['p95_ms'])} ms."
        f" Evidence read by {c['evidence_calls']['on']} of {c['searches_on'] // c['rounds']} 'on' searches (untimed "
        f"check pass), by {c['evidence_calls']['off']} 'off' ones; the weights moved in "
        f"{c['searches_with_weights_moved']} of {c['searches_on']} timed 'on' searches (BM25's best chunk matched "
        f"under the rule's `high` in {m['under_high']} of {m['n']} queries; matched p10 {_fmt(m['p10'])}, p50 "
        f"{_fmt(m['p50'])}); weights from: {c['weights_from']}."
    )
    return [
        "",
        "".join(text),
        "",
        "| query_weights | p50 (ms) | p95 (ms) | p99 (ms) | mean (ms) |",
        "|---|---:|---:|---:|---:|",
        *(
            f"| {label} | {_fmt(c[key]['p50_ms'])} | {_fmt(c[key]['p95_ms'])} | {_fmt(c[key]['p99_ms'])} "
            f"| {_fmt(c[key]['mean_ms'])} |"
            for key, label in (("on", "on"), ("off", "off"), ("cpu_on", "on, CPU time"), ("cpu_off", "off, CPU time"))
            if key in c
        ),
        "",
    ]


def plots(res: dict, base: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    terms = res["terms"]
    fig, ax = plt.subplots(1, 2, figsize=(11, 4.2))
    for name, t in (("source text", terms["source"]), ("generated corpus", terms["generated"])):
        xs, ys = zip(*t["curve"], strict=True)
        ax[0].loglog(xs, ys, label=f"{name} (β={t['heaps']['beta']})")
        r, f = zip(*t["rank_freq"], strict=True)
        ax[1].loglog(r, f, label=f"{name} (s={t['zipf_s']})")
    src = terms["source"]["heaps"]
    xs = [x for x, _ in terms["generated"]["curve"]]
    ax[0].loglog(xs, [src["K"] * x ** src["beta"] for x in xs], "k:", lw=1, label="source's Heaps fit, extended")
    ax[0].set(xlabel="tokens", ylabel="distinct words", title="Vocabulary growth (Heaps)")
    ax[1].set(xlabel="rank", ylabel="frequency", title="Rank-frequency (Zipf)")
    for a in ax:
        a.legend(fontsize=8)
        a.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(f"{base}_terms.png", dpi=110)
    plt.close(fig)

    sizes = res["sizes"]
    if not sizes:
        return
    fig, ax = plt.subplots(1, 3, figsize=(15, 4.2))
    for stack in LABEL:
        for i, (key, stat) in enumerate(
            (("bm25", "p50_ms"), ("fused_hybrid_given", "p50_ms"), ("fused_hybrid_given", "p99_ms"))
        ):
            pts = [(e["n_chunks"], _get(e, "results", stack, SEARCH[stack], "latency", key, stat)) for e in sizes]
            pts = [(x, y) for x, y in pts if y is not None]
            if pts:
                ax[i].loglog(*zip(*pts, strict=True), "o-", label=LABEL[stack])
            ax[i].set(xlabel="chunks", ylabel="ms", title=f"{key.replace('_given', ' (vector given)')} {stat[:3]}")
    for a in ax:
        a.legend(fontsize=8)
        a.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(f"{base}_latency.png", dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(1, 3, figsize=(15, 4.2))
    for stack in LABEL:
        role = BUILD[stack]
        key = "ingest_s" if stack == "trace" else "lexical_s"
        pts = [(e["n_chunks"], _get(e, "results", stack, role, key)) for e in sizes]
        pts = [(x, x / y) for x, y in pts if y]
        if pts:
            ax[0].loglog(*zip(*pts, strict=True), "o-", label=LABEL[stack])
        r2 = role
        if stack == "trace":
            r2 = (
                "trace_dense"
                if any(_get(e, "results", "trace", "trace_dense", "disk_mb") for e in sizes)
                else "trace_embed"
            )
        pts = [(e["n_chunks"], _get(e, "results", stack, r2, "rss_hwm_mb")) for e in sizes]
        pts = [(x, y) for x, y in pts if y]
        if pts:
            ax[1].loglog(*zip(*pts, strict=True), "o-", label=LABEL[stack])
        pts = [(e["n_chunks"], _get(e, "results", stack, r2, "disk_mb")) for e in sizes]
        pts = [(x, y) for x, y in pts if y]
        if pts:
            ax[2].loglog(*zip(*pts, strict=True), "o-", label=LABEL[stack])
    ax[0].set(xlabel="chunks", ylabel="chunks/s", title="Lexical ingest / index build throughput")
    ax[1].set(xlabel="chunks", ylabel="MiB", title="Peak RSS, ingest/build with vectors")
    ax[2].set(xlabel="chunks", ylabel="MiB", title="On disk, with vectors")
    for a in ax:
        a.legend(fontsize=8)
        a.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(f"{base}_ingest.png", dpi=110)
    plt.close(fig)
