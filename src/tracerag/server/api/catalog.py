"""Catalog chat: conversations with the catalog assistant over the one catalog the server serves (`--catalog`).

`POST /api/catalog/conversations` starts one (its id is its trail's run id: the conversation's trail is
`{id}.jsonl` where `tracerag chat` writes its own); `POST .../{id}/turns` asks the next turn; `GET .../{id}` gives
the turns so far. A turn is the assistant's own (`catalog.assistant.Turn`): the reply, the clarifying question,
the recommendations as cards (`catalog.cards`: the record's fields and why each constraint holds, with the
record's value or text span), notes and the sentences the guard removed. Nothing is decided here.

Conversations are held in memory, at most `server.catalog_conversations`: starting one more ends the one idle
longest (its trail complete on disk; its id answers 404 from then on), and all end when the server stops.

Threads: a `CatalogAssistant` holds SQLite connections (the catalog store, its collection's document store),
and SQLite connections belong to the thread that opened them (`check_same_thread` stays on, as a guard). So each
conversation has its own worker thread, a one-thread executor that opens the assistant and runs everything that
touches it, and that is also the conversation's lock: two requests on one conversation run one after the other,
in order, while other conversations go on. Opening the stores with `check_same_thread=False` behind a lock would
have worked too, but it changes the library's stores for one caller and drops the guard.

A model (`serve --llm`): the server's one provider (`server/models.py`), one `StructuredLLM` per conversation,
since the assistant listens to its model's calls to put them in its trail, and a shared one would put every
conversation's calls in every trail.
"""

from __future__ import annotations

import contextvars
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field, field_validator

from tracerag.catalog.assistant import CatalogAssistant, Turn, constraints_dict
from tracerag.catalog.cards import Card, card_of
from tracerag.config import Settings
from tracerag.llm import StructuredLLM
from tracerag.options import TurnOptions
from tracerag.server.deps import ConversationId, State
from tracerag.server.schemas import ERRORS
from tracerag.server.state import NotFoundError, ServerState
from tracerag.trail.events import CatalogOutcome

router = APIRouter(prefix="/catalog", tags=["catalog"], responses=ERRORS)

NO_CATALOG = "no catalog served: start with --catalog DIR"
MAX_REQUEST = 2000  # characters of one request: a person's question, not a document
T = TypeVar("T")


# ------------------------------------------------------------------------------------------------ bodies


class TurnRequest(TurnOptions):
    @field_validator("text")
    @classmethod
    def _not_empty(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("a request needs some words")
        if len(value) > MAX_REQUEST:
            raise ValueError(f"at most {MAX_REQUEST} characters, got {len(value)}")
        return value  # a lone surrogate escape is refused for every route by the guard (server/security.py)


class ReasonOut(BaseModel):
    """Why one constraint of the request holds for the recommended service, with the directory's evidence."""

    kind: str = Field(
        description="The constraint's kind: city, county, zip, weekday, time, language, service_type, "
        "accessibility, or condition (checked against the record's text)."
    )
    label: str = Field(description="The constraint as the person said it.")
    holds: bool | None = Field(description="True: the record meets it; null: its text does not state the condition.")
    field: str = Field(description="The record's field that shows it (city, taxonomy, openings, ..., text).")
    quote: str = Field(description="That field's value as the directory states it, or the span of the record's text.")
    span: tuple[int, int] | None = Field(
        None, description="For a condition: the quote's character span in the record's text."
    )
    reason: str = Field("", description="For a condition: the checker's reason.")


class CardOut(BaseModel):
    """A recommended service, from its catalog record only."""

    id: str = Field(description="The record's id in the catalog.")
    name: str = Field(description="The service's name.")
    organization: str = Field(description="The organisation that runs it.")
    address: str = Field(description="Its address as the directory states it.")
    hours: str = Field(description="Opening hours by day, or the schedule as written.")
    phones: list[str] = Field(description="Its phone numbers as written.")
    url: str = Field(description="The record's web address as the directory states it (may be empty).")
    reasons: list[ReasonOut] = Field(description="One per constraint of the request, in its order.")
    open_conditions: list[str] = Field(description="Conditions the directory does not state for this service.")
    phone_labels: list[str] = Field([], description="Each phone's type or description as written, parallel to phones.")
    eligibility: str = Field("", description="Who the service is for, as the directory writes it.")
    notices: list[str] = Field([], description="A temporary message in force, a status, when it is offered.")
    season: str = Field("", description="The hours text as written when it names a season.")
    verified: str = Field("", description="When the directory last verified it, flagged when too long ago.")
    verified_stale: bool = Field(False, description="Last verified longer ago than the catalog profile allows.")

    @classmethod
    def of(cls, card: Card) -> CardOut:
        return cls(
            id=card.id,
            name=card.name,
            organization=card.organization,
            address=card.address,
            hours=card.hours,
            phones=list(card.phones),
            url=card.url,
            reasons=[
                ReasonOut(
                    kind=r.kind,
                    label=r.label,
                    holds=r.holds,
                    field=r.field,
                    quote=r.quote,
                    span=r.span,
                    reason=r.reason,
                )
                for r in card.reasons
            ],
            open_conditions=card.open_conditions,
            **_details(card),
        )


def _details(card: Card) -> dict:
    d = card.details
    if d is None:
        return {}
    labels = dict(d.phones)
    return {
        "phone_labels": [labels.get(p, "") for p in card.phones],
        "eligibility": d.eligibility,
        "notices": list(d.notices),
        "season": d.season,
        "verified": card.verified,
        "verified_stale": d.stale,
    }


class RemovedOut(BaseModel):
    """A sentence the hallucination guard removed from a model-written reply, and what in it was not the catalog's."""

    kind: str = Field(description="phone, address or name")
    value: str = Field(description="The phone, address or name as the model wrote it.")
    sentence: str = Field(description="The sentence or line removed.")


class TurnOut(BaseModel):
    index: int = Field(description="The turn's number in the conversation, from 0.")
    request: str = Field(description="The person's request, as written.")
    outcome: CatalogOutcome = Field(description="answer, none_found, no_match or clarify.")
    reply: str = Field(description="The assistant's reply as text (the cards say the same, as data).")
    question: str | None = Field(description="The clarifying question, when the assistant asks one (no place given).")
    cards: list[CardOut] = Field(description="The recommended services, best first.")
    understood: dict[str, Any] = Field(
        description="The conversation's constraints after this turn (structural, semantic, topic, unknown)."
    )
    notes: list[str] = Field(description="What the assistant could not use (e.g. a place not in the catalog).")
    removed: list[RemovedOut] = Field(description="Sentences removed from a model-written reply.")
    checked: int = Field(description="Candidates checked against the constraints.")
    run_id: str = Field(description="The conversation's run id (its trail).")
    trail: str = Field(description="The conversation's trail file on the server.")


class ConversationOut(BaseModel):
    id: str = Field(description="The conversation's id: its trail's run id.")
    run_id: str = Field(description="The conversation's run id (same as `id`).")
    trail: str = Field(description="The conversation's trail file on the server.")
    turns: list[TurnOut] = Field(description="Its turns so far, in order.")


# ------------------------------------------------------------------------------------------------ conversations


class Conversation:
    """One `CatalogAssistant`, opened and used only on its own thread."""

    def __init__(self, catalog: Path, settings: Settings, llm: StructuredLLM | None):
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="catalog-chat")
        try:
            # in a copy of the caller's context: who asked (`trail.asked_by`) is stamped on the conversation's run
            self.assistant: CatalogAssistant = self._thread.submit(
                contextvars.copy_context().run, CatalogAssistant, catalog, settings, llm=llm
            ).result()
        except BaseException:
            self._thread.shutdown(wait=False)
            raise
        self.id = self.assistant.trail.run_id

    def call(self, work: Callable[[CatalogAssistant], T]) -> T:
        """`work(assistant)` on the conversation's thread, after whatever it is doing now."""
        try:
            future = self._thread.submit(work, self.assistant)
        except RuntimeError:  # ended (evicted) between the lookup and now
            raise NotFoundError(f"conversation {self.id!r}: ended") from None
        return future.result()

    def close(self, *, wait: bool = False) -> None:
        """End it after the turn in progress, if any; `wait` for that (at shutdown), or not (an eviction)."""
        try:
            self._thread.submit(self.assistant.close)
        except RuntimeError:
            return  # already ended
        self._thread.shutdown(wait=wait)


class Conversations:
    """The conversations one server holds, at most `limit`, by id; the one idle longest ends first."""

    def __init__(self, catalog: Path, settings: Settings, limit: int, model: Callable[[], StructuredLLM | None]):
        self.catalog = catalog
        self.settings = settings
        self.limit = limit
        self._model = model  # a fresh StructuredLLM per conversation, over the server's one provider
        self._lock = threading.Lock()
        self._held: OrderedDict[str, Conversation] = OrderedDict()  # least recently used first

    def start(self) -> Conversation:
        conversation = Conversation(self.catalog, self.settings, self._model())
        with self._lock:
            self._held[conversation.id] = conversation
            evicted = [self._held.popitem(last=False)[1] for _ in range(len(self._held) - self.limit)]
        for old in evicted:
            old.close()
        return conversation

    def get(self, conversation_id: str) -> Conversation:
        with self._lock:
            conversation = self._held.get(conversation_id)
            if conversation is None:
                raise NotFoundError(
                    f"conversation {conversation_id!r}: not held here (never started, or ended: the server keeps "
                    f"the {self.limit} most recently used)"
                )
            self._held.move_to_end(conversation_id)
            return conversation

    def close(self) -> None:
        with self._lock:
            held, self._held = list(self._held.values()), OrderedDict()
        for conversation in held:
            conversation.close(wait=True)


_REGISTRY_LOCK = threading.Lock()


def conversations(request: Request, state: ServerState) -> Conversations:
    """This app's conversations, made on first use (404 when the server serves no catalog); ended with the app."""
    catalog = state.config.catalog
    if catalog is None:
        raise NotFoundError(NO_CATALOG)
    with _REGISTRY_LOCK:
        held: Conversations | None = getattr(request.app.state, "catalog_conversations", None)
        if held is None:
            held = Conversations(catalog, state.settings, state.settings.server.catalog_conversations, state.model)
            request.app.state.catalog_conversations = held
            state.on_close(held.close)
    return held


def turn_out(turn: Turn, index: int, assistant: CatalogAssistant) -> TurnOut:
    return TurnOut(
        index=index,
        request=turn.request,
        outcome=turn.outcome,
        reply=turn.reply,
        question=turn.reply if turn.outcome == CatalogOutcome.CLARIFY else None,
        cards=[CardOut.of(card_of(r, turn.constraints, assistant.words)) for r in turn.recommendations],
        understood=constraints_dict(turn.constraints),
        notes=list(turn.notes),
        removed=[RemovedOut(**{k: str(r.get(k, "")) for k in ("kind", "value", "sentence")}) for r in turn.removed],
        checked=turn.checked,
        run_id=assistant.trail.run_id,
        trail=str(assistant.trail_path),
    )


def conversation_out(assistant: CatalogAssistant) -> ConversationOut:
    return ConversationOut(
        id=assistant.trail.run_id,
        run_id=assistant.trail.run_id,
        trail=str(assistant.trail_path),
        turns=[turn_out(t, i, assistant) for i, t in enumerate(assistant.turns)],
    )


# ------------------------------------------------------------------------------------------------ routes


@router.post("/conversations", summary="Start a catalog conversation", response_model=ConversationOut, status_code=201)
def start_conversation(request: Request, state: State) -> ConversationOut:
    """Start a conversation with the catalog assistant; its trail is written as the turns go."""
    conversation = conversations(request, state).start()
    return conversation.call(conversation_out)


@router.get("/conversations/{conversation_id}", summary="A catalog conversation so far", response_model=ConversationOut)
def get_conversation(conversation_id: ConversationId, request: Request, state: State) -> ConversationOut:
    """A conversation's turns so far."""
    return conversations(request, state).get(conversation_id).call(conversation_out)


@router.post(
    "/conversations/{conversation_id}/turns", summary="Send the next turn of a conversation", response_model=TurnOut
)
def ask_turn(conversation_id: ConversationId, body: TurnRequest, request: Request, state: State) -> TurnOut:
    """The next turn: the reply, the clarifying question when no place is known yet, the recommendations as cards
    (only services of the catalog, each meeting every structural constraint), notes, and removed sentences."""
    conversation = conversations(request, state).get(conversation_id)

    def ask(assistant: CatalogAssistant) -> TurnOut:
        turn = assistant.ask(body.text)
        return turn_out(turn, len(assistant.turns) - 1, assistant)

    return conversation.call(ask)
