"""The catalog dialogue: parse → held? → (clarify) → strict structural filter → rank → semantic check → guarded reply.

Only records of the catalog are ever recommended, and each one satisfies every structural constraint: whatever
the structured-index variant used to find candidates, `filters.satisfies` checks each candidate's own fields
before it can be selected. Semantic constraints (eligibility) are checked against the record's own text, with
the evidence span; a record whose text does not state a condition is not taken to meet it: such records come
after those that state it, and the reply says which conditions their text leaves open (`catalog.reply`).
Without a location the assistant asks which city or postal code first. What the assistant knows of the
directory's place and language comes from the catalog's `profile.toml` and its language's word list. State is
kept across turns ("what about Sunday?" keeps the city). A topic the catalog holds nothing like (`topic_match`:
no service type of its records, no record stating its words together) gets "Nothing in this directory matches
'piano tuning' in Lakeside" and no recommendation, before any location is asked for, and on every later turn
until the topic changes. A request that signals danger or immediacy (`catalog.urgency`) is never refused: it
gets the profile's emergency and crisis numbers and the services reachable now, before any question about the
place. Every turn goes to the conversation's trail, the decision and its evidence included.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from types import TracebackType

from pydantic import BaseModel

from tracerag.catalog import filters
from tracerag.catalog.condition_rules import RuleChecker
from tracerag.catalog.dialogue import merge, place_answer, unheld_place_words, unknown_places
from tracerag.catalog.evidence import Evidence
from tracerag.catalog.facts import FactFinder
from tracerag.catalog.gazetteer import GazetteerIndex, load_places
from tracerag.catalog.generated_reply import generated_reply
from tracerag.catalog.home_place import (
    home_constraint,
    home_sentence,
    named_elsewhere,
    widened,
    widened_sentence,
    with_home,
    without_home,
)
from tracerag.catalog.llm_check import CheckAnswer, check_llm
from tracerag.catalog.llm_parse import ProposedParse, parse_with_llm
from tracerag.catalog.model import ConstraintKind, Constraints, Semantic, ServiceRecord, Structural
from tracerag.catalog.paging import (
    ALREADY_SHOWN,
    ShownLog,
    is_more_request,
    related_kinds,
    related_sentence,
    that_is_all,
)
from tracerag.catalog.parse import content_words, parse_request
from tracerag.catalog.profile import PROFILE_FILE, CatalogProfile
from tracerag.catalog.record_details import details_of, phone_phrase
from tracerag.catalog.record_status import excluded_by_status
from tracerag.catalog.reply import (
    Recommendation,
    constraint_label,
    no_match_reply,
    place_phrase,
    templated_reply,
)
from tracerag.catalog.request_language import RequestLanguage, as_said, available_glosses, understand
from tracerag.catalog.sentences import say, speaking
from tracerag.catalog.store import STORE_FILE, CatalogStore, check_catalog_dir
from tracerag.catalog.topic_match import CatalogVocabulary, TopicMatch
from tracerag.catalog.topic_typos import corrected, fixer_of, suspects
from tracerag.catalog.urgency import (
    CrisisIndex,
    Ranked,
    Urgency,
    close_by,
    detect,
    minute_now,
    rank,
    urgent_reply,
)
from tracerag.catalog.words import WordList
from tracerag.collection import Collection
from tracerag.config import Settings
from tracerag.errors import ConfigError
from tracerag.llm import Completion, Message, StructuredLLM
from tracerag.model import Filter
from tracerag.retrieval.search import Retriever, SearchRequest
from tracerag.trail import EventListener, JsonlWriter, Trail
from tracerag.trail.events import (
    CatalogCheckEvent,
    CatalogFilterEvent,
    CatalogOutcome,
    CatalogParseEvent,
    CatalogParseMethod,
    CatalogReplyEvent,
    CatalogVariant,
    LLMCallEvent,
    LLMPurpose,
    RunEvent,
)

LOCATION = {ConstraintKind.CITY, ConstraintKind.COUNTY, ConstraintKind.ZIP, ConstraintKind.AREA}
HOURS = {ConstraintKind.WEEKDAY, ConstraintKind.TIME}
OTHER = {ConstraintKind.SERVICE_TYPE, ConstraintKind.LANGUAGE, ConstraintKind.ACCESSIBILITY}
# Which constraint kinds the structured index pre-filters in each variant (as in the TRACE paper); the rest are
# found by text search and then checked on each record's fields, so every variant satisfies every constraint.
VARIANTS: dict[CatalogVariant, frozenset[ConstraintKind]] = {
    CatalogVariant.NONE: frozenset(),
    CatalogVariant.LOCATION: frozenset(LOCATION | OTHER),
    CatalogVariant.HOURS: frozenset(HOURS | OTHER),
    CatalogVariant.LOCATION_HOURS: frozenset(LOCATION | HOURS | OTHER),
}
_HOME_SAID = (CatalogOutcome.ANSWER, CatalogOutcome.NONE_FOUND)  # replies that name the assumed home place

# A model call's purpose by the answer it was asked for (no schema: the reply's text).
_PURPOSES: dict[type[BaseModel] | None, LLMPurpose] = {
    ProposedParse: LLMPurpose.CATALOG_PARSE,
    CheckAnswer: LLMPurpose.CATALOG_CHECK,
}
_VOCABULARIES: dict[tuple[str, int, int, str], CatalogVocabulary] = {}
_CRISIS: dict[tuple[str, int, int, str, str | None], CrisisIndex] = {}


@dataclass
class Turn:
    request: str
    outcome: CatalogOutcome
    reply: str
    recommendations: list[Recommendation] = field(default_factory=list)
    constraints: Constraints = field(default_factory=Constraints)
    notes: list[str] = field(default_factory=list)
    removed: list[dict] = field(default_factory=list)
    checked: int = 0
    topic_match: TopicMatch | None = None
    language: str = ""  # the request's language (its reply's fixed sentences are in it where a translation exists)
    urgency: Urgency | None = None
    crisis_lines: list[Recommendation] = field(default_factory=list)  # an urgent turn's lines, from anywhere
    lines_first: bool = True  # an urgent reply lists its lines before the place's services

    @property
    def offered(self) -> list[Recommendation]:
        """Every service the reply offers, in its order: an urgent turn's lines (wherever they are, so not held to
        the place asked, unlike `recommendations`) and the recommendations."""
        if self.lines_first:
            return [*self.crisis_lines, *self.recommendations]
        return [*self.recommendations, *self.crisis_lines]

    def to_dict(self) -> dict:
        return {
            "request": self.request,
            "language": self.language,
            "outcome": self.outcome,
            "reply": self.reply,
            "constraints": constraints_dict(self.constraints),
            "notes": self.notes,
            "checked": self.checked,
            "topic_match": self.topic_match.to_dict() if self.topic_match else None,
            "urgency": self.urgency.to_dict() if self.urgency else None,
            "crisis_lines": [
                {"id": r.record.id, "name": r.record.name, "phones": r.record.phones} for r in self.crisis_lines
            ],
            "removed_hallucinations": self.removed,
            "recommendations": [
                {
                    "id": r.record.id,
                    "name": r.record.name,
                    "address": ", ".join(p for p in (r.record.address, r.record.city, r.record.zip) if p),
                    "phones": r.record.phones,
                    "hours": r.record.hours_text,
                    **details_dict(r),
                    "evidence": [
                        {"passed": e.passed, "reason": e.reason, "quote": e.quote, "span": e.span} for e in r.evidence
                    ],
                }
                for r in self.recommendations
            ],
        }


def details_dict(r: Recommendation) -> dict:
    """A recommendation's details as data (`catalog.record_details`): who it is for, how to reach it, notices,
    when the directory last verified it."""
    d = r.details_or_default()
    return {
        "phone_details": [{"number": n, "label": label} for n, label in d.phones],
        "reach": phone_phrase(d),
        "url": d.url,
        "eligibility": d.eligibility,
        "season": d.season,
        "notices": list(d.notices),
        "status": r.record.status,
        "last_verified": d.verified,
        "verified_what": d.verified_what,
        "verified_days": d.verified_days,
        "verified_stale": d.stale,
    }


def constraints_dict(c: Constraints) -> dict:
    return {
        "structural": [{"kind": str(s.kind), "values": list(s.values), "said": s.said} for s in c.structural],
        "semantic": [{"text": s.text, "negated": s.negated} for s in c.semantic],
        "topic": c.topic,
        "unknown": list(c.unknown),
    }


class CatalogAssistant:
    """One conversation over one catalog directory (`catalog.sqlite` + `collection/`)."""

    def __init__(
        self,
        catalog_dir: Path,
        settings: Settings,
        *,
        llm: StructuredLLM | None = None,
        variant: CatalogVariant | str = CatalogVariant.LOCATION_HOURS,
        k: int = 5,
        batch: int = 10,
        today: int | None = None,
        trail_dir: Path | None = None,
        listeners: Sequence[EventListener] = (),
        clock: Callable[[], int] | None = None,
    ):
        if variant not in set(CatalogVariant):
            raise ConfigError(f"structured-index variant {variant!r}: expected one of {', '.join(CatalogVariant)}")
        catalog_dir = check_catalog_dir(catalog_dir)
        self.store = CatalogStore.open(catalog_dir / STORE_FILE)
        self.collection = Collection.open(catalog_dir / "collection", settings, mode="read")
        self.retriever = Retriever(self.collection)
        self.gazetteer = self.store.gazetteer()
        self.profile = CatalogProfile.load(catalog_dir)
        self.words = WordList.load(self.profile.language, self.profile.words)
        places = load_places(catalog_dir / self.profile.places, self.gazetteer) if self.profile.places else {}
        self.index = GazetteerIndex.build(self.gazetteer, self.words, self.profile, places)
        # a one-place directory's place, assumed when a request names none (`catalog.home_place`)
        self.home = home_constraint(self.profile.home_place, self.gazetteer, catalog_dir / PROFILE_FILE)
        self.rules = RuleChecker(self.words, self.profile)
        self.facts = FactFinder(self.words, self.profile)
        self.languages = (
            self.profile.request_languages
            if self.profile.request_languages is not None
            else tuple(available_glosses(self.profile.language))
        )
        self.llm = llm
        self.variant = CatalogVariant(variant)
        self.k = k
        self.batch = batch
        self.today = date.today().weekday() if today is None else today
        self.clock = clock or minute_now  # minutes after midnight now: what is open now, for urgent requests
        self.urgency: Urgency | None = None
        self._crisis: CrisisIndex | None = None
        self.state = Constraints()
        self.speaking = self.profile.language  # the language of the replies' own sentences (`catalog.sentences`)
        self._said: list[tuple[str, str]] = []  # glossed words and the request's words they stand for
        self.turns: list[Turn] = []
        self.shown = ShownLog()  # what each request has been shown (`catalog.paging`): never the same service twice
        self.on = date.today()  # the day replies are for: a record's temporary notice and verification age
        self._names: set[str] | None = None
        self._vocabulary: CatalogVocabulary | None = None
        self._term_records: dict[str, int] = {}
        self._matches: dict[tuple[str, tuple[str, ...]], TopicMatch] = {}
        self._unknown_places: list[str] = []  # this turn's places the catalog lacks: said in the reply
        self.trail = Trail(listeners=listeners)
        # A catalog on read-only storage keeps its trails where its collection's runs go (a private cache).
        trails = trail_dir or (
            catalog_dir / "trails" if self.collection.read_only is None else self.collection.trails_dir
        )
        self._writer = JsonlWriter(trails / f"{self.trail.run_id}.jsonl")
        self.trail.listeners.append(self._writer)
        if llm is not None:
            llm.listeners.append(self._record_call)
        self.trail.emit(
            RunEvent(
                question="(catalog conversation)",
                collection=str(catalog_dir),
                k=k,
                config={"variant": str(self.variant), "batch": batch, "today": self.today},
                llm={"provider": llm.name, "model": llm.model} if llm else None,
                versions={},
            )
        )

    def reset(self) -> None:
        """Start a new conversation (the evaluation asks each request afresh); the trail goes on."""
        self.state = Constraints()
        self.speaking = self.profile.language
        self._said = []
        self.shown.clear()
        self.urgency = None

    @property
    def trail_path(self) -> Path:
        return self._writer.path

    def close(self) -> None:
        if self.llm is not None and self._record_call in self.llm.listeners:
            # one model may serve many conversations in turn (the benchmark loads it once for every variant)
            self.llm.listeners.remove(self._record_call)
        self._writer.close()
        self.collection.close()
        self.store.close()

    def __enter__(self) -> CatalogAssistant:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- one turn -------------------------------------------------------------------------------------

    def ask(self, request: str) -> Turn:
        """One turn: the reply's own sentences in the conversation's language (the last one its words showed)."""
        heard = self._understand(request)
        if heard.evident:
            self.speaking = heard.language
        self._said += heard.said
        with speaking(self.speaking):
            return self._ask(request, heard)

    def _ask(self, request: str, heard: RequestLanguage) -> Turn:
        n = len(self.turns)
        was_home = self.home is not None and self.home in self.state.structural
        self.state = without_home(self.state, self.home)  # read the turn as in any directory, then assume again
        paging = bool(self.turns) and is_more_request(heard.text, self.words.records)
        parsed, notes, method = self._parse_turn(request, heard, paging)
        self.state = merge(self.state, parsed, self.words)
        if self.home is not None and with_home(self.state, self.home) is not self.state:
            notes.append(f"no place named: the directory's home place, {' or '.join(self.home.values)}")
            self.state = with_home(self.state, self.home)
        notes += [f"not in this catalog: {u}" for u in parsed.unknown]
        self._unknown_places = unknown_places(parsed, self.words)
        self.urgency = self._urgency_of(heard.text, parsed)
        # an urgent turn judges its topic only when a service type names it (the words alone cannot refuse it)
        urgent_words_only = (
            self.urgency is not None and self.urgency.danger and self.state.of(ConstraintKind.SERVICE_TYPE) is None
        )
        match = None if urgent_words_only else self._topic_match()
        self.trail.emit(
            CatalogParseEvent(
                turn=n,
                request=request,
                method=method,
                constraints=constraints_dict(parsed),
                state=constraints_dict(self.state),
                notes=notes,
                topic_match=match.to_dict() if match else None,
                language=heard.to_dict(),
                urgency=self.urgency.to_dict() if self.urgency else None,
            )
        )
        if self.urgency is not None and self.urgency.danger:
            turn = self._urgent(request, n, notes)
        else:
            turn, widened_now = self._usual_turn(request, n, notes, match, paging)
            was_home = was_home or widened_now  # the widening sentence says where: no second sentence
        if self.urgency is not None and not self.urgency.danger and turn.outcome != CatalogOutcome.NO_MATCH:
            # immediacy alone ("tonight") about something the directory holds nothing like stays a plain no
            turn = self._urgent(request, n, notes, usual=turn)
        turn.topic_match = match
        turn.language = self.speaking
        turn.reply = self._place_sentence(turn.outcome, was_home) + turn.reply
        turn.urgency = self.urgency
        self.trail.emit(
            CatalogReplyEvent(
                turn=n,
                outcome=turn.outcome,
                text=turn.reply,
                recommended=[r.record.id for r in turn.recommendations],
                removed=turn.removed,
                generated=self.llm is not None and turn.outcome == CatalogOutcome.ANSWER and turn.urgency is None,
            )
        )
        self.turns.append(turn)
        return turn

    def _parse_turn(
        self, request: str, heard: RequestLanguage, paging: bool
    ) -> tuple[Constraints, list[str], CatalogParseMethod]:
        """The turn's constraints (none for "show me more": the same ones), the notes on how they were read, and
        the parser that read them; place words the parser took for a topic are made places again."""
        if paging:  # "show me more": the same constraints
            parsed, notes = Constraints(), ["asks for more services matching the conversation so far"]
            method = CatalogParseMethod.RULES
        elif self.llm is not None:
            parsed, notes = parse_with_llm(request, self.index, self.llm, today=self.today)
            method = CatalogParseMethod.LLM_GAZETTEER
        else:
            parsed, notes = parse_request(heard.text, self.index, today=self.today), []
            parsed = self._respelt(heard, parsed, notes)
            method = CatalogParseMethod.RULES
        answered = place_answer(self.state, parsed, self._holds_topic)
        if answered is not parsed:
            notes.append(f"kept the topic '{self.state.topic}': '{parsed.topic}' answers where, and is no topic here")
            parsed = answered
        placed = unheld_place_words(heard.text, parsed, self.words, self._holds_topic)
        if placed is not parsed:
            notes.append(f"a place, not a topic: {', '.join(placed.unknown[len(parsed.unknown) :])}")
            parsed = placed
        if self.home is not None and all(s.values == self.home.values for s in parsed.structural if s.kind in LOCATION):
            named = named_elsewhere(heard.text, parsed, self.words, self.index.service_words)
            if named is not parsed:  # a neighbourhood, said, and the request answered for the whole home place
                notes.append(f"a place, not a topic: {', '.join(named.unknown[len(parsed.unknown) :])}")
                parsed = named
        return parsed, notes, method

    def _usual_turn(
        self, request: str, n: int, notes: list[str], match: TopicMatch | None, paging: bool
    ) -> tuple[Turn, bool]:
        """A turn without danger: no match, the question where, or the answer (the related services when a page
        finds nothing more; the whole home place when a part of it has nothing). Returns whether the place was
        widened to the home place."""
        if match is not None and not match.held:
            reply = no_match_reply(
                self._as_said(self.state.topic),
                place_phrase(self.state),
                match.explanation(),
                help_line=self.profile.help_line,
            )
            return Turn(request, CatalogOutcome.NO_MATCH, reply, constraints=self.state, notes=notes), False
        if not self.state.has_location():
            question = self._clarifying_question()
            return Turn(request, CatalogOutcome.CLARIFY, question, constraints=self.state, notes=notes), False
        turn = self._answer(request, n, notes)
        if paging and turn.outcome == CatalogOutcome.NONE_FOUND:
            turn = self._related_page(request, n, notes, turn)
        wider = widened(self.state, self.home, self.index.places)
        if wider is None or self.home is None or turn.outcome != CatalogOutcome.NONE_FOUND:
            return turn, False
        # nothing in a part of the home place that the places file names: the rest of the home place
        narrow = place_phrase(self.state)
        self.state = wider
        turn = self._answer(request, n, [*notes, f"nothing {narrow}: looked in the whole home place"])
        turn.reply = f"{widened_sentence(narrow, self.home)} {turn.reply}"
        return turn, True

    def _place_sentence(self, outcome: CatalogOutcome, was_home: bool) -> str:
        """What a reply says first about the place: that the directory's home place was assumed (once, and again
        with each place it does not know), else the places it does not know ("" when there is nothing to say)."""
        if self.home is not None and self.home in self.state.structural and outcome in _HOME_SAID:
            if self._unknown_places or not was_home:
                found = outcome == CatalogOutcome.ANSWER
                return f"{home_sentence(self.home, self._unknown_places, found)} "
            return ""
        if self._unknown_places and outcome != CatalogOutcome.CLARIFY:
            return f"{self._unknown_sentence()} "
        return ""

    def _as_said(self, topic: str) -> str:
        """A topic as the person said it (their own words where a gloss gave the directory's)."""
        return as_said(topic, self._said) if self._said else topic

    def _understand(self, request: str) -> RequestLanguage:
        """The request's language among those the profile understands, and the request in the directory's words
        (`catalog.request_language`); the catalog's place names are never glossed."""
        places = [*self.index.cities, *self.index.counties, *self.index.areas, *self.index.places]
        return understand(request, self.profile.language, self.languages, self.words.ordinary, keep=places)

    def _respelt(self, heard: RequestLanguage, parsed: Constraints, notes: list[str]) -> Constraints:
        """The request parsed again with its misspelt topic words corrected to the records' words
        (`catalog.topic_typos`: "fod pantyr" → "food pantry"), so that the service-type match and the topic judge
        see them; each correction goes to the notes ("typo: fod → food"). A request in another language keeps
        its words: those left unglossed are that language's words, not misspelt ones of the directory's."""
        if heard.language != self.profile.language or not suspects(parsed.topic, self.words):
            return parsed
        keep = self.index.city_words | {w for k in (*self.index.counties, *self.index.areas) for w in k.split()}
        fixes = fixer_of(self.vocabulary).fix(parsed.topic, keep, self._holds_topic)
        if not fixes:
            return parsed
        notes += [f.note() for f in fixes]
        return parse_request(corrected(heard.text, fixes), self.index, today=self.today)

    def _topic_match(self) -> TopicMatch | None:
        """Whether the catalog holds the dialogue's topic (None without a topic): `topic_match` decides, from the
        parsed service types (with how many records of the whole catalog carry each) and the records' words."""
        topic = self.state.topic
        if not topic.strip():
            return None
        types = self.state.of(ConstraintKind.SERVICE_TYPE)
        key = (topic, types.values if types else ())
        if key not in self._matches:
            service_types = [
                {"id": t, "name": self.gazetteer.taxonomy.get(t, ""), "records": self._records_of_term(t)}
                for t in key[1]
            ]
            if any(t["records"] for t in service_types):
                self._matches[key] = TopicMatch(topic, True, "service_type", service_types=tuple(service_types))
            else:
                self._matches[key] = self.vocabulary.judge(topic, service_types)
        return self._matches[key]

    @property
    def vocabulary(self) -> CatalogVocabulary:
        """The records' words by stem, built on the first topic that needs it (about 1 s of CPU for 4k records)
        and shared by the assistants of this process on the same, unchanged catalog file (an evaluation opens
        one per variant)."""
        if self._vocabulary is None:
            info = self.store.path.stat()
            key = (str(self.store.path.resolve()), info.st_mtime_ns, info.st_size, self.words.source)
            if key not in _VOCABULARIES:
                _VOCABULARIES.clear()  # one catalog at a time is the common case; never a stale one
                records = self.store.get(self.store.all_ids()).values()
                _VOCABULARIES[key] = CatalogVocabulary.build(records, self.words)
            self._vocabulary = _VOCABULARIES[key]
        return self._vocabulary

    def _records_of_term(self, term_id: str) -> int:
        if term_id not in self._term_records:
            structural = [Structural(ConstraintKind.SERVICE_TYPE, (term_id,))]
            self._term_records[term_id] = len(self.store.filter(structural))
        return self._term_records[term_id]

    def _clarifying_question(self) -> str:
        what = self._as_said(self.state.topic) or say("clarify_default_topic")
        if self._unknown_places:  # never dropped in silence: said, and asked about
            names = say("or").join(f"'{u}'" for u in self._unknown_places)
            return say("unknown_place_clarify", names=names, what=what)
        return say("clarify", what=what)

    def _unknown_sentence(self) -> str:
        names = say("or").join(f"'{u}'" for u in self._unknown_places)
        return say("unknown_place", names=names)

    def _stated_instead_of_type(
        self, allowed: list[str] | None, sql_kinds: AbstractSet[ConstraintKind], notes: list[str]
    ) -> tuple[list[Structural], list[str], list[str]] | None:
        """When no record of the service type meets the other constraints, the records that state the topic in
        their own words instead ("rights as tenants" of a record typed "Housing Issues"): (the constraints without
        the type, those records meeting the rest, the type's ids), or None. A directory's types are one reading of
        its records, not the only one; the note and the trail's `catalog_filter.type_replaced` say when it was."""
        types = self.state.of(ConstraintKind.SERVICE_TYPE)
        if types is None or allowed is None or allowed or not self.state.topic.strip():
            return None
        match = self._holds_topic_records(self.state.topic)
        if not match:
            return None
        others = [s for s in self.state.structural if s is not types]
        kinds = sql_kinds - {ConstraintKind.SERVICE_TYPE}
        rest = self.store.filter(others, kinds=kinds) if kinds else self.store.all_ids()
        found = [i for i in rest if i in match]
        if not found:
            return None
        notes.append(f"service type {', '.join(types.values)}: none here; records stating '{self.state.topic}'")
        return others, found, list(types.values)

    def _holds_topic_records(self, words: str) -> frozenset[str]:
        """The records that state `words` as a topic (the records' words; no service type); empty if none."""
        match = self.vocabulary.judge(words, [])
        return match.holders if match.by_records else frozenset()

    def _holds_topic(self, words: str) -> bool:
        """Whether the catalog holds anything about `words` as a topic (the records' words; no service type)."""
        return self.vocabulary.judge(words, []).held

    def _answer(self, request: str, n: int, notes: list[str]) -> Turn:
        structural = self.state.structural
        sql_kinds = VARIANTS[self.variant] & {s.kind for s in structural}
        allowed = self.store.filter(structural, kinds=sql_kinds) if sql_kinds else None
        stated = self._stated_instead_of_type(allowed, sql_kinds, notes)
        state = self.state  # what the reply says it matched: without the type when the records' words stood in
        if stated is not None:
            structural, allowed, _ = stated
            state = replace(self.state, structural=list(structural))
        ranked = self._rank(allowed)
        self.trail.emit(
            CatalogFilterEvent(
                turn=n,
                variant=self.variant,
                sql_kinds=sorted(sql_kinds),
                allowed=len(allowed) if allowed is not None else self.store.count(),
                ranked=ranked[:200],
                type_replaced=None if stated is None else stated[2],
            )
        )
        selected: list[Recommendation] = []
        unstated: list[Recommendation] = []
        restricted: set[str] = set()  # restricted to a group the request does not claim: ranked after the others
        narrow: set[str] = set()  # of those, to a group left out when a record open to all matches
        checked = 0
        shown = self.shown.of(self.state)
        for start in range(0, len(ranked), self.batch):
            ids = ranked[start : start + self.batch]
            records = self.store.get(ids)
            for rid in ids:
                record = records[rid]
                if self._skipped(record, shown, n):
                    continue
                checked += 1
                rec, definite = self._check(record, n, restricted, structural, narrow=narrow)
                if rec is not None:
                    (selected if definite else unstated).append(rec)
            if sum(r.record.id not in restricted for r in selected) >= self.k:
                break  # enough candidates passed every check; otherwise the next batch, until exhausted

        def open_first(recs: list[Recommendation]) -> list[Recommendation]:
            return sorted(recs, key=lambda r: r.record.id in restricted)  # stable: rank order within each part

        candidates = open_first(selected) + open_first(unstated)
        open_to_all = [r for r in candidates if r.record.id not in restricted]
        left_out = {r.record.id for r in candidates if r.record.id in narrow} if open_to_all else set()
        if left_out:  # a service for everyone matches: one for a group the person did not say they are in is not
            notes.append(f"left out, for a group the request does not claim: {', '.join(sorted(left_out))}")
        chosen = [r for r in candidates if r.record.id not in left_out][: self.k]
        groups_only = bool(chosen) and not open_to_all  # every match is for a group: said above the list
        summary = describe(state)
        for rec in chosen:
            rec.details = details_of(
                rec.record, self.words.records, today=self.on, max_age_days=self.profile.verified_max_age_days
            )
        self.shown.add(self.state, [r.record.id for r in chosen])
        if not chosen and shown:  # every service matching this request has been shown: never the same list again
            text = that_is_all(len(shown), summary)
            return Turn(request, CatalogOutcome.NONE_FOUND, text, [], state, notes, checked=checked)
        if not chosen:
            reason = self._relaxations(checked)
            return Turn(
                request,
                CatalogOutcome.NONE_FOUND,
                templated_reply([], summary, none_found_reason=reason, help_line=self.profile.help_line),
                [],
                state,
                notes,
                checked=checked,
            )
        removed: list[dict] = []
        if self.llm is not None:
            text, removed = generated_reply(
                chosen,
                request,
                self.llm,
                self.facts,
                self.profile,
                catalog_names=self._catalog_names(),
                allowed=self.gazetteer.cities.values(),
                constraints_summary=summary,
            )
        else:
            text = templated_reply(chosen, summary, words=self.words)
        if groups_only:
            text = f"{say('groups_only')}\n\n{text}"
        if shown:
            text += f"\n\n({len(shown)} service(s) shown earlier for this request are not repeated.)"
        return Turn(request, CatalogOutcome.ANSWER, text, chosen, state, notes, removed, checked)

    def _related_page(self, request: str, n: int, notes: list[str], exhausted: Turn) -> Turn:
        """A paging request after every service of the asked kinds was shown: the next services of the related
        kinds (`paging.related_kinds`), none shown before, the reply saying the exact ones are all shown; or, when
        there are none, that is all."""
        strict = self.state
        related = related_kinds(strict, self.index)
        shown = self.shown.of(strict)
        if related is None or not shown:
            return exhausted
        self.shown.add(related, shown)  # the related list starts with what the exact one showed: never repeated
        self.state = related
        try:
            turn = self._answer(request, n, [*notes, "every exact match shown: services of related kinds"])
        finally:
            self.state = strict
        if turn.outcome == CatalogOutcome.ANSWER:
            turn.reply = f"{related_sentence(len(shown), describe(strict))}\n\n{turn.reply}"
        return turn

    def _catalog_names(self) -> set[str]:
        """Every service and organisation name of the catalog: a generated reply naming one that was not
        selected is a hallucination the guard removes."""
        if self._names is None:
            records = self.store.get(self.store.all_ids()).values()
            self._names = {n for r in records for n in (r.name, r.organization) if n}
        return self._names

    def _relaxations(self, checked: int) -> str:
        """Why nothing was found, and what would find something: for each constraint but the location, how many
        services match without it (strict filter on the catalog, so the numbers are real). A topic held only by
        the records that state it counts those records only."""
        # With nothing checked, the reply's "I found no services ... matching" has said it: no second sentence.
        parts = [say("checked", n=checked)] if checked else []
        structural = self.state.structural
        match = self._topic_match()
        holders = match.holders if match is not None and match.by_records else None

        def count(constraints: list[Structural]) -> int:
            if holders is None:
                return len(self.store.filter(constraints))
            return len(holders & set(self.store.filter(constraints))) if constraints else len(holders)

        for drop in structural:
            if drop.kind in LOCATION:
                continue
            n = count([s for s in structural if s is not drop])
            if n:
                parts.append(say("without", kind=drop.kind, said=drop.said or ", ".join(drop.values), n=n))
        if holders is not None:  # the topic's own records, wherever they are
            others = [s for s in structural if s.kind not in LOCATION]
            where = say("meeting_others") if others else ""
            parts.append(say("whole_directory", n=count(others), topic=self.state.topic, where=where))
        if self.state.semantic and checked:
            parts.append(say("ruled_out"))
        return " ".join(parts)

    def _rank(self, allowed: list[str] | None) -> list[str]:
        """Candidates best first: text relevance to the topic and conditions, within the pre-filtered set.

        A topic held only because records state its words together (no service type) keeps those records alone:
        any other record would be an unrelated service, like the ones a request for "piano tuning" used to get."""
        match = self._topic_match()
        if match is not None and match.by_records:
            allowed = sorted(match.holders) if allowed is None else [i for i in allowed if i in match.holders]
        everyday = match.search_words if match is not None else ()  # "shelter" for "somewhere to sleep"
        words = " ".join([self.state.topic, *everyday, *(s.text for s in self.state.semantic if not s.negated)])
        # a place the directory does not know still ranks the records naming it first ("Eastgate Youth Center")
        words = " ".join([words, *unknown_places(self.state, self.words)])
        words = words.strip()
        service_types = self.state.of(ConstraintKind.SERVICE_TYPE)
        if service_types is not None:
            words = " ".join([words, *(self.gazetteer.taxonomy.get(t, "") for t in service_types.values)]).strip()
        universe = allowed if allowed is not None else self.store.all_ids()
        if not words:
            return sorted(universe)
        flt = Filter(doc_ids=tuple(allowed)) if allowed is not None else Filter()
        if allowed is not None and not allowed:
            return []
        depth = len(universe) if allowed is not None else max(200, self.k * 40)
        ranking = self.retriever.search(SearchRequest(words, k=max(1, min(depth, 1000)), filter=flt, windows=""))
        found = ranking.doc_ids()
        if allowed is None:
            return found  # text only: what the text search finds is all the candidates there are
        rest = sorted(set(allowed) - set(found))
        return found + rest  # every pre-filtered record stays a candidate, text-matching ones first

    def _skipped(self, record: ServiceRecord, shown: list[str], n: int) -> bool:
        """Whether a candidate is passed over before any check: shown earlier for the same request
        (`catalog.paging`), or of a status the profile says never to refer (`catalog.record_status`); each one
        goes to the trail with its reason."""
        why = ALREADY_SHOWN if record.id in shown else excluded_by_status(record, self.profile.do_not_refer)
        if why:
            violations = filters.violations(record, self.state.structural, day_names=self.words.weekday_names)
            self.trail.emit(
                CatalogCheckEvent(
                    turn=n,
                    record_id=record.id,
                    structural_ok=not violations,
                    violations=[why, *violations],
                    selected=False,
                )
            )
        return bool(why)

    def _check(
        self,
        record: ServiceRecord,
        n: int,
        restricted: set[str] | None = None,
        structural: Sequence[Structural] | None = None,
        semantics: Sequence[Semantic] | None = None,
        narrow: set[str] | None = None,
    ) -> tuple[Recommendation | None, bool]:
        structural = self.state.structural if structural is None else structural
        violations = filters.violations(record, structural, day_names=self.words.weekday_names)
        evidence: list[Evidence] = []
        if not violations:
            for semantic in self.state.semantic if semantics is None else semantics:
                ev = (
                    check_llm(record, semantic, self.llm)
                    if self.llm is not None
                    else self.rules.check(record, semantic)
                )
                evidence.append(ev)
        failed = bool(violations) or any(e.passed is False for e in evidence)
        definite = all(e.passed is True for e in evidence)
        checked = [{"passed": e.passed, "reason": e.reason, "span": e.span, "method": e.method} for e in evidence]
        unclaimed = [] if failed else self.rules.unclaimed(record, self.state)
        if unclaimed and restricted is not None:
            restricted.add(record.id)
        if narrow is not None and any(r.leave_out for r in unclaimed):
            narrow.add(record.id)
        self.trail.emit(
            CatalogCheckEvent(
                turn=n,
                record_id=record.id,
                structural_ok=not violations,
                violations=violations,
                semantic=checked,
                selected=not failed,
                restricted=[{"group": r.group, "quote": r.said, "span": r.span} for r in unclaimed] or None,
            )
        )
        return (None if failed else Recommendation(record, evidence)), definite

    # -- urgent requests ------------------------------------------------------------------------------

    def _emit_ranked(self, n: int, ranked: Sequence[Ranked], why: str = "") -> None:
        """An urgent turn's candidates in the trail, each with why it ranks where it does."""
        self.trail.emit(
            CatalogFilterEvent(
                turn=n,
                variant=self.variant,
                sql_kinds=[],
                allowed=len(ranked),
                ranked=[r.record_id for r in ranked[:200]],
                reachable={r.record_id: f"{why}{r.reason()}" for r in ranked[:200]},
            )
        )

    def _urgency_of(self, request: str, parsed: Constraints) -> Urgency | None:
        """The urgency this turn signals; else the conversation's, kept until a turn asks about another topic
        (the place given in answer to the question keeps it)."""
        found = detect(request, self.words)
        if found is not None or parsed.topic or self.urgency is None:
            return found
        return replace(self.urgency, carried=True)

    @property
    def crisis(self) -> CrisisIndex:
        """The records serving each urgency kind, built on the first urgent turn and shared like `vocabulary`."""
        if self._crisis is None:
            info = self.store.path.stat()
            key = (
                str(self.store.path.resolve()),
                info.st_mtime_ns,
                info.st_size,
                self.words.source,
                self.profile.country,
            )
            if key not in _CRISIS:
                _CRISIS.clear()
                records = self.store.get(self.store.all_ids()).values()
                _CRISIS[key] = CrisisIndex.build(records, self.words, self.profile.country)
            self._crisis = _CRISIS[key]
        return self._crisis

    def _urgent(self, request: str, n: int, notes: list[str], usual: Turn | None = None) -> Turn:
        """Never a refusal (`catalog.urgency`): the profile's numbers; the phone and text lines serving the
        request's kind, wherever they are (a line serves wherever one calls from); the services of the place
        asked for, reachable now first, each meeting every constraint stated (the kind's services or the
        topic's); with no place, the lines and then the question. Lines keep the language and accessibility
        asked for and are left out when their own text contradicts a condition; when none is left, the fallback
        kind's lines without them. `usual`: the turn the request got without its urgency (immediacy alone: its
        services come first, reordered reachable now first)."""
        assert self.urgency is not None
        place = [s for s in self.state.structural if s.kind in LOCATION]
        hard = [s for s in self.state.structural if s.kind in OTHER - {ConstraintKind.SERVICE_TYPE}]
        minute = self.clock()
        region = (self.profile.region or "", *self.profile.region_aliases)
        centre = self.crisis.centre(place)
        # hours said only by the urgency's own words ("he will hurt me tonight") ask for help now, not for a time:
        # reachable now replaces them; any other constraint stated holds
        structural = [
            s for s in self.state.structural if not (s.kind in HOURS and detect(s.said, self.words) is not None)
        ]
        ranked, local, near = self._urgent_local(request, n, usual, place, structural, centre, minute, region)
        wanted = 0 if usual is not None and usual.recommendations else self.k - min(len(local), self.k - 3)
        ranked, lines = self._urgent_lines(request, n, notes, ranked, local, wanted, place, hard, centre, minute)
        reasons = self._urgent_reasons(ranked, local, near if usual is None else [], place, minute)
        summary, question = self._urgent_texts(structural, place, usual)
        lines_first = _lines_first(lines, local, {r.record_id: r.merit for r in ranked})
        reply = urgent_reply(
            lines,
            local,
            summary,
            self.profile,
            self.words,
            reasons=reasons,
            before=_usual_reply_before(usual),
            question=question,
            lines_first=lines_first,
        )
        return Turn(
            request,
            _urgent_outcome(usual, bool(place), bool(lines or local), self.profile),
            reply,
            local,
            self.state,
            notes,
            checked=len(ranked),
            crisis_lines=lines,
            lines_first=lines_first,
        )

    def _urgent_local(
        self,
        request: str,
        n: int,
        usual: Turn | None,
        place: Sequence[Structural],
        structural: Sequence[Structural],
        centre: tuple[float, float] | None,
        minute: int,
        region: Sequence[str],
    ) -> tuple[list[Ranked], list[Recommendation], list[Ranked]]:
        """(the candidates ranked, the services recommended, those close by) of an urgent turn: the usual turn's
        services, reachable now first; else, with a place, the kind's or the topic's services there, and those
        reachable now close by when none there is; with neither, nothing (the lines serve)."""
        assert self.urgency is not None
        if usual is not None:
            local = sorted(
                usual.recommendations, key=lambda r: self.crisis.reachable_record(r.record, minute, self.today) is None
            )
            return [], local, []
        if not place:
            return [], [], []
        topical: list[ServiceRecord] = []
        if self.state.of(ConstraintKind.SERVICE_TYPE) is not None:
            ids = self._rank(self.store.filter(structural))[: self.k * 4]
            records = self.store.get(ids)
            topical = [records[i] for i in ids if i in records]
        ranked = rank(
            self.urgency,
            self.crisis,
            in_place=lambda r: filters.satisfies(r, place),
            topical=topical,
            today=self.today,
            minute=minute,
            region=region,
            centre=centre,
            request=request,
        )
        local = self._urgent_checks(ranked, structural, n, self.k)
        near = self._close_by(request, place, centre, structural, local, minute, region, n)
        return [*near[0], *ranked], [*near[1], *local][: self.k], near[0]

    def _urgent_lines(
        self,
        request: str,
        n: int,
        notes: list[str],
        ranked: Sequence[Ranked],
        local: Sequence[Recommendation],
        wanted: int,
        place: Sequence[Structural],
        hard: Sequence[Structural],
        centre: tuple[float, float] | None,
        minute: int,
    ) -> tuple[list[Ranked], list[Recommendation]]:
        """(every candidate ranked, the `wanted` lines recommended) of an urgent turn: the lines not already among
        the place's services, those of the place only when the need is served in the place only; the candidates
        go to the trail. When no line meets the conditions and nothing else is given, the lines without them."""
        assert self.urgency is not None
        region = (self.profile.region or "", *self.profile.region_aliases)
        shown = {r.record.id for r in local}
        lines_ranked = self._lines_ranked(
            request, minute, region, centre, shown, only_reachable=bool(local), always_open_too=not place
        )
        if place and all(k.place_bound for k in self.urgency.kinds if k.terms or k.services):
            # a need served in the place only (a bed tonight): a line of another town is no help
            lines_ranked = [r for r in lines_ranked if filters.satisfies(self.crisis.records[r.record_id], place)]
        everything = [*ranked, *lines_ranked]
        self._emit_ranked(n, everything)
        lines = self._urgent_checks(lines_ranked, hard, n, wanted) if wanted else []
        if not lines and not local and wanted:
            lines = self._urgent_checks(lines_ranked, [], n, wanted, conditions=False)
            notes.append("urgent: no line met every condition; the crisis lines are given without them")
        return everything, lines

    def _urgent_texts(
        self, structural: Sequence[Structural], place: Sequence[Structural], usual: Turn | None
    ) -> tuple[str, str]:
        """(the summary, the question) of an urgent reply: the kind of danger and the constraints stated; the
        usual turn's question, else the place's when none was given."""
        assert self.urgency is not None
        # a service type read only from the words that signalled the danger ("husband hits" of "my husband hits
        # me") is what the label says: shown as a filter, it would read as one the person set
        own = set(content_words(" ".join(self.urgency.said), self.words)) if self.urgency.danger else set()
        structural = [
            s
            for s in structural
            if not (
                s.kind == ConstraintKind.SERVICE_TYPE
                and own
                and s.said
                and set(content_words(s.said, self.words)) <= own
            )
        ]
        asked = describe(Constraints(list(structural), self.state.semantic)) if structural else ""
        summary = "; ".join(p for p in (self.urgency.label if self.urgency.danger else "", asked) if p)
        if usual is not None and usual.outcome == CatalogOutcome.CLARIFY:
            return summary, usual.reply
        return summary, "" if place else say("clarify", what=self.urgency.label)

    def _urgent_reasons(
        self,
        ranked: Sequence[Ranked],
        local: Sequence[Recommendation],
        near: Sequence[Ranked],
        place: Sequence[Structural],
        minute: int,
    ) -> dict[str, str | None]:
        """Why each candidate is reachable (or not) now; for those close by (outside the place asked for), how
        far they are."""
        reasons = {r.record_id: r.reachable for r in ranked}
        reasons.update({r.record.id: self.crisis.reachable_record(r.record, minute, self.today) for r in local})
        said_place = ", ".join(s.said or ", ".join(s.values) for s in place)
        for r in near:
            if r.km is not None and reasons.get(r.record_id):
                reasons[r.record_id] = f"{reasons[r.record_id]}; {say('close_by', km=f'{r.km:.1f}', place=said_place)}"
        return reasons

    def _close_by(
        self,
        request: str,
        place: Sequence[Structural],
        centre: tuple[float, float] | None,
        structural: Sequence[Structural],
        local: Sequence[Recommendation],
        minute: int,
        region: Sequence[str],
        n: int,
    ) -> tuple[list[Ranked], list[Recommendation]]:
        """A need served in the place only (a bed tonight) with nothing of the place reachable now: the services
        reachable now within CLOSE_BY_KM of the place asked for, nearest first (the next neighbourhood's shelter
        open all night), meeting every other constraint stated; each goes to the trail with its distance."""
        assert self.urgency is not None
        danger = [k for k in self.urgency.kinds if k.terms or k.services]
        if centre is None or not danger or not all(k.place_bound for k in danger):
            return [], []
        if any(self.crisis.reachable_record(r.record, minute, self.today) for r in local):
            return [], []
        ranked = rank(
            self.urgency,
            self.crisis,
            in_place=lambda r: close_by(centre, r) is not None and not filters.satisfies(r, place),
            today=self.today,
            minute=minute,
            region=region,
            centre=centre,
            request=request,
        )
        ranked = sorted((r for r in ranked if r.reachable), key=lambda r: (r.merit[:3], r.km or 0.0))
        others = [s for s in structural if s.kind not in LOCATION]
        near = self._urgent_checks(ranked, others, n, self.k)
        if near:
            self._emit_ranked(n, ranked, why="close by: ")
        return ranked, near

    def _lines_ranked(
        self,
        request: str,
        minute: int,
        region: Sequence[str],
        centre: tuple[float, float] | None,
        shown: set[str],
        *,
        only_reachable: bool,
        always_open_too: bool,
    ) -> list[Ranked]:
        """The lines of an urgent turn, reachable now first: the request's kinds' own, and the fallback kind's
        when none of those is reachable now (or when the request signals immediacy alone). `only_reachable`
        (the place's services are listed too): a line closed now is left to them. `always_open_too` (no place
        known): the services open 24 hours too, wherever they are, which one can call now."""
        assert self.urgency is not None
        fallback = tuple(k for k in self.words.urgency_kinds if k.fallback)
        tries = [self.urgency] if self.urgency.danger else []
        tries.append(replace(self.urgency, kinds=fallback))
        found: list[Ranked] = []
        for urgency in tries:
            found += rank(
                urgency,
                self.crisis,
                in_place=None,
                today=self.today,
                minute=minute,
                region=region,
                centre=centre,
                request=request,
                always_open_too=always_open_too,
            )
            if any(r.reachable for r in found):
                break
        found = list({r.record_id: r for r in found if r.record_id not in shown}.values())
        found.sort(key=lambda r: r.reachable is None)  # stable: each kind's order kept within
        return [r for r in found if r.reachable] if only_reachable else found

    def _urgent_checks(
        self, ranked: Sequence[Ranked], hard: Sequence[Structural], n: int, k: int, *, conditions: bool = True
    ) -> list[Recommendation]:
        """The first `k` candidates, in their order, that meet `hard` and whose text contradicts no condition.
        A condition their text leaves open is not shown: reachable now comes first, and a line rarely states
        whom it serves (the check is in the trail). One restricted to a group the request does not claim (a
        youth-only shelter for a parent with children) comes after all the others, as in the usual ranking."""
        chosen: list[Recommendation] = []
        later: list[Recommendation] = []  # restricted to a group the request does not claim
        restricted: set[str] = set()
        given: set[str] = set()  # numbers already listed: a second record of the same line adds nothing
        for start in range(0, len(ranked), self.batch):
            ids = [r.record_id for r in ranked[start : start + self.batch]]
            records = self.store.get(ids)
            for rid in ids:
                rec, _ = self._check(records[rid], n, restricted, structural=hard, semantics=None if conditions else [])
                phones = {p.strip() for p in records[rid].phones if p.strip()}
                if rec is not None and not (phones and phones <= given):
                    rec.evidence = [e for e in rec.evidence if e.passed is not None]
                    (later if rid in restricted else chosen).append(rec)
                    given |= phones
                if len(chosen) >= k:
                    return chosen
        return (chosen + later)[:k]

    def _record_call(
        self, completion: Completion[BaseModel], messages: Sequence[Message], schema: type[BaseModel] | None
    ) -> None:
        self.trail.emit(LLMCallEvent.of(completion, messages, _PURPOSES.get(schema, LLMPurpose.CATALOG_REPLY)))


def _usual_reply_before(usual: Turn | None) -> str:
    """What an urgent turn says first: the usual turn's reply when it recommended nothing and asked nothing."""
    if usual is not None and not usual.recommendations and usual.outcome != CatalogOutcome.CLARIFY:
        return usual.reply
    return ""


def _lines_first(lines: Sequence[Recommendation], local: Sequence[Recommendation], merit: dict[str, tuple]) -> bool:
    """Whether an urgent reply lists the lines before the place's services: the place's services come first
    when the first of them ranks above the first line (a 24-hour crisis unit, the city's own helpline), so that
    whatever comes first is reachable now when anything is."""
    return not local or bool(lines and merit.get(lines[0].record.id, ()) < merit.get(local[0].record.id, (True,)))


def _urgent_outcome(usual: Turn | None, place: bool, found: bool, profile: CatalogProfile) -> CatalogOutcome:
    """An urgent turn's outcome: the usual turn's when nothing was found; a question without a place; else an
    answer whenever there is something to say (the profile's numbers at least)."""
    if usual is not None and not found:
        return usual.outcome
    if not place:
        return CatalogOutcome.CLARIFY
    if found or profile.emergency_numbers or profile.crisis_numbers:
        return CatalogOutcome.ANSWER
    return CatalogOutcome.NONE_FOUND


def describe(c: Constraints) -> str:
    """The constraints in words: places as the catalog spells them ("city: Hillcrest" for "Hillcerst"), the
    other kinds as the person said them."""
    spelt = LOCATION - {ConstraintKind.AREA}  # an area as said: "LK", not every value it stands for
    parts = [f"{s.kind}: {', '.join(s.values) if s.kind in spelt or not s.said else s.said}" for s in c.structural]
    if c.topic and c.of(ConstraintKind.SERVICE_TYPE) is None:
        parts.insert(0, f"'{c.topic}'")  # no service type says what is asked for: the words do
    parts += [constraint_label(s) for s in c.semantic]  # "no ID required", as the evidence lines say it
    return "; ".join(parts) or "your request"
