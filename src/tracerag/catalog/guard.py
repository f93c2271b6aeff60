"""The hallucination guard: a model-written reply keeps only the phones, addresses and names of the records it
was given.

`guard_reply` removes every sentence (or list item) that carries a phone number, street address or service name
not found in the selected records - the model's fluency is kept, its inventions are not. Nothing is repaired by
guessing: what was removed is returned for the trail. Phones and addresses are recognised and compared by
`catalog.facts` (the catalog's country and word list); sentences are split by `tracerag.text.sentence_spans`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rapidfuzz import fuzz

from tracerag.catalog.facts import FactFinder
from tracerag.catalog.model import ServiceRecord
from tracerag.text import fold_key, sentence_spans

__all__ = ["guard_reply", "mentions_any"]

_ITEM = re.compile(r"^(\s*)(?:\d{1,2}[.)]|[-*\u2022])\s+")
_BOLD = re.compile(r"\*\*(.+?)\*\*|__(.+?)__")
_MIN_NAME = 8  # catalog names shorter than this, or of one word, are too generic to police ("FOOD", "WIC")


@dataclass
class _Grounds:
    facts: FactFinder
    phones: set[str]
    addresses: list[str]
    names: list[str]  # folded names and organizations of the selected records
    text: str  # folded free text and fields of the selected records, padded with spaces

    @classmethod
    def of(cls, selected: Sequence[ServiceRecord], allowed: Iterable[str], facts: FactFinder) -> _Grounds:
        phones: set[str] = set()
        addresses: list[str] = []
        names: list[str] = []
        texts: list[str] = []
        for r in selected:
            raw = " ".join([r.text(), r.address, r.city, r.county, r.organization, r.url, " ".join(r.phones)])
            phones.update(k for k in (facts.phone_key(p) for p in r.phones) if k)
            phones.update(k for _, k in facts.phones(raw))
            if r.address.strip():
                addresses.append(facts.address_key(r.address))
            addresses.extend(n for _, n in facts.addresses(raw))
            names.extend(n for n in (fold_key(r.name), fold_key(r.organization)) if n)
            texts.append(fold_key(raw))
        texts.extend(fold_key(a) for a in allowed)
        return cls(facts, phones, addresses, names, " " + " | ".join(texts) + " ")

    def address_ok(self, norm: str) -> bool:
        padded = f" {norm} "
        return any(padded in f" {a} " or f" {a} " in padded for a in self.addresses)

    def name_ok(self, candidate: str) -> bool:
        norm = fold_key(candidate)
        if not norm or f" {norm} " in self.text:
            return True
        return any(fuzz.token_set_ratio(norm, n) >= 90 for n in self.names)


def _looks_like_name(candidate: str, facts: FactFinder) -> bool:
    if re.search(r"\d", candidate):
        return False  # hours, phones, addresses: checked as such
    small = facts.words.name_small_words
    words = [w for w in re.findall(r"[\w'&.-]+", candidate) if fold_key(w.strip(".")) not in small and w != "&"]
    if len(words) < 2 or fold_key(candidate.strip().rstrip(":")) in facts.words.reply_labels:
        return False
    return all(w[0].isupper() or w[0].isdigit() for w in words)


def _item_name(line: str) -> str:
    """The leading name of a list item ("1. **Camillus House** – 336 NW 5th St" -> "Camillus House")."""
    body = _ITEM.sub("", line, count=1).strip()
    bold = _BOLD.match(body)
    if bold:
        return (bold.group(1) or bold.group(2)).strip().rstrip(":")
    head = re.split(r"\s*(?::|\s[-\u2013\u2014]\s|\(|,|\.\s)", body, maxsplit=1)[0]
    return head.strip().strip("*_").strip()


def _catalog_index(catalog_names: Iterable[str], grounds: _Grounds) -> list[tuple[str, str]]:
    """(folded, as given) for the catalog names worth policing: distinctive, and not part of the selection."""
    out = []
    for name in catalog_names:
        norm = fold_key(name)
        if len(norm) < _MIN_NAME or " " not in norm or f" {norm} " in grounds.text:
            continue
        out.append((norm, name))
    return out


def _findings(sentence: str, grounds: _Grounds, catalog: list[tuple[str, str]]) -> list[dict[str, str]]:
    found: list[dict[str, str]] = []
    for written, key in grounds.facts.phones(sentence):
        if key not in grounds.phones:
            found.append({"kind": "phone", "value": written})
    for written, norm in grounds.facts.addresses(sentence):
        if not grounds.address_ok(norm):
            found.append({"kind": "address", "value": written})
    padded = f" {fold_key(sentence)} "
    for name in grounds.names:  # a selected name hides the catalog names inside it ("... FOOD BANK")
        padded = padded.replace(f" {name} ", " \x00 ")
    for norm, name in catalog:
        if f" {norm} " in padded:
            found.append({"kind": "name", "value": name})
    for m in _BOLD.finditer(sentence):
        candidate = (m.group(1) or m.group(2)).strip().rstrip(":")
        known = any(f["kind"] == "name" and fold_key(f["value"]) == fold_key(candidate) for f in found)
        if not known and _looks_like_name(candidate, grounds.facts) and not grounds.name_ok(candidate):
            found.append({"kind": "name", "value": candidate})
    return found


def guard_reply(
    text: str,
    selected: Sequence[ServiceRecord],
    facts: FactFinder,
    catalog_names: Iterable[str] = (),
    *,
    allowed: Iterable[str] = (),
) -> tuple[str, list[dict[str, str]]]:
    """Remove from `text` every sentence or line carrying a phone, street address or name not in `selected`.

    Phones compare by their number (extensions aside); addresses by `FactFinder.address_key`, and a reply
    address may be part of a record's ("… Suite 5"). Names: any of `catalog_names` (two words or more, eight
    characters or more) that is not part of a selected record, and any bolded or list-item name in Title Case
    that matches no selected record. A list item whose name is not selected goes with its indented sub-lines.
    `allowed` are phrases never taken for names (e.g. the catalog's city names, some of which are also service
    names).

    Returns the cleaned text and, for each finding in what was removed, {"kind": "phone"|"address"|"name",
    "value": as written, "sentence": the sentence or line removed}.
    """
    grounds = _Grounds.of(selected, allowed, facts)
    catalog = _catalog_index(catalog_names, grounds)
    lines = text.splitlines()
    removed: list[dict[str, str]] = []
    keep: list[str | None] = list(lines)
    i = 0
    while i < len(lines):
        line = lines[i]
        item = _ITEM.match(line)
        if item:
            indent = len(item.group(1))
            end = i + 1
            while end < len(lines) and lines[end].strip() and (len(lines[end]) - len(lines[end].lstrip())) > indent:
                end += 1
            name = _item_name(line)
            padded = f" {fold_key(name)} "
            named = [{"kind": "name", "value": given} for norm, given in catalog if f" {norm} " in padded]
            if named or (_looks_like_name(name, facts) and not grounds.name_ok(name)):
                block = lines[i:end]
                findings = named or [{"kind": "name", "value": name}]
                for sub in block:
                    findings.extend(_findings(sub, grounds, catalog))
                seen: set[tuple[str, str]] = set()
                for f in findings:
                    if (f["kind"], f["value"]) not in seen:
                        seen.add((f["kind"], f["value"]))
                        removed.append({**f, "sentence": "\n".join(block).strip()})
                for j in range(i, end):
                    keep[j] = None
                i = end
                continue
        keep[i] = _clean_line(line, grounds, catalog, removed)
        i += 1
    out = "\n".join(line for line in keep if line is not None)
    out = re.sub(r"\n{3,}", "\n\n", out).strip()
    return out, removed


def _clean_line(
    line: str, grounds: _Grounds, catalog: list[tuple[str, str]], removed: list[dict[str, str]]
) -> str | None:
    # The sentences of the line, each running to the next one's start (so a removed one takes its spaces along).
    starts = [a for a, _ in sentence_spans(line, grounds.facts.words.abbreviations)]
    spans = [(a, starts[k + 1] if k + 1 < len(starts) else len(line)) for k, a in enumerate(starts)]
    if spans:
        spans[0] = (0, spans[0][1])  # the line's indent and bullet stay with its first sentence
    drop: list[tuple[int, int]] = []
    for a, b in spans:
        sentence = line[a:b]
        findings = _findings(sentence, grounds, catalog)
        if findings:
            removed.extend({**f, "sentence": sentence.strip()} for f in findings)
            drop.append((a, b))
    if not drop:
        return line
    out, pos = [], 0
    for a, b in drop:
        out.append(line[pos:a])
        pos = b
    out.append(line[pos:])
    cleaned = "".join(out).rstrip()
    if not _ITEM.sub("", cleaned).strip():
        return None  # nothing left but a bullet
    return cleaned


def mentions_any(text: str, selected: Sequence[ServiceRecord], facts: FactFinder) -> bool:
    """Whether `text` still names one of `selected` or gives one of its phones."""
    padded = f" {fold_key(text)} "
    keys = {k for _, k in facts.phones(text)}
    for r in selected:
        names = [n for n in (fold_key(r.name), fold_key(r.organization)) if n]
        if any(f" {n} " in padded for n in names):
            return True
        if keys & {facts.phone_key(p) for p in r.phones}:
            return True
    return False
