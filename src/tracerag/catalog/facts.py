"""Phone numbers and street addresses found in text, in a form two writings of the same one share.

A reply may state only the phones and addresses of the records it recommends (`catalog.guard`), so both must be
recognised however they are written. Phones are found and parsed by `phonenumbers` (Google's libphonenumber) in
the catalog's country (`profile.country`): "(305) 253-4841", "305.253.4841" and "+1 305 253 4841" are one number;
an extension is not part of it. Without a country only numbers written with their country code are found. Every
possible number counts, valid or not: an invented number is still a number to remove. Addresses are a house
number with a street-type word of the word list near it; they compare with street types and directions in one
form ("Street" = "St", "Southwest" = "SW") and ordinals bare ("160th" = "160").
"""

from __future__ import annotations

import re

import phonenumbers

from tracerag.catalog.profile import CatalogProfile
from tracerag.catalog.words import WordList
from tracerag.text import fold_key

__all__ = ["FactFinder"]


class FactFinder:
    """Finds phones in the profile's country and addresses with the word list's street words."""

    def __init__(self, words: WordList, profile: CatalogProfile | None = None):
        self.words = words
        self.region = (profile.country or "").upper() if profile is not None and profile.country else None
        types = "|".join(re.escape(t) for t in sorted(words.street_types, key=len, reverse=True)) or "(?!)"
        directions = "|".join(_dotted(d) for d in sorted(words.directions, key=len, reverse=True)) or "(?!)"
        number = r"\b\d{1,6}[A-Za-z]?(?:-\d{1,5})?"
        if words.type_before_name:  # "12 rue de la Paix", "12, calle Mayor"
            pattern = rf"{number},?\s+(?i:{types})\b\.?(?:\s+[\w'’.-]+){{1,4}}"
        else:  # "11347 SW 160th Street", "2236 NW Lake Court"
            pattern = (
                rf"{number}\s+(?:(?i:{directions})\.?\s+)?(?:[A-Z0-9][\w'.-]*\s+){{0,4}}?"
                rf"(?i:{types})\b\.?(?:\s+(?i:{directions})\b)?"
            )
        self._address = re.compile(pattern)
        suffixes = "|".join(re.escape(s) for s in sorted(words.ordinal_suffixes))
        self._ordinal = re.compile(rf"^(\d+)(?:{suffixes})$") if suffixes else None

    # -- phones ---------------------------------------------------------------------------------------------

    def phones(self, text: str) -> list[tuple[str, str]]:
        """(as written, key) for each phone number in `text`; the key is the E.164 number without extension."""
        found = phonenumbers.PhoneNumberMatcher(text, self.region, leniency=phonenumbers.Leniency.POSSIBLE)
        return [(m.raw_string.strip(), _e164(m.number)) for m in found]

    def phone_key(self, value: str) -> str:
        """The key of one written number (a record's phone field), or "" when it is not one."""
        try:
            number = phonenumbers.parse(value, self.region)
        except phonenumbers.NumberParseException:
            return ""
        return _e164(number) if phonenumbers.is_possible_number(number) else ""

    # -- addresses ------------------------------------------------------------------------------------------

    def addresses(self, text: str) -> list[tuple[str, str]]:
        """(as written, normalised) for each street address in `text`."""
        return [(m.group().strip(), self.address_key(m.group())) for m in self._address.finditer(text)]

    def address_key(self, value: str) -> str:
        out = []
        for w in fold_key(value.replace(".", "")).split():
            if self._ordinal is not None:
                w = self._ordinal.sub(r"\1", w)
            out.append(self.words.street_types.get(w, self.words.directions.get(w, w)))
        return " ".join(out)


def _e164(number: phonenumbers.PhoneNumber) -> str:
    return f"+{number.country_code}{number.national_number}"


def _dotted(direction: str) -> str:
    """A direction as written: "nw" also "N.W." / "N. W."."""
    if len(direction) <= 2:
        return r"\.?\s?".join(re.escape(c) for c in direction)
    return re.escape(direction)
