"""The agent's tools take typed arguments: a malformed one from the model is sent back once with the problem
(a repair round) and, still malformed, recorded as a guard while the run goes on; valid calls search exactly as
before. On a small real collection (tests/agent/conftest.py) with a scripted policy (tests/agent/policy.py)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tests.agent.policy import Policy, PolicyProvider
from tracerag.agent import Agent
from tracerag.agent.schemas import MAX_SEARCH_K, ArgumentContext, DateArgs, NoArgs, ReviewAnswer, SearchArgs
from tracerag.agent.tools import SEARCH_TOOLS, TOOLS, ActionAnswer, MalformedArguments, tool_list
from tracerag.config import AgentSettings
from tracerag.llm import StructuredLLM
from tracerag.model import Filter, RunStatus
from tracerag.retrieval.search import Retriever, SearchRequest
from tracerag.trail import MemoryListener, read_trail
from tracerag.trail.events import FusionEvent, GuardEvent, LLMCallEvent, SearchEvent

QUESTION = "Reichstag Sitzung"
CONTEXT = ArgumentContext(frozenset({"newseye", "sonar", "sonar/vossischezeitung"}), ("newseye", "sonar"))


def arguments(tool: str, **given):
    action = ActionAnswer.model_validate({"tool": tool, **given})
    return TOOLS[tool].arguments(action, CONTEXT)


@pytest.mark.parametrize(
    ("tool", "given", "problem"),
    [
        ("search_date", {"query": "Gambetta", "date_from": "spring 1881"}, "date_from 'spring 1881' is not a date"),
        ("search_date", {"date_from": "1887-13-45"}, "date_from '1887-13-45' is not a date"),
        ("search_date", {"date_to": "c. 1880"}, "date_to 'c. 1880' is not a date"),
        ("search_date", {"date_from": "0000"}, "date_from '0000' is not a date"),
        ("search_date", {"date_from": "1890", "date_to": "1880-05"}, "date_from '1890' is after date_to '1880-05'"),
        ("search_date", {"query": "Gambetta"}, "give date_from and/or date_to, or centre"),
        ("search_date", {"centre": "0001-01-05", "days": 30}, "centre '0001-01-05' ± 30 days leaves the calendar"),
        ("search_date", {"centre": "1887", "days": 0}, "days 0: input should be greater than or equal to 1"),
        ("search_date", {"centre": "1887", "days": -30}, "days -30: input should be greater than or equal to 1"),
        ("search_date", {"centre": "1887", "days": 10**40}, "input should be less than or equal to 36525"),
        ("search_date", {"centre": "1887", "days": True}, "days True is not a number of days"),
        ("search_bm25", {"query": "Gambetta", "k": -3}, "k -3: input should be greater than or equal to 1"),
        ("search_bm25", {"query": "Gambetta", "k": 10**12}, f"input should be less than or equal to {MAX_SEARCH_K}"),
        ("search_bm25", {"query": "Gambetta", "k": "ten"}, "k 'ten': input should be a valid integer"),
        ("search_bm25", {"query": "Gambetta", "k": 2.5}, "k 2.5: input should be a valid integer"),
        ("search_bm25", {"query": "((( ! )))"}, "query '((( ! )))' has no letter or digit to search for"),
        ("search_bm25", {"query": ["Gambetta"]}, "query must be text, not a list"),
        ("search_semantic", {"query": {"text": "Gambetta"}}, "query must be text, not an object"),
        ("search_phrase", {"phrase": " ".join(["discours"] * 300)}, "phrase has 300 words; at most 20"),
        ("search_bm25", {"query": "x" * 600}, "query has 600 characters; at most 500"),
        ("search_bm25", {"query": "Gambetta", "corpus": "le-monde"}, "corpus 'le-monde' is not a sub-corpus"),
        ("search_bm25", {"query": "Gambetta", "date_from": "1881"}, "search_bm25 takes no date_from"),
        ("search_date", {"date_from": "1881", "phrase": "discours"}, "search_date takes no phrase"),
    ],
)
def test_malformed_arguments_are_named_with_their_value(tool, given, problem):
    with pytest.raises(MalformedArguments) as caught:
        arguments(tool, **given)
    assert str(caught.value).startswith(f"{tool}: ") and problem in str(caught.value)


def test_an_unknown_corpus_is_told_which_corpora_exist():
    with pytest.raises(MalformedArguments, match=r"use one of: newseye, sonar; or leave it out"):
        arguments("search_bm25", query="Gambetta", corpus="letemps")
    assert arguments("search_bm25", query="Gambetta", corpus="sonar/vossischezeitung").corpus  # full names too


def test_a_lone_surrogate_makes_the_answer_unusable_before_it_reaches_the_trail():
    # JSON's "\ud800" decodes to half a UTF-16 pair, which neither the trail's UTF-8 writer nor the engine encodes
    with pytest.raises(ValidationError, match="not valid Unicode"):
        ActionAnswer.model_validate({"tool": "search_bm25", "query": "Gambetta\ud800"})
    with pytest.raises(ValidationError, match="not valid Unicode"):
        ReviewAnswer.model_validate({"verdicts": [{"id": "D1", "verdict": "hold", "reason": "unsure \udc00"}]})
    with pytest.raises(UnicodeEncodeError):
        "unsure \udc00".encode("utf-8")  # what the trail writer would have met


@pytest.mark.parametrize(
    ("given", "window"),
    [
        ({"date_from": "1881", "date_to": "1882-06"}, ("1881-01-01", "1882-06-30")),
        ({"date_from": 1881}, ("1881-01-01", None)),  # a year written as a JSON number
        ({"date_to": "1881-05-17T10:00:00"}, (None, "1881-05-17")),
        ({"centre": "1887-05-17", "days": 30}, ("1887-04-17", "1887-06-16")),
        ({"centre": "1887"}, ("1886-01-01", "1888-12-30")),  # a year either side; 1888 is a leap year
        ({"centre": "1887", "days": "30", "date_from": "1700"}, ("1886-12-02", "1888-01-30")),  # centre wins
    ],
)
def test_valid_dates_give_the_windows_they_gave_before(given, window):
    args = arguments("search_date", query="Gambetta", **given)
    assert isinstance(args, DateArgs) and args.window == window


def test_null_blank_and_unknown_fields_are_no_arguments_and_review_takes_none():
    args = arguments("search_bm25", query=" Gambetta ", phrase=None, date_from="", thought="x", notes=[1, 2])
    assert isinstance(args, SearchArgs) and args.model_dump(exclude_none=True) == {"query": "Gambetta"}
    assert arguments("search_bm25").query is None  # no query: the loop searches the sub-question, as before
    assert arguments("review", query="(((", k=-3, date_from="spring 1881") == NoArgs()


@pytest.mark.parametrize("tool", sorted(SEARCH_TOOLS))
def test_a_tool_handed_another_tools_arguments_says_which_tool_it_is(tool):
    """The loop hands a tool only what its own `arguments()` validated; anything else is a bug, named as one."""
    with pytest.raises(TypeError, match=rf"^{tool} was given NoArgs, not its \w+Args$"):
        SEARCH_TOOLS[tool].plan(NoArgs(), "Gambetta", Filter(), 10)
    with pytest.raises(TypeError, match=r"^search_date was given SearchArgs, not its DateArgs$"):
        SEARCH_TOOLS["search_date"].plan(SearchArgs(query="Gambetta"), "Gambetta", Filter(), 10)
    own = arguments(tool, query="Gambetta", **({"date_from": "1881"} if tool == "search_date" else {}))
    assert SEARCH_TOOLS[tool].plan(own, "x", Filter(), 10).query.strip('"') == "Gambetta"  # its own: planned


def test_what_the_model_is_shown_is_derived_from_the_argument_models():
    schema = ActionAnswer.model_json_schema()["properties"]
    for tool in TOOLS.values():
        for name, field in tool.args.model_fields.items():
            assert name in tool.describe().split(":")[0]  # the tool list names every argument
            assert schema[name]["anyOf"] == tool.args.model_json_schema()["properties"][name]["anyOf"]
            assert field.description and field.description[1:] in schema[name]["description"]
    assert schema["k"]["anyOf"][0] == {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_K}
    assert schema["date_from"]["description"].startswith("search_date: ")  # taken by one tool: it says which
    assert set(schema["tool"]["enum"]) == set(TOOLS) and all(f"- {t}" in tool_list() for t in TOOLS)


# -- through the loop -----------------------------------------------------------------------------------------


def run(col, tmp_path, actions, repair_rounds=1, **settings):
    policy = Policy(
        sub_questions=[{"question": "Reichstag", "target_corpus": None}], accept=("reichstag",), actions=actions
    )
    events = MemoryListener()
    llm = StructuredLLM(PolicyProvider(policy), repair_rounds=repair_rounds)
    agent = Agent(col, llm, trail_dir=tmp_path, settings=AgentSettings(max_sub_questions=1, **settings))
    result = agent.run(QUESTION, 10, listeners=[events])
    read_trail(result.trail_path)  # every line validates
    return result, events


def action_calls(events):
    return [c for c in events.of(LLMCallEvent) if c.purpose == "action"]


SPRING = {"tool": "search_date", "query": "Reichstag", "date_from": "spring 1881"}
NOT_A_DATE = "search_date: date_from 'spring 1881' is not a date (expected YYYY, YYYY-MM or YYYY-MM-DD)"


def test_a_date_that_is_not_one_is_sent_back_then_guarded_and_the_run_goes_on(demo_collection, tmp_path):
    result, events = run(demo_collection, tmp_path, [SPRING, SPRING, {"tool": "finish"}])
    assert result.status is RunStatus.COMPLETE
    guards = [(g.guard, g.message) for g in events.of(GuardEvent)]
    assert ("bad_arguments", f"{NOT_A_DATE}; the search was not run") in guards
    assert not [s for s in events.of(SearchEvent) if s.tool == "search_date"]
    calls = action_calls(events)
    assert calls[1].messages[-1]["content"] == f"Your answer was unusable: {NOT_A_DATE}. Answer again."
    assert calls[1].messages[-2] == {"role": "assistant", "content": calls[0].response}
    assert f"last step: {NOT_A_DATE}; the search was not run" in calls[2].messages[-1]["content"]


def test_a_repaired_date_runs_the_corrected_search(demo_collection, tmp_path):
    fixed = {"tool": "search_date", "query": "Reichstag", "date_from": "1881", "date_to": "1890"}
    result, events = run(demo_collection, tmp_path, [SPRING, fixed, {"tool": "finish"}])
    assert result.status is RunStatus.COMPLETE
    assert [g.guard for g in events.of(GuardEvent)] == ["repaired_arguments"]
    assert events.of(GuardEvent)[0].message == f"{NOT_A_DATE}; sent back to the model, which answered anew"
    (search,) = [s for s in events.of(SearchEvent) if s.tool == "search_date"]
    assert (search.filter["date_from"], search.filter["date_to"]) == ("1881-01-01", "1890-12-31")


def test_an_unknown_corpus_is_guarded_not_searched_everywhere(demo_collection, tmp_path):
    wrong = {"tool": "search_bm25", "query": "Reichstag", "corpus": "le-monde"}
    result, events = run(demo_collection, tmp_path, [wrong, wrong, {"tool": "finish"}])
    assert result.status is RunStatus.COMPLETE
    (guard,) = [g for g in events.of(GuardEvent) if g.guard == "bad_arguments"]
    assert "corpus 'le-monde' is not a sub-corpus" in guard.message and "newseye, sonar, topres19th" in guard.message
    assert not [s for s in events.of(SearchEvent) if s.tool == "search_bm25"]


def test_k_out_of_bounds_is_guarded_not_clamped_and_a_valid_k_is_used(demo_collection, tmp_path):
    # Decided: an out-of-bounds k is sent back, then guarded; never clamped into a search nobody asked for.
    negative = {"tool": "search_bm25", "query": "Berlin", "k": -3}
    five = {"tool": "search_bm25", "query": "Berlin", "k": 5}
    result, events = run(demo_collection, tmp_path, [negative, negative, five, {"tool": "finish"}])
    assert result.status is RunStatus.COMPLETE
    (guard,) = [g for g in events.of(GuardEvent) if g.guard == "bad_arguments"]
    assert "k -3: input should be greater than or equal to 1" in guard.message
    (search,) = [s for s in events.of(SearchEvent) if s.tool == "search_bm25"]
    assert search.args == {"query": "Berlin", "k": 5} and search.results == 5
    expected = Retriever(demo_collection).search(SearchRequest("Berlin", k=5, channels=("bm25",), windows=""))
    fusion = [f for f in events.of(FusionEvent) if f.step == search.step and f.sq == 0]
    assert [d["doc_id"] for d in fusion[0].ranking] == expected.doc_ids()


def test_without_repair_rounds_a_malformed_call_is_guarded_at_once(demo_collection, tmp_path):
    result, events = run(demo_collection, tmp_path, [SPRING, {"tool": "finish"}], repair_rounds=0)
    assert result.status is RunStatus.COMPLETE
    assert [g.guard for g in events.of(GuardEvent)] == ["bad_arguments"]
    sent = [m["content"] for c in action_calls(events) for m in c.messages]
    assert not any(m.startswith("Your answer was unusable") for m in sent)


def test_two_malformed_steps_in_a_row_end_the_loop_as_unusable_answers(demo_collection, tmp_path):
    result, events = run(demo_collection, tmp_path, [SPRING])  # the policy repeats it forever
    assert result.status is RunStatus.TRUNCATED
    assert [g.guard for g in events.of(GuardEvent)] == ["bad_arguments", "bad_arguments", "action_failures"]
    assert len(action_calls(events)) == 4  # two steps, each sent back once


VALID = [
    ({"tool": "search_bm25", "query": "Reichstag Berlin"}, "Reichstag Berlin", ("bm25",), Filter()),
    ({"tool": "search_bm25", "query": "Reichstag", "corpus": "sonar"}, "Reichstag", ("bm25",), Filter(("sonar",))),
    ({"tool": "search_phrase", "phrase": '"des Reichstags"'}, '"des Reichstags"', ("phrase",), Filter()),
    ({"tool": "search_phrase", "query": "Berlin"}, '"Berlin"', ("phrase",), Filter()),
    (
        {"tool": "search_date", "query": "Reichstag", "date_from": "1870", "date_to": "1890-06"},
        "Reichstag",
        ("bm25", "dense", "date"),
        Filter(date_from="1870-01-01", date_to="1890-06-30"),
    ),
    (
        {"tool": "search_date", "centre": "1880-05-17", "days": 3000},
        "Reichstag",  # no query: the sub-question
        ("bm25", "dense", "date"),
        Filter(date_from="1872-02-29", date_to="1888-08-03"),
    ),
]


def test_valid_calls_search_exactly_as_before(demo_collection, tmp_path):
    actions = [action for action, *_ in VALID] + [{"tool": "finish"}]
    result, events = run(demo_collection, tmp_path, actions, max_steps=len(VALID) + 3)
    assert result.status is RunStatus.COMPLETE and not events.of(GuardEvent)
    searches = [s for s in events.of(SearchEvent) if s.tool != "warm_start"]
    assert len(searches) == len(VALID)
    retriever = Retriever(demo_collection)
    for search, (action, query, channels, flt) in zip(searches, VALID, strict=True):
        assert search.tool == action["tool"] and search.args["query"] == query and search.filter == flt.to_dict()
        expected = retriever.search(SearchRequest(query, k=10, filter=flt, channels=channels, windows=""))
        fusion = next(f for f in events.of(FusionEvent) if f.step == search.step and f.sq == 0)
        assert [d["doc_id"] for d in fusion.ranking] == expected.doc_ids() and search.results == len(expected.doc_ids())
    assert any(s.results for s in searches)


def test_a_bug_in_a_tool_still_ends_the_run_as_failed_and_is_raised(demo_collection, tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("tool bug")

    monkeypatch.setattr("tracerag.agent.loop.run_search", broken)
    with pytest.raises(RuntimeError, match="tool bug"):
        run(demo_collection, tmp_path, [{"tool": "search_bm25", "query": "Reichstag"}, {"tool": "finish"}])
    events = read_trail(next(tmp_path.glob("*.jsonl")))
    assert events[-1].kind == "result" and events[-1].status is RunStatus.FAILED and "tool bug" in events[-1].message
