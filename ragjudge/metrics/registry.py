"""The measure registry: names in ir_measures' syntax, parsed into measure objects.

A name is ``Name``, ``Name@cutoff`` or ``Name(param=value, flag, ...)@cutoff``: ``P@5``,
``P(rel=2)@5``, ``nDCG@10``, ``F(beta=2)@10``, ``iprec@0.5``, ``NuggetRecall(strict,vital)@5``.
trec_eval's names (``P_5``, ``ndcg_cut_10``, ``map``, ``recip_rank`` ...) are accepted too.

How to add a measure (one small declaration, in any module of ``ragjudge.metrics``)::

    from ragjudge.metrics.registry import Param, measure

    @measure("Coverage", cutoff="optional", needs=("facet_links",), aliases=("CoverageRecall",))
    def coverage(ctx, m):
        \"\"\"Coverage@k = |facets with >= 1 linked chunk in the top k| / |facets|.\"\"\"
        links = ctx.extras["facet_links"]          # whatever the caller passed under that key
        row, col = ctx.positions(links.query_ids, links.chunk_ids)   # rank of each linked chunk
        ...
        return values                                  # float64, one per ctx query; NaN = undefined

The decorator declares the measure (name, cutoff rule, parameters, extras it needs, aliases)
and registers it; the kernel's docstring (formula and source) is the measure's documentation.
A kernel receives the :class:`~ragjudge.metrics.context.EvalContext` (rank matrices of the
evaluated queries, per-query counts, ``extras``) and the parsed :class:`Measure` (``m.cutoff``,
``m.params``, ``m.rel``), and returns a float64 array with one value per query of the context.
NaN means "undefined for this query": it is left out of the mean and counted separately, never
silently turned into 0. Kernels must be vectorised over the (queries x depth) matrices.
Missing extras are a ``UsageError`` naming the measure. Modules holding measures are imported
lazily by :func:`parse_measure` (see ``MEASURE_MODULES``); a new module adds its name there.
A lookup imports them in that order only until the name is known (``P@5`` needs only the
first), which gives the same answer as importing all of them: a name or alias belongs to one
measure, :func:`register` refuses a second owner.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ragjudge.errors import UsageError
from ragjudge.numeric import MAX_GRADE, cutoff_problem, parse_integer, parse_number, short_int
from ragjudge.safetext import quote

#: modules whose import registers measures; imported in this order, as far as a lookup needs
MEASURE_MODULES = ("ragjudge.metrics.measures", "ragjudge.metrics.ragmeasures", "ragjudge.metrics.answers",
                   "ragjudge.metrics.diversity", "ragjudge.metrics.sampled")

Kernel = Callable[["Any", "Measure"], np.ndarray]


@dataclass(frozen=True)
class Param:
    """A parameter of a measure: ``kind`` converts the text; ``default`` when not given.

    A ``flag`` parameter is written bare (``NuggetRecall(strict)``) and is then True.
    ``check`` says whether a given value is allowed and ``rule`` what an allowed value is
    (``"a positive finite number"``), for the message that refuses the others.
    """

    kind: type = int
    default: Any = None
    flag: bool = False
    doc: str = ""
    check: Callable[[Any], bool] | None = None
    rule: str = ""


@dataclass(frozen=True)
class MeasureDef:
    """The declaration of one measure."""

    name: str
    kernel: Kernel
    cutoff: Literal["required", "optional", "none"] = "none"
    cutoff_kind: type = int
    params: dict[str, Param] = field(default_factory=dict)
    needs: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    #: True when a cutoff still needs the whole ranking (e.g. Rprec-like measures)
    full_depth: bool = False
    #: True when the measure reads graded relevance, so ``rel=`` does not apply to it
    graded: bool = False

    @property
    def doc(self) -> str:
        return (self.kernel.__doc__ or "").strip()

    @property
    def syntax(self) -> str:
        params = ",".join(k for k in self.params if k != "rel")
        text = self.name + (f"({params})" if params else "")
        if self.cutoff == "required":
            text += "@k"
        elif self.cutoff == "optional":
            text += "[@k]"
        return text


@dataclass(frozen=True)
class Measure:
    """A measure with its parameter values, e.g. ``P(rel=2)@5``; call it on a context."""

    definition: MeasureDef
    cutoff: Any = None
    params: tuple[tuple[str, Any], ...] = ()
    #: the text the measure was asked for, used as its label in results
    label: str = ""

    @property
    def name(self) -> str:
        """The canonical name: ``Name(params)@cutoff``."""
        d = self.definition
        text = d.name
        given = [(k, v) for k, v in self.params if v != d.params[k].default]
        if given:
            parts = [k if d.params[k].flag else f"{k}={_fmt(v)}" for k, v in given]
            text += "(" + ",".join(parts) + ")"
        if self.cutoff is not None:
            text += f"@{_fmt(self.cutoff)}"
        return text

    def __str__(self) -> str:
        return self.label or self.name

    @property
    def param(self) -> dict[str, Any]:
        return dict(self.params)

    def get(self, key: str, default: Any = None) -> Any:
        value = dict(self.params).get(key, default)
        return default if value is None else value

    @property
    def rel(self) -> int | None:
        """The measure's own relevance threshold, or None for the evaluation's."""
        return dict(self.params).get("rel")

    @property
    def needs(self) -> tuple[str, ...]:
        """The ``extras`` keys the kernel reads."""
        return self.definition.needs

    @property
    def requires(self) -> tuple[str, ...]:
        """Same as ``needs`` (the name ``ragjudge.metrics.rag.required_extras`` reads)."""
        return self.definition.needs

    @property
    def depth(self) -> int | None:
        """How many ranks the kernel reads (None: the whole ranking)."""
        d = self.definition
        if d.full_depth or self.cutoff is None or d.cutoff_kind is not int:
            return None
        return int(self.cutoff)

    def __call__(self, ctx: Any) -> np.ndarray:
        missing = [key for key in self.needs if key not in ctx.extras]
        if missing:
            raise UsageError(
                f"measure {self} needs {', '.join(missing)}, which this evaluation does not "
                f"provide (pass extras={{{', '.join(repr(k) + ': ...' for k in missing)}}})."
            )
        values = np.asarray(self.definition.kernel(ctx, self), dtype=np.float64)
        if values.shape != (ctx.n_queries,):
            raise ValueError(f"measure {self} returned shape {values.shape}, "
                             f"expected ({ctx.n_queries},)")
        return values


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


REGISTRY: dict[str, MeasureDef] = {}
ALIASES: dict[str, str] = {}
_loaded = 0
"""How many of :data:`MEASURE_MODULES` are imported (they are imported in order)."""


def register(definition: MeasureDef) -> MeasureDef:
    """Add a declared measure under its name and aliases."""
    for key in (definition.name, *definition.aliases):
        owner = ALIASES.get(key.lower())
        if owner is not None and owner != definition.name:
            raise ValueError(f"measure name {key!r} is already taken by {owner!r}")
    REGISTRY[definition.name] = definition
    for key in (definition.name, *definition.aliases):
        ALIASES[key.lower()] = definition.name
    return definition


def measure(
    name: str,
    *,
    cutoff: Literal["required", "optional", "none"] = "none",
    cutoff_kind: type = int,
    params: dict[str, Param] | None = None,
    needs: Iterable[str] = (),
    aliases: Iterable[str] = (),
    full_depth: bool = False,
    graded: bool = False,
) -> Callable[[Kernel], Kernel]:
    """Declare and register a measure whose kernel is the decorated function."""

    def decorate(kernel: Kernel) -> Kernel:
        register(MeasureDef(name=name, kernel=kernel, cutoff=cutoff, cutoff_kind=cutoff_kind,
                            params=dict(params or {}), needs=tuple(needs),
                            aliases=tuple(aliases), full_depth=full_depth, graded=graded))
        return kernel

    return decorate


def _load(until: str | None = None) -> None:
    """Import the measure modules: all of them, or in order only until the (lower-case) name
    or alias ``until`` is registered."""
    global _loaded
    while _loaded < len(MEASURE_MODULES):
        if until is not None and until in ALIASES:
            return
        module = MEASURE_MODULES[_loaded]
        _loaded += 1
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as error:
            if error.name != module:
                raise


def known_measures() -> list[MeasureDef]:
    """Every registered measure, sorted by name."""
    _load()
    return sorted(REGISTRY.values(), key=lambda d: d.name.lower())


def known_names() -> list[str]:
    return [d.syntax for d in known_measures()]


_SYNTAX = re.compile(
    r"^\s*(?P<name>[A-Za-z][A-Za-z0-9_\-]*?)\s*"
    r"(?:\((?P<params>[^()]*)\))?\s*"
    r"(?:@\s*(?P<cutoff>[0-9]+(?:\.[0-9]*)?|\.[0-9]+))?\s*$"
)

# trec_eval's spellings: name_cutoff
_TREC_NAMES = {
    "p": "P", "recall": "R", "map": "AP", "map_cut": "AP", "ndcg": "nDCG", "ndcg_cut": "nDCG",
    "recip_rank": "RR", "success": "Success", "bpref": "bpref", "rprec": "Rprec",
    "iprec_at_recall": "iprec",
}
_TREC = re.compile(r"^(?P<name>[A-Za-z_]+?)(?:_(?P<cutoff>[0-9]+(?:\.[0-9]+)?))?$")


def _convert(kind: type, text: str, what: str) -> Any:
    """A parameter or cutoff as written in a measure name, in the syntax of every number
    ragjudge reads (:mod:`ragjudge.numeric`: ``1_0``, ``"１"`` or ``nan`` are no numbers)."""
    if kind is bool:
        if text.lower() in ("1", "true", "yes"):
            return True
        if text.lower() in ("0", "false", "no"):
            return False
        value: float | None = None
    elif kind is int:
        value = parse_integer(text)
    elif kind is float:
        value = parse_number(text)
        if value is not None and not math.isfinite(value):
            raise UsageError(f"{what}: {quote(text)} is not a finite number.")
    else:
        try:
            value = kind(text)
        except ValueError:
            value = None
    if value is None:
        raise UsageError(f"{what}: {quote(text)} is not a valid {kind.__name__}.")
    return value


def parse_measure(text: str | Measure) -> Measure:
    """Parse ``P(rel=2)@5``-style text into a :class:`Measure` (``UsageError`` if unknown)."""
    if isinstance(text, Measure):
        return text
    raw = str(text)
    match = _SYNTAX.match(raw)
    _load(until=match["name"].lower() if match else None)
    definition = None
    if match:
        definition = REGISTRY.get(ALIASES.get(match["name"].lower(), ""))
    if definition is None:
        trec = _TREC.match(raw.strip())
        if trec and trec["name"].lower() in _TREC_NAMES:
            name = _TREC_NAMES[trec["name"].lower()]
            rebuilt = name + (f"@{trec['cutoff']}" if trec["cutoff"] else "")
            parsed = parse_measure(rebuilt)
            return Measure(parsed.definition, parsed.cutoff, parsed.params, raw.strip())
    if definition is None or match is None:
        name = match["name"] if match else raw
        raise UsageError(
            f"unknown measure {quote(name)}. Known measures: {', '.join(known_names())}. "
            "Write a cutoff as @k and parameters in parentheses; binary measures take a "
            "relevance threshold, e.g. P(rel=2)@5."
        )
    where = f"measure {quote(raw.strip())}"
    # cutoff
    cutoff = None
    if match["cutoff"] is not None:
        if definition.cutoff == "none":
            raise UsageError(f"{where}: {definition.name} takes no cutoff (@k).")
        cutoff = _convert(definition.cutoff_kind, match["cutoff"], where)
        problem = cutoff_problem(cutoff) if definition.cutoff_kind is int else None
        if problem:
            raise UsageError(f"{where}: {problem}")
        if definition.cutoff_kind is float and not 0.0 <= cutoff <= 1.0:
            raise UsageError(f"{where}: the level must be between 0 and 1.")
    elif definition.cutoff == "required":
        raise UsageError(f"{where}: {definition.name} needs a cutoff, e.g. {definition.name}@10.")
    # parameters
    values = {key: p.default for key, p in definition.params.items()}
    given: set[str] = set()
    if match["params"] is not None and match["params"].strip():
        for item in match["params"].split(","):
            item = item.strip()
            key, eq, value = item.partition("=")
            key = key.strip()
            if key not in definition.params:
                known = ", ".join(definition.params) or "none"
                raise UsageError(f"{where}: unknown parameter {quote(key)} (parameters: {known}).")
            if key in given:  # one of them would silently win
                raise UsageError(f"{where}: parameter {quote(key)} is given twice; give it once.")
            given.add(key)
            p = definition.params[key]
            if not eq:
                if not p.flag:
                    raise UsageError(f"{where}: parameter {quote(key)} needs a value ({key}=...).")
                values[key] = True
            else:
                values[key] = _convert(p.kind, value.strip(), where)
                if p.check is not None and not p.check(values[key]):
                    raise UsageError(f"{where}: {key}={value.strip()} is out of range; {key} "
                                     f"is {p.rule}.")
    rel = values.get("rel")
    if rel is not None and not 0 <= rel <= MAX_GRADE:
        raise UsageError(f"{where}: rel={short_int(rel)} is out of range; a relevance "
                         f"threshold is a grade from 0 to {MAX_GRADE:,}.")
    return Measure(definition, cutoff, tuple(sorted(values.items())), raw.strip())


def parse_measures(texts: Iterable[str | Measure]) -> list[Measure]:
    return [parse_measure(t) for t in texts]
