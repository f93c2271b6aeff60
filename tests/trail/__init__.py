"""Shared material for the trail tests: a small real collection (three HIPE-2022 documents plus three written
here, one of them hostile to terminal markup) and a realistic trail of a run over it, with every kind of event."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.ingest import read_documents
from tracerag.model import Document, chunk_id
from tracerag.trail import KINDS, JsonlWriter, Trail, trail_path

QUESTION = "Which newspapers reported fires, panics or disasters, and what did they say?"
MISSING_ID = "gone-42"  # ranked by the run, since removed from the collection

# The HIPE files the real documents come from: a French daily, a British weekly (its place and long title),
# and a German paper whose pages are known.
HIPE_FILES = (
    "HIPE-2022-v2.1-hipe2020-dev-fr.tsv",
    "HIPE-2022-v2.1-topres19th-dev-en.tsv",
    "HIPE-2022-v2.1-sonar-dev-de.tsv",
)

HOSTILE_REASON = "[bold]Mentions the fire[/] [/] directly [red]twice[/red] :thumbs_up: \\"
HOSTILE_TEXT = (
    "[bold]INCENDIE[/bold] au théâtre [/]\n"
    "Le feu a pris hier soir [link=https://evil.example]ici[/link] :thumbs_up: et la foule s'est enfuie.\n"
    "Fin de la dépêche."
)

IN_CODE_DOCUMENTS = [
    Document(
        id="lpj-1881-a",
        text="Le Petit Journal annonce l'ouverture du\nSalon de 1881, avec « de grands tableaux ».\nSuite page 2.",
        corpus="demo/lpj",
        title='Le Salon de 1881\n(compte rendu "officiel")',
        date="1881",
        language="fr",
        source={"publication": "Le Petit Journal", "url": "https://gallica.bnf.fr/ark:/12148/bpt6k1", "page": 2},
    ),
    Document(
        id="hostile-1",
        text=HOSTILE_TEXT,
        corpus="demo/hostile",
        date="1881-05",
        language="fr",
        source={"file": "hostile.txt", "url": "https://example.org/doc?a=1&b=[2]"},
    ),
    Document(
        id="gaz-1881-05-27",
        text="Gazette du 27 mai 1881.\r\nUn violent incendie a détruit\tles entrepôts du port;\u2028les pompiers...",
        corpus="demo/gazette",
        date="1881-05-27",
        language="fr",
        source={"publication": "Gazette de Lausanne", "place_publication": "Lausanne"},
    ),
]


@dataclass
class SmallCollection:
    path: Path
    documents: dict[str, Document]  # as the store gives them back
    hipe_ids: list[str]


_CACHE: dict[str, SmallCollection] = {}


def small_collection(tmp_path_factory, datasets_dir: Path) -> SmallCollection:
    """Built once per test session (about 2 s), closed at once: tests read it, never change it."""
    if "col" not in _CACHE:
        hipe = [
            next(doc for doc in itertools.islice(read_documents(datasets_dir / "hipe2022" / name, "hipe"), 5))
            for name in HIPE_FILES
        ]
        path = tmp_path_factory.mktemp("trail") / "collection"
        col = Collection.open(path, load_settings(), mode="write", create=True)
        try:
            col.ingest(iter(hipe + IN_CODE_DOCUMENTS), dense=False)
            ids = [d.id for d in hipe + IN_CODE_DOCUMENTS]
            documents = col.store.get_documents([*ids, MISSING_ID])
        finally:
            col.close()
        assert MISSING_ID not in documents and set(documents) == set(ids)
        _CACHE["col"] = SmallCollection(path, documents, [d.id for d in hipe])
    return _CACHE["col"]


def span_of(doc: Document, length: int = 70, needle: str | None = None) -> tuple[int, int]:
    """The span of `needle` in the document, or of `length` characters from its first line break (so the quote
    crosses a line)."""
    if needle is not None:
        start = doc.text.index(needle)
        return start, start + len(needle)
    start = max(doc.text.find("\n") - length // 2, 0)
    return start, min(start + length, len(doc.text))


@dataclass
class TrailCase:
    path: Path
    run_id: str
    emitted: int
    spans: dict[str, tuple[int, int]]
    ranking: list[str]  # doc ids in rank order


def write_trail(collection: SmallCollection) -> TrailCase:
    """A realistic agent run over `collection`: plan, three sub-questions (the third from a re-plan), searches
    with channels and fusion, verdicts, a held chunk promoted on re-evaluation, guards, LLM calls (one failed), a
    re-rank and the result. Written where a run's trail lives: COLLECTION/trails/{run_id}.jsonl."""
    docs = collection.documents
    exp, topres, sonar = collection.hipe_ids
    spans = {
        exp: span_of(docs[exp]),
        topres: span_of(docs[topres], 50),
        "hostile-1": span_of(docs["hostile-1"], needle="[bold]INCENDIE[/bold] au théâtre [/]\nLe feu"),
        "lpj-1881-a": span_of(docs["lpj-1881-a"], needle="Salon de 1881, avec « de grands tableaux »"),
        "gaz-1881-05-27": span_of(docs["gaz-1881-05-27"], needle="incendie a détruit\tles entrepôts du port;\u2028"),
        MISSING_ID: (10, 42),
    }
    trail = Trail()
    path = Path(collection.path) / "trails" / f"{trail.run_id}.jsonl"
    writer = JsonlWriter(path)
    trail.listeners.append(writer)
    emit = trail.emit
    plan = [
        {"question": "Fires reported in French newspapers", "target_corpus": "hipe2020/exp", "key_entities": ["Paris"]},
        {"question": "Disasters in British local papers", "target_corpus": "topres19th/*", "key_entities": []},
        {"question": "Fires in Swiss newspapers", "target_corpus": "letemps/*", "key_entities": []},
    ]
    try:
        emit(
            "run",
            question=QUESTION,
            collection=str(collection.path),
            k=10,
            config={"agent": {"max_steps": 4}, "retrieval": {"fusion": "rrf", "rrf_k": 60}},
            llm={"provider": "replay", "model": "gpt-4o-mini"},
            versions={"tracerag": "0.1.0", "python": "3.11"},
        )
        emit(
            "llm_call",
            purpose="plan",
            provider="replay",
            model="gpt-4o-mini",
            messages=[{"role": "system", "content": "Plan."}, {"role": "user", "content": QUESTION}],
            response='{"analysis": "two angles", "sub_questions": [...]}',
            parsed={"analysis": "two angles"},
            attempts=[{"text": "{...}"}],
            prompt_tokens=420,
            completion_tokens=96,
            latency_s=1.25,
            cost_usd=0.00012,
        )
        emit("plan", analysis="Two angles: French dailies and British weeklies.", sub_questions=plan, dates=["1888"])
        # sub-question 0
        emit(
            "search",
            sq=0,
            step=1,
            tool="hybrid_search",
            args={"query": "incendie panique", "k": 10},
            filter={"corpora": ["hipe2020/exp"], "date_from": "1888-01-01", "date_to": None},
            results=12,
            new=12,
        )
        emit("channel", sq=0, step=1, channel="lexical", query="incendie panique", ranking=[(exp, f"{exp}#0", 7.5)])
        emit(
            "channel",
            sq=0,
            step=1,
            channel="dense",
            query="incendie panique",
            ranking=[("hostile-1", "hostile-1#0", 0.81)],
        )
        emit(
            "fusion",
            sq=0,
            step=1,
            method="rrf",
            ranking=[
                {"doc_id": exp, "chunk_id": chunk_id(exp, 0), "score": 0.0164, "lexical": 1, "dense": None},
                {"doc_id": "hostile-1", "chunk_id": "hostile-1#0", "score": 0.0161, "lexical": None, "dense": 1},
            ],
        )
        emit(
            "review",
            sq=0,
            step=1,
            chunks=[(exp, chunk_id(exp, 0)), ("hostile-1", "hostile-1#0"), (sonar, f"{sonar}#0")],
        )
        emit(
            "llm_call",
            sq=0,
            purpose="review",
            provider="replay",
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": docs["hostile-1"].text}],
            response='{"verdicts": [{"verdict": "hold", "reason": "[bold]not markup[/]"}]}',
            parsed={"verdicts": []},
            attempts=[{"text": "{bad"}, {"text": "{...}"}],
            prompt_tokens=1800,
            completion_tokens=210,
            latency_s=2.5,
            cost_usd=0.0004,
        )
        emit(
            "verdict",
            sq=0,
            step=1,
            doc_id=exp,
            chunk_id=chunk_id(exp, 0),
            verdict="accept",
            reason="Reports the panic of the elephants during the parade.",
            span=spans[exp],
        )
        emit(
            "verdict",
            sq=0,
            step=1,
            doc_id="hostile-1",
            chunk_id="hostile-1#0",
            verdict="hold",
            reason=HOSTILE_REASON,
            span=spans["hostile-1"],
        )
        emit(
            "verdict",
            sq=0,
            step=1,
            doc_id=sonar,
            chunk_id=f"{sonar}#0",
            verdict="reject",
            reason="A masthead, no report.",
        )
        emit("memory", sq=0, step=1, memory="seen", delta={"added": [exp, "hostile-1", sonar]})
        emit(
            "search",
            sq=0,
            step=2,
            tool="hybrid_search",
            args={"query": "incendie panique"},
            filter={},
            results=0,
            skipped="the same query was already run",
        )
        emit("guard", sq=0, step=2, guard="repeat_query", message="Query already run in this sub-question; skipped.")
        # after each sub-question (as the agent does): its held chunks re-evaluated, a briefing, a re-plan of the
        # sub-questions still to come (`before`/`after` list only those: sq 0 is done, 1 and 2 remain)
        emit(
            "reeval",
            sq=0,
            doc_id="hostile-1",
            chunk_id="hostile-1#0",
            verdict="accept",
            reason=HOSTILE_REASON,
            promoted_from_hold=True,
            span=spans["hostile-1"],
        )
        emit(
            "briefing",
            sq=0,
            summary="Fires in Paris theatres; [italic]no British fire yet[/italic].",
            key_facts=["A theatre fire in 1881"],
            confirmed_dates=["1881-05"],
            confirmed_entities=["Paris"],
            gaps=["British reports"],
            search_hints=["search 'conflagration'"],
        )
        emit("replan", sq=0, before=plan[1:], after=plan[1:])
        # sub-question 1
        emit(
            "search",
            sq=1,
            step=1,
            tool="keyword_search",
            args={"terms": ["fire", "Poole"]},
            filter={},
            results=3,
            new=3,
        )
        emit(
            "verdict",
            sq=1,
            step=1,
            doc_id=topres,
            chunk_id=f"{topres}#0",
            verdict="accept",
            reason="A local notice from Poole.",
            span=spans[topres],
        )
        emit(
            "verdict",
            sq=1,
            step=1,
            doc_id=exp,
            chunk_id=chunk_id(exp, 0),
            verdict="accept",
            reason="Also a disaster report, seen from abroad.",
            span=spans[exp],
        )
        emit("guard", sq=1, step=2, guard="budget", message="80% of the token budget spent.")
        emit(
            "briefing",
            sq=1,
            summary="A Poole notice; Lausanne docks burnt in 1881.",
            confirmed_entities=["Lausanne"],
            gaps=["British reports"],
        )
        emit(
            "replan",
            sq=1,
            before=plan[2:],
            after=[{"question": "Fires of 1881 in the Swiss and French press", "target_corpus": "demo/*"}],
        )
        # sub-question 2, from the re-plan
        emit(
            "search",
            sq=2,
            step=1,
            tool="date_search",
            args={"date": "1881"},
            filter={"date_from": "1881"},
            results=4,
            new=3,
        )
        for doc_id, reason in (
            ("lpj-1881-a", "The Salon of 1881, a dated event."),
            ("gaz-1881-05-27", "A fire destroying the port's warehouses."),
            (MISSING_ID, "An account of the fire, since removed."),
        ):
            emit(
                "verdict",
                sq=2,
                step=1,
                doc_id=doc_id,
                chunk_id=f"{doc_id}#0",
                verdict="accept",
                reason=reason,
                span=spans[doc_id],
            )
        emit(
            "llm_call",
            sq=2,
            purpose="review",
            provider="replay",
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "..."}],
            response="not json at all",
            parsed=None,
            attempts=[{"text": "not json"}, {"text": "not json at all"}],
            prompt_tokens=900,
            completion_tokens=12,
            latency_s=0.75,
            cost_usd=0.0001,
            error="no valid JSON after 2 attempts",
        )
        emit("rerank", count=2, method="cross-encoder", order=[(exp, 0.92)])
        emit(
            "rerank",
            count=1,
            method="cross-encoder",
            order=[(topres, 0.8), ("hostile-1", 0.7), ("lpj-1881-a", 0.6), ("gaz-1881-05-27", 0.5), (MISSING_ID, 0.4)],
        )
        ranking = [
            dict(
                doc_id=exp,
                accepted_by=[0, 1],
                reasons=[
                    "Reports the panic of the elephants during the parade.",
                    "Also a disaster report, seen from abroad.",
                ],
            ),
            dict(doc_id=topres, accepted_by=[1], reasons=["A local notice from Poole."]),
            dict(doc_id="hostile-1", accepted_by=[0], reasons=[HOSTILE_REASON], promoted_from_hold=True),
            dict(doc_id="lpj-1881-a", accepted_by=[2], reasons=["The Salon of 1881, a dated event."]),
            dict(doc_id="gaz-1881-05-27", accepted_by=[2], reasons=["A fire destroying the port's warehouses."]),
            dict(doc_id=MISSING_ID, accepted_by=[2], reasons=["An account of the fire, since removed."]),
            dict(doc_id=sonar, origin="warm_start"),
        ]
        ranked = []
        for rank, item in enumerate(ranking, start=1):
            doc_id = item["doc_id"]
            origin = item.pop("origin", "agent")
            ranked.append(
                {
                    "rank": rank,
                    "chunk_id": f"{doc_id}#0",
                    "origin": origin,
                    "span": spans.get(doc_id) if origin == "agent" else None,
                    "score": round(1 / (rank + 1), 4),
                    **item,
                }
            )
        emit(
            "result",
            status="complete",
            ranking=ranked,
            accepted=[exp, topres, "hostile-1", "lpj-1881-a", "gaz-1881-05-27", MISSING_ID],
            held=[],
            rejected=[sonar],
            totals={
                "llm_calls": 3.0,
                "failed_calls": 1.0,
                "prompt_tokens": 3120.0,
                "completion_tokens": 318.0,
                "cost_usd": 0.00062,
                "llm_latency_s": 4.5,
                "wall_s": 12.345,
            },
        )
    finally:
        writer.close()
    assert trail_path(collection.path, trail.run_id) == path
    return TrailCase(path, trail.run_id, trail.seq, spans, [r["doc_id"] for r in ranked])


# The agent's kinds: catalog conversations have their own (tests/catalog/test_assistant.py).
ALL_KINDS = {k for k in KINDS if not k.startswith("catalog_")}
