"""Pydantic types shared by every layer (except the numpy-only ``ragjudge.metrics``).

These are the records of the file formats' JSONL contract and of the store; field names are a
contract that users script against (see the README's "Formats" section).
"""

from __future__ import annotations

import re
from datetime import datetime
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ragjudge.numeric import AGGREGATION_RULES, MAX_GRADE, GradeRange  # noqa: F401 - re-exported

MAX_GRADE_NAME = 60
"""The longest name a grade may have (characters): it sits beside its key on the judging screen."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False, frozen=True)


class Query(_Record):
    id: str = Field(min_length=1)
    text: str
    description: str | None = None
    category: str | None = None
    meta: dict[str, Any] | None = None


class Chunk(_Record):
    id: str = Field(min_length=1)
    text: str
    doc_id: str | None = None
    meta: dict[str, Any] | None = None


class RunEntry(_Record):
    """One retrieved chunk of one query in one run. ``rank`` is 1-based."""

    query_id: str = Field(min_length=1)
    chunk_id: str = Field(min_length=1)
    score: float | None = None
    rank: int | None = Field(default=None, ge=1)


class Judgment(_Record):
    """A qrels line or a label: the grade an annotator gave a (query, chunk) pair."""

    query_id: str = Field(min_length=1)
    chunk_id: str = Field(min_length=1)
    grade: int
    annotator: str | None = None
    note: str | None = None


class ScaleLevel(_Record):
    grade: int
    name: str
    description: str = ""


class Scale(_Record):
    """The relevance scale of a project: binary (0/1) or graded MIN..MAX, each level named."""

    levels: tuple[ScaleLevel, ...]
    threshold: int = 1
    """Grades at or above this are "relevant" for binary measures."""

    @model_validator(mode="after")
    def _check(self) -> Scale:
        grades = [level.grade for level in self.levels]
        if not grades:
            raise ValueError("a scale needs at least two levels")
        if grades != list(range(grades[0], grades[0] + len(grades))):
            raise ValueError("scale levels must be consecutive integers")
        if not (grades[0] <= self.threshold <= grades[-1]):
            raise ValueError(f"threshold {self.threshold} is outside the scale {grades[0]}-{grades[-1]}")
        return self

    @property
    def min(self) -> int:
        return self.levels[0].grade

    @property
    def max(self) -> int:
        return self.levels[-1].grade

    @property
    def is_binary(self) -> bool:
        return GradeRange(self.min, self.max).is_binary

    def contains(self, grade: int) -> bool:
        return self.min <= grade <= self.max

    def level(self, grade: int) -> ScaleLevel:
        return self.levels[grade - self.min]

    def describe(self) -> str:
        return GradeRange(self.min, self.max, self.threshold).describe()

    def names(self) -> str:
        """Every grade with its name, lowest first: ``0 Not relevant, 1 Marginal, ...``."""
        return ", ".join(f"{level.grade} {level.name}" for level in self.levels)

    def unnamed(self, grade: int) -> bool:
        """Whether ``grade`` has only the placeholder name a scale without names gives it
        (``Grade 4``) and no description: its name says nothing of what it means."""
        level = self.level(grade)
        return level.name == f"Grade {grade}" and not level.description

    def with_names(self, names: Sequence[str]) -> Scale:
        """This scale with its grades renamed, lowest first (descriptions and threshold kept).
        A :class:`ValueError` saying what is wrong with ``names`` (one per grade, each visible,
        no control character, at most :data:`MAX_GRADE_NAME` characters, no two alike)."""
        from ragjudge.errors import text_problem

        grades = ", ".join(str(level.grade) for level in self.levels)
        if len(names) != len(self.levels):
            raise ValueError(f"{len(names)} name{'s' if len(names) != 1 else ''} for the "
                             f"{len(self.levels)} grades of the scale {self.describe()} ({grades}): "
                             "give one name per grade, lowest first, separated by commas")
        seen: dict[str, int] = {}
        for level, name in zip(self.levels, names):
            problem = text_problem(name, name=True, ident=True)
            if problem is not None:
                raise ValueError(f"the name of grade {level.grade} {problem.rstrip('.')}")
            if len(name) > MAX_GRADE_NAME:
                raise ValueError(f"the name of grade {level.grade} has {len(name)} characters; "
                                 f"a grade's name fits on a key's line: {MAX_GRADE_NAME} at most")
            key = name.casefold()
            if key in seen:
                raise ValueError(f"grades {seen[key]} and {level.grade} have the same name; "
                                 "each grade needs its own")
            seen[key] = level.grade
        levels = tuple(level.model_copy(update={"name": name})
                       for level, name in zip(self.levels, names))
        return self.model_copy(update={"levels": levels})

    @staticmethod
    def split_names(text: str) -> list[str]:
        """``"Not relevant, Marginal,Perfect"`` -> the names, spaces around each taken away."""
        return [name.strip() for name in text.split(",")]

    @classmethod
    def parse(cls, spec: str, threshold: int | None = None) -> Scale:
        """``binary``, or ``MIN-MAX`` such as ``0-3`` (TREC DL names) or ``1-5``."""
        spec = spec.strip().lower()
        if spec == "binary":
            levels: tuple[ScaleLevel, ...] = (
                ScaleLevel(grade=0, name="Not relevant", description="Does not help answer the query."),
                ScaleLevel(grade=1, name="Relevant", description="Helps answer the query."),
            )
            return cls(levels=levels, threshold=1 if threshold is None else threshold)
        match = re.fullmatch(r"([0-9]+)\s*-\s*([0-9]+)", spec)
        if not match:
            raise ValueError(f"scale '{spec}' is neither 'binary' nor MIN-MAX such as 0-3")
        if len(match.group(2)) > len(str(MAX_GRADE)) or int(match.group(2)) > MAX_GRADE:
            raise ValueError(f"scale '{spec}' goes above {MAX_GRADE:,}, the highest grade "
                             "ragjudge reads")
        lo, hi = int(match.group(1)), int(match.group(2))
        if hi <= lo or hi - lo > 9:
            raise ValueError(f"scale '{spec}' needs MIN < MAX and at most 10 levels (one digit key each)")
        names = _LEVEL_NAMES.get((lo, hi))
        levels = tuple(
            ScaleLevel(grade=g, name=names[i][0], description=names[i][1])
            if names
            else ScaleLevel(grade=g, name=f"Grade {g}", description="")
            for i, g in enumerate(range(lo, hi + 1))
        )
        if threshold is None:
            threshold = lo + 1 if lo == 0 else (lo + hi + 1) // 2
        return cls(levels=levels, threshold=threshold)


_LEVEL_NAMES: dict[tuple[int, int], list[tuple[str, str]]] = {
    (0, 3): [
        ("Irrelevant", "Has nothing to do with the query."),
        ("Related", "On the topic, but does not answer the query."),
        ("Highly relevant", "Answers part of the query, or answers it unclearly."),
        ("Perfectly relevant", "Dedicated to the query; answers it fully."),
    ],
    (0, 2): [
        ("Not relevant", "Does not help answer the query."),
        ("Partially relevant", "Contains part of the answer."),
        ("Highly relevant", "Contains the answer."),
    ],
    (1, 5): [
        ("Useless", "Nothing of use for the query."),
        ("Poor", "Touches the topic, no usable answer."),
        ("Fair", "Part of the answer, with gaps."),
        ("Good", "Most of the answer."),
        ("Excellent", "The whole answer, clearly."),
    ],
}


class Facet(_Record):
    query_id: str
    name: str


class Nugget(_Record):
    query_id: str
    text: str
    importance: Literal["vital", "okay"] = "okay"
    kind: Literal["nugget", "claim"] = "nugget"
    weight: float = Field(default=1.0, gt=0)


class AnswerSentence(_Record):
    """One sentence of a generated answer and the chunks it cites."""

    text: str = Field(min_length=1)
    citations: list[str] = Field(default_factory=list)


class Answer(_Record):
    """A run's generated answer to a query: plain ``text`` with the chunks the answer ``cited``
    (split into sentences on import), or its ``sentences``, each with its own citations."""

    query_id: str
    run: str
    text: str | None = None
    cited: list[str] = Field(default_factory=list)
    sentences: list[AnswerSentence] | None = None

    @model_validator(mode="after")
    def _one_form(self) -> Answer:
        if self.sentences is None and self.text is None:
            raise ValueError("an answer needs 'text' (with 'cited') or 'sentences' (each "
                             "{\"text\", \"citations\"})")
        if self.sentences is not None and (self.text is not None or "cited" in self.model_fields_set):
            raise ValueError("give an answer either as 'text' with 'cited' or as 'sentences' "
                             "with their 'citations', not both")
        return self


class LabelEvent(_Record):
    """One append-only label event as stored (and exported with ``export labels``)."""

    id: int | None = None
    query_id: str
    chunk_id: str
    annotator: str
    grade: int | None
    skipped: bool = False
    flagged: bool = False
    note: str | None = None
    created_at: datetime | None = None
    duration_ms: int | None = None

    @field_validator("annotator")
    @classmethod
    def _annotator(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("annotator name is empty")
        return value
