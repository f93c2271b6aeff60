"""A one-place directory (nearly all its records in one city: the profile's `home_place`, inferred at ingest)
answers a request that names no place for that place and says so; a place it does not know is said and the
request answered for the whole place; a directory of several places still asks. On the real SF 211 export and
SF youth programmes (one city each), the real Miami directory (many cities), and small 211 exports built here.
The example places file of San Francisco neighbourhoods (`examples/catalog/sf-places.toml`) is checked on both
SF catalogs."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from tests.catalog import built
from tests.catalog.test_places import HEADER
from tracerag.catalog.assistant import CatalogAssistant
from tracerag.catalog.gazetteer import load_places
from tracerag.catalog.ingest import PLACES_FILE, build_catalog
from tracerag.catalog.model import ConstraintKind
from tracerag.catalog.profile import PROFILE_FILE, CatalogProfile
from tracerag.catalog.profile_inference import HOME_PLACE_SHARE, infer_home_place
from tracerag.catalog.store import CatalogStore
from tracerag.config import load_settings
from tracerag.errors import ConfigError
from tracerag.trail import read_trail
from tracerag.trail.events import CatalogOutcome

REPO = Path(__file__).parents[2]
SF_PLACES = REPO / "examples" / "catalog" / "sf-places.toml"
WEDNESDAY = 2


def _export(path: Path, cities: list[str]) -> Path:
    """A 211 export of food pantries and shelters, one agency per city given (in turn)."""
    kinds = ["Food Pantries", "Homeless Shelter"]
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(HEADER)
        for n, city in enumerate(cities, 1):
            tax = kinds[n % 2]
            name = f"{city.upper()} {tax.upper()} {n}"
            cells = {
                "ResourceAgencyNum": str(n),
                "PublicName": name,
                "TaxonomyLevelName": "Agency",
                "ParentAgencyNum": "0",
                "AgencyStatus": "Active",
                "AgencyDescription": f"{name.title()} offers {tax.lower()} to residents.",
                "PhysicalAddress1": f"{n}00 Main Street",
                "PhysicalCity": city,
                "PhysicalStateProvince": "LK",
                "PhysicalPostalCode": f"{10000 + n % 3}",
                "Phone1Number": f"202-555-{1000 + n}",
                "Tax": tax,
            }
            writer.writerow([cells.get(c, "") for c in HEADER])
    return path


@pytest.fixture(scope="module")
def one_town(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """20 records in Lakeside, 1 in Hillcrest: 95% in one city."""
    base = tmp_path_factory.mktemp("one-town")
    build_catalog(_export(base / "export.csv", ["Lakeside"] * 20 + ["Hillcrest"]), base / "c", load_settings())
    return base / "c"


@pytest.fixture(scope="module")
def two_towns(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """18 records in Lakeside, 3 in Hillcrest: 86% in one city, so a directory of several places."""
    base = tmp_path_factory.mktemp("two-towns")
    build_catalog(_export(base / "export.csv", ["Lakeside"] * 18 + ["Hillcrest"] * 3), base / "c", load_settings())
    return base / "c"


def _assistant(catalog: Path, trails: Path) -> CatalogAssistant:
    return CatalogAssistant(catalog, load_settings(), today=WEDNESDAY, trail_dir=trails)


# -------------------------------------------------------------------------------------- the inference


def test_the_home_place_is_the_city_of_nearly_all_the_records() -> None:
    assert HOME_PLACE_SHARE == 0.95
    assert infer_home_place(["Lakeside"] * 19 + ["Hillcrest"]) == ("Lakeside", "city of 19 of 20 records")
    assert infer_home_place(["Lakeside"] * 18 + ["Hillcrest"] * 2) is None
    assert infer_home_place(["Lakeside"] * 19 + [""]) == ("Lakeside", "city of 19 of 20 records")
    assert infer_home_place(["Lakeside"] * 18 + ["", ""]) is None  # records naming no city count against it
    assert infer_home_place(["LAKESIDE", "Lakeside", "Lakeside"]) == ("Lakeside", "city of 3 of 3 records")
    assert infer_home_place([]) is None


def test_ingest_writes_the_home_place_into_the_profile(one_town: Path, two_towns: Path) -> None:
    assert CatalogProfile.load(one_town).home_place == "Lakeside"
    assert CatalogProfile.load(two_towns).home_place is None


# -------------------------------------------------------------------------------------- the fixtures


def test_a_request_naming_no_place_is_answered_for_the_home_place(one_town: Path, tmp_path: Path) -> None:
    with _assistant(one_town, tmp_path) as a:
        turn = a.ask("food pantry")
        trail = a.trail_path
    assert turn.outcome == CatalogOutcome.ANSWER, turn.reply
    assert turn.reply.startswith("These are in Lakeside, where this directory's services are.")
    assert turn.recommendations and {r.record.city for r in turn.recommendations} == {"Lakeside"}
    city = turn.constraints.of(ConstraintKind.CITY)
    assert city is not None and city.values == ("Lakeside",) and city.said == ""  # assumed, not said
    parse = [e for e in read_trail(trail) if e.kind == "catalog_parse"][0]
    assert "no place named: the directory's home place, Lakeside" in parse.notes


def test_an_unknown_place_is_said_and_the_whole_home_place_answered(one_town: Path, tmp_path: Path) -> None:
    with _assistant(one_town, tmp_path) as a:
        turn = a.ask("food pantry in eastgate")
    assert turn.outcome == CatalogOutcome.ANSWER, turn.reply
    assert turn.reply.startswith("I don't know 'eastgate' in this directory, so these are in Lakeside.")
    assert {r.record.city for r in turn.recommendations} == {"Lakeside"}
    assert turn.constraints.topic == "food pantry"


def test_a_named_place_replaces_the_home_place_and_the_home_place_is_said_once(one_town: Path, tmp_path: Path) -> None:
    with _assistant(one_town, tmp_path) as a:
        first = a.ask("shelter")
        again = a.ask("what about on sunday")
        named = a.ask("what about in Hillcrest")
        back = a.ask("food pantry")
    assert first.reply.startswith("These are in Lakeside")
    assert not again.reply.startswith("These are in")  # said once in a conversation
    assert named.constraints.of(ConstraintKind.CITY).values == ("Hillcrest",)
    assert "Lakeside" not in named.reply
    assert back.constraints.of(ConstraintKind.CITY).values == ("Hillcrest",)  # the person's place is kept


def test_a_directory_of_several_places_still_asks(two_towns: Path, tmp_path: Path) -> None:
    with _assistant(two_towns, tmp_path) as a:
        plain = a.ask("food pantry")
        a.reset()
        unknown = a.ask("food pantry in brightwood")
    assert plain.outcome == CatalogOutcome.CLARIFY
    assert plain.reply == "Which city or postal code should I look in for food pantry?"
    assert unknown.outcome == CatalogOutcome.CLARIFY
    assert unknown.reply.startswith("I don't know 'brightwood' in this directory: which city")


def test_an_empty_request_is_not_answered_with_the_whole_home_place(one_town: Path, tmp_path: Path) -> None:
    with _assistant(one_town, tmp_path) as a:
        turn = a.ask("hello")
    assert turn.outcome != CatalogOutcome.ANSWER or turn.constraints.topic


def test_the_home_place_is_editable_and_kept_by_a_new_ingest(tmp_path: Path) -> None:
    source = _export(tmp_path / "export.csv", ["Lakeside"] * 20)
    catalog = tmp_path / "c"
    build_catalog(source, catalog, load_settings())
    profile = catalog / PROFILE_FILE
    profile.write_text(profile.read_text(encoding="utf-8").replace('home_place = "Lakeside"', 'home_place = ""'))
    build_catalog(source, catalog, load_settings())
    assert CatalogProfile.load(catalog).home_place == ""  # a person's edit wins over the inference
    with _assistant(catalog, tmp_path / "trails") as a:
        assert a.ask("food pantry").outcome == CatalogOutcome.CLARIFY
    profile.write_text(profile.read_text(encoding="utf-8").replace('home_place = ""', 'home_place = "Nowhere"'))
    with pytest.raises(ConfigError, match=r"profile\.toml: home_place: not a place of this catalog: 'Nowhere'"):
        _assistant(catalog, tmp_path / "trails")


def test_a_places_file_given_at_ingest_is_checked_and_copied(tmp_path: Path) -> None:
    source = _export(tmp_path / "export.csv", ["Lakeside"] * 20)
    good = tmp_path / "places.toml"
    good.write_text('"Old Town" = "10001"\n', encoding="utf-8")
    catalog = tmp_path / "c"
    build_catalog(source, catalog, load_settings(), places=good)
    assert CatalogProfile.load(catalog).places == Path(PLACES_FILE)
    assert (catalog / PLACES_FILE).read_text(encoding="utf-8") == good.read_text(encoding="utf-8")
    with _assistant(catalog, tmp_path / "trails") as a:
        turn = a.ask("food pantry in old town")
    assert turn.outcome == CatalogOutcome.ANSWER, turn.reply
    assert {r.record.zip for r in turn.recommendations} == {"10001"}
    bad = tmp_path / "bad.toml"
    bad.write_text('"Old Town" = "99999"\n', encoding="utf-8")
    before = (catalog / "catalog.sqlite").stat().st_mtime_ns
    with pytest.raises(ConfigError, match=r"bad\.toml:1: 'Old Town': not a place of this catalog: '99999'"):
        build_catalog(source, catalog, load_settings(), places=bad)
    assert (catalog / "catalog.sqlite").stat().st_mtime_ns == before  # the catalog as it was


# -------------------------------------------------------------------------------------- the real catalogs


@pytest.fixture(scope="module")
def sf(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("sf-one-place")
    # built once per run (lexical, as build_catalog's default); this module's own copies
    shutil.copytree(built.sf211(tmp_path_factory), base / "sf211")
    shutil.copytree(built.sfyouth(tmp_path_factory), base / "sfyouth")
    # the same SF 211 catalog with the example places file, as `profile.toml` names it after an edit
    shutil.copytree(base / "sf211", base / "sf211-places")
    shutil.copyfile(SF_PLACES, base / "sf211-places" / PLACES_FILE)
    profile = CatalogProfile.load(base / "sf211-places")
    profile.model_copy(update={"places": Path(PLACES_FILE)}).save(base / "sf211-places")
    return {"sf211": base / "sf211", "sfyouth": base / "sfyouth", "sf211-places": base / "sf211-places"}


@pytest.mark.parametrize("which", ["sf211", "sfyouth"])
def test_the_sf_directories_have_san_francisco_as_their_home_place(sf: dict[str, Path], which: str) -> None:
    assert CatalogProfile.load(sf[which]).home_place == "San Francisco"


@pytest.mark.parametrize("which", ["sf211", "sfyouth"])
def test_after_school_program_is_answered_in_san_francisco(sf: dict[str, Path], which: str, tmp_path: Path) -> None:
    with _assistant(sf[which], tmp_path) as a:
        turn = a.ask("after school program")
    assert turn.outcome == CatalogOutcome.ANSWER, turn.reply
    assert "Which city" not in turn.reply
    assert turn.reply.startswith("These are in San Francisco")
    assert {r.record.city for r in turn.recommendations} == {"San Francisco"}


@pytest.mark.parametrize(
    ("which", "said", "name"),
    [
        ("sf211", "food pantry in the tenderloin", "tenderloin"),
        ("sf211", "senior center in chinatown", "chinatown"),
        ("sf211", "doctor in visitacion valley, cheap", "visitacion valley"),
        ("sfyouth", "summer program in the excelsior", "excelsior"),
        ("sfyouth", "youth jobs in the mission", "mission"),
    ],
)
def test_a_neighbourhood_without_a_places_file_is_said_and_sf_answered(
    sf: dict[str, Path], which: str, said: str, name: str, tmp_path: Path
) -> None:
    with _assistant(sf[which], tmp_path) as a:
        turn = a.ask(said)
    assert turn.outcome == CatalogOutcome.ANSWER, turn.reply
    assert turn.reply.startswith(f"I don't know '{name}' in this directory, so these are in San Francisco.")
    assert name not in turn.constraints.topic.split()


def test_miami_still_asks_which_city(catalog: Path, tmp_path: Path) -> None:
    assert CatalogProfile.load(catalog).home_place is None
    with _assistant(catalog, tmp_path) as a:
        turn = a.ask("food pantry")
    assert turn.outcome == CatalogOutcome.CLARIFY
    assert turn.reply == "Which city or postal code should I look in for food pantry?"


def test_the_sf_places_example_names_places_of_both_sf_catalogs(sf: dict[str, Path]) -> None:
    for which in ("sf211", "sfyouth"):
        with CatalogStore.of_catalog(sf[which]) as store:
            places = load_places(SF_PLACES, store.gazetteer())
        assert places["Tenderloin"] == ("94102", "94109")
        assert places["Bayview Hunters Point"] == ("94124",)


@pytest.mark.parametrize(
    ("said", "codes"),
    [
        ("food pantry in the tenderloin", {"94102", "94109"}),
        ("food pantry in the mission", {"94110", "94103"}),
        ("food pantry in bayview hunters point", {"94124"}),
        ("shelter in soma", {"94103", "94105", "94107"}),
    ],
)
def test_the_sf_places_file_finds_the_neighbourhoods_records(
    sf: dict[str, Path], said: str, codes: set[str], tmp_path: Path
) -> None:
    with _assistant(sf["sf211-places"], tmp_path) as a:
        turn = a.ask(said)
    assert turn.outcome == CatalogOutcome.ANSWER, turn.reply
    area = turn.constraints.of(ConstraintKind.AREA)
    assert area is not None and set(area.values) == codes
    assert "I don't know" not in turn.reply and not turn.reply.startswith("These are in")
    assert turn.recommendations and {r.record.zip[:5] for r in turn.recommendations} <= codes


def test_a_neighbourhood_with_nothing_is_widened_to_the_home_place_and_said(
    sf: dict[str, Path], tmp_path: Path
) -> None:
    # no homeless shelter in 94108 or 94133 (the example file's Chinatown), by service type or by the records' words:
    # the rest of San Francisco is looked in ("senior center" no longer is: Manilatown Senior Center, 94108, says it)
    with _assistant(sf["sf211-places"], tmp_path) as a:
        turn = a.ask("homeless shelter in chinatown")
        trail = a.trail_path
    assert turn.outcome == CatalogOutcome.ANSWER, turn.reply
    assert turn.reply.startswith("I found nothing in chinatown, so I looked in all of San Francisco. Services")
    assert {r.record.city for r in turn.recommendations} == {"San Francisco"}
    assert turn.constraints.of(ConstraintKind.AREA) is None
    assert any("nothing in chinatown: looked in the whole home place" in n for n in turn.notes)
    filters = [e for e in read_trail(trail) if e.kind == "catalog_filter"]
    assert len(filters) == 2  # the neighbourhood, then the whole place: both in the trail


def test_a_postal_code_named_is_never_widened(sf: dict[str, Path], tmp_path: Path) -> None:
    with _assistant(sf["sf211-places"], tmp_path) as a:
        turn = a.ask("tenant rights help near 94110")
    # a code the person wrote is a hard constraint: no record of the type there, but the Tenants Union (94110)
    # states tenants' rights in its own words; nothing outside 94110
    assert turn.outcome == CatalogOutcome.ANSWER
    assert turn.recommendations and all(r.record.zip.startswith("94110") for r in turn.recommendations)


# ---------------------------------------------------------------- the Miami places example (a directory of many places)

MIAMI_PLACES = REPO / "examples" / "catalog" / "miami-places.toml"


@pytest.fixture(scope="module")
def miami_places(catalog: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real Miami catalog with the example places file, as `profile.toml` names it after an edit."""
    target = tmp_path_factory.mktemp("miami-places") / "miami"
    shutil.copytree(catalog, target)
    shutil.copyfile(MIAMI_PLACES, target / PLACES_FILE)
    profile = CatalogProfile.load(target)
    profile.model_copy(update={"places": Path(PLACES_FILE)}).save(target)
    return target


def test_the_miami_places_example_names_places_of_the_miami_catalog(catalog: Path) -> None:
    with CatalogStore.of_catalog(catalog) as store:
        places = load_places(MIAMI_PLACES, store.gazetteer())  # every value checked against the records
    assert places["Liberty City"] == ("33142", "33147", "33127")
    assert places["Kendall"][0] == "Kendall"  # the directory's city of that name, and the codes around it
    assert "Key West" in places["The Keys"] and "Miami" not in places["The Keys"]
    assert "Keys" not in places  # "my keys" is no place


# The people-written eval's place requests (benchmarks/catalog_people/miami.jsonl), with services read in the
# records at the neighbourhood's codes: Liberty City's pantries at 33142 and 33147, Little Haiti's rent help at
# 33150 (6610, 8387), Allapattah's senior centres (2841 at 33142, 1021 at 33125), the Keys' shelters at Key West
# (6229, 6491), Kendall's mental health centre at 33176 (312), South Beach's food boxes at 33139 (6660).
@pytest.mark.parametrize(
    ("said", "name", "expected"),
    [
        ("food pantry in liberty city", "Liberty City", {"6650", "8226"}),
        ("help with rent in little haiti", "Little Haiti", {"6610", "8387"}),
        ("senior center in allapattah for my dad", "Allapattah", {"2841", "1021"}),
        ("homeless shelter in the keys", "The Keys", {"6229", "6491"}),
        ("mental health counseling in kendall", "Kendall", {"312"}),
        ("emergency food near south beach", "South Beach", {"6660"}),
        ("free clinic in little havana", "Little Havana", {"6999"}),
    ],
)
def test_the_miami_places_file_finds_the_neighbourhoods_records(
    miami_places: Path, said: str, name: str, expected: set[str], tmp_path: Path
) -> None:
    with CatalogStore.of_catalog(miami_places) as store:
        places = load_places(MIAMI_PLACES, store.gazetteer())[name]
    with _assistant(miami_places, tmp_path) as a:
        turn = a.ask(said)
    assert turn.outcome == CatalogOutcome.ANSWER, turn.reply
    area = turn.constraints.of(ConstraintKind.AREA)
    assert area is not None and set(area.values) == set(places)
    assert expected <= {r.record.id for r in turn.recommendations}
    for rec in turn.recommendations:  # each in a code or city of the neighbourhood
        assert rec.record.zip[:5] in places or rec.record.city in places, rec.record.id


@pytest.mark.parametrize(
    "said", ["food pantry in liberty city", "homeless shelter in the keys", "food near south beach"]
)
def test_without_the_miami_places_file_the_neighbourhood_is_asked_about(
    catalog: Path, said: str, tmp_path: Path
) -> None:
    with _assistant(catalog, tmp_path) as a:
        turn = a.ask(said)
    assert turn.outcome == CatalogOutcome.CLARIFY and not turn.recommendations
