"""The review session driven by a key script, on the trail recorded from a real agent run over real HIPE
documents: accept, reject, skip, a note, back and undo each change the selection as they say and are recorded as
decision events; quitting keeps what was decided; the judge's reasoning and score travel with the candidates."""

from __future__ import annotations

import dataclasses
import shutil

import pytest

from tests.fixtures.record_trails import QUESTION
from tests.trail import AGENT_TRAIL, recorded, small_collection
from tracerag.errors import SelectionError
from tracerag.research.review import KEYS, Action, ReviewSession, candidates_of
from tracerag.research.selection import Decision, SelectionStore
from tracerag.trail.events import DecisionEvent, JudgmentEvent, RunEvent, RunKind
from tracerag.trail.writer import MemoryListener, Trail

RANKED = [
    "EXP-1888-08-03-a-i0030",
    "hostile-1",
    "gaz-1881-05-27",
    "gone-42",
    "lpj-1881-a",
    "10169_Poole1860",
    "11614109_1886-06-22_5_67_001",
]


@pytest.fixture()
def col(tmp_path_factory, datasets_dir, tmp_path):
    shared = small_collection(tmp_path_factory, datasets_dir)
    path = tmp_path / "collection"
    shutil.copytree(shared.path, path)  # the shared one is read by other tests: never changed
    return path


@pytest.fixture()
def events(col):
    return recorded(AGENT_TRAIL, col).events


def _session(tmp_path, candidates, store=None):
    listener = MemoryListener()
    store = store or SelectionStore(tmp_path / "selections.sqlite", write=True)
    return ReviewSession(
        QUESTION, candidates, store, "tester", "run-1", emit=Trail(listeners=[listener]).emit
    ), listener


def test_candidates_of_an_ask_run_keep_its_rank_reasons_and_spans(events):
    candidates = candidates_of(events)
    assert [c.doc_id for c in candidates] == RANKED
    first = candidates[0]
    assert (first.span, first.chunk_id, first.origin) == ((0, 46), "EXP-1888-08-03-a-i0030#0", "agent")
    assert first.reasons == ("accept: FAITS DIVERS La panique des",)
    assert candidates[4].origin == "warm_start" and candidates[4].span is None


def test_keys_accept_reject_skip_note_back_undo_and_quit(tmp_path, events):
    session, listener = _session(tmp_path, candidates_of(events))
    for key in "arZ":  # accept #1, reject #2, an unknown key changes nothing
        session.handle(key)
    assert "unknown key 'Z'" in session.message and session.index == 2
    session.handle(" ")  # skip #3: undecided
    session.handle("n")
    assert session.noting
    session.add_note("  checked: the fire is in 1881  ")  # a note on #4, which has no decision yet
    session.handle("b")  # back to #3
    assert session.index == 2
    session.handle("a")  # #3 accepted after all
    session.handle("u")  # ... and undone: #3 is undecided again, shown again
    assert session.index == 2
    session.handle("q")
    assert session.finished
    store = session.store
    state = {e.doc_id: (e.decision, e.note) for e in store.entries(QUESTION)}
    assert state == {
        RANKED[0]: (Decision.ACCEPTED, ""),
        RANKED[1]: (Decision.REJECTED, ""),
        RANKED[2]: (Decision.UNDECIDED, ""),
        RANKED[3]: (Decision.UNDECIDED, "checked: the fire is in 1881"),
    }
    accepted = store.accepted(QUESTION)
    assert [(e.doc_id, e.span, e.chunk_id, e.who, e.run_id) for e in accepted] == [
        (RANKED[0], (0, 46), RANKED[0] + "#0", "tester", "run-1")
    ]
    decisions = listener.of(DecisionEvent)
    assert [(e.doc_id, e.decision, e.previous, e.undo) for e in decisions] == [
        (RANKED[0], Decision.ACCEPTED, None, False),
        (RANKED[1], Decision.REJECTED, None, False),
        (RANKED[2], Decision.UNDECIDED, None, False),
        (RANKED[3], Decision.UNDECIDED, None, False),
        (RANKED[2], Decision.ACCEPTED, Decision.UNDECIDED, False),
        (RANKED[2], Decision.UNDECIDED, Decision.ACCEPTED, True),
    ]
    assert [e.seq for e in decisions] == list(range(6))
    assert session.tally() == {Decision.ACCEPTED: 1, Decision.REJECTED: 1, Decision.UNDECIDED: 2}


def test_the_last_decision_ends_the_review_and_undo_reopens_it(tmp_path, events):
    session, _ = _session(tmp_path, candidates_of(events)[:2])
    session.handle("a")
    session.handle("r")
    assert session.finished
    session.handle("a")  # after the end, nothing more is decided
    assert len(session.store.entries(QUESTION)) == 2
    session.finished = False
    session.handle("u")
    assert session.store.get(QUESTION, RANKED[1]) is None and session.index == 1


def test_every_action_has_a_key():
    assert set(KEYS.values()) == set(Action)


def test_a_judge_run_gives_its_reasoning_and_score(events):
    listener = MemoryListener()
    trail = Trail(listeners=[listener])
    trail.emit(RunEvent(question=QUESTION, collection="c", k=2, config={}, versions={}, run=RunKind.JUDGE))
    trail.emit(JudgmentEvent(doc_id=RANKED[1], chunk_id=RANKED[1] + "#0", rank=2, retrieval_score=0.5, score=8,
                             reasoning="a theatre fire, reported at length", model="m", criteria_hash="h"))  # fmt: skip
    trail.emit(JudgmentEvent(doc_id=RANKED[0], chunk_id=RANKED[0] + "#0", rank=1, retrieval_score=0.9,
                             failure="unparseable after 1 repair", model="m", criteria_hash="h"))  # fmt: skip
    judged = list(listener)
    with_notes = candidates_of(events, judged)
    notes = {c.doc_id: c.judge for c in with_notes if c.judge is not None}
    assert notes[RANKED[1]].score == 8 and notes[RANKED[1]].reasoning.startswith("a theatre fire")
    assert notes[RANKED[0]].score is None and notes[RANKED[0]].failure == "unparseable after 1 repair"
    assert with_notes[1].reasons  # the agent's reasons stay beside the judge's
    alone = candidates_of(judged)  # the judge run reviewed on its own: its candidates in their rank order
    assert [(c.rank, c.doc_id, c.origin) for c in alone] == [(2, RANKED[1], "judge"), (1, RANKED[0], "judge")]


def test_a_run_without_candidates_is_an_error(events, tmp_path):
    with pytest.raises(SelectionError, match="has no candidates"):
        candidates_of(events[:3])
    with pytest.raises(SelectionError, match="nothing to review"):
        _session(tmp_path, [])


def test_a_candidate_without_a_span_cites_its_chunk(events):
    from tracerag.research.review import with_chunk_spans

    candidates = candidates_of(events)
    bare = [dataclasses.replace(c, span=None) for c in candidates[:2]]
    cited = with_chunk_spans(bare, {candidates[0].chunk_id: (0, 900)})
    assert cited[0].span == (0, 900) and cited[1].span is None  # the second's chunk was not given
    assert with_chunk_spans(candidates[:1], {candidates[0].chunk_id: (0, 900)})[0].span == (0, 46)  # its own stays
