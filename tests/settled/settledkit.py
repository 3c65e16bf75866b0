"""Small hand-made projects for the ``settled`` and ``queue`` tests, importable as ``settledkit``,
built with the ``ragjudge`` command itself (init, import queries, chunks, runs, labels).

**The P@3 project** (:func:`make_p3_project`; binary scale, three queries, runs A, B and C,
the official grades as annotator ``ref``)::

    q1  A: a b c     B: a z g     C: a b c        a=1 b=1 c=1 z=0   g open
    q2  A: d e f     B: e d h     C: h e x        d=1 e=0 x=0       f, h open
    q3  A: k         B: m         C: k            k=1 m=0

The pool (every run's top 10) is these 12 pairs, 9 judged. P@3 divides by 3 whatever the
run's length, so with g, f, h the open grades (0 or 1):

    A - B = [(2 - g)/3 + (f - h)/3 + 1/3] / 3 = (3 - g + f - h) / 9
            now (open pairs not relevant) 3/9; lowest g=1, f=0, h=1: 1/9; highest g=0, f=1,
            h=0: 4/9. Both ends above 0: A is better whatever the open pairs get (certain).
    A - C = [0 + (1 + f - h)/3 + 0] / 3 = (1 + f - h) / 9
            now 1/9; lowest f=0, h=1: 0; highest 2/9. The low end touches 0 (a tie remains
            possible): not certain; its p_order is the model's chance that not (f=0 and h=1).
    B - C = [(g - 2)/3 + 1/3 - 1/3] / 3 = (g - 2) / 9
            now -2/9; lowest -2/9 (g=0), highest -1/9 (g=1): C is better (certain).

**The P@1 project** (:func:`make_p1_project`; binary, queries q1..q4, one chunk per run and
query; grades by ``ref``; the evaluation screen's measures saved as P@1 alone, the measure the
settle order weighs)::

    q1  A: a1   B: a1   C: c1      a1=1   c1 open
    q2  A: a2   B: b2   C: a2      b2=0   a2 open
    q3  A: a3   B: b3   C: c3      a3=1   c3=0   b3 open
    q4  A: a4   B: a4   C: c4      a4=0   c4 open

worked out in ``test_queue_cli.py``.

**The one-pair project** (:func:`make_one_pair_project`; binary, runs A and B, evaluation
screen's measures saved as P@1; one open pair decides)::

    q1  A: a1   B: b1      a1=1  b1=0
    q2  A: a2   B: b2      a2=0  b2 open
    q3  A: s3   B: s3      s3=1
    q4  A: s4   B: s4      s4=0

A - B = (1 - b2) / 4: now 1/4, lowest 0 (b2 = 1), so not settled; once b2 is judged it is 1/4
(certain) or 0 whatever else happens (tied): settled either way.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from ragjudge.cli import main

P3_RUNS = {
    "A": {"q1": ["a", "b", "c"], "q2": ["d", "e", "f"], "q3": ["k"]},
    "B": {"q1": ["a", "z", "g"], "q2": ["e", "d", "h"], "q3": ["m"]},
    "C": {"q1": ["a", "b", "c"], "q2": ["h", "e", "x"], "q3": ["k"]},
}
P3_GRADES = {("q1", "a"): 1, ("q1", "b"): 1, ("q1", "c"): 1, ("q1", "z"): 0, ("q2", "d"): 1,
             ("q2", "e"): 0, ("q2", "x"): 0, ("q3", "k"): 1, ("q3", "m"): 0}
P3_OPEN = {("q1", "g"), ("q2", "f"), ("q2", "h")}

P1_RUNS = {
    "A": {"q1": ["a1"], "q2": ["a2"], "q3": ["a3"], "q4": ["a4"]},
    "B": {"q1": ["a1"], "q2": ["b2"], "q3": ["b3"], "q4": ["a4"]},
    "C": {"q1": ["c1"], "q2": ["a2"], "q3": ["c3"], "q4": ["c4"]},
}
P1_GRADES = {("q1", "a1"): 1, ("q2", "b2"): 0, ("q3", "a3"): 1, ("q3", "c3"): 0, ("q4", "a4"): 0}
P1_OPEN = {("q1", "c1"), ("q2", "a2"), ("q3", "b3"), ("q4", "c4")}

ONE_RUNS = {"A": {"q1": ["a1"], "q2": ["a2"], "q3": ["s3"], "q4": ["s4"]},
            "B": {"q1": ["b1"], "q2": ["b2"], "q3": ["s3"], "q4": ["s4"]}}
ONE_GRADES = {("q1", "a1"): 1, ("q1", "b1"): 0, ("q2", "a2"): 0, ("q3", "s3"): 1, ("q4", "s4"): 0}


def cli(*args: str) -> tuple[int, str, str]:
    """``ragjudge ARGS`` in this process: exit code, standard output, standard error."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def must(*args: str) -> str:
    code, out, err = cli(*args)
    assert code == 0, f"ragjudge {' '.join(args)} exited {code}: {err}"
    return out


def build(db: str, runs: dict[str, dict[str, list[str]]], grades: dict[tuple[str, str], int]) -> str:
    """A binary project at ``db`` with the runs' queries and chunks, the runs, and ``grades``
    recorded as annotator ``ref``'s labels."""
    folder = Path(db).parent / (Path(db).stem + "-files")
    folder.mkdir(parents=True, exist_ok=True)
    queries = sorted({q for ranked in runs.values() for q in ranked})
    chunks = sorted({c for ranked in runs.values() for cs in ranked.values() for c in cs})
    (folder / "queries.jsonl").write_text("".join(json.dumps({"id": q, "text": f"query {q}"}) + "\n"
                                                  for q in queries))
    (folder / "chunks.jsonl").write_text("".join(json.dumps({"id": c, "text": f"chunk {c}", "doc_id": c})
                                                 + "\n" for c in chunks))
    must("--db", db, "init", "--scale", "binary")
    must("--db", db, "import", "queries", str(folder / "queries.jsonl"), "-q")
    must("--db", db, "import", "chunks", str(folder / "chunks.jsonl"), "-q")
    for name, ranked in runs.items():
        path = folder / f"{name}.trec"
        path.write_text("".join(f"{q} Q0 {c} {r} {10 - r} {name}\n" for q in queries
                                for r, c in enumerate(ranked.get(q, []), start=1)))
        must("--db", db, "import", "run", str(path), "--name", name, "-q")
    labels = folder / "ref.qrels"
    labels.write_text("".join(f"{q} 0 {c} {g}\n" for (q, c), g in grades.items()))
    must("--db", db, "import", "qrels", str(labels), "--annotator", "ref", "-q")
    return db


def make_p3_project(db: str) -> str:
    return build(db, P3_RUNS, P3_GRADES)


def screen_measures(db: str, measures: list[str]) -> str:
    """Save the evaluation screen's measures (what the settle order weighs)."""
    from ragjudge.services.access.visibility import access_for
    from ragjudge.services.project.database import Project
    from ragjudge.services.scoring.live import save_measures

    with Project.open(db) as project:
        save_measures(project, measures, access=access_for(project, "ref"))
    return db


def make_p1_project(db: str) -> str:
    """The P@1 project, its evaluation screen's measures saved as P@1."""
    return screen_measures(build(db, P1_RUNS, P1_GRADES), ["P@1"])


def make_one_pair_project(db: str) -> str:
    """The one-pair project, its evaluation screen's measures saved as P@1."""
    return screen_measures(build(db, ONE_RUNS, ONE_GRADES), ["P@1"])


def label_count(db: str) -> int:
    """Every label event of the project (none is ever deleted)."""
    from sqlalchemy import func, select

    from ragjudge.services.project.database import Project
    from ragjudge.store.schema import Label

    with Project.open(db) as project, project.read() as session:
        return int(session.scalar(select(func.count()).select_from(Label)) or 0)


def one_paragraph(err: str) -> bool:
    """An error told as one paragraph: ``ragjudge: ...`` with no blank line and no traceback."""
    text = err.strip()
    return text.startswith("ragjudge: ") and "\n\n" not in text and "Traceback" not in text
