"""Record statuses that mean "do not refer": such services are listed by the directory but never recommended.

A directory keeps services it no longer sends people to under a status of its own ("Active, but do not refer" in
211 software). Inactive ones are left out by the readers; these stay in the catalog (a person may look them up)
and are excluded when recommending, each with the reason in the trail. Which statuses they are is the catalog
profile's `do_not_refer` (statuses compared as folded text): written at ingest from the statuses whose words say so
(the word list's `records.do_not_refer` phrases), or set by hand for a directory that writes it otherwise.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from tracerag.catalog.model import ServiceRecord
from tracerag.catalog.words import RecordWords
from tracerag.text import fold_key

__all__ = ["do_not_refer_statuses", "excluded_by_status", "says_do_not_refer"]


def says_do_not_refer(status: str, words: RecordWords) -> bool:
    """Whether a status's words say not to refer ("Active, but do not refer"; "Don't refer")."""
    folded = f" {fold_key(status)} "
    return any(f" {phrase} " in folded for phrase in words.do_not_refer)


def do_not_refer_statuses(records: Iterable[ServiceRecord], words: RecordWords) -> tuple[str, ...]:
    """The distinct statuses of `records` that say not to refer, as written, sorted (for the profile)."""
    statuses = {r.status.strip() for r in records if r.status.strip()}
    return tuple(sorted(s for s in statuses if says_do_not_refer(s, words)))


def excluded_by_status(record: ServiceRecord, do_not_refer: Collection[str]) -> str:
    """Why `record` is not recommended ("status 'Active, but do not refer': do not refer"), or "" when its status
    is not one of the profile's `do_not_refer`."""
    if not record.status.strip() or not do_not_refer:
        return ""
    if fold_key(record.status) in {fold_key(s) for s in do_not_refer}:
        return f"status {record.status.strip()!r}: do not refer (catalog profile do_not_refer)"
    return ""
