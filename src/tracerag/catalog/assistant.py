"""The catalog dialogue: parse → (clarify) → strict structural filter → rank → semantic check → guarded reply.

Only records of the catalog are ever recommended, and each one satisfies every structural constraint: whatever
the structured-index variant used to find candidates, `filters.satisfies` checks each candidate's own fields
before it can be selected. Semantic constraints (eligibility) are checked against the record's own text, with
the evidence span. Without a location the assistant asks which city or zip code first. State is kept across
turns ("what about Sunday?" keeps the city). Every turn goes to the conversation's trail.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from tracerag.catalog import filters
from tracerag.catalog.check import Evidence, check_llm, check_rules
from tracerag.catalog.model import ConstraintKind, Constraints, ServiceRecord
from tracerag.catalog.parse import merge, parse_request, parse_with_llm
from tracerag.catalog.reply import Recommendation, generated_reply, templated_reply
from tracerag.catalog.store import CatalogStore
from tracerag.collection import Collection
from tracerag.config import Settings
from tracerag.errors import ConfigError
from tracerag.llm import StructuredLLM
from tracerag.model import Filter
from tracerag.retrieval.search import Retriever, SearchRequest
from tracerag.trail import JsonlWriter, Trail

LOCATION = {ConstraintKind.CITY, ConstraintKind.COUNTY, ConstraintKind.ZIP}
HOURS = {ConstraintKind.WEEKDAY, ConstraintKind.TIME}
OTHER = {ConstraintKind.SERVICE_TYPE, ConstraintKind.LANGUAGE, ConstraintKind.ACCESSIBILITY}
# Which constraint kinds the structured index pre-filters in each variant (as in the TRACE paper); the rest are
# found by text search and then checked on each record's fields, so every variant satisfies every constraint.
VARIANTS: dict[str, set[ConstraintKind]] = {
    "none": set(),
    "location": LOCATION | OTHER,
    "hours": HOURS | OTHER,
    "location+hours": LOCATION | HOURS | OTHER,
}


@dataclass
class Turn:
    request: str
    outcome: str  # "answer", "none_found", "clarify"
    reply: str
    recommendations: list[Recommendation] = field(default_factory=list)
    constraints: Constraints = field(default_factory=Constraints)
    notes: list[str] = field(default_factory=list)
    removed: list[dict] = field(default_factory=list)
    checked: int = 0

    def to_dict(self) -> dict:
        return {
            "request": self.request,
            "outcome": self.outcome,
            "reply": self.reply,
            "constraints": constraints_dict(self.constraints),
            "notes": self.notes,
            "checked": self.checked,
            "removed_hallucinations": self.removed,
            "recommendations": [
                {
                    "id": r.record.id,
                    "name": r.record.name,
                    "address": ", ".join(p for p in (r.record.address, r.record.city, r.record.zip) if p),
                    "phones": r.record.phones,
                    "hours": r.record.hours_text,
                    "evidence": [
                        {"passed": e.passed, "reason": e.reason, "quote": e.quote, "span": e.span} for e in r.evidence
                    ],
                }
                for r in self.recommendations
            ],
        }


def constraints_dict(c: Constraints) -> dict:
    return {
        "structural": [{"kind": str(s.kind), "values": list(s.values), "said": s.said} for s in c.structural],
        "semantic": [{"text": s.text, "negated": s.negated} for s in c.semantic],
        "topic": c.topic,
        "unknown": list(c.unknown),
    }


class CatalogAssistant:
    """One conversation over one catalog directory (`catalog.sqlite` + `collection/`)."""

    def __init__(
        self,
        catalog_dir: Path,
        settings: Settings,
        *,
        llm: StructuredLLM | None = None,
        variant: str = "location+hours",
        k: int = 5,
        batch: int = 10,
        today: int | None = None,
        trail_dir: Path | None = None,
        listeners=(),
    ):
        if variant not in VARIANTS:
            raise ConfigError(f"structured-index variant {variant!r}: expected one of {', '.join(VARIANTS)}")
        catalog_dir = Path(catalog_dir)
        if not (catalog_dir / "catalog.sqlite").is_file():
            raise ConfigError(
                f"{catalog_dir}: not a catalog (no catalog.sqlite); build it with `tracerag catalog ingest`"
            )
        self.store = CatalogStore.open(catalog_dir / "catalog.sqlite")
        self.collection = Collection.open(catalog_dir / "collection", settings)
        self.retriever = Retriever(self.collection)
        self.gazetteer = self.store.gazetteer()
        self.llm = llm
        self.variant = variant
        self.k = k
        self.batch = batch
        self.today = date.today().weekday() if today is None else today
        self.state = Constraints()
        self.turns: list[Turn] = []
        self._names: set[str] | None = None
        self.trail = Trail(listeners=listeners)
        self._writer = JsonlWriter((trail_dir or catalog_dir / "trails") / f"{self.trail.run_id}.jsonl")
        self.trail.listeners.append(self._writer)
        if llm is not None:
            llm.listeners.append(self._record_call)
        self.trail.emit(
            "run",
            question="(catalog conversation)",
            collection=str(catalog_dir),
            k=k,
            config={"variant": variant, "batch": batch, "today": self.today},
            llm={"provider": llm.name, "model": llm.model} if llm else None,
            versions={},
        )

    def reset(self) -> None:
        """Start a new conversation (the evaluation asks each request afresh); the trail goes on."""
        self.state = Constraints()

    @property
    def trail_path(self) -> Path:
        return self._writer.path

    def close(self) -> None:
        self._writer.close()
        self.collection.close()
        self.store.close()

    def __enter__(self) -> CatalogAssistant:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- one turn -------------------------------------------------------------------------------------

    def ask(self, request: str) -> Turn:
        n = len(self.turns)
        if self.llm is not None:
            parsed, notes = parse_with_llm(request, self.gazetteer, self.llm, today=self.today)
            method = "llm+gazetteer"
        else:
            parsed, notes = parse_request(request, self.gazetteer, today=self.today), []
            method = "rules"
        self.state = merge(self.state, parsed)
        notes += [f"not in this catalog: {u}" for u in parsed.unknown]
        self.trail.emit(
            "catalog_parse",
            turn=n,
            request=request,
            method=method,
            constraints=constraints_dict(parsed),
            state=constraints_dict(self.state),
            notes=notes,
        )
        if not self.state.has_location():
            turn = Turn(request, "clarify", self._clarifying_question(), constraints=self.state, notes=notes)
        else:
            turn = self._answer(request, n, notes)
        self.trail.emit(
            "catalog_reply",
            turn=n,
            outcome=turn.outcome,
            text=turn.reply,
            recommended=[r.record.id for r in turn.recommendations],
            removed=turn.removed,
            generated=self.llm is not None and turn.outcome == "answer",
        )
        self.turns.append(turn)
        return turn

    def _clarifying_question(self) -> str:
        what = self.state.topic or "services"
        return f"Which city or zip code should I look in for {what}?"

    def _answer(self, request: str, n: int, notes: list[str]) -> Turn:
        structural = self.state.structural
        sql_kinds = VARIANTS[self.variant] & {s.kind for s in structural}
        allowed = self.store.filter(structural, kinds=sql_kinds) if sql_kinds else None
        ranked = self._rank(allowed)
        self.trail.emit(
            "catalog_filter",
            turn=n,
            variant=self.variant,
            sql_kinds=sorted(str(k) for k in sql_kinds),
            allowed=len(allowed) if allowed is not None else self.store.count(),
            ranked=ranked[:200],
        )
        selected: list[Recommendation] = []
        unstated: list[Recommendation] = []
        checked = 0
        for start in range(0, len(ranked), self.batch):
            ids = ranked[start : start + self.batch]
            records = self.store.get(ids)
            for rid in ids:
                record = records[rid]
                checked += 1
                rec, definite = self._check(record, n)
                if rec is not None:
                    (selected if definite else unstated).append(rec)
            if len(selected) >= self.k:
                break  # enough candidates passed every check; otherwise the next batch, until exhausted
        chosen = (selected + unstated)[: self.k]
        summary = describe(self.state)
        if not chosen:
            reason = self._relaxations(checked)
            return Turn(
                request,
                "none_found",
                templated_reply([], summary, none_found_reason=reason),
                [],
                self.state,
                notes,
                checked=checked,
            )
        removed: list[dict] = []
        if self.llm is not None:
            text, removed = generated_reply(
                chosen,
                request,
                self.llm,
                catalog_names=self._catalog_names(),
                allowed=self.gazetteer.cities.values(),
                constraints_summary=summary,
            )
        else:
            text = templated_reply(chosen, summary)
        return Turn(request, "answer", text, chosen, self.state, notes, removed, checked)

    def _catalog_names(self) -> set[str]:
        """Every service and organisation name of the catalog: a generated reply naming one that was not
        selected is a hallucination the guard removes."""
        if self._names is None:
            records = self.store.get(self.store.all_ids()).values()
            self._names = {n for r in records for n in (r.name, r.organization) if n}
        return self._names

    def _relaxations(self, checked: int) -> str:
        """Why nothing was found, and what would find something: for each constraint but the location, how many
        services match without it (strict filter on the catalog, so the numbers are real)."""
        parts = [f"I checked {checked} candidate(s)." if checked else "No service meets all the exact constraints."]
        structural = self.state.structural
        for drop in structural:
            if drop.kind in LOCATION:
                continue
            rest = [s for s in structural if s is not drop]
            n = len(self.store.filter(rest))
            if n:
                parts.append(f"Without {drop.kind} '{drop.said or ', '.join(drop.values)}': {n} service(s).")
        if self.state.semantic and checked:
            parts.append("Candidates were found but their own text rules out a condition you gave.")
        return " ".join(parts)

    def _rank(self, allowed: list[str] | None) -> list[str]:
        """Candidates best first: text relevance to the topic and conditions, within the pre-filtered set."""
        words = " ".join([self.state.topic, *(s.text for s in self.state.semantic if not s.negated)]).strip()
        service_types = self.state.of(ConstraintKind.SERVICE_TYPE)
        if service_types is not None:
            words = " ".join([words, *(self.gazetteer.taxonomy.get(t, "") for t in service_types.values)]).strip()
        universe = allowed if allowed is not None else self.store.all_ids()
        if not words:
            return sorted(universe)
        flt = Filter(doc_ids=tuple(allowed)) if allowed is not None else Filter()
        if allowed is not None and not allowed:
            return []
        depth = len(universe) if allowed is not None else max(200, self.k * 40)
        ranking = self.retriever.search(SearchRequest(words, k=max(1, min(depth, 1000)), filter=flt, windows=""))
        found = ranking.doc_ids()
        if allowed is None:
            return found  # text only: what the text search finds is all the candidates there are
        rest = sorted(set(allowed) - set(found))
        return found + rest  # every pre-filtered record stays a candidate, text-matching ones first

    def _check(self, record: ServiceRecord, n: int) -> tuple[Recommendation | None, bool]:
        violations = filters.violations(record, self.state.structural)
        evidence: list[Evidence] = []
        if not violations:
            for semantic in self.state.semantic:
                ev = check_llm(record, semantic, self.llm) if self.llm is not None else check_rules(record, semantic)
                evidence.append(ev)
        failed = bool(violations) or any(e.passed is False for e in evidence)
        definite = all(e.passed is True for e in evidence)
        self.trail.emit(
            "catalog_check",
            turn=n,
            record_id=record.id,
            structural_ok=not violations,
            violations=violations,
            semantic=[{"passed": e.passed, "reason": e.reason, "span": e.span, "method": e.method} for e in evidence],
            selected=not failed,
        )
        return (None if failed else Recommendation(record, evidence)), definite

    def _record_call(self, completion, messages, schema) -> None:
        self.trail.emit_llm_call(completion, messages, f"catalog:{schema.__name__ if schema else 'text'}")


def describe(c: Constraints) -> str:
    parts = [f"{s.kind}: {s.said or ', '.join(s.values)}" for s in c.structural]
    parts += [("not " if s.negated else "") + s.text for s in c.semantic]
    return "; ".join(parts) or "your request"
