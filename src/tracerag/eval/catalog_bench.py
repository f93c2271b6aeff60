"""The catalog assistant's benchmark: requests generated from the catalog by templates, each with its gold set
computed by strict filtering of the catalog on the constraints the template put in (not on what the assistant
parses: a misread city then shows as unsatisfied constraints and lost recall).

Five categories as in the issue — location only, eligibility, hours, a named service, combinations — plus
requests without any location, on which the assistant should ask a clarifying question. Metrics per category
and per structured-index variant: structural constraint satisfaction of the recommendations (checked on the
record's own fields against the intended constraints), out-of-catalog recommendations, recall of the gold set in
the top k (|top-k ∩ gold| / min(k, |gold|)), and the clarifying-question rate.
"""

from __future__ import annotations

import random
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from statistics import mean

from tracerag.catalog import filters
from tracerag.catalog.model import WEEKDAYS, ConstraintKind, Semantic, Structural
from tracerag.catalog.store import CatalogStore

CATEGORIES = ("location", "eligibility", "hours", "named", "combination", "no_location")


@dataclass
class CatalogQuery:
    id: str
    category: str
    text: str
    structural: list[Structural]
    semantic: list[Semantic] = field(default_factory=list)
    gold: list[str] = field(default_factory=list)


def _topic_terms(store: CatalogStore, min_services: int = 5) -> list[tuple[str, str]]:
    """Taxonomy terms tagged on enough services to make a request about them, with a short topic phrase."""
    gaz = store.gazetteer()
    counts: Counter[str] = Counter()
    for record in store.get(store.all_ids()).values():
        counts.update({t for t, _ in record.taxonomy})
    terms = [
        (t, gaz.taxonomy[t])
        for t, n in counts.items()
        if n >= min_services and t in gaz.taxonomy and not t.startswith("Y")
    ]
    return sorted(terms)


def _service_terms(record) -> list[tuple[str, str]]:
    return [(t, name) for t, name in record.taxonomy if not t.startswith("Y")]


def _phrase(term_name: str) -> str:
    return re.sub(r"\s*/\s*", " or ", term_name).lower()


def generate(store: CatalogStore, n: int = 1000, seed: int = 0) -> list[CatalogQuery]:
    """`n` requests spread over the categories (no-location ones included), reproducible from `seed`."""
    rng = random.Random(seed)
    records = store.get(store.all_ids())
    by_city: dict[str, list] = defaultdict(list)
    for r in records.values():
        if r.city:
            by_city[r.city].append(r)
    terms = _topic_terms(store)
    queries: list[CatalogQuery] = []
    per = max(1, n // len(CATEGORIES))

    def add(category: str, text: str, structural: list[Structural], semantic: list[Semantic] | None = None) -> None:
        gold = store.filter(structural) if structural else []
        if category != "no_location" and not gold:
            return
        queries.append(CatalogQuery(f"{category}-{len(queries)}", category, text, structural, semantic or [], gold))

    def city_term() -> tuple[str, str, str]:
        # Service terms only: the Y facet names target populations ("Older Adults"), which are eligibility, not a
        # kind of service.
        record = rng.choice([r for r in records.values() if r.city and _service_terms(r)])
        term_id, term_name = rng.choice(_service_terms(record))
        return record.city, term_id, term_name

    guard = 0
    while len(queries) < n and guard < n * 50:
        guard += 1
        category = CATEGORIES[len(queries) // per] if len(queries) // per < len(CATEGORIES) else "combination"
        city, term_id, term_name = city_term()
        city_c = Structural(ConstraintKind.CITY, (city,), city)
        type_c = Structural(ConstraintKind.SERVICE_TYPE, (term_id,), term_name)
        topic = _phrase(term_name)
        if category == "location":
            if rng.random() < 0.3:
                record = rng.choice(by_city[city])
                if record.zip:
                    add(category, f"{topic} near {record.zip}", [Structural(ConstraintKind.ZIP, (record.zip,)), type_c])
                    continue
            add(
                category,
                rng.choice(["{t} in {c}", "I need {t} in {c}", "where can I find {t} in {c}?"]).format(t=topic, c=city),
                [city_c, type_c],
            )
        elif category == "eligibility":
            condition = rng.choice(
                [
                    ("that doesn't need ID", Semantic("ID required", negated=True)),
                    ("for seniors", Semantic("seniors")),
                    ("for veterans", Semantic("veterans")),
                    ("for children", Semantic("children")),
                ]
            )
            add(category, f"{topic} in {city} {condition[0]}", [city_c, type_c], [condition[1]])
        elif category == "hours":
            day = rng.choice(range(7)) if rng.random() < 0.3 else rng.choice(range(5))
            day_c = Structural(ConstraintKind.WEEKDAY, (str(day),), WEEKDAYS[day])
            if rng.random() < 0.5:
                hour = rng.choice([9, 10, 14, 16])
                time_c = Structural(
                    ConstraintKind.TIME, (str(hour * 60),), f"{hour % 12 or 12}{'am' if hour < 12 else 'pm'}"
                )
                add(
                    category,
                    f"{topic} in {city} open on {WEEKDAYS[day]} at {time_c.said}",
                    [city_c, type_c, day_c, time_c],
                )
            else:
                add(category, f"{topic} in {city} open on {WEEKDAYS[day]}", [city_c, type_c, day_c])
        elif category == "named":
            record = rng.choice(by_city[city])
            name = record.name.strip()
            if len(name) < 6:
                continue
            gold_ids = [r.id for r in by_city[city] if r.name.strip().casefold() == name.casefold()]
            queries.append(
                CatalogQuery(f"named-{len(queries)}", "named", f"{name} in {city}", [city_c], [], sorted(gold_ids))
            )
        elif category == "combination":
            day = rng.choice(range(5))
            parts = [city_c, type_c, Structural(ConstraintKind.WEEKDAY, (str(day),), WEEKDAYS[day])]
            text = f"{topic} in {city} open {WEEKDAYS[day]}"
            langs = Counter(lang for r in by_city[city] for lang in r.languages if lang != "English")
            if langs and rng.random() < 0.6:
                lang = rng.choice(sorted(langs))
                parts.append(Structural(ConstraintKind.LANGUAGE, (lang,), lang))
                text = f"{lang}-speaking {text}"
            add(category, text, parts)
        else:  # no_location: a common service type, no place
            common = _phrase(rng.choice(terms)[1]) if terms else topic
            template = rng.choice(["I need {t}", "where can I get {t}?", "{t} open on Saturday"])
            add(category, template.format(t=common), [])
    return queries[:n]


@dataclass
class QueryOutcome:
    query: CatalogQuery
    outcome: str
    recommended: list[str]
    satisfied: float  # share of recommendations meeting every intended structural constraint
    out_of_catalog: int
    by_kind: dict[str, tuple[int, int]]  # constraint kind -> (recommendations meeting it, recommendations)
    recall: float
    seconds: float


def evaluate(
    queries: Sequence[CatalogQuery],
    store: CatalogStore,
    answer: Callable[[str], tuple[str, list[str]]],
    k: int,
    progress: Callable[[], None] | None = None,
) -> list[QueryOutcome]:
    """`answer(text)` → (outcome, recommended ids) from a fresh conversation per request."""
    known = set(store.all_ids())
    outcomes = []
    for q in queries:
        started = time.perf_counter()
        outcome, recommended = answer(q.text)
        seconds = time.perf_counter() - started
        records = store.get([r for r in recommended if r in known])
        ok = [rid for rid in recommended if rid in records and filters.satisfies(records[rid], q.structural)]
        by_kind = {
            str(c.kind): (sum(filters.satisfies(records[r], [c]) for r in records), len(records)) for c in q.structural
        }
        gold = set(q.gold)
        recall = len(set(recommended[:k]) & gold) / min(k, len(gold)) if gold else 0.0
        outcomes.append(
            QueryOutcome(
                q,
                outcome,
                recommended,
                len(ok) / len(recommended) if recommended else 1.0,
                sum(1 for r in recommended if r not in known),
                by_kind,
                recall,
                seconds,
            )
        )
        if progress:
            progress()
    return outcomes


def summarise(outcomes: Sequence[QueryOutcome]) -> dict[str, dict[str, float]]:
    """Metrics per category and overall."""
    groups: dict[str, list[QueryOutcome]] = defaultdict(list)
    for o in outcomes:
        groups[o.query.category].append(o)
        groups["all"].append(o)
    table = {}
    for name, items in groups.items():
        located = [o for o in items if o.query.category != "no_location"]
        unlocated = [o for o in items if o.query.category == "no_location"]
        with_recs = [o for o in located if o.recommended]
        table[name] = {
            "queries": float(len(items)),
            "constraint_satisfaction": mean(o.satisfied for o in with_recs) if with_recs else 1.0,
            "out_of_catalog": float(sum(o.out_of_catalog for o in items)),
            "recall_at_k": mean(o.recall for o in located) if located else float("nan"),
            "answered": mean(o.outcome == "answer" for o in located) if located else float("nan"),
            "clarify_rate": mean(o.outcome == "clarify" for o in unlocated) if unlocated else float("nan"),
            "seconds": mean(o.seconds for o in items),
        }
        for kind in sorted({k for o in items for k in o.by_kind}):
            met = sum(o.by_kind[kind][0] for o in items if kind in o.by_kind)
            seen = sum(o.by_kind[kind][1] for o in items if kind in o.by_kind)
            table[name][f"satisfied_{kind}"] = met / seen if seen else float("nan")
    return table


def markdown(summary: dict) -> str:
    """Variants as rows, per category: satisfaction, out-of-catalog, recall@k, answered, clarify rate."""
    k = summary["k"]
    lines = [
        f"# Catalog assistant: {summary['queries']} generated requests, k = {k}",
        "",
        "Requests per category: " + ", ".join(f"{c} {n}" for c, n in summary["by_category"].items()),
        "",
        f"| variant | category | constraint satisfaction | out-of-catalog | R@{k} of gold | answered | clarify rate |",
        "|---|---|---|---|---|---|---|",
    ]
    for variant, table in summary["results"].items():
        for category, m in table.items():
            lines.append(
                f"| {variant} | {category} | {m['constraint_satisfaction']:.3f} | {int(m['out_of_catalog'])} | "
                f"{m['recall_at_k']:.3f} | {m['answered']:.3f} | {m['clarify_rate']:.3f} |"
            )
    lines += [
        "",
        "Constraint satisfaction is measured against the constraints the template put in the request, so it also",
        "counts what the parser misread; per constraint kind (all categories):",
        "",
        "| variant | " + " | ".join(KINDS) + " |",
        "|---|" + "---|" * len(KINDS),
    ]
    for variant, table in summary["results"].items():
        row = table["all"]
        lines.append(
            f"| {variant} | " + " | ".join(f"{row.get(f'satisfied_{k}', float('nan')):.3f}" for k in KINDS) + " |"
        )
    return "\n".join(lines) + "\n"


KINDS = ("city", "zip", "service_type", "weekday", "time", "language")
