"""For leads: every run against the gold qrels as ``ragjudge eval --format json`` prints it, and
the gold qrels as ``ragjudge export qrels`` writes them."""

from __future__ import annotations

import io
from typing import Any

from ragjudge.errors import UsageError
from ragjudge.services.project.database import Project
from ragjudge.web.backend import Who


def _json_floats(value: Any) -> Any:
    """NaN and infinities as null and numpy numbers as Python's, as ``eval --format json``."""
    import math

    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, dict):
        return {k: _json_floats(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_floats(v) for v in value]
    if hasattr(value, "item"):
        return _json_floats(value.item())
    return value


def evaluation_json(project: Project, who: Who, *, rule: str | None = None, measures: list[str] | None = None,
                    per_query: bool = False, averaging: str = "judged", by: str | None = None) -> dict[str, Any]:
    """What ``ragjudge --db PROJECT eval --format json`` prints for the same options: every
    run of the project against its gold qrels."""
    from ragjudge.services.runs import stored
    from ragjudge.services.scoring import evaluation as svc
    from ragjudge.services.scoring.files import parse_measure_list
    from ragjudge.services.scoring.jsonview import evaluation_json as evaluation_json_of

    if averaging not in ("judged", "run"):
        raise UsageError(f"averaging {averaging!r}: use judged or run.")
    names = parse_measure_list(measures)
    access = who.access(project)
    access.require_readable_rule(rule)
    found = svc.project_gold(project, rule)
    qrels, rule_used = found.qrels(), found.composition.rule
    threshold = project.scale.threshold
    run_names = stored.project_run_names(project)
    if not run_names:
        raise UsageError("the project has no runs yet: import one with 'ragjudge import run FILE'.")
    runs = {name: stored.project_run(project, name) for name in run_names}
    strata = svc.project_strata(project, by) if by is not None else None
    evaluation = svc.evaluate_all(qrels, runs, names, threshold=threshold, queries=averaging,
                                  project=project, rule=rule_used,
                                  qrels_source=f"project {project.shown_db}", strata=strata, by=by,
                                  composition=found.composition, reader=access)
    data = evaluation_json_of(evaluation, per_query, False)
    return _json_floats(data)


def qrels_text(project: Project, who: Who, *, rule: str | None = None, fmt: str = "trec") -> str:
    """The gold qrels as ``ragjudge export qrels`` writes them (trec, jsonl or csv)."""
    from ragjudge.services.transfer.exporting import export_qrels

    if fmt not in ("trec", "jsonl", "csv"):
        raise UsageError(f"format {fmt!r}: qrels are exported as trec, jsonl or csv.")
    out = io.StringIO()
    export_qrels(project, out, rule=rule, fmt=fmt, access=who.access(project))
    return out.getvalue()
