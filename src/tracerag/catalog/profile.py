"""What one directory knows about its own place: the profile every catalog carries beside its data.

Library code knows no city, region, country, phone plan or help line; a catalog's profile does. It is inferred
at `tracerag catalog ingest` from the records themselves (the most common country, state or province, postal code
shape, the language of the texts), written beside the catalog as `profile.toml`, editable by hand, and passed
to request parsing, condition checks and replies. Word lists (filler words, weekday names, time words, condition
phrases) are data files per language under `tracerag/catalog/words/`, named by `language`; a profile may point at
its own instead.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import tomli_w
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tracerag.errors import ConfigError

PROFILE_FILE = "profile.toml"
PROFILE_VERSION = 1


class PhoneNumber(BaseModel):
    """A number to call, with what it is: the profile's emergency and crisis numbers."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str = Field(min_length=1, description='What the number is ("Emergency (police, fire, ambulance)").')
    number: str = Field(min_length=1, description='The number as dialled ("911").')


class CatalogProfile(BaseModel):
    """A directory's locale and regional conventions. Every field is data about the directory, none is a rule."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int = Field(PROFILE_VERSION, description="Profile format version.")
    name: str = Field("", description='The directory\'s name as shown to people ("Lakeside County 211"); may be empty.')
    language: str = Field("en", description="ISO 639-1 language of the records' texts: stemming and word lists.")
    country: str | None = Field(
        None, description="ISO 3166-1 alpha-2 country of the services (phone numbers, addresses); None: unknown."
    )
    region: str | None = Field(
        None, description='The state, province or region the directory serves ("Ontario"); None: unknown.'
    )
    region_aliases: tuple[str, ...] = Field(
        (), description='Other names of the region in requests and texts ("ON", "Province of Ontario").'
    )
    place_aliases: dict[str, str] = Field(
        default_factory=dict,
        description='Names people use for a catalog place, to the catalog\'s own value ("Ridge" → "Ridge-Valley").',
    )
    postal_code_pattern: str | None = Field(
        None, description='Regular expression of the directory\'s postal codes ("\\\\d{5}(?:-\\\\d{4})?"); None: none.'
    )
    postal_code_prefix: int | None = Field(
        None, description="Leading characters a postal code is matched on (5 for ZIP+4 codes); None: the whole code."
    )
    help_line: str | None = Field(
        None, description='What a person can call when nothing in the directory fits ("211"); None: say nothing.'
    )
    request_languages: tuple[str, ...] | None = Field(
        None,
        description="Languages requests may be written in besides `language`, each read through a packaged gloss "
        "(`catalog/words/gloss-{lang}-{language}.toml`); None: every language with such a gloss; () none.",
    )
    emergency_numbers: tuple[PhoneNumber, ...] = Field(
        (),
        description="The emergency numbers of the directory's country, at the top of every reply to an urgent "
        "request; filled at ingest from the country's word file (`words/country-{cc}.toml`); empty: none said.",
    )
    crisis_numbers: tuple[PhoneNumber, ...] = Field(
        (),
        description="The crisis lines of the directory's country (a suicide and crisis line), beside the emergency "
        "numbers; filled at ingest like them; empty: none said.",
    )
    words: Path | None = Field(
        None, description="A word-list file replacing the packaged one for `language` (same format)."
    )
    do_not_refer: tuple[str, ...] = Field(
        (),
        description='Record statuses, as the directory writes them, of services never to recommend ("Active, but '
        'do not refer"); found at ingest from the words of the statuses, or set here.',
    )
    verified_max_age_days: int = Field(
        365, ge=1, description="A record last verified longer ago than this is shown flagged: call to check."
    )
    home_place: str | None = Field(
        None,
        description="The one place (a city, county or area of the catalog) nearly all the records are in, found at "
        "ingest (`profile_inference.HOME_PLACE_SHARE`) or set here: a request that names no place is answered for "
        'it, and the reply says so; None or "": several places, so the assistant asks which.',
    )
    places: Path | None = Field(
        None,
        description='A places file beside the profile (TOML: `"the valley" = ["Hillcrest", "Lakeside"]`): names people '
        "use, each to the catalog places (cities, counties, postal codes, regions, coverage areas) it stands for.",
    )

    @classmethod
    def load(cls, catalog_dir: Path) -> CatalogProfile:
        """The profile beside a catalog; a catalog without one gets the defaults (nothing regional known)."""
        path = Path(catalog_dir) / PROFILE_FILE
        if not path.is_file():
            return cls()
        try:
            return cls(**tomllib.loads(path.read_text(encoding="utf-8")))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"{path}: cannot read the catalog profile: {exc}") from exc
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise ConfigError(f"{path}: invalid catalog profile: {problems}") from None

    def save(self, catalog_dir: Path) -> Path:
        """Write `profile.toml` atomically; None values are left out (TOML has no null)."""
        path = Path(catalog_dir) / PROFILE_FILE
        data = {k: (str(v) if isinstance(v, Path) else v) for k, v in self.model_dump().items() if v is not None}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(tomli_w.dumps(data), encoding="utf-8")
        tmp.replace(path)
        return path
