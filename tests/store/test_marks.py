"""Flags and comments are durable state of their own (``pair_marks``), beside the labels.

What an annotator flagged or commented on stays on disk through every later grade, skip and
undo; a flag and a comment live side by side; ``export labels`` carries them and ``import
labels`` restores them; revision 0003 copies what older projects recorded in label events; and
ids, names and categories are accepted alike on SQLite and PostgreSQL.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from sqlalchemy import func, insert, select, text

from projectkit import make_small_project, rights
from ragjudge.services.overview import project_status
from ragjudge.cli import main
from ragjudge.errors import InputError
from ragjudge.services.events import marks as J_marks
from ragjudge.services.events import state as J_state
from ragjudge.services.labels import events as J_events
from ragjudge.services.labels import queue as J_queue
from ragjudge.services.labels import queuecounts as J_counts
from ragjudge.services.labels import texts as J_texts
from ragjudge.services.transfer.exporting import export, label_lines
from ragjudge.services.transfer.importing import import_file
from ragjudge.services.project.database import Project
from ragjudge.store import migrate
from ragjudge.store.engine import make_engine
from ragjudge.store.schema import Label, PairMark

PAIR = dict(annotator="ann", query_id="q1", chunk_id="c02")
WHERE = ("ann", "q1", "c02")


def mark_rows(project) -> list[tuple]:
    with project.read() as session:
        return [tuple(r) for r in session.execute(
            select(PairMark.annotator, PairMark.query_id, PairMark.chunk_id, PairMark.kind,
                   PairMark.action, PairMark.text).order_by(PairMark.id))]


def reopened(project) -> Project:
    """The same project through a new connection: what is on disk, not what a session holds."""
    db = project.db
    project.close()
    return Project.open(db)


# -- the findings ------------------------------------------------------------------------------


def test_a_flag_made_before_grading_survives_the_grade(project):
    J_events.flag_pair(project, **PAIR, note="contradicts the policy page")
    J_events.record_label(project, **PAIR, grade=2)
    project = reopened(project)
    assert J_marks.current_marks(project, *WHERE) == J_marks.PairMarks(True, "contradicts the policy page", None)
    assert J_state.current_label(project, *WHERE).grade == 2
    project.close()


def test_a_comment_made_before_grading_survives_the_grade(project):
    J_events.comment_pair(project, **PAIR, note="see the refund table")
    J_events.record_label(project, **PAIR, grade=1)
    assert J_marks.current_marks(project, *WHERE).comment == "see the refund table"


def test_a_flag_note_after_a_comment_keeps_the_comment(project):
    J_events.comment_pair(project, **PAIR, note="see the refund table")
    J_events.flag_pair(project, **PAIR, note="ask the lead")
    assert J_marks.current_marks(project, *WHERE) == J_marks.PairMarks(True, "ask the lead", "see the refund table")
    J_events.comment_pair(project, **PAIR, note="second thoughts")  # and a comment keeps the flag's note
    assert J_marks.current_marks(project, *WHERE) == J_marks.PairMarks(True, "ask the lead", "second thoughts")


def test_grades_skips_and_undos_never_touch_the_marks(project):
    J_events.flag_pair(project, **PAIR, note="odd")
    J_events.comment_pair(project, **PAIR, note="mentions two products")
    marks_before = mark_rows(project)
    J_events.record_label(project, **PAIR, grade=3)
    J_events.skip_pair(project, **PAIR)
    J_events.record_label(project, **PAIR, grade=0)
    while J_events.undo_last(project, "ann") is not None:
        pass
    project = reopened(project)
    assert mark_rows(project) == marks_before
    assert J_marks.current_marks(project, *WHERE) == J_marks.PairMarks(True, "odd", "mentions two products")
    assert J_state.current_label(project, *WHERE).grade is None  # every grade undone
    with project.read() as session:  # new label events leave the old flag column alone
        assert session.scalar(select(func.count()).select_from(Label).where(Label.flagged.is_(True))) == 0
    project.close()


def test_an_annotator_clears_their_own_flag_and_comment(project):
    J_events.flag_pair(project, **PAIR, note="odd")
    J_events.comment_pair(project, **PAIR, note="x")
    J_events.flag_pair(project, annotator="bob", query_id="q1", chunk_id="c02")
    assert J_events.unflag_pair(project, **PAIR) == J_marks.PairMarks(False, None, "x")
    assert J_events.comment_pair(project, **PAIR, note="   ") == J_marks.PairMarks()  # an empty comment clears it
    assert J_marks.current_marks(project, *WHERE) == J_marks.PairMarks()
    assert J_marks.current_marks(project, "bob", "q1", "c02") == J_marks.PairMarks(True, None, None)
    # clearing what is not there writes nothing; the same flag twice is one event
    count = len(mark_rows(project))
    J_events.unflag_pair(project, **PAIR)
    J_events.comment_pair(project, **PAIR, note="")
    J_events.flag_pair(project, annotator="bob", query_id="q1", chunk_id="c02")
    assert len(mark_rows(project)) == count
    assert [r[3:5] for r in mark_rows(project) if r[0] == "ann"] == [
        ("flag", "set"), ("comment", "set"), ("flag", "clear"), ("comment", "clear")]


def test_flag_counts_and_status_read_the_marks(project):
    J_events.flag_pair(project, **PAIR)  # flagged without a grade
    J_events.record_label(project, annotator="ann", query_id="q1", chunk_id="c03", grade=1)
    J_events.flag_pair(project, annotator="ann", query_id="q1", chunk_id="c03", note="n")
    J_events.flag_pair(project, annotator="ann", query_id="q1", chunk_id="c04")
    J_events.unflag_pair(project, annotator="ann", query_id="q1", chunk_id="c04")
    progress = {row["annotator"]: row for row in J_counts.annotator_progress(project)}
    assert (progress["ann"]["graded"], progress["ann"]["flagged"]) == (1, 2)
    assert project_status(project)["flagged"] == 2


@pytest.mark.slow
def test_the_adjudication_view_shows_flags_and_comments(project):
    from ragjudge.services.gold.pairs import pair_detail

    J_events.record_label(project, **PAIR, grade=2, note="graded from the title")
    J_events.flag_pair(project, **PAIR, note="ask the lead")
    J_events.comment_pair(project, annotator="bob", query_id="q1", chunk_id="c02", note="bob only commented")
    labels = {lab.annotator: lab for lab in pair_detail(project, "q1", "c02", access=rights(project)).labels}
    assert (labels["ann"].grade, labels["ann"].flagged, labels["ann"].flag_note, labels["ann"].note) == (
        2, True, "ask the lead", "graded from the title")
    assert labels["ann"].remarks == "flagged: ask the lead · graded from the title"
    assert (labels["bob"].grade, labels["bob"].comment, labels["bob"].flagged) == (None, "bob only commented", False)


def test_verify_counts_and_checks_the_marks(project):
    from ragjudge.services.maintenance import verify

    J_events.flag_pair(project, **PAIR)
    report = verify(project)
    assert report.ok and report.tables["pair_marks"].events == 1
    assert {c.name for c in report.checks} >= {"pair_marks: no missing events",
                                               "flags and comments → annotators"}


# -- export and import -------------------------------------------------------------------------


def marked_project(db: str) -> Project:
    """Grades with notes, flags and comments, and pairs flagged or commented on without a grade."""
    project = make_small_project(db)
    J_events.record_label(project, annotator="ann", query_id="q1", chunk_id="c02", grade=2)
    J_events.flag_pair(project, annotator="ann", query_id="q1", chunk_id="c02", note="ask, the lead")
    J_events.comment_pair(project, annotator="ann", query_id="q1", chunk_id="c02", note='says "5 days"')
    J_events.flag_pair(project, annotator="ann", query_id="q1", chunk_id="c03")  # no grade, no note
    J_events.comment_pair(project, annotator="bob", query_id="q2", chunk_id="c05", note="only a comment")
    J_events.record_label(project, annotator="bob", query_id="q2", chunk_id="c05", grade=0)
    J_events.undo_last(project, "bob")  # the comment stays without a grade
    J_events.record_label(project, annotator="bob", query_id="q2", chunk_id="c06", grade=3, note="grade's note")
    J_events.flag_pair(project, annotator="bob", query_id="q2", chunk_id="c07", note="gone")
    J_events.unflag_pair(project, annotator="bob", query_id="q2", chunk_id="c07")  # cleared: not exported
    return project


def exported(project, fmt: str) -> str:
    out = io.StringIO()
    export(project, "labels", out, fmt=fmt, access=rights(project))
    return out.getvalue()


def test_export_labels_carries_flags_comments_and_ungraded_marked_pairs(tmp_path):
    project = marked_project(str(tmp_path / "a.db"))
    lines = [json.loads(line) for line in exported(project, "jsonl").splitlines()]
    project.close()
    for line in lines:
        assert line.pop("created_at")
    assert lines == [
        {"query_id": "q1", "chunk_id": "c02", "grade": 2, "annotator": "ann", "flagged": True,
         "flag_note": "ask, the lead", "comment": 'says "5 days"', "grade_name": "Highly relevant"},
        {"query_id": "q1", "chunk_id": "c03", "annotator": "ann", "flagged": True},
        {"query_id": "q2", "chunk_id": "c05", "annotator": "bob", "flagged": False,
         "comment": "only a comment"},
        {"query_id": "q2", "chunk_id": "c06", "grade": 3, "annotator": "bob", "note": "grade's note",
         "flagged": False, "grade_name": "Perfectly relevant"},
    ]


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_marks_round_trip_through_a_fresh_project(tmp_path, fmt):
    project = marked_project(str(tmp_path / "a.db"))
    first = exported(project, fmt)
    project.close()
    path = tmp_path / f"labels.{fmt}"
    path.write_text(first, encoding="utf-8")
    fresh = make_small_project(str(tmp_path / "b.db"))
    result = import_file(fresh, "labels", str(path))
    assert (result.read, result.added) == (4, 4)
    assert exported(fresh, fmt) == first
    assert J_marks.current_marks(fresh, "ann", "q1", "c02") == J_marks.PairMarks(True, "ask, the lead", 'says "5 days"')
    assert J_marks.current_marks(fresh, "ann", "q1", "c03") == J_marks.PairMarks(True, None, None)
    assert J_state.current_label(fresh, "ann", "q1", "c03") is None  # a flag alone writes no label
    assert J_state.current_label(fresh, "bob", "q2", "c06").note == "grade's note"
    again = import_file(fresh, "labels", str(path))  # importing twice changes nothing
    assert (again.added, again.unchanged) == (0, 4)
    assert exported(fresh, fmt) == first
    fresh.close()


def test_import_sets_and_clears_a_flag_and_leaves_out_fields_alone(tmp_path):
    project = make_small_project(str(tmp_path / "p.db"))
    J_events.flag_pair(project, annotator="ann", query_id="q1", chunk_id="c02", note="old")
    J_events.comment_pair(project, annotator="ann", query_id="q1", chunk_id="c03", note="kept")
    lines = [{"query_id": "q1", "chunk_id": "c02", "grade": 1, "annotator": "ann", "flagged": False},
             {"query_id": "q1", "chunk_id": "c03", "grade": 2, "annotator": "ann"}]
    path = tmp_path / "l.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    import_file(project, "labels", str(path))
    assert J_marks.current_marks(project, "ann", "q1", "c02") == J_marks.PairMarks()
    assert J_marks.current_marks(project, "ann", "q1", "c03") == J_marks.PairMarks(False, None, "kept")
    assert J_state.current_label(project, "ann", "q1", "c03").grade == 2
    project.close()


BAD_LABEL_LINES = [
    ({"query_id": "q1", "chunk_id": "c02", "grade": 1, "flaged": True}, "flaged", "unknown field"),
    ({"query_id": "q1", "chunk_id": "c02", "grade": 1, "flagged": "yes"}, "flagged", "true or false"),
    ({"query_id": "q1", "chunk_id": "c02", "grade": 1, "flagged": 1}, "flagged", "true or false"),
    ({"query_id": "q1", "chunk_id": "c02", "grade": 1, "comment": 7}, "comment", "not a string"),
    ({"query_id": "q1", "chunk_id": "c02", "grade": 1, "comment": ""}, "comment", "empty"),
    ({"query_id": "q1", "chunk_id": "c02", "grade": 1, "flag_note": "why"}, "flag_note", "flagged"),
    ({"query_id": "q1", "chunk_id": "c02", "flagged": False}, "grade", "no grade"),
    ({"query_id": "q1", "chunk_id": "c02", "grde": 1}, "grade", "'grde'"),
    ({"query_id": "q1", "chunk_id": "c02", "grade": None}, "grade", "no grade"),
]


@pytest.mark.parametrize("line, field, words", BAD_LABEL_LINES)
def test_import_refuses_bad_mark_fields_and_changes_nothing(tmp_path, capsys, line, field, words):
    db = str(tmp_path / "p.db")
    make_small_project(db).close()
    good = {"query_id": "q1", "chunk_id": "c01", "grade": 1, "annotator": "ann", "flagged": True}
    path = tmp_path / "l.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(line) + "\n", encoding="utf-8")
    assert main(["--db", db, "import", "labels", str(path)]) == 2
    err = capsys.readouterr().err
    assert "line 2" in err and f"field '{field}'" in err and words in err, err
    assert "Traceback" not in err
    with Project.open(db) as project:
        assert mark_rows(project) == [] and J_state.current_label(project, "ann", "q1", "c01") is None


@pytest.mark.parametrize("cell", ["maybe", "2"])
def test_csv_import_refuses_a_flagged_cell_that_is_not_true_or_false(tmp_path, cell):
    project = make_small_project(str(tmp_path / "p.db"))
    path = tmp_path / "l.csv"
    path.write_text(f"query_id,chunk_id,grade,flagged\nq1,c02,1,{cell}\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        import_file(project, "labels", str(path))
    assert (caught.value.line, caught.value.field) == (2, "flagged")
    assert mark_rows(project) == []
    project.close()


def test_a_repeated_line_with_another_flag_contradicts(tmp_path):
    project = make_small_project(str(tmp_path / "p.db"))
    path = tmp_path / "l.jsonl"
    line = {"query_id": "q1", "chunk_id": "c02", "grade": 1, "annotator": "ann"}
    path.write_text(json.dumps({**line, "flagged": True}) + "\n" + json.dumps({**line, "flagged": False})
                    + "\n" + json.dumps(line) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        import_file(project, "labels", str(path))
    assert (caught.value.line, caught.value.field) == (2, "flagged")
    project.close()


def test_readme_documents_the_label_file_fields():
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    row = next(line for line in readme.splitlines() if line.startswith("| labels"))
    for name in ("flagged", "flag_note", "comment", "note"):
        assert f'"{name}"' in row, name


# -- revision 0003 -----------------------------------------------------------------------------


def old_project(db: str) -> None:
    """A project at revision 0002 whose label events hold flags and notes the 0002 way."""
    engine = make_engine(db)
    migrate.upgrade(engine, "0002")
    labels = Label.__table__
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO queries (id, text) VALUES ('q1', 'refunds')"))
        for c in ("c1", "c2", "c3", "c4", "c5"):
            connection.execute(text(f"INSERT INTO chunks (id, text) VALUES ('{c}', 'x')"))
        connection.execute(text("INSERT INTO annotators (name, created_at, seen_guidelines) "
                                "VALUES ('ann', CURRENT_TIMESTAMP, FALSE)"))

        def event(chunk: str, grade, *, flagged=False, note=None, duration=None, undoes=None,
                  source="tui", skipped=False) -> int:
            return connection.execute(insert(labels).values(
                query_id="q1", chunk_id=chunk, annotator="ann", grade=grade, skipped=skipped,
                flagged=flagged, note=note, created_at=text("CURRENT_TIMESTAMP"),
                duration_ms=duration, undoes=undoes, source=source).returning(labels.c.id)).scalar()

        # c1: flagged with a note, then graded (0002 dropped the flag)
        event("c1", None, flagged=True, note="ask the lead")
        event("c1", 2, duration=4000)
        # c2: graded, commented, then flagged without a note (the comment carried along)
        event("c2", 1, duration=3000)
        event("c2", 1, note="see table 3")
        event("c2", 1, flagged=True, note="see table 3")
        # c3: flagged, and the flag undone
        event("c3", 3, duration=2000)
        flag = event("c3", 3, flagged=True, note="too long")
        event("c3", 3, undoes=flag)
        # c4: an imported grade with its note, then a comment replacing it
        event("c4", 2, note="from the vendor", source="import")
        event("c4", 2, note="disagree with the vendor")
        # c5: a comment on a flagged pair, then a recheck (left out)
        event("c5", None, flagged=True, note="odd")
        event("c5", None, flagged=True, note="mentions two products")
        event("c5", 0, duration=900, source="recheck")
    engine.dispose()


@pytest.mark.slow
def test_migration_0003_copies_old_flags_and_notes_into_marks(any_db):
    old_project(any_db)
    engine = make_engine(any_db)
    with engine.connect() as connection:
        before = connection.execute(select(Label.__table__).order_by(Label.id)).all()
    engine.dispose()
    with Project.open(any_db) as project:  # migrates
        with project.connect() as connection:
            assert migrate.current_revision(connection) == migrate.HEAD
            assert connection.execute(select(Label.__table__).order_by(Label.id)).all() == before
        marks = {c: J_marks.current_marks(project, "ann", "q1", c) for c in ("c1", "c2", "c3", "c4", "c5")}
        assert marks == {
            "c1": J_marks.PairMarks(True, "ask the lead", None),
            "c2": J_marks.PairMarks(True, None, "see table 3"),
            "c3": J_marks.PairMarks(),
            "c4": J_marks.PairMarks(False, None, "disagree with the vendor"),
            "c5": J_marks.PairMarks(True, "odd", "mentions two products"),
        }
        assert {r[5] for r in mark_rows(project)} >= {"too long"}  # the undone flag is history
        assert J_state.current_label(project, "ann", "q1", "c1").grade == 2
        lines = {line["chunk_id"]: line for line in label_lines(project)}
        assert (lines["c1"]["grade"], lines["c1"]["flagged"], lines["c1"]["flag_note"]) == (2, True, "ask the lead")
        assert J_counts.annotator_progress(project)[0]["flagged"] == 3


# -- ids, names and categories of any length, alike on both backends ---------------------------


def test_long_ids_categories_and_doc_ids_are_accepted_alike(any_db, tmp_path):
    long_q, long_c, long_doc, long_cat = "q" * 300, "c" * 300, "d" * 300, "k" * 300
    make_small_project(any_db).close()
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": long_q, "text": "t", "category": long_cat}) + "\n")
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": long_c, "text": "t", "doc_id": long_doc}) + "\n")
    (tmp_path / "r.jsonl").write_text(json.dumps({"query_id": long_q, "chunk_id": long_c, "score": 1.0}) + "\n")
    (tmp_path / "l.jsonl").write_text(json.dumps({"query_id": long_q, "chunk_id": long_c, "grade": 1,
                                                  "annotator": "a" * 255, "flagged": True}) + "\n")
    with Project.open(any_db) as project:
        import_file(project, "queries", str(tmp_path / "q.jsonl"))
        import_file(project, "chunks", str(tmp_path / "c.jsonl"))
        import_file(project, "run", str(tmp_path / "r.jsonl"), name="n" * 255)
        import_file(project, "labels", str(tmp_path / "l.jsonl"))
        J_events.comment_pair(project, annotator="a" * 255, query_id=long_q, chunk_id=long_c, note="long")
        assert J_texts.query_text(project, long_q).category == long_cat
        assert J_texts.chunk_text(project, long_c).doc_id == long_doc
        assert J_marks.current_marks(project, "a" * 255, long_q, long_c) == J_marks.PairMarks(True, None, "long")
        queue = J_queue.JudgingQueue(project, "b", category=long_cat)
        assert queue.first().chunk_id == long_c


def test_the_longest_keys_fit_every_index_and_one_more_byte_is_refused_alike(any_db, tmp_path):
    """The limit is in bytes of UTF-8: the widest characters at the limit fit PostgreSQL's
    index entries too (three keys share the (annotator, query, chunk) indexes)."""
    from ragjudge.store.schema import MAX_KEY_BYTES

    wide = "𝔮" * (MAX_KEY_BYTES // 4)  # 4 bytes each
    query, chunk, name = wide, wide[:-1] + "c", "𝔞" * 255
    make_small_project(any_db).close()
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": query, "text": "t", "category": wide}) + "\n")
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": chunk, "text": "t"}) + "\n")
    (tmp_path / "r.jsonl").write_text(json.dumps({"query_id": query, "chunk_id": chunk, "score": 1.0}) + "\n")
    (tmp_path / "l.jsonl").write_text(json.dumps({"query_id": query, "chunk_id": chunk, "grade": 1,
                                                  "annotator": name, "flagged": True,
                                                  "comment": "c"}) + "\n")
    (tmp_path / "x.jsonl").write_text(json.dumps({"id": wide + "x", "text": "t"}) + "\n")
    with Project.open(any_db) as project:
        import_file(project, "queries", str(tmp_path / "q.jsonl"))
        import_file(project, "chunks", str(tmp_path / "c.jsonl"))
        import_file(project, "run", str(tmp_path / "r.jsonl"), name=name)
        import_file(project, "labels", str(tmp_path / "l.jsonl"))
        from ragjudge.services.labels.assignment import assign

        assign(project, [name], overlap=0.0, access=rights(project))
        assert J_marks.current_marks(project, name, query, chunk).flagged
        with pytest.raises(InputError) as caught:
            import_file(project, "chunks", str(tmp_path / "x.jsonl"))
        assert (caught.value.line, caught.value.field) == (1, "id")
        assert f"at most {MAX_KEY_BYTES}" in str(caught.value)


def test_migrated_postgresql_keys_are_unbounded(pg_url):
    engine = make_engine(pg_url)
    migrate.upgrade(engine, "0002")
    migrate.upgrade(engine)
    with engine.connect() as connection:
        bounded = connection.execute(text(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND character_maximum_length = 255")).all()
    engine.dispose()
    assert bounded == []


@pytest.mark.slow
def test_agreement_from_an_exported_labels_file_skips_lines_without_a_grade(tmp_path, capsys):
    project = marked_project(str(tmp_path / "a.db"))
    J_events.record_label(project, annotator="bob", query_id="q1", chunk_id="c02", grade=2)
    path = tmp_path / "labels.jsonl"
    path.write_text(exported(project, "jsonl"), encoding="utf-8")
    project.close()
    assert main(["agree", "--labels", str(path), "--scale", "0-3", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["units"] == 2  # q1/c02 and q2/c06; nothing from the flag- or comment-only lines
