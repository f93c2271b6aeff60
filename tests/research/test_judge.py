"""The criteria judge on real chunks of a small real collection (the demo's three HIPE-2022 files), with model
answers recorded and replayed (`tracerag.llm.replay`): one candidate per call, reasoning before score, parse
failures recorded (never a score), the cache answering a second run without any model call, and the diagnostics'
Spearman checked on cases computed by hand and against scipy."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.demo_data import DEMO_FILES
from tracerag.errors import ConfigError
from tracerag.ingest import read_documents
from tracerag.llm import RawAnswer, StructuredLLM, Usage
from tracerag.llm.replay import RecordingProvider, ReplayProvider
from tracerag.research.criteria import from_text, load_criteria, parse_toml
from tracerag.research.diagnostics import judge_vs_judge, retrieval_vs_judge, spearman
from tracerag.research.judge import MAX_TOKENS, JudgeAnswer, JudgeCache, JudgeCandidate, Judgment, judge_run
from tracerag.retrieval.search import Retriever, SearchRequest
from tracerag.trail import read_trail
from tracerag.trail.events import JudgmentEvent, LLMCallEvent, LLMPurpose, RunEvent, RunKind

CRITERIA = """\
question = "Reichstag debates"
counts = ["a session or debate of the Reichstag"]
excludes = ["advertisements"]
[scale]
0 = "nothing about the Reichstag"
10 = "reports a Reichstag session"
"""


class Scripted:
    """A judge that reads its one excerpt: 9 when it holds `word`, 1 otherwise; `garbage` answers unusably."""

    name = "scripted"

    def __init__(self, word: str = "reichstag", model: str = "scripted-judge", garbage: bool = False):
        self.word, self.model, self.garbage = word, model, garbage
        self.prompts: list[str] = []
        self.limits: list[int] = []

    def generate(self, messages, *, json_schema, temperature, max_tokens) -> RawAnswer:
        user = messages[-1].content if not self.garbage else messages[1].content
        self.prompts.append(user)
        self.limits.append(max_tokens)
        if self.garbage:
            return RawAnswer("I think it is quite relevant, maybe an eight?", Usage(50, 9), 0.0, self.model)
        excerpt = user.split("Excerpt:", 1)[1].lower()
        score = 9 if self.word in excerpt else 1
        answer = {"reasoning": f"{'mentions' if score == 9 else 'does not mention'} {self.word}", "score": score}
        return RawAnswer(json.dumps(answer), Usage(100, 12), 0.0, self.model)


@pytest.fixture(scope="module")
def demo(hipe_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Collection]:
    path = tmp_path_factory.mktemp("judge") / "col"
    files = [next(hipe_dir.rglob(spec.name)) for spec in DEMO_FILES]
    with Collection.open(path, load_settings(), mode="write", create=True) as col:
        col.ingest((d for f in files for d in read_documents(f, "hipe")), dense=False)
    with Collection.open(path, load_settings(), mode="read") as col:
        yield col


@pytest.fixture(scope="module")
def candidates(demo: Collection) -> list[JudgeCandidate]:
    ranking = Retriever(demo).search(SearchRequest("Reichstag Sitzung", k=6, channels=("bm25",), windows=""))
    chunks = demo.store.get_chunks([d.best_chunk_id for d in ranking.documents])
    docs = demo.store.get_documents([d.doc_id for d in ranking.documents])
    out = []
    for rank, d in enumerate(ranking.documents, start=1):
        c, doc = chunks[d.best_chunk_id], docs[d.doc_id]
        out.append(JudgeCandidate(d.doc_id, c.id, doc.text[c.start : c.end], rank, d.score, doc.title or "", ""))
    assert len(out) >= 4
    return out


def run(demo, tmp_path, llm, candidates, cache=None, criteria=CRITERIA):
    return judge_run(
        demo, load_settings(), llm, parse_toml(criteria, "crit.toml"), candidates,
        question="Reichstag", source_run="test", trail_dir=tmp_path / "trails", cache=cache,
    )  # fmt: skip


# -- criteria ----------------------------------------------------------------------------------------------------


def test_criteria_from_toml_and_text(tmp_path):
    path = tmp_path / "crit.toml"
    path.write_text(CRITERIA, encoding="utf-8")
    crit = load_criteria(path)
    assert crit.counts == ("a session or debate of the Reichstag",) and crit.excludes == ("advertisements",)
    assert dict(crit.anchors) == {0: "nothing about the Reichstag", 10: "reports a Reichstag session"}
    assert crit.digest == parse_toml(CRITERIA, "elsewhere.toml").digest  # what it says, not where it was read
    assert crit.digest != parse_toml(CRITERIA.replace("advertisements", "obituaries"), "x").digest
    text = tmp_path / "crit.txt"
    text.write_text("Reports of strikes in textile mills.\n", encoding="utf-8")
    assert load_criteria(text).counts == ("Reports of strikes in textile mills.",)
    with pytest.raises(ConfigError, match="empty"):
        from_text("  \n", "blank.txt")


@pytest.mark.parametrize(
    ("toml", "where", "says"),
    [
        ('counts = ["x"]\nexclude = ["y"]\n', "crit.toml:2", "unknown key 'exclude'"),
        ('counts = ["x"]\n[scale]\n0 = "none"\n11 = "too high"\n', "crit.toml:4", "scale.11"),
        ('question = "q"\ncounts = 3\n', "crit.toml:2", "'counts' must be"),
        ('question = "q"\n', "crit.toml", "at least one"),
        ('counts = ["x"]\nscale = = 3\n', "crit.toml:2", "not valid TOML"),
        ('counts = ["x"\n', "crit.toml", "Unclosed array"),
    ],
)
def test_a_criteria_error_names_the_file_the_line_and_the_key(tmp_path, toml, where, says):
    path = tmp_path / "crit.toml"
    path.write_text(toml, encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        load_criteria(path)
    assert str(exc.value).startswith(str(tmp_path / where)) and says in str(exc.value), str(exc.value)


# -- judging -----------------------------------------------------------------------------------------------------


def test_reasoning_comes_before_the_score_in_the_schema_the_model_follows():
    assert list(JudgeAnswer.model_json_schema()["properties"]) == ["reasoning", "score"]


def test_each_candidate_is_judged_in_its_own_call_and_recorded(demo, tmp_path, candidates):
    provider = Scripted()
    result = run(demo, tmp_path, StructuredLLM(provider), candidates)
    assert len(provider.prompts) == len(candidates) == result.calls
    assert set(provider.limits) == {MAX_TOKENS}  # a runaway answer is cut short, not waited for
    for prompt, candidate in zip(provider.prompts, candidates, strict=True):
        excerpt = prompt.split("Excerpt:", 1)[1]
        assert excerpt.count('"text":') == 1  # one excerpt per call, never a comparative batch
        assert " ".join(candidate.text.split())[:80] in excerpt.replace('\\"', '"')
        assert "rank" not in excerpt and "score" not in excerpt  # the retriever's opinion is not shown
    expected = [9 if "reichstag" in " ".join(c.text.split()).lower()[:1500] else 1 for c in candidates]
    assert [j.score for j in result.judgments] == expected and 9 in expected and 1 in expected
    events = read_trail(result.trail_path)
    assert isinstance(events[0], RunEvent) and events[0].run is RunKind.JUDGE
    judged = [e for e in events if isinstance(e, JudgmentEvent)]
    calls = [e for e in events if isinstance(e, LLMCallEvent)]
    assert [e.chunk_id for e in judged] == [c.chunk_id for c in candidates]
    assert len(calls) == len(candidates) and {c.purpose for c in calls} == {LLMPurpose.JUDGE}
    assert sum(c.prompt_tokens for c in calls) == 100 * len(candidates)


def test_an_unparseable_answer_is_a_recorded_failure_never_a_score(demo, tmp_path, candidates):
    provider = Scripted(garbage=True)
    llm = StructuredLLM(provider, repair_rounds=2)
    result = run(demo, tmp_path, llm, candidates[:2])
    assert len(provider.prompts) == 2 * 3  # the first attempt and two bounded repairs, per candidate
    assert all(j.score is None and j.failure and "attempt 3" in j.failure for j in result.judgments)
    assert len(result.failures) == 2
    events = read_trail(result.trail_path)
    judged = [e for e in events if isinstance(e, JudgmentEvent)]
    assert [e.score for e in judged] == [None, None] and all(e.failure for e in judged)
    assert all(e.error for e in events if isinstance(e, LLMCallEvent))
    assert retrieval_vs_judge(result.judgments).n == 0  # failures take no part in the diagnostics


def test_a_score_outside_the_scale_is_a_failure_not_clamped(demo, tmp_path, candidates):
    class Eleven(Scripted):
        def generate(self, messages, **kw):
            self.prompts.append(messages[-1].content)
            return RawAnswer('{"reasoning": "very", "score": 11}', Usage(1, 1), 0.0, self.model)

    result = run(demo, tmp_path, StructuredLLM(Eleven(), repair_rounds=0), candidates[:1])
    assert result.judgments[0].score is None and "score" in (result.judgments[0].failure or "")


def test_replayed_answers_and_a_cache_hit_call_no_model(demo, tmp_path, candidates):
    recordings = tmp_path / "recorded"
    first = run(demo, tmp_path, StructuredLLM(RecordingProvider(Scripted(), recordings)), candidates)
    # Replayed from the recordings, without a cache: the same judgments, every answer taken from the folder.
    replay = ReplayProvider.from_folder(recordings)
    again = run(demo, tmp_path, StructuredLLM(replay), candidates)
    assert replay.used == len(candidates)
    assert [j.score for j in again.judgments] == [j.score for j in first.judgments]
    # Cached: the second run is answered by the cache; a replay with no recordings fails on any call it gets.
    cache = JudgeCache(tmp_path / "judgments.sqlite")
    run(demo, tmp_path, StructuredLLM(ReplayProvider.from_folder(recordings)), candidates, cache=cache)
    empty = ReplayProvider("scripted-judge", {}, "nothing recorded")
    cached = run(demo, tmp_path, StructuredLLM(empty), candidates, cache=cache)
    assert cached.calls == 0 and empty.used == 0 and not cached.failures
    assert all(j.cached for j in cached.judgments)
    assert [j.score for j in cached.judgments] == [j.score for j in first.judgments]
    events = read_trail(cached.trail_path)
    assert not [e for e in events if isinstance(e, LLMCallEvent)]
    assert all(e.cached for e in events if isinstance(e, JudgmentEvent))
    # The criteria key is what they say: a blank line changes nothing; another anchor is another key, so the model
    # is asked (here nothing is recorded: the call fails, and is recorded as a failure).
    same = run(demo, tmp_path, StructuredLLM(empty), candidates[:1], cache=cache, criteria=CRITERIA + "\n")
    assert same.calls == 0 and not same.failures
    changed_criteria = CRITERIA.replace("10 =", "9 =")
    changed = run(demo, tmp_path, StructuredLLM(empty), candidates[:1], cache=cache, criteria=changed_criteria)
    assert changed.calls == 1 and changed.failures and "never recorded" in (changed.failures[0].failure or "")


# -- diagnostics -------------------------------------------------------------------------------------------------


def test_spearman_on_known_cases():
    assert spearman([1, 2, 3, 4, 5], [2, 4, 6, 8, 10]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4, 5], [5, 4, 3, 2, 1]) == pytest.approx(-1.0)
    # With ties, by hand: ranks of y are 1, 2, 3.5, 5, 3.5; rho = 8 / sqrt(10 * 9.5)
    assert spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) == pytest.approx(8 / (10 * 9.5) ** 0.5)
    assert spearman([1, 2], [1, 2]) is None and spearman([1, 2, 3], [4, 4, 4]) is None
    scipy_stats = pytest.importorskip("scipy.stats")
    x, y = [3, 1, 4, 1, 5, 9, 2, 6], [2, 7, 1, 8, 2, 8, 1, 8]
    assert spearman(x, y) == pytest.approx(scipy_stats.spearmanr(x, y).statistic)


def _j(chunk: str, rank: int, score: int | None, model: str = "a") -> Judgment:
    return Judgment(chunk.split("#")[0], chunk, rank, None, score, "", None if score is not None else "x", False, model)


def test_the_diagnostics_pair_what_was_scored():
    first = [_j("d1#0", 1, 9), _j("d2#0", 2, 7), _j("d3#0", 3, None), _j("d4#0", 4, 2), _j("d5#0", 5, 3)]
    rv = retrieval_vs_judge(first)
    assert rv.n == 4 and rv.rho == pytest.approx(spearman([-1, -2, -4, -5], [9, 7, 2, 3]))
    second = [_j("d5#0", 1, 4, "b"), _j("d1#0", 2, 10, "b"), _j("d2#0", 3, 6, "b"), _j("d4#0", 4, 1, "b")]
    jj = judge_vs_judge(first, second)
    assert jj.n == 4 and jj.rho == pytest.approx(1.0) and "a vs b" in jj.what


def test_two_replayed_judges_compared_on_the_same_candidates(demo, tmp_path, candidates):
    a = run(demo, tmp_path, StructuredLLM(Scripted()), candidates)
    b = run(demo, tmp_path, StructuredLLM(Scripted(word="sitzung", model="other-judge")), candidates)
    corr = judge_vs_judge(a.judgments, b.judgments)
    scores_a = [j.score for j in a.judgments]
    scores_b = [j.score for j in b.judgments]
    assert corr.n == len(candidates)
    assert corr.rho == spearman(scores_a, scores_b)
    assert re.search("scripted-judge vs other-judge", corr.what)


def test_a_recorded_search_run_is_judged_in_its_order(demo, tmp_path):
    from tracerag.research.judge import candidates_of
    from tracerag.research.sources import load_chunks, refs_from_run
    from tracerag.search.run import run_search

    search = run_search(demo, SearchRequest("Reichstag Sitzung", k=5, channels=("bm25",), windows=""),
                        trail_dir=tmp_path / "search")  # fmt: skip
    assert search.trail_path is not None
    refs = refs_from_run(read_trail(search.trail_path))
    found = [d.doc_id for d in search.ranking.documents]
    assert [r.doc_id for r in refs] == found and [r.rank for r in refs] == list(range(1, len(found) + 1))
    candidates = candidates_of(load_chunks(demo, refs).chunks)
    result = run(demo, tmp_path, StructuredLLM(Scripted()), candidates)
    assert [j.doc_id for j in result.judgments] == found and not result.failures
