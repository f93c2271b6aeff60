"""The catalog store on the real Miami 211 records: exact round trip, SQL filters equal to `filters.satisfies`,
the gazetteer, and `build_catalog` on a subset with its (lexical) collection."""

from __future__ import annotations

import csv
import dataclasses
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.catalog.test_hsds import MIAMI, real_read, real_records
from tests.conftest import require_datasets
from tracerag.catalog.filters import postal_head, satisfies, term_ancestors, violations
from tracerag.catalog.hsds import read_taxonomy
from tracerag.catalog.ingest import build_catalog
from tracerag.catalog.model import ConstraintKind, Opening, ServiceRecord, Structural
from tracerag.catalog.store import CatalogStore
from tracerag.catalog.words import WordList
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.errors import CollectionError
from tracerag.retrieval.search import Retriever, SearchRequest
from tracerag.text import fold_key

K = ConstraintKind


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CatalogStore]:
    """All of Miami 211 in a store, once per module (~2 s, no collection). Tests must not change it."""
    s = CatalogStore.create(tmp_path_factory.mktemp("catalog") / "catalog.sqlite")
    s.put(real_read()[0])
    s.put_terms(read_taxonomy(MIAMI))
    yield s
    s.close()


def c(kind: K, *values: str) -> Structural:
    return Structural(kind, tuple(values))


def python_filter(structural: list[Structural], kinds: set[K] | None = None) -> list[str]:
    return sorted(r.id for r in real_records().values() if satisfies(r, structural, kinds))


# -------------------------------------------------------------------------------------------- round trip


def test_round_trip_is_exact(store: CatalogStore) -> None:
    records = real_records()
    assert store.count() == 4089
    assert store.all_ids() == sorted(records)
    assert store.get(store.all_ids()) == records
    got = store.get(["164", "no-such-id", "136"])
    assert list(got) == ["164", "136"] and got["164"].openings == records["164"].openings


def test_put_is_idempotent_atomic_and_replaces(tmp_path: Path) -> None:
    records = real_records()
    sample = [records[i] for i in ("136", "164", "505", "7259")]
    with CatalogStore.create(tmp_path / "c.sqlite") as s:
        assert s.put(sample) == 4 and s.put(sample) == 4 and s.count() == 4
        assert s.filter([c(K.LANGUAGE, "Haitian Creole")]) == ["7259"]

        moved = dataclasses.replace(records["7259"], city="Hialeah", languages=["Russian"], openings=[])
        s.put([moved])
        assert s.count() == 4 and s.get(["7259"])["7259"] == moved
        assert s.filter([c(K.LANGUAGE, "Haitian Creole")]) == []  # its old values are gone
        assert s.filter([c(K.CITY, "Hialeah"), c(K.LANGUAGE, "Russian")]) == ["7259"]

        def failing() -> Iterator[ServiceRecord]:
            yield dataclasses.replace(records["997"])
            raise RuntimeError("the source broke")

        with pytest.raises(RuntimeError):
            s.put(failing())
        assert s.count() == 4 and s.get(["997"]) == {}  # nothing of the failed put was written
    with CatalogStore.open(tmp_path / "c.sqlite") as again:
        assert again.get(["136"])["136"] == records["136"]


def test_open_refuses_what_is_not_a_catalog(tmp_path: Path) -> None:
    with pytest.raises(CollectionError, match="no catalog store"):
        CatalogStore.open(tmp_path / "missing.sqlite")
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(CollectionError, match="not a catalog store"):
        CatalogStore.open(other)


# ------------------------------------------------------------------------------------------------ filters


def test_each_kind_filters_exactly(store: CatalogStore) -> None:
    """Each kind against a selection computed here from the records, without filters.py."""
    records = list(real_records().values())

    def ids(pred) -> list[str]:
        return sorted(r.id for r in records if pred(r))

    assert store.filter([c(K.CITY, "Hialeah")]) == ids(lambda r: r.city == "Hialeah")
    assert len(store.filter([c(K.CITY, "Hialeah")])) == 148
    assert store.filter([c(K.CITY, "Hialeah", "Doral")]) == ids(lambda r: r.city in ("Hialeah", "Doral"))
    assert store.filter([c(K.CITY, "hialeah")]) == []  # catalog values, exactly
    assert store.filter([c(K.COUNTY, "Miami-Dade")]) == []  # the export has no county
    in_33128 = ids(lambda r: r.zip == "33128" or r.zip.startswith("33128-"))
    assert store.filter([c(K.ZIP, "33128")]) == in_33128 and len(in_33128) == 124
    assert store.filter([c(K.ZIP, "33128-1966")]) == ids(lambda r: r.zip == "33128-1966")
    assert store.filter([c(K.LANGUAGE, "Creole")]) == ids(lambda r: "Creole" in r.languages)
    assert len(store.filter([c(K.LANGUAGE, "Creole")])) == 1440
    assert len(store.filter([c(K.ACCESSIBILITY, "Handicap accessible")])) == 1620
    food = ids(lambda r: any(t == "BD-1800" or t.startswith(("BD-1800.", "BD-1800-")) for t, _ in r.taxonomy))
    assert store.filter([c(K.SERVICE_TYPE, "BD-1800")]) == food and len(food) == 79
    assert "BD-1800" in term_ancestors("BD-1800.2000-640") and "B" in term_ancestors("BD-1800.2000-640")
    assert len(store.filter([c(K.SERVICE_TYPE, "B")])) > len(food)
    saturday = ids(lambda r: any(o.weekday == 5 for o in r.openings))
    assert store.filter([c(K.WEEKDAY, "5")]) == saturday and len(saturday) == 168
    sunday_10 = ids(lambda r: any(o.covers(6, 600) for o in r.openings))
    assert store.filter([c(K.WEEKDAY, "6"), c(K.TIME, "600")]) == sunday_10 and len(sunday_10) == 20
    at_8pm = ids(lambda r: any(o.covers(o.weekday, 1200) for o in r.openings))
    assert store.filter([c(K.TIME, "1200")]) == at_8pm  # TIME alone: on any day


def test_hours_semantics(tmp_path: Path) -> None:
    """Overnight openings cover the evening of their own day only; a close at midnight is 1440."""
    night = ServiceRecord("n", "n", "Night shelter", openings=[Opening(4, 22 * 60, 2 * 60)])
    late = ServiceRecord("l", "l", "Late clinic", openings=[Opening(5, 9 * 60, 1440)])
    none = ServiceRecord("x", "x", "No hours", hours_text="by appointment")
    with CatalogStore.create(tmp_path / "h.sqlite") as s:
        s.put([night, late, none])
        cases = [
            ([c(K.WEEKDAY, "4"), c(K.TIME, str(23 * 60))], ["n"]),
            ([c(K.WEEKDAY, "5"), c(K.TIME, "60")], []),  # Saturday 1am: not claimed by Friday's night
            ([c(K.WEEKDAY, "5"), c(K.TIME, str(23 * 60 + 59))], ["l"]),
            ([c(K.WEEKDAY, "4", "5")], ["l", "n"]),
            ([c(K.WEEKDAY, "4"), c(K.WEEKDAY, "5")], []),  # two WEEKDAY constraints: both days
            ([c(K.TIME, "600", str(23 * 60))], ["l", "n"]),
            ([c(K.WEEKDAY, "x")], []),
            ([c(K.WEEKDAY)], []),
        ]
        for structural, expected in cases:
            assert s.filter(structural) == expected, structural
            assert sorted(r for r in ("l", "n", "x") if satisfies(s.get([r])[r], structural)) == expected
    days = WordList.load("en").weekday_names
    assert violations(none, [c(K.WEEKDAY, "0")], day_names=days) == ["hours: not open on Monday (no parsed hours)"]
    assert violations(none, [c(K.WEEKDAY, "0")]) == ["hours: not open on day 0 (no parsed hours)"]
    assert violations(night, [c(K.CITY, "Miami")]) == ["city: (none) is not Miami"]


def constraint_sets() -> list[list[Structural]]:
    """~80 combinations: fixed ones over every kind, then random ones drawn from real records' own values."""
    fixed = [
        [c(K.CITY, "Miami")],
        [c(K.CITY, "Naples", "Key West")],
        [c(K.CITY, "Atlantis")],
        [c(K.CITY, "")],
        [c(K.COUNTY, "Miami-Dade")],
        [c(K.ZIP, "33128")],
        [c(K.ZIP, "33128-1966", "33157")],
        [c(K.ZIP, "00000")],
        [c(K.LANGUAGE, "French")],
        [c(K.LANGUAGE, "Russian", "Hebrew")],
        [c(K.LANGUAGE, "Klingon")],
        [c(K.ACCESSIBILITY, "Handicap accessible")],
        [c(K.SERVICE_TYPE, "B")],
        [c(K.SERVICE_TYPE, "BD")],
        [c(K.SERVICE_TYPE, "BD-1800.2000-640")],
        [c(K.SERVICE_TYPE, "LE", "RP")],
        *[[c(K.WEEKDAY, str(d))] for d in range(7)],
        [c(K.WEEKDAY, "5", "6")],
        [c(K.WEEKDAY, "5"), c(K.WEEKDAY, "6")],
        *[[c(K.TIME, str(m))] for m in (0, 420, 600, 1200, 1410)],
        [c(K.TIME, "480", "1260")],
        [c(K.WEEKDAY, "6"), c(K.TIME, "600")],
        [c(K.WEEKDAY, "5"), c(K.TIME, "540")],
        [c(K.WEEKDAY, "4"), c(K.TIME, "1300")],
        [c(K.WEEKDAY, "2"), c(K.TIME, "0")],
        [c(K.WEEKDAY, "0", "1"), c(K.TIME, "1020", "1050")],
        [c(K.CITY, "Miami"), c(K.SERVICE_TYPE, "BD-1800"), c(K.WEEKDAY, "0")],
        [c(K.CITY, "Miami"), c(K.LANGUAGE, "Creole"), c(K.WEEKDAY, "2"), c(K.TIME, "600")],
        [c(K.ZIP, "33128"), c(K.ACCESSIBILITY, "Handicap accessible")],
        [c(K.CITY, "Hialeah"), c(K.LANGUAGE, "Spanish"), c(K.TIME, "900")],
        [c(K.WEEKDAY, "x")],
        [c(K.TIME)],
    ]
    rng = random.Random(7)
    records = sorted(real_records().values(), key=lambda r: r.id)
    drawn = []
    while len(drawn) < 40:
        r = rng.choice(records)
        pool: list[Structural] = []
        if r.city:
            pool.append(c(K.CITY, r.city))
        if r.zip:
            pool.append(c(K.ZIP, rng.choice([r.zip, postal_head(r.zip)])))
        if r.languages:
            pool.append(c(K.LANGUAGE, rng.choice(r.languages)))
        if r.accessibility:
            pool.append(c(K.ACCESSIBILITY, r.accessibility[0]))
        if r.taxonomy:
            pool.append(c(K.SERVICE_TYPE, rng.choice(term_ancestors(rng.choice(r.taxonomy)[0]))))
        if r.openings:
            o = rng.choice(r.openings)
            pool.append(c(K.WEEKDAY, str(o.weekday)))
            pool.append(c(K.TIME, str(rng.choice([o.opens, o.closes - 1, (o.opens + o.closes) // 2, o.closes]))))
        if pool:
            drawn.append(rng.sample(pool, rng.randint(1, min(4, len(pool)))))
    return fixed + drawn


def test_sql_filter_equals_python_satisfies(store: CatalogStore) -> None:
    sets = constraint_sets()
    assert len(sets) >= 80
    sizes = []
    for structural in sets:
        sql = store.filter(structural)
        assert sql == python_filter(structural), structural
        sizes.append(len(sql))
    assert sum(1 for n in sizes if n) >= 60 and sum(1 for n in sizes if not n) >= 5  # both outcomes exercised


def test_kinds_limit_the_filter(store: CatalogStore) -> None:
    structural = [c(K.CITY, "Miami"), c(K.LANGUAGE, "Creole"), c(K.WEEKDAY, "2"), c(K.TIME, "600")]
    for kinds in ({K.CITY}, {K.CITY, K.WEEKDAY}, {K.TIME}, {K.LANGUAGE, K.TIME}, set(), None):
        assert store.filter(structural, kinds=kinds) == python_filter(structural, kinds), kinds
    assert store.filter(structural, kinds=set()) == store.all_ids()
    assert len(store.filter(structural, kinds={K.CITY})) == 2098


# ---------------------------------------------------------------------------------------------- gazetteer


def test_gazetteer(store: CatalogStore) -> None:
    gaz = store.gazetteer()
    assert len(gaz.cities) == 179 and gaz.cities["miami"] == "Miami" and gaz.cities["opa locka"] == "Opa Locka"
    assert gaz.counties == {}
    assert {"33128", "33128-1966", "33157"} <= gaz.zips and "" not in gaz.zips
    assert gaz.languages["haitian creole"] == "Haitian Creole" and gaz.languages["creole"] == "Creole"
    assert len(gaz.languages) == 32
    assert gaz.accessibility == {"handicap accessible": "Handicap accessible"}
    assert len(gaz.taxonomy) == 1991 and gaz.taxonomy["BD-1800"] == "Emergency Food"
    # Keys are tracerag.text.fold_key's, the form every lookup uses: an apostrophe joins, it does not split.
    assert all(fold_key(value) == key for key, value in gaz.cities.items())
    assert fold_key("Women's") == "womens"


def test_postal_head_is_the_code_before_its_first_separator() -> None:
    assert postal_head("33128-1966") == "33128" and postal_head(" 33157 ") == "33157"
    assert postal_head("SW1A 1AA") == "SW1A" and postal_head("K1A 0B1") == "K1A"
    assert postal_head("331281966", prefix=5) == "33128" and postal_head("3312", prefix=5) == "3312"


# ------------------------------------------------------------------------------------------ build_catalog


def subset(tmp_path: Path, n: int) -> Path:
    """The first `n` services of Miami 211 with their rows in every table (taxonomy and eligibility whole)."""
    require_datasets("miami211")
    folder = tmp_path / f"miami{n}"
    folder.mkdir()
    with (MIAMI / "services.csv").open(encoding="utf-8", newline="") as fh:
        services = [row for _, row in zip(range(n), csv.DictReader(fh), strict=False)]
    sids = {r["id"] for r in services}
    orgs = {r["organization_id"] for r in services}
    keys = {
        "services.csv": ("id", sids),
        "organizations.csv": ("id", orgs),
        "services_at_location.csv": ("service_id", sids),
        "locations.csv": ("id", sids),  # location id = service id in this export
        "physical_addresses.csv": ("location_id", sids),
        "phones.csv": ("service_id", sids),
        "regular_schedules.csv": ("service_id", sids),
        "languages.csv": ("service_id", sids),
        "accessibility_for_disabilities.csv": ("location_id", sids),
        "services_taxonomy.csv": ("service_id", sids),
        "taxonomy.csv": (None, set()),
        "eligibility.csv": (None, set()),
    }
    for name, (key, wanted) in keys.items():
        with (
            (MIAMI / name).open(encoding="utf-8", newline="") as src,
            (folder / name).open("w", encoding="utf-8", newline="") as dst,
        ):
            reader = csv.DictReader(src)
            writer = csv.DictWriter(dst, fieldnames=reader.fieldnames or [])
            writer.writeheader()
            writer.writerows(row for row in reader if key is None or row[key] in wanted)
    return folder


def test_build_catalog_on_a_subset(tmp_path: Path) -> None:
    settings = load_settings(embed={"model": "none"})
    target = tmp_path / "catalog"
    report = build_catalog(subset(tmp_path, 40), target, settings, dense=False)
    assert report.records == report.services == 40 and report.skipped == []
    assert report.eligibility_rows == report.eligibility_unlinked == 2244
    assert report.with_hours >= report.with_parsed_hours > 0 and report.documents == 40
    data = report.to_dict()
    assert (
        data["records"] == 40 and isinstance(data["skipped"], list) and not (target / "catalog.sqlite.partial").exists()
    )

    with CatalogStore.open(target / "catalog.sqlite") as s:
        ids = s.all_ids()
        records = s.get(ids)
        assert records == {i: real_records()[i] for i in ids}  # same records as the full read
        assert report.cities == len({r.city for r in records.values()} - {""})
        assert report.zips == len({r.zip for r in records.values()} - {""})
    with Collection.open(target / "collection", settings, mode="read") as col:
        doc = col.store.get_documents(["136"])["136"]
        assert (doc.title, doc.corpus, doc.language) == (
            "GIRL SCOUTS COUNCIL OF TROPICAL FLORIDA, INC.",
            "services",
            "en",
        )
        assert doc.fields == {"city": "Miami", "zip": "33157"} and doc.text == records["136"].text()
        hits = Retriever(col).search(SearchRequest("girl scouts", k=3, windows="")).doc_ids()
        assert hits[0] == "136"

    smaller = build_catalog(subset(tmp_path, 25), target, settings, dense=False)  # a rebuild drops the rest
    assert smaller.records == 25 and smaller.documents == 25
    with (
        CatalogStore.open(target / "catalog.sqlite") as s,
        Collection.open(target / "collection", settings, mode="read") as col,
    ):
        assert s.count() == 25 and col.store.count_documents() == 25
