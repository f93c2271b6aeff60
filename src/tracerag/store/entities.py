"""The named entities of each chunk (ingest/entities.py writes them, retrieval/entities.py reads them), and
which chunks were looked at and by what.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracerag.ingest.entities import EntityForm, EntityWork, StoredMention
from tracerag.model import Filter
from tracerag.store.chunks import ChunkTables
from tracerag.store.sqlite import batches, filter_sql


class EntityTables(ChunkTables):
    """The `entities` and `entity_chunks` tables (counts of chunks looked at need the chunks' own)."""

    def has_entity_tables(self) -> bool:
        """Whether this store has the entity tables (a collection made before them, opened read-only, has not)."""
        found = self._db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'entities'")
        return found.fetchone() is not None

    def chunks_for_entities(
        self, limit: int, after: tuple[str, int] = ("", -1), finders: Sequence[str] = ()
    ) -> list[EntityWork]:
        """Chunks of indexed documents looked at for entities by none of `finders` (or not at all), in (doc_id, n)
        order from after `after` (keyset paging), with their document's language."""
        marks = ",".join("?" * len(finders))
        others = f" OR ec.finder NOT IN ({marks})" if finders else ""  # (NOT IN () would hold for every chunk)
        rows = self._db.execute(
            'SELECT c.id, c.doc_id, c.n, c.start, c."end", d.language '
            "FROM chunks c JOIN documents d ON d.id = c.doc_id "
            "LEFT JOIN entity_chunks ec ON ec.chunk_id = c.id WHERE d.state = 'indexed' "
            f"AND (ec.chunk_id IS NULL{others}) AND (c.doc_id, c.n) > (?, ?) "
            "ORDER BY c.doc_id, c.n LIMIT ?",
            (*finders, *after, limit),
        )
        return [EntityWork(*row) for row in rows]

    def entity_version(self) -> tuple[int, int]:
        """Changes whenever the entities do (chunks looked at, largest row id): what a cached lexicon is keyed by."""
        if not self.has_entity_tables():
            return (0, 0)
        row = self._db.execute("SELECT (SELECT count(*) FROM entity_chunks), (SELECT max(rowid) FROM entities)")
        looked_at, last = row.fetchone()
        return int(looked_at), int(last or 0)

    def count_chunks_for_entities(self) -> tuple[int, int]:
        """(chunks looked at for entities, chunks of indexed documents)."""
        if not self.has_entity_tables():
            return 0, self.count_chunks()
        done = self._db.execute("SELECT count(*) FROM entity_chunks").fetchone()[0]
        return int(done), self.count_chunks()

    def put_entities(self, finder_of: dict[str, str], mentions: Sequence[StoredMention]) -> None:
        """Record the chunks of `finder_of` (chunk id -> what looked at it) as looked at, replacing what an earlier
        finder found there, and their mentions, in one transaction."""
        with self._transaction():
            ids = [(c,) for c in finder_of]
            self._db.executemany("DELETE FROM entities WHERE chunk_id = ?", ids)
            self._db.executemany("INSERT OR REPLACE INTO entity_chunks VALUES (?, ?)", list(finder_of.items()))
            self._db.executemany(
                "INSERT INTO entities VALUES (?,?,?,?,?,?)",
                [(m.chunk_id, m.start, m.end, m.surface, m.label, m.folded) for m in mentions],
            )

    def entity_forms(self, finders: Sequence[str] | None = None) -> list[EntityForm]:
        """Every folded entity form: in how many chunks it stands, its most frequent label and surface; of the
        mentions `finders` found when given (the gazetteer is built from the pipelines' finds only)."""
        if not self.has_entity_tables():
            return []
        where, args = "", []
        if finders is not None:
            marks = ",".join("?" * len(finders))
            where = f"JOIN entity_chunks ec ON ec.chunk_id = e.chunk_id WHERE ec.finder IN ({marks})"
            args = list(finders)
        rows = self._db.execute(
            f"SELECT e.folded, e.label, e.surface, count(DISTINCT e.chunk_id) FROM entities e {where} "
            "GROUP BY e.folded, e.label, e.surface",
            args,
        )
        best: dict[str, tuple[int, str, str, int]] = {}  # folded -> (count of the best pair, label, surface, chunks)
        for folded, label, surface, n in rows:
            seen = best.get(folded)
            if seen is None:
                best[folded] = (n, label, surface, n)
            else:
                top = (n, label, surface) if (n, label, surface) > seen[:3] else seen[:3]
                best[folded] = (*top, seen[3] + n)
        return [EntityForm(f, label, surface, chunks) for f, (_, label, surface, chunks) in sorted(best.items())]

    def entity_chunks(self, forms: Sequence[str], flt: Filter | None = None) -> list[tuple[str, str, str, int]]:
        """(chunk id, doc id, folded form, mentions) of every chunk holding one of `forms` that `flt` admits. The
        filter has the engine's meaning (engine/points.py `conditions`): a corpus or any of its parents, a
        language, an allow-list of documents, a date range that overlaps the document's, exact field values."""
        out: list[tuple[str, str, str, int]] = []
        conditions, args = filter_sql(flt)
        for part in batches(list(dict.fromkeys(forms)), 400):
            marks = ",".join("?" * len(part))
            rows = self._db.execute(
                "SELECT e.chunk_id, c.doc_id, e.folded, count(*) FROM entities e JOIN chunks c ON c.id = e.chunk_id "
                f"JOIN documents d ON d.id = c.doc_id WHERE e.folded IN ({marks}) {conditions} "
                "GROUP BY e.chunk_id, e.folded",
                (*part, *args),
            )
            out.extend((str(r[0]), str(r[1]), str(r[2]), int(r[3])) for r in rows)
        return out

    def mentions_of(self, chunk_ids: Sequence[str]) -> list[StoredMention]:
        """The mentions stored for these chunks, in chunk and text order."""
        out: list[StoredMention] = []
        for part in batches(list(chunk_ids), 500):
            marks = ",".join("?" * len(part))
            rows = self._db.execute(
                f'SELECT chunk_id, start, "end", surface, label, folded FROM entities WHERE chunk_id IN ({marks}) '
                'ORDER BY chunk_id, start, "end"',
                part,
            )
            out.extend(StoredMention(*r) for r in rows)
        return out
