"""The `[facts]` table of a word list: facts people state about themselves, groups records are restricted to,
and words whose sense a record's context decides.

Read by `catalog.words` (a language's list, and a country's file for the country's own terms), used by
`catalog.stated_facts` (the request side), `catalog.restrictions` (the record side) and `catalog.condition_rules`
(the verdicts). Every pattern is a regular expression, case ignored, checked when the file is read so a typo
names its file and key instead of failing later.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["Duration", "FactWords", "Group", "Sense", "StatedFact", "compile_any"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def checked_patterns(patterns: list[str]) -> list[str]:
    """The patterns as given, once each compiles (a word list's regular expressions, checked as it loads)."""
    for p in patterns:
        try:
            re.compile(p)
        except re.error as exc:
            raise ValueError(f"not a regular expression ({exc}): {p[:60]!r}") from None
    return patterns


class _Fact(_Strict):
    """A fact a person states about themselves, kept as a condition (`condition`, as checked and shown)."""

    condition: str
    said: list[str] = []  # request words stating it ("i'm a man"); a group `(?P<fact>...)` is the part taken
    keep_in_topic: bool = False  # the words also say what is asked for ("homeless" of "homeless shelter")
    outside: list[str] = []  # restriction groups (by `group`) a record restricted to contradicts the fact
    ages: tuple[int, int] | None = None  # the ages the fact implies ("a man": 18 and over)
    affirm: list[str] = []  # a record's text that supports it; without affirm, the condition has a rule in code
    deny: list[str] = []  # a record's text that contradicts it
    affirm_says: str = ""  # "is open to men", in reasons
    deny_says: str = ""

    @field_validator("said", "affirm", "deny")
    @classmethod
    def _compiles(cls, v: list[str]) -> list[str]:
        return checked_patterns(v)


class _Group(_Strict):
    """A group of people a record may be restricted to ("fire victims only")."""

    group: str  # as shown: "women", "people living with HIV/AIDS"
    only: list[str] = Field(min_length=1)  # a record's text restricting it to the group
    unless: list[str] = []  # a record's text that opens it to others as well ("men and women")
    said: list[str] = []  # a request's words saying the person belongs to it
    # a request's words naming the group as someone with the person, not the person ("me and my kids")
    beside: list[str] = []
    ages: tuple[int, int] | None = None  # the group's ages, when it is an age group
    rank_after: bool = True  # offered after unrestricted records when the request does not claim the group
    # Left out when a record open to all matches: false for a group anyone asking may belong to without saying
    # so (women, men), whose records still come after, with who they are for.
    leave_out: bool = True

    @field_validator("only", "unless", "said", "beside")
    @classmethod
    def _compiles(cls, v: list[str]) -> list[str]:
        return checked_patterns(v)


class _Duration(_Strict):
    """How long a person has kept to something that a record may ask a minimum of ("she stopped drinking 2 months
    ago" and "must have at least 6 months of sobriety"). Patterns name the number `n` and its unit `unit`."""

    condition: str  # as checked and shown, with the time in days: "sober for {days} days"
    said: list[str] = Field(min_length=1)  # request words stating it
    required: list[str] = Field(min_length=1)  # a record's text asking for at least that long
    units: dict[str, int] = Field(min_length=1)  # days in each unit, by how the unit word begins ("month": 30)
    affirm_says: str = ""
    deny_says: str = ""

    @field_validator("said", "required")
    @classmethod
    def _compiles(cls, v: list[str]) -> list[str]:
        return checked_patterns(v)

    @field_validator("condition")
    @classmethod
    def _has_days(cls, v: str) -> str:
        if v.count("{days}") != 1:
            raise ValueError(f"a duration's condition holds {{days}} once: {v!r}")
        return v


class _Sense(_Strict):
    """A word with a second sense that the words near it in a record decide ("seniors" of a high school)."""

    word: str
    other: list[str] = Field(min_length=1)  # words near it that give it the other sense
    window: int = 80  # characters either side

    @field_validator("other")
    @classmethod
    def _compiles(cls, v: list[str]) -> list[str]:
        return checked_patterns(v)


class FactFile(_Strict):
    """The `[facts]` table as written."""

    stated: list[_Fact] = []
    restrictions: list[_Group] = []
    senses: list[_Sense] = []
    durations: list[_Duration] = []
    self_age: list[str] = []  # a person stating their own age: the age is the group `age` ("i'm 17")

    @field_validator("self_age")
    @classmethod
    def _compiles(cls, v: list[str]) -> list[str]:
        return checked_patterns(v)


def compile_any(patterns: list[str] | tuple[str, ...]) -> re.Pattern[str] | None:
    """The patterns as one alternation (case ignored), or None when there are none."""
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.I) if patterns else None


@dataclass(frozen=True)
class StatedFact:
    condition: str
    said: tuple[re.Pattern[str], ...]  # each alone: each may name its group `fact`
    keep_in_topic: bool
    outside: tuple[str, ...]
    ages: tuple[int, int] | None
    affirm: re.Pattern[str] | None
    deny: re.Pattern[str] | None
    affirm_says: str
    deny_says: str


@dataclass(frozen=True)
class Group:
    group: str
    only: re.Pattern[str]
    unless: re.Pattern[str] | None
    said: re.Pattern[str] | None
    ages: tuple[int, int] | None
    rank_after: bool
    leave_out: bool = True
    beside: re.Pattern[str] | None = None  # request words naming the group as someone with the person

    def named_by(self, said: str) -> bool:
        """Whether a request's words say the person belongs to the group: its `said` words, unless they name
        the group as someone with the person (a parent "with my 2 kids" is not a child)."""
        if self.said is None or not self.said.search(said):
            return False
        return self.beside is None or not self.beside.search(said)


@dataclass(frozen=True)
class Duration:
    condition: str  # with {days}
    said: tuple[re.Pattern[str], ...]
    required: tuple[re.Pattern[str], ...]  # each alone: each names its groups `n` and `unit`
    units: tuple[tuple[str, int], ...]
    affirm_says: str
    deny_says: str

    def days(self, m: re.Match[str]) -> int | None:
        """The time a match of `said` or `required` names, in days (None for a unit the list does not know)."""
        unit = m.group("unit").casefold()
        per = next((days for start, days in self.units if unit.startswith(start)), None)
        return None if per is None else int(m.group("n")) * per

    def as_condition(self, days: int) -> str:
        return self.condition.replace("{days}", str(days))

    def stated_days(self, condition: str) -> int | None:
        """The days a condition of this duration holds, or None when `condition` is not one of it."""
        head, _, tail = self.condition.partition("{days}")
        m = re.fullmatch(re.escape(head) + r"(\d+)" + re.escape(tail), condition, re.I)
        return int(m.group(1)) if m else None


@dataclass(frozen=True)
class Sense:
    word: re.Pattern[str]
    other: re.Pattern[str]
    window: int


@dataclass(frozen=True)
class FactWords:
    """The compiled `[facts]` of a language's list, with its country's facts added (`merged`)."""

    stated: tuple[StatedFact, ...] = ()
    restrictions: tuple[Group, ...] = ()
    senses: tuple[Sense, ...] = ()
    self_age: tuple[re.Pattern[str], ...] = ()
    durations: tuple[Duration, ...] = ()

    @classmethod
    def build(cls, data: FactFile) -> FactWords:
        return cls(
            stated=tuple(
                StatedFact(
                    f.condition,
                    tuple(re.compile(p, re.I) for p in f.said),
                    f.keep_in_topic,
                    tuple(f.outside),
                    f.ages,
                    compile_any(f.affirm),
                    compile_any(f.deny),
                    f.affirm_says or f"is {f.condition}",
                    f.deny_says or f"is not {f.condition}",
                )
                for f in data.stated
            ),
            restrictions=tuple(
                Group(
                    g.group,
                    re.compile("|".join(f"(?:{p})" for p in g.only), re.I | re.M),
                    compile_any(g.unless),
                    compile_any(g.said),
                    g.ages,
                    g.rank_after,
                    g.leave_out,
                    compile_any(g.beside),
                )
                for g in data.restrictions
            ),
            senses=tuple(
                Sense(re.compile(s.word, re.I), re.compile("|".join(f"(?:{p})" for p in s.other), re.I), s.window)
                for s in data.senses
            ),
            self_age=tuple(re.compile(p, re.I) for p in data.self_age),
            durations=tuple(
                Duration(
                    d.condition,
                    tuple(re.compile(p, re.I) for p in d.said),
                    tuple(re.compile(p, re.I) for p in d.required),
                    tuple(sorted(((k.casefold(), v) for k, v in d.units.items()), key=lambda u: -len(u[0]))),
                    d.affirm_says or "asks for no longer than that",
                    d.deny_says or "asks for longer than that",
                )
                for d in data.durations
            ),
        )

    def merged(self, other: FactWords) -> FactWords:
        """These facts and `other`'s (a country's own), `other`'s added after."""
        return FactWords(
            self.stated + other.stated,
            self.restrictions + other.restrictions,
            self.senses + other.senses,
            self.self_age + other.self_age,
            self.durations + other.durations,
        )

    def fact(self, condition: str) -> StatedFact | None:
        key = condition.casefold()
        return next((f for f in self.stated if f.condition.casefold() == key), None)

    def group(self, name: str) -> Group | None:
        return next((g for g in self.restrictions if g.group == name), None)
