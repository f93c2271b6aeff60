"""`tracerag expand`: a word's neighbours in the collection's own vocabulary model, with their corpus
frequencies, for the researcher to pick the ones to add (`tracerag search --add WORD`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tracerag.cli.app import (
    CollectionOpt,
    ConfigOpt,
    WaitOpt,
    app,
    data_text,
    err,
    friendly,
    out,
    print_table,
    write_json,
)
from tracerag.errors import TraceError


@app.command()
@friendly
def expand(
    words: Annotated[list[str] | None, typer.Argument(help="Words, each looked up on its own.")] = None,
    collection: CollectionOpt = Path("."),
    n: Annotated[int | None, typer.Option("--n", "-n", min=1, help="Neighbours per word.")] = None,
    train: Annotated[
        bool, typer.Option("--train", help="Train (or retrain) the collection's vocabulary model first.")
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    wait: WaitOpt = False,
    config: ConfigOpt = None,
) -> None:
    """The nearest words to each word in a fastText model trained on the collection itself, with how often each
    occurs in it: the period's vocabulary, spellings and OCR misreadings of the word."""
    from rich.table import Table

    from tracerag.collection import Collection
    from tracerag.config import load_settings
    from tracerag.retrieval import vocabulary as vocab

    settings = load_settings(config)
    if not words and not train:
        raise TraceError("expand: give the words to expand, or --train")
    if train:
        with Collection.open(collection, settings, mode="write", wait=wait) as col:
            with err.status("training the vocabulary model…") as status:
                trained = vocab.train_collection(
                    col, progress=lambda done: status.update(f"training the vocabulary model… {done:,} documents")
                )
            i = trained.info
            err.print(
                data_text(
                    f"trained in {i.seconds:.1f} s on {i.documents:,} documents: {i.tokens:,} words, "
                    f"{i.words:,} kept ({i.tokens / max(i.seconds, 1e-9):,.0f} words/s)"
                )
            )
    if not words:
        return
    with Collection.open(collection, settings, mode="read", wait=wait) as col:
        model = vocab.load(vocab.folder_of(col))
        documents = col.store.count_documents()
    count = n or settings.expansion.neighbours
    asked = [w for given in words for w in (vocab.words(given) or [given.strip().lower()]) if w]
    found = {w: model.neighbours(w, count) for w in dict.fromkeys(asked)}
    stale = model.info.staleness(documents)
    if json_out:
        write_json(
            {
                "model": model.summary(documents),
                "stale": stale,
                "words": {
                    w: {"count": model.count(w), "known": w in model, "neighbours": [vars(nb) for nb in nbs]}
                    for w, nbs in found.items()
                },
            }
        )
        return
    err.print(data_text(model.summary(documents), "yellow" if stale else "dim"))
    for w, nbs in found.items():
        seen = model.count(w)
        head = f"{w}: {seen:,} occurrences" if seen else f"{w}: not in the collection (placed by its letters)"
        if not nbs:
            out.print(data_text(f"{w}: no neighbours (none of its letter groups is known)"))
            continue
        table = Table(title=data_text(head), title_justify="left", show_edge=False)
        table.add_column("neighbour")
        table.add_column("similarity", justify="right")
        table.add_column("occurrences", justify="right")
        for nb in nbs:
            table.add_row(data_text(nb.word), f"{nb.similarity:.2f}", f"{nb.count:,}")
        print_table(table)
    out.print(data_text('add the ones you want: tracerag search "QUERY" --add WORD --add WORD', "dim"))
