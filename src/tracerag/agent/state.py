"""What the agent knows while it runs: every chunk verdict (the ledger) and a sub-question's memory."""

from __future__ import annotations

from dataclasses import dataclass

from tracerag.agent.schemas import MemoryDelta
from tracerag.model import Verdict


@dataclass
class Judgement:
    """A chunk's verdict in this run: by which sub-question, with its evidence span, and whether re-evaluation
    promoted it from a hold."""

    doc_id: str
    chunk_id: str
    verdict: Verdict
    reason: str
    sq: int
    span: tuple[int, int] | None = None
    promoted_from_hold: bool = False


class Ledger:
    """Every verdict of the run, by chunk; a document's standing derives from its chunks' verdicts.

    Accepting a chunk accepts its document; rejecting a chunk rejects only that chunk, so the document can
    still be found and judged through another of its chunks.
    """

    def __init__(self) -> None:
        self.by_chunk: dict[str, Judgement] = {}
        self.accepted_by: dict[str, dict[int, Judgement]] = {}  # doc -> sub-question -> the accepting judgement
        self.order: list[str] = []  # documents in the order they were first judged

    def record(self, judgement: Judgement) -> None:
        self.by_chunk[judgement.chunk_id] = judgement
        if judgement.doc_id not in self.order:
            self.order.append(judgement.doc_id)
        if judgement.verdict is Verdict.ACCEPT:
            self.accepted_by.setdefault(judgement.doc_id, {}).setdefault(judgement.sq, judgement)

    def accepted(self, sq: int | None = None) -> list[str]:
        return [d for d in self.order if d in self.accepted_by and (sq is None or sq in self.accepted_by[d])]

    def held(self, sq: int | None = None) -> list[Judgement]:
        """Held chunks whose document no sub-question (or `sq`) has accepted."""
        return [
            j
            for j in self.by_chunk.values()
            if j.verdict is Verdict.HOLD
            and (sq is None or j.sq == sq)
            and not (self.accepted_by.get(j.doc_id) and (sq is None or sq in self.accepted_by[j.doc_id]))
        ]

    def rejected_docs(self) -> list[str]:
        """Documents all of whose judged chunks were rejected."""
        verdicts: dict[str, set[Verdict]] = {}
        for j in self.by_chunk.values():
            verdicts.setdefault(j.doc_id, set()).add(j.verdict)
        return [d for d in self.order if verdicts.get(d) == {Verdict.REJECT}]

    def held_docs(self) -> list[str]:
        return list(dict.fromkeys(j.doc_id for j in self.held()))


class Memory:
    """A sub-question's short memory. Findings and evidence accumulate; gaps and next steps are replaced by the
    latest ones given. Rendered within `limit` characters by dropping the oldest findings and evidence first."""

    def __init__(self, limit: int, seed: str = ""):
        self.limit = limit
        self.seed = seed  # the previous sub-question's briefing
        self.findings: list[str] = []
        self.evidence: list[str] = []
        self.gaps: list[str] = []
        self.next_steps: list[str] = []

    def update(self, delta: MemoryDelta) -> dict:
        added = {
            "findings": [f for f in delta.findings if f and f not in self.findings],
            "evidence": [e for e in delta.evidence if e and e not in self.evidence],
        }
        self.findings += added["findings"]
        self.evidence += added["evidence"]
        if delta.gaps:
            self.gaps = list(delta.gaps)
        if delta.next_steps:
            self.next_steps = list(delta.next_steps)
        return {**added, "gaps": list(delta.gaps), "next_steps": list(delta.next_steps)}

    def render(self) -> str:
        findings, evidence = list(self.findings), list(self.evidence)
        while True:
            parts = [
                f"Briefing: {self.seed}" if self.seed else "",
                "Findings: " + "; ".join(findings) if findings else "",
                "Evidence: " + "; ".join(evidence) if evidence else "",
                "Gaps: " + "; ".join(self.gaps) if self.gaps else "",
                "Next: " + "; ".join(self.next_steps) if self.next_steps else "",
            ]
            text = " | ".join(p for p in parts if p)
            if len(text) <= self.limit or not (findings or evidence):
                return text[: self.limit]
            (findings if len(findings) >= len(evidence) and findings else evidence).pop(0)
