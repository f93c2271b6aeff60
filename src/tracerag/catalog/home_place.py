"""The place of a one-place directory: a request that names no place is answered there, and the reply says so.

A city's own directory (nearly all its records in one city: `CatalogProfile.home_place`, inferred at ingest by
`profile_inference.infer_home_place`, editable) has only one answer to "which city or postal code?", so asking it
is a wasted turn. When the conversation asks for something and names no place, the home place becomes its
place constraint (an assumed one: `said` is empty), and the reply starts by saying where the services are. A
place the directory does not know ("in eastgate") is said, and the request is answered for the whole home place
instead of asked about again. A directory of several places has no home place and keeps asking.

The assumed place is taken away before each turn is read (`without_home`) and put back after (`with_home`), so
the dialogue reads every turn as it would in any directory: a place the person names replaces nothing but the
assumption, and an answer to the clarifying question is still read as a place (`dialogue.place_answer`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tracerag.catalog.model import ConstraintKind, Constraints, Gazetteer, Structural
from tracerag.errors import ConfigError
from tracerag.text import fold_key

__all__ = ["home_constraint", "home_sentence", "with_home", "without_home"]


def home_constraint(home: str | None, gazetteer: Gazetteer, profile_path: Path) -> Structural | None:
    """The constraint that keeps the records of the profile's home place (a city, else a county, else any record
    area of the catalog, as its records write it), or None when the profile names none. A name the catalog
    lacks is a ConfigError naming the profile and the field."""
    if home is None or not home.strip():
        return None
    key = fold_key(home)
    for kind, values in ((ConstraintKind.CITY, gazetteer.cities), (ConstraintKind.COUNTY, gazetteer.counties)):
        found = next((v for k, v in values.items() if fold_key(k) == key), None)
        if found is not None:
            return Structural(kind, (found,))
    areas = sorted((a for a in gazetteer.areas if fold_key(a) == key), key=lambda a: -gazetteer.areas[a])
    if areas:
        return Structural(ConstraintKind.AREA, (areas[0],))
    raise ConfigError(f"{profile_path}: home_place: not a place of this catalog: {home!r}")


def without_home(state: Constraints, home: Structural | None) -> Constraints:
    """`state` without the assumed home place (the dialogue then reads the next turn as in any directory)."""
    if home is None or home not in state.structural:
        return state
    return replace(state, structural=[s for s in state.structural if s != home])


def with_home(state: Constraints, home: Structural | None) -> Constraints:
    """`state` with the home place when it asks for something (a topic, a constraint or a condition) and names
    no place; else `state` itself. An empty request still gets the question of what is wanted."""
    if home is None or state.has_location() or not (state.topic.strip() or state.structural or state.semantic):
        return state
    order = list(ConstraintKind)
    structural = sorted([*state.structural, home], key=lambda s: order.index(s.kind))
    return replace(state, structural=structural)


def home_sentence(home: Structural, unknown: list[str], answered: bool) -> str:
    """What the reply says first about the assumed place: where the services are, and the places the person
    named that the directory does not know ("I don't know 'eastgate' in this directory, so these are in
    Lakeside:")."""
    where = " or ".join(home.values)
    if not unknown:
        return f"These are in {where}, where this directory's services are." if answered else f"I looked in {where}."
    names = " or ".join(f"'{u}'" for u in unknown)
    return f"I don't know {names} in this directory, so " + (
        f"these are in {where}." if answered else f"I looked in all of {where}."
    )
