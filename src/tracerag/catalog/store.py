"""The catalog's exact fields in one SQLite file: full records, and the values structural constraints filter on.

`CatalogStore.filter` is strict AND in SQL with the semantics that `filters.violations` implements in Python
(see `tracerag.catalog.filters`); the tests check that both select the same records on the real catalog.

Tables: `records` (id, the record as JSON, city, county, zip, zip_head: `filters.postal_head`), `record_values`
(language, accessibility, area (`filters.record_areas`) and taxonomy-term rows, each term with every term above
it), `openings` (weekday, opens, closes) and `terms` (the taxonomy's id → name). One file, rollback journal:
nothing beside it.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tracerag.catalog.filters import hour_pairs, int_values, postal_head, record_areas, selected, term_ancestors
from tracerag.catalog.model import ConstraintKind, Gazetteer, Opening, ServiceRecord, Structural
from tracerag.errors import CollectionError, ConfigError
from tracerag.store import connect_read_only
from tracerag.text import fold_key

SCHEMA_VERSION = "2"  # 2: zip5 (a US rule) became zip_head (`postal_head`)
STORE_FILE = "catalog.sqlite"  # the store's name in a catalog directory (beside collection/ and profile.toml)


def check_catalog_dir(catalog_dir: Path) -> Path:
    """`catalog_dir` if it holds a catalog (its store), else a ConfigError that says how to make one: checked by
    whoever opens a catalog, and by `tracerag serve --catalog` before it serves anything."""
    if not (Path(catalog_dir) / STORE_FILE).is_file():
        raise ConfigError(f"{catalog_dir}: not a catalog (no {STORE_FILE}); build it with `tracerag catalog ingest`")
    return Path(catalog_dir)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
  id TEXT PRIMARY KEY, data TEXT NOT NULL, city TEXT NOT NULL, county TEXT NOT NULL, zip TEXT NOT NULL,
  zip_head TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS records_city ON records(city);
CREATE INDEX IF NOT EXISTS records_county ON records(county);
CREATE INDEX IF NOT EXISTS records_zip ON records(zip);
CREATE INDEX IF NOT EXISTS records_zip_head ON records(zip_head);
CREATE TABLE IF NOT EXISTS record_values (record_id TEXT NOT NULL, kind TEXT NOT NULL, value TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS record_values_kind ON record_values(kind, value, record_id);
CREATE INDEX IF NOT EXISTS record_values_record ON record_values(record_id);
CREATE TABLE IF NOT EXISTS openings (
  record_id TEXT NOT NULL, weekday INTEGER NOT NULL, opens INTEGER NOT NULL, closes INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS openings_record ON openings(record_id, weekday);
CREATE TABLE IF NOT EXISTS terms (id TEXT PRIMARY KEY, name TEXT NOT NULL);
"""
_VALUE_KINDS = {
    ConstraintKind.LANGUAGE: "language",
    ConstraintKind.ACCESSIBILITY: "accessibility",
    ConstraintKind.SERVICE_TYPE: "term",
    ConstraintKind.AREA: "area",
}
_COLUMNS = {ConstraintKind.CITY: "city", ConstraintKind.COUNTY: "county"}
# Opening.covers in SQL, for one minute: within [opens, closes), or after opens when it closes past midnight.
_COVERS = "((o.closes >= o.opens AND o.opens <= ? AND ? < o.closes) OR (o.closes < o.opens AND ? >= o.opens))"
_BATCH = 500


def record_to_dict(record: ServiceRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "service_id": record.service_id,
        "name": record.name,
        "organization": record.organization,
        "description": record.description,
        "application_process": record.application_process,
        "fees": record.fees,
        "eligibility": record.eligibility,
        "address": record.address,
        "city": record.city,
        "state": record.state,
        "zip": record.zip,
        "county": record.county,
        "phones": list(record.phones),
        "url": record.url,
        "email": record.email,
        "languages": list(record.languages),
        "accessibility": list(record.accessibility),
        "taxonomy": [[t, n] for t, n in record.taxonomy],
        "openings": [[o.weekday, o.opens, o.closes] for o in record.openings],
        "hours_text": record.hours_text,
        "latitude": record.latitude,
        "longitude": record.longitude,
        "phone_labels": dict(record.phone_labels),
        "status": record.status,
        "last_verified": record.last_verified,
        "last_updated": record.last_updated,
        "temporary_message": record.temporary_message,
        "temporary_message_from": record.temporary_message_from,
        "temporary_message_until": record.temporary_message_until,
        "availability": record.availability,
        "service_areas": list(record.service_areas),
    }


def record_from_dict(data: Mapping[str, Any]) -> ServiceRecord:
    fields = dict(data)
    fields["taxonomy"] = [(t, n) for t, n in fields.get("taxonomy", [])]
    fields["openings"] = [Opening(*o) for o in fields.get("openings", [])]
    return ServiceRecord(**fields)


class CatalogStore:
    """Open with `CatalogStore.open(path)`; make a new one with `CatalogStore.create(path)`."""

    def __init__(self, path: Path, db: sqlite3.Connection):
        self.path = Path(path)
        self._db = db

    @classmethod
    def create(cls, path: Path) -> CatalogStore:
        """A store at `path`, made (with its folder) when missing; an existing one is opened as it is."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, isolation_level=None)
        db.executescript(_SCHEMA)
        db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
        return cls(path, db)

    @classmethod
    def of_catalog(cls, catalog_dir: Path) -> CatalogStore:
        """The store of the catalog directory `catalog_dir` (made by `tracerag catalog ingest`), read-only."""
        return cls.open(Path(catalog_dir) / STORE_FILE)

    @classmethod
    def open(cls, path: Path) -> CatalogStore:
        path = Path(path)
        if not path.is_file():
            raise CollectionError(f"{path}: no catalog store; build it with `tracerag catalog ingest`")
        # Only `catalog ingest` writes a catalog (into a new file, renamed into place): read-only here, so that a
        # catalog on read-only storage or another user's can be used.
        db = connect_read_only(path, frozenset({"meta"}), what="catalog store")
        try:
            row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        except sqlite3.DatabaseError as exc:
            db.close()
            raise CollectionError(f"{path}: not a catalog store ({exc})") from None
        if row is None or row[0] != SCHEMA_VERSION:
            db.close()
            raise CollectionError(
                f"{path}: catalog store schema {row and row[0]!r}, this version reads {SCHEMA_VERSION}"
            )
        return cls(path, db)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> CatalogStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writes ---------------------------------------------------------------------------------------

    def put(self, records: Iterable[ServiceRecord]) -> int:
        """Add or replace records by id, all in one transaction (nothing is written if one fails)."""
        n = 0
        self._db.execute("BEGIN IMMEDIATE")
        try:
            for r in records:
                self._db.execute("DELETE FROM record_values WHERE record_id = ?", (r.id,))
                self._db.execute("DELETE FROM openings WHERE record_id = ?", (r.id,))
                self._db.execute(
                    "INSERT OR REPLACE INTO records VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        r.id,
                        json.dumps(record_to_dict(r), ensure_ascii=False),
                        r.city,
                        r.county,
                        r.zip,
                        postal_head(r.zip),
                    ),
                )
                values = [("language", v) for v in dict.fromkeys(r.languages)]
                values += [("accessibility", v) for v in dict.fromkeys(r.accessibility)]
                values += [("area", a) for a in record_areas(r)]
                values += [("term", a) for a in dict.fromkeys(a for t, _ in r.taxonomy for a in term_ancestors(t))]
                self._db.executemany("INSERT INTO record_values VALUES (?, ?, ?)", [(r.id, k, v) for k, v in values])
                self._db.executemany(
                    "INSERT INTO openings VALUES (?, ?, ?, ?)",
                    [(r.id, o.weekday, o.opens, o.closes) for o in dict.fromkeys(r.openings)],
                )
                self._db.executemany(
                    "INSERT OR IGNORE INTO terms VALUES (?, ?)", [(t, name) for t, name in r.taxonomy if t]
                )
                n += 1
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")
        return n

    def put_terms(self, terms: Mapping[str, str]) -> None:
        """The taxonomy's vocabulary (id → name), so that terms above the records' own are known by name."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.executemany("INSERT OR REPLACE INTO terms VALUES (?, ?)", [(k, v) for k, v in terms.items() if k])
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    # -- reads ----------------------------------------------------------------------------------------

    def count(self) -> int:
        return self._db.execute("SELECT count(*) FROM records").fetchone()[0]

    def all_ids(self) -> list[str]:
        return [r[0] for r in self._db.execute("SELECT id FROM records ORDER BY id")]

    def get(self, ids: Iterable[str]) -> dict[str, ServiceRecord]:
        """The records of `ids` that exist, by id."""
        wanted = list(dict.fromkeys(ids))
        out: dict[str, ServiceRecord] = {}
        for i in range(0, len(wanted), _BATCH):
            part = wanted[i : i + _BATCH]
            marks = ",".join("?" * len(part))
            for rid, data in self._db.execute(f"SELECT id, data FROM records WHERE id IN ({marks})", part):
                out[rid] = record_from_dict(json.loads(data))
        return {rid: out[rid] for rid in wanted if rid in out}

    def filter(self, structural: Sequence[Structural], kinds: Collection[ConstraintKind] | None = None) -> list[str]:
        """Ids (sorted) of the records meeting every constraint of `kinds` (None: all kinds), in SQL."""
        where, params = _where(selected(structural, kinds))
        sql = "SELECT r.id FROM records r" + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY r.id"
        return [row[0] for row in self._db.execute(sql, params)]

    def gazetteer(self) -> Gazetteer:
        """The catalog's own values under normalised keys (a key two forms share goes to the more common one)."""
        gaz = Gazetteer()
        for column, target in (("city", gaz.cities), ("county", gaz.counties)):
            rows = self._db.execute(
                f"SELECT {column}, count(*) AS n FROM records WHERE {column} != '' GROUP BY {column} "
                f"ORDER BY n DESC, {column}"
            )
            for value, _ in rows:
                target.setdefault(fold_key(value), value)
        for code, head in self._db.execute("SELECT DISTINCT zip, zip_head FROM records WHERE zip != ''"):
            gaz.zips.update({code, head})
        gaz.areas = dict(
            self._db.execute("SELECT value, count(*) FROM record_values WHERE kind = 'area' GROUP BY value").fetchall()
        )
        for data in self._db.execute("SELECT json_extract(data, '$.state') FROM records"):
            state = " ".join((data[0] or "").split())
            if state:
                gaz.regions[state] = gaz.regions.get(state, 0) + 1
        for kind, target in (("language", gaz.languages), ("accessibility", gaz.accessibility)):
            counts = Counter(
                dict(
                    self._db.execute(
                        "SELECT value, count(*) FROM record_values WHERE kind = ? GROUP BY value", (kind,)
                    ).fetchall()
                )
            )
            for value, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
                target.setdefault(fold_key(value), value)
        gaz.taxonomy = dict(self._db.execute("SELECT id, name FROM terms ORDER BY id").fetchall())
        return gaz


def _where(constraints: Sequence[Structural]) -> tuple[list[str], list[Any]]:
    where: list[str] = []
    params: list[Any] = []
    for s in constraints:
        values = list(s.values)
        marks = ",".join("?" * len(values))
        if s.kind in (ConstraintKind.WEEKDAY, ConstraintKind.TIME):
            continue
        if not values:
            where.append("0")
        elif s.kind in _COLUMNS:
            where.append(f"r.{_COLUMNS[s.kind]} IN ({marks})")
            params += values
        elif s.kind is ConstraintKind.ZIP:
            where.append(f"(r.zip IN ({marks}) OR r.zip_head IN ({marks}))")
            params += values + values
        elif s.kind in _VALUE_KINDS:
            where.append(
                "EXISTS (SELECT 1 FROM record_values v WHERE v.record_id = r.id AND v.kind = ? "
                f"AND v.value IN ({marks}))"
            )
            params += [_VALUE_KINDS[s.kind], *values]
        else:  # a kind this store does not know cannot be met
            where.append("0")
    days = [s for s in constraints if s.kind is ConstraintKind.WEEKDAY]
    times = [s for s in constraints if s.kind is ConstraintKind.TIME]
    for day, time in hour_pairs(days, times):
        weekdays = sorted(int_values(day.values)) if day is not None else list(range(7))
        minutes = sorted(int_values(time.values)) if time is not None else None
        if not weekdays or minutes == []:
            where.append("0")
            continue
        cond = f"o.weekday IN ({','.join('?' * len(weekdays))})"
        params_here: list[Any] = list(weekdays)
        if minutes is not None:
            cond += " AND (" + " OR ".join([_COVERS] * len(minutes)) + ")"
            for m in minutes:
                params_here += [m, m, m]
        where.append(f"EXISTS (SELECT 1 FROM openings o WHERE o.record_id = r.id AND {cond})")
        params += params_here
    return where, params
