"""One evaluation: run each named configuration (and peers) over a benchmark's queries, score them, break the
scores down by query group, compute the diagnostics, and write results.json, results.md, TREC runs and plots.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracerag.collection import Collection, IngestReport
from tracerag.config import Settings
from tracerag.errors import ConfigError
from tracerag.eval import plots
from tracerag.eval.agent_run import agent_all
from tracerag.eval.breakdown import groups_of, metrics_by_group
from tracerag.eval.datasets import Benchmark, load_benchmark
from tracerag.eval.diagnostics import decade_distribution, document_years, gold_recovery, pool_overlap, window_shares
from tracerag.eval.metrics import DEFAULT_METRICS, compare, evaluate
from tracerag.eval.peers import bm25s_run
from tracerag.eval.report import markdown_table, trails_dir, window_share_table, write_reports
from tracerag.eval.runner import (
    RunSpec,
    build_collection,
    load_run_config,
    run_specs,
    search_all,
    select_queries,
)
from tracerag.eval.selection_bench import is_selection, selection_benchmark, selection_markdown, selection_scores
from tracerag.eval.trec import read_run, write_run
from tracerag.llm import StructuredLLM, load_llm
from tracerag.retrieval import Retriever
from tracerag.retrieval.explain import fusion_summary

Run = dict[str, list[tuple[str, float]]]
PEERS: dict[str, Callable[[Benchmark, Sequence[str]], Run]] = {"bm25s": lambda b, q: bm25s_run(b, q)}
SINGLE_CHANNELS = ("bm25", "dense", "phrase")
AGENT_RUN = "agent"


def evaluate_runs(
    bench: Benchmark,
    collection: Collection | None,
    names: Sequence[str],
    specs: dict[str, RunSpec],
    query_ids: Sequence[str],
    out_dir: Path,
    *,
    progress: Callable[[str, int], Callable[[], None]] | None = None,
    extra: dict[str, Any] | None = None,
    llm: StructuredLLM | None = None,
    saved: Mapping[str, Run] | None = None,
) -> dict[str, Any]:
    """Runs in the order of `names`, then the `saved` runs (read from run files; the first of all is the baseline of
    the significance tests); returns the summary written to results.json, with `extra` (e.g. the ingest report)
    added. A run of several channels also leaves each channel's own ranking in `runs/channels/NAME.CHANNEL.trec`,
    for `tracerag fuse`. `progress(label, total)` returns a callback advanced once per query. `collection` may be
    None when every run is a peer's or saved."""
    qrels = {q: bench.qrels[q] for q in query_ids}
    runs, seconds, agent_stats = _make_runs(bench, collection, names, specs, query_ids, out_dir, progress, llm)
    for name, run in (saved or {}).items():
        runs[name] = {q: list(run.get(q, [])) for q in query_ids}

    results = {
        name: evaluate(qrels, run) | ({"seconds_per_query": seconds[name]} if name in seconds else {})
        for name, run in runs.items()
    }
    if agent_stats:
        results[AGENT_RUN] |= {f"agent_{key}": value for key, value in agent_stats.items()}
    first = next(iter(runs))
    # One query (a researcher's selection is one question) is one pair: no test can tell runs apart from it.
    pvalues = {
        name: {m: compare(qrels, runs[first], run, m) for m in DEFAULT_METRICS}
        for name, run in runs.items()
        if name != first and len(query_ids) > 1
    }
    groups = groups_of(bench, query_ids)
    by_group = {name: metrics_by_group(qrels, run, groups) for name, run in runs.items()}
    diagnostics = _diagnostics(bench, qrels, runs)
    _plot(bench, qrels, runs, groups, by_group, diagnostics, out_dir / "plots")

    fusion = Retriever(collection).fusion_plan().to_dict() if collection else None
    summary = {
        "benchmark": bench.name,
        "description": bench.description,
        "queries": len(query_ids),
        "documents": len(bench.documents),
        "collection": str(collection.path) if collection else None,
        # how the default fusion ("hybrid") weighed the channels on this collection, and why
        "fusion": fusion,
        "runs": results,
        "pvalues_vs_first": pvalues,
        "by_group": by_group,
        "diagnostics": diagnostics,
    } | (extra or {})
    table = _markdown(bench, len(query_ids), results, pvalues, by_group, diagnostics)
    if bench.nonrelevant:  # a researcher's selection: rejected documents are judged, undecided ones are not
        against = {name: selection_scores(bench, run, query_ids) for name, run in runs.items()}
        summary["selection"] = against
        table += selection_markdown(against)
    if fusion:
        table += f"\nDefault fusion (`hybrid`): {fusion_summary(fusion)}.\n"
    if agent_stats:
        table += _agent_markdown(results[AGENT_RUN], llm)
    write_reports(out_dir, summary, table)
    return summary


def _make_runs(
    bench: Benchmark,
    collection: Collection | None,
    names: Sequence[str],
    specs: dict[str, RunSpec],
    query_ids: Sequence[str],
    out_dir: Path,
    progress: Callable[[str, int], Callable[[], None]] | None,
    llm: StructuredLLM | None,
) -> tuple[dict[str, Run], dict[str, float], dict[str, float]]:
    """Each run named, written to `runs/NAME.trec`: the runs, their seconds per query, the agent run's figures."""
    runs: dict[str, Run] = {}
    seconds: dict[str, float] = {}
    agent_stats: dict[str, float] = {}
    for name in names:
        start = time.perf_counter()
        tick = progress(f"run {name}", len(query_ids)) if progress and name not in PEERS else None
        if name in PEERS:
            runs[name] = PEERS[name](bench, query_ids)
        elif collection is None:
            raise ConfigError(f"run {name!r} needs the benchmark's collection")
        elif name == AGENT_RUN:
            runs[name], agent_stats = agent_all(collection, bench, query_ids, llm, trails_dir(out_dir), progress=tick)
        else:
            runs[name] = _search_run(collection, bench, query_ids, specs[name], out_dir, tick, llm)
        seconds[name] = (time.perf_counter() - start) / len(query_ids)
        write_run(out_dir / "runs" / f"{name}.trec", runs[name], name)
    return runs, seconds, agent_stats


def _search_run(
    collection: Collection,
    bench: Benchmark,
    query_ids: Sequence[str],
    spec: RunSpec,
    out_dir: Path,
    tick: Callable[[], None] | None,
    llm: StructuredLLM | None,
) -> Run:
    """One search run over the queries; a run of several channels also leaves each channel's own ranking in
    `runs/channels/NAME.CHANNEL.trec`."""
    by_channel: dict[str, Run] = {}
    several = len(spec.channels) > 1
    run = search_all(
        collection,
        bench,
        query_ids,
        spec,
        progress=tick,
        channel_runs=by_channel if several else None,
        llm=llm,
    )
    for channel, channel_run in by_channel.items():
        if any(channel_run.values()):  # a channel that never fired (dense without vectors) leaves no file
            path = out_dir / "runs" / "channels" / f"{spec.name}.{channel}.trec"
            write_run(path, channel_run, f"{spec.name}.{channel}")
    return run


def _plot(
    bench: Benchmark,
    qrels: dict,
    runs: dict[str, Run],
    groups: dict[str, Any],
    by_group: dict[str, Any],
    diagnostics: dict[str, Any],
    plot_dir: Path,
) -> None:
    """The recall curves, R@10 by each group of more than one value, and the top-10 documents by decade."""
    plots.recall_curves(qrels, runs, plot_dir / "recall_at_k.png", title=f"{bench.name}: recall at k")
    for group, values in groups.items():
        if len(values) > 1:
            bars = {
                v: {name: by_group[name][group][v]["R@10"] for name in runs if v in by_group[name][group]}
                for v in values
            }
            plots.group_bars(bars, "R@10", plot_dir / f"r10_by_{group}.png", f"{bench.name}: R@10 by {group}")
    if "decades" in diagnostics:
        plots.decade_histogram(
            diagnostics["decades"], plot_dir / "decades.png", f"{bench.name}: top-10 documents by decade"
        )


def _diagnostics(bench: Benchmark, qrels: dict, runs: dict[str, Run]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "bm25" in runs and "dense" in runs:
        out["bm25_dense_top20_jaccard"] = pool_overlap(runs["bm25"], runs["dense"], depth=20)
    singles = {name: runs[name] for name in SINGLE_CHANNELS if name in runs}
    if "hybrid" in runs and singles:
        out["gold_recovery_at_10"] = gold_recovery(qrels, runs["hybrid"], singles, k=10)
    years = document_years(bench.documents)
    if any(y is not None for y in years.values()):
        out["decades"] = decade_distribution(runs, years, k=10)
        out["time_windows"] = window_shares(runs, qrels, years, k=10)
    return out


def _markdown(
    bench: Benchmark,
    n_queries: int,
    results: dict[str, dict[str, float]],
    pvalues: dict[str, dict[str, float]],
    by_group: dict[str, dict[str, dict[str, dict[str, float]]]],  # run -> metrics_by_group
    diagnostics: dict[str, Any],
) -> str:
    lines = [f"# {bench.name}: {n_queries} queries, {len(bench.documents)} documents", "", bench.description, ""]
    lines.append(markdown_table(results, pvalues, list(DEFAULT_METRICS)))
    first_run = next(iter(by_group))
    for group, values in by_group[first_run].items():
        if len(values) < 2:
            continue
        lines += [
            "",
            f"## R@10 by {group}",
            "",
            "| " + group + " | n | " + " | ".join(by_group) + " |",
            "|---|---:|" + "---:|" * len(by_group),
        ]
        for value, metrics in values.items():
            cells = [f"{by_group[r][group].get(value, {}).get('R@10', float('nan')):.4f}" for r in by_group]
            lines.append(f"| {value} | {metrics['n']} | " + " | ".join(cells) + " |")
    if "bm25_dense_top20_jaccard" in diagnostics:
        lines += [
            "",
            f"Jaccard overlap of the bm25 and dense top-20 pools: {diagnostics['bm25_dense_top20_jaccard']:.3f}",
        ]
    if "time_windows" in diagnostics:
        lines += ["", window_share_table(diagnostics["time_windows"]).rstrip("\n")]
    if "gold_recovery_at_10" in diagnostics:
        g = diagnostics["gold_recovery_at_10"]
        lines += [
            "",
            f"Gold documents in the top 10: hybrid {g['fused']:.3f}, best single channel "
            f"({g['best_channel']}) {g['best_channel_share']:.3f}, found by hybrid beyond it {g['beyond_best']:.3f}, "
            f"lost by fusion {g['lost']:.3f}.",
        ]
    return "\n".join(lines) + "\n"


def _agent_markdown(result: dict[str, float], llm: StructuredLLM | None) -> str:
    model = f"{llm.name}:{llm.model}" if llm else "none (hybrid warm start only)"
    rows = [
        ("model", model),
        ("questions completed by the agent", f"{result['agent_completed']:.0%}"),
        ("accepted documents per question", f"{result['agent_accepted']:.2f}"),
        ("precision of the accepted set", f"{result['agent_accepted_precision']:.3f}"),
        ("recall of the accepted set", f"{result['agent_accepted_recall']:.3f}"),
        ("LLM calls per question", f"{result['agent_llm_calls']:.1f} ({result['agent_failed_calls']:.1f} unusable)"),
        ("tokens per question", f"{result['agent_tokens']:.0f}"),
        ("cost per question (USD)", f"{result['agent_cost_usd']:.4f}"),
        ("seconds per question", f"{result['agent_latency_s']:.1f}"),
    ]
    return "\n## Agent\n\n| | |\n|---|---|\n" + "\n".join(f"| {a} | {b} |" for a, b in rows) + "\n"


@dataclass(frozen=True)
class Evaluation:
    """What `run_evaluation` did: the summary written to results.json, the queries scored, and how many agent
    runs ended failed or truncated (scored with their fallback ranking)."""

    summary: dict[str, Any]
    queries: int
    agent_ended_early: int


def run_evaluation(
    benchmark: str | Path,
    settings: Settings,
    names: Sequence[str],
    out_dir: Path,
    *,
    run_config: Path | None = None,
    run_files: Mapping[str, Path] | None = None,
    limit: int | None = None,
    sample: int | None = None,
    seed: int = 0,
    dense: bool = True,
    collections: Path | None = None,
    collection: Path | None = None,
    ingest_progress: Callable[[str, int], Callable[[int], None]] | None = None,
    progress: Callable[[str, int], Callable[[], None]] | None = None,
    notify: Callable[[str], None] | None = None,
) -> Evaluation:
    """`tracerag eval` as one call: the runs named (checked, with those of `run_config`, before anything runs),
    the model of the agent run from `settings.llm` (loaded once; without one the agent run is its hybrid warm
    start), the benchmark's collection built under `collections` (default: the cache) or reused, then
    `evaluate_runs` into `out_dir`. `ingest_progress(label, documents)` returns a callback told the documents
    ingested so far, and `progress(label, total)` one advanced once per query; `notify` is told of
    what the user may not expect (no model for the agent run, dense runs without vectors). `run_files` (name →
    TREC run file, `--run-file NAME=PATH`) are scored after the runs named, with the same metrics and tests; when
    every run is a peer's or a file, no collection is built. A `selection:QUESTION` benchmark is scored on
    `collection`, the researcher's own, which is searched as it is (`_evaluate_selection`)."""
    say = notify or (lambda message: None)
    names = _checked_names(names, run_files)
    saved = {name: _read_run_file(name, path) for name, path in (run_files or {}).items()}
    configured = load_run_config(run_config) if run_config else {}
    specs = {s.name: s for s in run_specs([n for n in names if n not in PEERS and n != AGENT_RUN], configured)}
    model = _model(settings, names, specs, say)
    if is_selection(benchmark):
        return _evaluate_selection(
            str(benchmark), settings, collection, names, specs, out_dir, saved, model, limit, sample, seed, progress
        )
    bench = load_benchmark(benchmark, settings.datasets)
    query_ids = select_queries(bench, limit=limit, sample=sample, seed=seed)
    if not query_ids:
        raise ConfigError(f"{bench.name}: no judged query selected")
    _check_saved(bench, saved, run_files or {})
    if all(name in PEERS for name in names):
        summary = evaluate_runs(bench, None, names, specs, query_ids, out_dir, saved=saved)
        return Evaluation(summary, len(query_ids), 0)
    col, report = _collection(bench, settings, specs, collections, dense, ingest_progress, notify)
    with col:
        if any("dense" in s.channels for s in specs.values()) and col.store.count_chunks(without_vectors=True):
            if dense:
                raise ConfigError(f"{col.path} has chunks without vectors: run `tracerag embed -c {col.path}` first")
            say("--no-dense: runs that name the dense channel run without it")
        extra = {"ingest": report.to_dict() | {"errors": len(report.skipped)}}
        summary = evaluate_runs(
            bench, col, names, specs, query_ids, out_dir, progress=progress, extra=extra, llm=model, saved=saved
        )
    ended_early = round(summary["runs"].get(AGENT_RUN, {}).get("agent_ended_early", 0.0) * len(query_ids))
    return Evaluation(summary, len(query_ids), ended_early)


def _checked_names(names: Sequence[str], run_files: Mapping[str, Path] | None) -> list[str]:
    """The runs named, once each in their order; refused when there is none to score, or when a run file takes a
    run's name."""
    names = list(dict.fromkeys(n.strip() for n in names if n.strip()))
    if not names and not run_files:
        raise ConfigError("--runs names no run (and no --run-file is given)")
    clash = sorted(set(names) & set(run_files or {}))
    if clash:
        raise ConfigError(f"--run-file names {clash} are also in --runs: give the file another name")
    return names


def _model(
    settings: Settings, names: Sequence[str], specs: dict[str, RunSpec], say: Callable[[str], None]
) -> StructuredLLM | None:
    """The model of the agent run and of the runs that expand by a model (loaded once), when one of them runs."""
    if not (AGENT_RUN in names or any({"llm", "translate"} & set(spec.expand) for spec in specs.values())):
        return None
    model = load_llm(settings)
    if model is None and AGENT_RUN in names:
        say("agent run without a model (--llm or llm.model): it is the hybrid warm start only")
    return model


def _check_saved(bench: Benchmark, saved: Mapping[str, Run], run_files: Mapping[str, Path]) -> None:
    """Refuse a run file none of whose queries is one of the benchmark's (a run of another benchmark)."""
    for name, run in saved.items():
        if not set(run) & set(bench.queries):
            raise ConfigError(
                f"--run-file {name}={run_files and run_files[name]}: none of its queries is a query of {bench.name} "
                "(a run of another benchmark?)"
            )


def _collection(
    bench: Benchmark,
    settings: Settings,
    specs: dict[str, RunSpec],
    collections: Path | None,
    dense: bool,
    ingest_progress: Callable[[str, int], Callable[[int], None]] | None,
    notify: Callable[[str], None] | None,
) -> tuple[Collection, IngestReport]:
    """The benchmark's collection, built under `collections` (default: the cache) or reused; the ingest and the
    embedding each on a bar of its own."""
    root = collections or settings.cache_dir / "eval"
    built = ingest_progress(f"ingest {bench.name}", len(bench.documents)) if ingest_progress else None
    embedding: list[Callable[[int], None]] = []

    def embedded(done: int, total: int) -> None:  # a bar of its own, made when embedding starts
        if ingest_progress and not embedding:
            embedding.append(ingest_progress(f"embed {bench.name} (chunks)", total))
        for tick in embedding:
            tick(done)

    return build_collection(
        bench,
        root,
        settings,
        dense=dense,
        progress=(lambda docs, chunks: built(docs)) if built else None,
        embed_progress=embedded,
        entities=any("entity" in s.channels for s in specs.values()),
        notify=notify,
    )


def _evaluate_selection(
    benchmark: str,
    settings: Settings,
    collection: Path | None,
    names: Sequence[str],
    specs: dict[str, RunSpec],
    out_dir: Path,
    saved: Mapping[str, Run],
    model: StructuredLLM | None,
    limit: int | None,
    sample: int | None,
    seed: int,
    progress: Callable[[str, int], Callable[[], None]] | None,
) -> Evaluation:
    """Every run scored against a researcher's selection, on the collection the selection was made in."""
    if collection is None:
        raise ConfigError(f"--benchmark {benchmark} scores runs on the researcher's collection: pass -c DIR")
    if any(name in PEERS for name in names):
        raise ConfigError(f"the peer runs ({', '.join(PEERS)}) index a benchmark's corpus, not a collection")
    with Collection.open(collection, settings, mode="read") as col:
        bench = selection_benchmark(benchmark, col, settings)
        query_ids = select_queries(bench, limit=limit, sample=sample, seed=seed)
        summary = evaluate_runs(bench, col, names, specs, query_ids, out_dir, progress=progress, llm=model, saved=saved)
    ended_early = round(summary["runs"].get(AGENT_RUN, {}).get("agent_ended_early", 0.0) * len(query_ids))
    return Evaluation(summary, len(query_ids), ended_early)


def _read_run_file(name: str, path: Path) -> Run:
    """A saved run to score; its name is a run name like any other (no whitespace, as a TREC tag)."""
    if not name or any(ch.isspace() for ch in name):
        raise ConfigError(f"--run-file {name}={path}: the name must be non-empty and without spaces")
    if not Path(path).is_file():
        raise ConfigError(f"--run-file {name}={path}: no such file")
    return read_run(path)
