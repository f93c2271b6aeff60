"""Property: whatever malformed arguments the model gives a tool, the run completes, its trail validates, no
malformed search is run, and every malformed answer is answered in the trail, by a repair round (the problem sent
back to the model) or by a guard.

Each generated call is malformed by construction (one defect drawn per call: garbage strings, wrong types, huge
or negative numbers, unknown corpora, unicode junk, missing or foreign fields, upside-down ranges, runaway phrases,
answers that are no tool call at all), with noise around it (extra keys, a thought, a query). The calls go through
the real loop (a scripted policy provider, StructuredLLM's own repair, the trail) on a small real collection.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.agent.policy import Policy, PolicyProvider, _purpose
from tracerag.agent import Agent
from tracerag.agent.schemas import MAX_DAYS, MAX_PHRASE_WORDS, MAX_QUERY_WORDS, MAX_SEARCH_K, MAX_TEXT_CHARS
from tracerag.agent.tools import SEARCH_TOOLS, TOOLS
from tracerag.config import AgentSettings
from tracerag.llm import StructuredLLM
from tracerag.model import RunStatus
from tracerag.trail import MemoryListener, read_trail
from tracerag.trail.events import GuardEvent, LLMCallEvent, SearchEvent

DEMO_PARENTS = {"newseye", "sonar", "topres19th"}  # the demo collection's datasets (full names hold a "/")
ARGUMENT_NAMES = {name for tool in TOOLS.values() for name in tool.args.model_fields}

# -- values ---------------------------------------------------------------------------------------------------

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
not_text = st.booleans() | st.floats() | st.lists(json_values, max_size=3) | st.dictionaries(st.text(), json_values)
word = st.text(alphabet="abcdefghijklmnopqrstuvwxyzéèäöü", min_size=1, max_size=9)
junk = st.text(st.characters(categories=["P", "S", "Zs", "Cc", "Cf", "Mn"]), min_size=1, max_size=12)
lone_surrogate = st.text(max_size=8).map(lambda s: s + "\ud800")


def _blank(s: str) -> bool:
    return not s.strip().strip('"').strip()


no_letter = junk.filter(lambda s: not _blank(s) and not any(c.isalnum() for c in s))
bad_k = (
    st.integers(max_value=0)
    | st.integers(min_value=MAX_SEARCH_K + 1)
    | st.just(10**100)
    | st.booleans()
    | st.floats().filter(lambda f: not (math.isfinite(f) and f.is_integer() and 1 <= f <= MAX_SEARCH_K))
    | st.text(max_size=6).map(lambda s: "x" + s)
    | st.lists(st.integers(), max_size=2)
)
unknown_corpus = st.text(min_size=1, max_size=20).filter(
    lambda s: s.strip() and s.strip() not in DEMO_PARENTS and "/" not in s
)
# A date string the calendar cannot read: it holds a character that no partial date has (a digit, "-", EDTF's
# X ? ~ %), inside its outer whitespace, and no "T" (the start of a time, which is dropped).
bad_date = st.sampled_from(["spring 1881", "c. 1880", "1887-13-45", "1881-02-30", "0000", "1880s", "18th century"]) | (
    st.text(min_size=1, max_size=15).filter(
        lambda s: "T" not in s and any(not c.isdigit() and c not in "-Xx?~%" for c in s.strip())
    )
)
year = st.integers(min_value=1500, max_value=2000)


def long_text(min_words: int) -> st.SearchStrategy[str]:
    many_words = st.lists(word, min_size=min_words + 1, max_size=min_words + 30).map(" ".join)
    one_long_word = st.text(alphabet="abc", min_size=MAX_TEXT_CHARS + 1, max_size=MAX_TEXT_CHARS + 50)
    return many_words | one_long_word


# -- defects: each makes a call malformed on its own ----------------------------------------------------------


def search_defects(tool: str) -> st.SearchStrategy[dict]:
    text_field = "phrase" if tool == "search_phrase" else "query"
    foreign = {"search_phrase": ["date_from", "centre", "days"], "search_date": ["phrase"]}.get(
        tool, ["phrase", "date_from", "date_to", "centre", "days"]
    )
    defects = [
        st.fixed_dictionaries({"k": bad_k}),
        st.fixed_dictionaries({"corpus": unknown_corpus | not_text}),
        st.fixed_dictionaries({text_field: not_text | no_letter | lone_surrogate}),
        st.fixed_dictionaries(
            {text_field: long_text(MAX_PHRASE_WORDS if tool == "search_phrase" else MAX_QUERY_WORDS)}
        ),
        st.sampled_from(foreign).flatmap(lambda f: st.fixed_dictionaries({f: st.just("1881") | word | st.just(5)})),
    ]
    dates = st.fixed_dictionaries({"date_from": year.map(str)}) if tool == "search_date" else st.just({})
    return st.tuples(st.one_of(defects), dates).map(lambda pair: {"tool": tool, **pair[1], **pair[0]})


def date_defects() -> st.SearchStrategy[dict]:
    field = st.sampled_from(["date_from", "date_to", "centre"])
    return st.one_of(
        field.flatmap(lambda f: st.fixed_dictionaries({f: bad_date | not_text | lone_surrogate})),
        st.tuples(year, st.integers(1, 300)).map(lambda p: {"date_from": str(p[0]), "date_to": str(p[0] - p[1])}),
        st.fixed_dictionaries({}, optional={"days": st.integers(1, 100)}),  # no date at all
        st.fixed_dictionaries(
            {
                "centre": year.map(str),
                "days": st.integers(max_value=0) | st.integers(min_value=MAX_DAYS + 1) | st.booleans(),
            }
        ),
        st.fixed_dictionaries(
            {"centre": st.sampled_from(["0001", "0001-01-01", "9999-12"]), "days": st.integers(400, MAX_DAYS)}
        ),
    ).map(lambda d: {"tool": "search_date", **d})


def shape_defects() -> st.SearchStrategy[dict | str]:
    tools = st.sampled_from(sorted(TOOLS))
    return st.one_of(
        st.text(max_size=15).filter(lambda s: s not in TOOLS).map(lambda s: {"tool": s}),
        st.just({}),  # no tool
        (st.integers() | st.lists(scalars, max_size=2) | st.none()).map(lambda t: {"tool": t}),
        st.tuples(tools, st.integers() | st.lists(scalars, max_size=2) | st.none() | st.booleans()).map(
            lambda p: {"tool": p[0], "thought": p[1]}
        ),
        st.tuples(tools, lone_surrogate).map(lambda p: {"tool": p[0], "thought": p[1]}),
        st.text(max_size=40).filter(lambda s: "{" not in s),  # not JSON at all
        st.lists(json_values, max_size=3).map(json.dumps),  # JSON, but not an object
    )


def with_noise(call: dict | str) -> st.SearchStrategy[dict | str]:
    if isinstance(call, str):
        return st.just(call)
    extra = st.dictionaries(
        st.text(min_size=1, max_size=8).filter(lambda k: k not in ARGUMENT_NAMES | {"tool", "thought"}),
        json_values,
        max_size=3,
    )
    noise = st.fixed_dictionaries({}, optional={"thought": st.text(max_size=30), "query": st.just("Reichstag")})
    return st.tuples(extra, noise).map(lambda p: {**p[0], **{k: v for k, v in p[1].items() if k not in call}, **call})


malformed_call = st.one_of(*(search_defects(t) for t in SEARCH_TOOLS), date_defects(), shape_defects()).flatmap(
    with_noise
)


class RawPolicy(Policy):
    """The scripted policy, but an action given as a string is sent as that raw text (not JSON-encoded)."""

    def answer(self, messages):
        if _purpose(messages[0].content) == "action":
            action = self.actions[min(self._action_i, len(self.actions) - 1)]
            if isinstance(action, str):
                self._action_i += 1
                self.calls.append("action")
                return action
        return super().answer(messages)


@pytest.fixture(scope="module")
def trails(tmp_path_factory):
    return tmp_path_factory.mktemp("trails")


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,  # the same examples on every run: a failure here is reproducible, never flaky
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(calls=st.lists(malformed_call, min_size=1, max_size=4))
def test_malformed_tool_arguments_never_end_a_run(demo_collection, trails, calls):
    policy = RawPolicy(
        sub_questions=[{"question": "Reichstag", "target_corpus": None}],
        accept=("reichstag",),
        actions=[*calls, {"tool": "review"}, {"tool": "finish"}],
    )
    events = MemoryListener()
    agent = Agent(
        demo_collection,
        StructuredLLM(PolicyProvider(policy)),
        trail_dir=trails,
        settings=AgentSettings(max_sub_questions=1, max_steps=6),
    )
    result = agent.run("Reichstag Sitzung", 10, listeners=[events])

    assert result.status in (RunStatus.COMPLETE, RunStatus.TRUNCATED), result.message
    assert [e.kind for e in read_trail(result.trail_path)] == [e.kind for e in events]  # written, and valid
    assert not [s for s in events.of(SearchEvent) if s.tool != "warm_start"]  # no malformed search was run

    served = min(policy.calls.count("action"), len(calls))  # the malformed calls come first
    actions = [c for c in events.of(LLMCallEvent) if c.purpose == "action"]
    repaired_in_call = sum(len(c.attempts) - 1 for c in actions)  # StructuredLLM sent a bad shape back
    repaired_by_loop = sum(c.messages[-1]["content"].startswith("Your answer was unusable: ") for c in actions)
    guards = [g for g in events.of(GuardEvent) if g.guard in ("unusable_action", "bad_arguments")]
    assert served == repaired_in_call + repaired_by_loop + len(guards), [g.message for g in guards]
    for g in guards:
        if g.guard == "bad_arguments":
            assert g.message.split(":")[0] in SEARCH_TOOLS and g.message.endswith("; the search was not run")
        else:
            assert g.message.startswith("unusable action answer: ")
