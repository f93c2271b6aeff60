"""`tracerag calibrate`: measure the channels on the collection's own pseudo-queries and store their weights
(ingest and embed do it too, when what the weights describe changed: `calibration.refresh`)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from tracerag.cli.app import CollectionOpt, ConfigOpt, WaitOpt, app, data_text, friendly, out, write_json
from tracerag.cli.views import calibration_progress
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.retrieval import Retriever, calibration


@app.command()
@friendly
def calibrate(
    collection: CollectionOpt,
    queries: Annotated[
        int, typer.Option("--queries", min=10, help="Pseudo-queries of each kind (span, keywords, phrase).")
    ] = calibration.QUERIES_PER_KIND,
    seed: Annotated[int, typer.Option(help="Seed of the documents drawn.")] = calibration.SEED,
    json_out: Annotated[bool, typer.Option("--json", help="Print the calibration as JSON.")] = False,
    wait: WaitOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Weigh each channel by how well it finds the collection's own pseudo-queries (no labels needed); searches
    with retrieval.fusion = "calibrated" (the default) use the weights. Ingest and embed run it when needed."""
    with Collection.open(collection, load_settings(config), mode="write", wait=wait) as col:
        with calibration_progress() as update:
            found = calibration.calibrate(Retriever(col), per_kind=queries, seed=seed, progress=update)
        if found is None:
            message = f"fewer than {calibration.MIN_DOCUMENTS} documents: not calibrated, every channel weighs 1"
            if json_out:
                write_json({"calibrated": False, "why": message})
            else:
                out.print(message)
            return
        path = calibration.save(col, found)
    if json_out:
        write_json({"calibrated": True, "path": str(path), **calibration.as_dict(found)})
        return
    print_calibration(found)
    out.print(data_text(f"saved to {path}"))


def print_calibration(found: calibration.Calibration) -> None:
    total = sum(found.queries.values())
    kinds = ", ".join(f"{n} {kind}" for kind, n in found.queries.items())
    out.print(f"{total} pseudo-queries ({kinds}) in {found.seconds:.1f} s ({total / max(found.seconds, 1e-9):.0f}/s)")
    table = Table("channel", "acted on", "pseudo-MRR", "best channel there", "weight")
    for channel, weight in found.weights.items():
        table.add_row(
            channel,
            str(found.acted[channel]),
            f"{found.mrr[channel]:.3f}",
            f"{found.reference[channel]:.3f}",
            f"[bold]{weight:.2f}[/bold]",
        )
    out.print(table)
    fused = ", ".join(f"{name} {value:.3f}" for name, value in found.fused.items())
    out.print(data_text(f"fused pseudo-MRR: {fused}"))
