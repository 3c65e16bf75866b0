"""What the hostile-input suite shares: hostile text, one command run in-process, and the
promises every run of ``ragjudge`` keeps whatever it is given.

The promises (:func:`check_promises`), for any argv and any file content:

- the exit code is 0, 1 or 2, and no exception escapes :func:`ragjudge.cli.main`;
- no output holds a traceback;
- stderr is one paragraph free of control characters: no blank line, every line clean by
  :func:`ragjudge.safetext.is_clean` (no C0 control but the line breaks, no DEL or C1 control, no
  bidirectional override or line separator); a refusal (exit 2) is a single message, one line;
- after a refusal the project is as it was (:func:`project_state`), and no file is left beside it;
- whatever the exit code, the project is still a readable ragjudge project, and every event
  (label, coverage, support, adjudication) it held is still there.

Hypothesis runs with :data:`PROFILE`: derandomized, without an example database, no deadline,
so that CI sees the same cases every run. ``RAGJUDGE_HOSTILE_SCALE=10`` runs ten times as many
examples for a deeper look on a developer's machine.
"""

from __future__ import annotations

from projectkit import rights

import io
import os
import shutil
import sqlite3
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

from ragjudge.safetext import is_clean

PROFILE = settings(
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=False,
    max_examples=10,
    phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                           HealthCheck.data_too_large, HealthCheck.filter_too_much,
                           HealthCheck.large_base_example],
)
settings.register_profile("ragjudge-hostile", PROFILE)

SCALE = max(1, int(os.environ.get("RAGJUDGE_HOSTILE_SCALE", "1") or "1"))


def examples(count: int) -> settings:
    """The suite's profile with ``count`` examples (times ``RAGJUDGE_HOSTILE_SCALE``)."""
    return settings(PROFILE, max_examples=count * SCALE)


# -- hostile text --------------------------------------------------------------------------

OSC52 = "\x1b]52;c;aGFja2Vk\x07"
"""Writes 'hacked' into the clipboard of a terminal that obeys it."""

ESCAPES = [OSC52, "\x1b[2J", "\x1b[31m", "\x1bc", "\x1b]0;title\x07", "\x9b31m",
           "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\"]
C0 = [chr(c) for c in range(1, 0x20)]
C1 = [chr(c) for c in range(0x7F, 0xA0)]
BIDI = ["\u202e", "\u202d", "\u2066", "\u2067", "\u2068", "\u2069", "\u200f", "\u061c"]
BREAKS = ["\r", "\r\n", "\n", "\u2028", "\u2029", "\x85", "\x0b", "\x0c"]
QUOTES = ['"', "'", '""', "`", "\\", ","]
MARKUP = ["[/]", "[bold]", "[link=x]", "[/bold]", "[red on white]x[/]", "\\[", "[", "]"]
WIDE = ["é", "日本", "１", "😀", "e\u0301", "\u3000", "\xa0", "ß"]
ATOMS = ESCAPES + C0 + C1 + BIDI + BREAKS + QUOTES + MARKUP + WIDE
NO_NUL_ATOMS = [atom for atom in ATOMS if "\x00" not in atom]

LONG = "x" * 10_000
"""A 10,000-character line."""

NUMBERS = ["1_0", "１", "٣", "1e400", "-1e400", "nan", "NaN", "inf", "-inf", "Infinity",
           str(2**63), str(-(2**63) - 1), str(10**30), str(-(10**30)), "-1", "0", "-0", "00",
           "+1", "1.0", "2.0", "0x10", " 1 ", "1e5", "1e-400", "³", "", " "]
"""Number tokens that are not what they seem, as they would be typed into a file or argv."""


def hostile_text(*, nul: bool = True, max_atoms: int = 5) -> st.SearchStrategy[str]:
    """Short text made of hostile atoms and arbitrary characters; sometimes 10,000 of them."""
    atoms = ATOMS + ["\x00"] if nul else NO_NUL_ATOMS
    alphabet = st.characters(codec="utf-8", exclude_characters="" if nul else "\x00")
    piece = st.sampled_from(atoms) | st.text(alphabet=alphabet, max_size=4)
    short = st.lists(piece, min_size=1, max_size=max_atoms).map("".join)
    return st.one_of(short, st.sampled_from(atoms).map(lambda a: a * (10_000 // len(a))),
                     st.just(LONG))


# -- running the command line in-process ---------------------------------------------------


@dataclass
class Outcome:
    """One run of ``ragjudge`` in-process."""

    argv: list[str]
    code: object
    out: str
    err: str
    escaped: BaseException | None = None

    def describe(self) -> str:
        text = f"argv={brief(self.argv)!r}\nexit={self.code!r}\nstderr={shorten(self.err)!r}"
        if self.escaped is not None:
            text += "\n" + "".join(traceback.format_exception(self.escaped))
        return text


def shorten(text: str, limit: int = 600) -> str:
    return text if len(text) <= limit else text[: limit // 2] + f" …({len(text):,} chars)… " + text[-limit // 2:]


def brief(value: object, limit: int = 120) -> object:
    """``value`` with every long string or bytes inside it cut to its start and its length, for
    a failing example that reads in a report (hypothesis repeats the example exactly)."""
    if isinstance(value, (str, bytes)) and len(value) > limit:
        return f"<{len(value):,} {'chars' if isinstance(value, str) else 'bytes'}: {value[:limit // 2]!r}…>"
    if isinstance(value, (list, tuple)):
        return type(value)(brief(v, limit) for v in value)
    if isinstance(value, dict):
        return {k: brief(v, limit) for k, v in value.items()}
    return value


def run_cli(capfd, argv: list[str], *, stdin: bytes = b"") -> Outcome:
    """``ragjudge argv`` through :func:`ragjudge.cli.main`, as a user without a terminal runs it:
    standard input is ``stdin`` (not a terminal), stdout and stderr are captured at the file
    descriptors. An exception escaping ``main`` is returned, not raised."""
    from ragjudge.cli import common, main

    capfd.readouterr()
    saved = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    assert not sys.stdin.isatty() and not sys.stdout.isatty(), "the app must not start"
    escaped = None
    try:
        code: object = main(list(argv))
    except BaseException as exc:  # noqa: BLE001 - whatever escapes is the finding
        code, escaped = None, exc
    finally:
        sys.stdin = saved
        common.set_db(None)
    out, err = capfd.readouterr()
    return Outcome(list(argv), code, out, err, escaped)


# -- the project's state ------------------------------------------------------------------


def project_state(db: Path) -> object:
    """Everything a SQLite project holds: each table's schema and its rows, sorted.

    A logical dump rather than the file's bytes: the bytes of an unchanged project still move
    with WAL checkpoints (the write-ahead log is folded in when the last connection closes), the
    header's change counter and page reuse, so a byte comparison would report changes no user
    could see, or need a checkpoint that itself rewrites the file. The dump holds what a user
    means by "nothing changed": every row of every table (labels, events, settings, annotators,
    autoincrement counters), every table and index (a staging table left behind shows), and
    the schema version. Reading it never creates a missing file.
    """
    if not db.exists():
        return ("no file",)
    if not db.is_file():
        return ("not a file",)
    try:
        connection = sqlite3.connect(f"file:{db}?mode=rw", uri=True)
    except sqlite3.Error as exc:
        return ("cannot open", str(exc))
    try:
        tables = connection.execute(
            "SELECT type, name, sql FROM sqlite_master ORDER BY type, name").fetchall()
        rows = {}
        for kind, name, _ in tables:
            if kind == "table":
                quoted = '"' + name.replace('"', '""') + '"'
                rows[name] = sorted(connection.execute(f"SELECT * FROM {quoted}").fetchall(), key=repr)
        version = connection.execute("PRAGMA user_version").fetchone()
        return (tables, rows, version)
    except sqlite3.Error as exc:
        return ("not a database", str(exc))
    finally:
        connection.close()


def is_project(state: object) -> bool:
    return isinstance(state, tuple) and len(state) == 3 and "alembic_version" in state[1] \
        and bool(state[1]["alembic_version"])


EVENTS = ("labels", "facet_links", "nugget_support", "adjudications")
"""The append-only event tables: no command removes a row from them."""

SQLITE_OWN = ("-wal", "-shm", ".writelock", ".importlock", "-journal")


def folder_files(folder: Path) -> set[str]:
    """The files in ``folder`` except SQLite's own (-wal, -shm, -journal) and the project's
    lock files (``.writelock``, ``.importlock``: empty, kept so that every process locks the
    same file)."""
    return {p.name for p in folder.iterdir() if not p.name.endswith(SQLITE_OWN)}


def copy_project(source: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    for suffix in ("-wal",):
        extra = Path(f"{source}{suffix}")
        if extra.exists():
            shutil.copyfile(extra, Path(f"{target}{suffix}"))
    return target


# -- the promises ------------------------------------------------------------------------


def check_stderr(outcome: Outcome) -> None:
    """One paragraph free of control characters; a refusal is one line."""
    err = outcome.err
    why = outcome.describe()
    if outcome.code == 2:
        assert err.strip(), "a refusal must say why on stderr\n" + why
    if not err:
        return
    assert err.endswith("\n"), "stderr must end with a line break\n" + why
    lines = err[:-1].split("\n")
    assert all(line.strip() for line in lines), "stderr must be one paragraph (no blank line)\n" + why
    assert all(is_clean(line) for line in lines), "stderr must hold no control character\n" + why
    if outcome.code == 2:
        assert len(lines) == 1, "a refusal must be a single one-line message\n" + why


def check_promises(outcome: Outcome, project: Path | None = None, before: object = None,
                   files_before: set[str] | None = None) -> None:
    """Every promise of the module docstring; ``before`` is :func:`project_state` of
    ``project`` before the run, ``files_before`` the :func:`folder_files` of its folder."""
    why = outcome.describe()
    assert outcome.escaped is None, "an exception escaped ragjudge's main()\n" + why
    assert outcome.code in (0, 1, 2), "the exit code must be 0, 1 or 2\n" + why
    assert "Traceback" not in outcome.out + outcome.err, "a traceback reached the user\n" + why
    check_stderr(outcome)
    if project is None:
        return
    after = project_state(project)
    if before is not None and is_project(before):
        assert is_project(after), f"the project was destroyed: {str(after)[:200]}\n" + why
        lost = {table: len(set(before[1].get(table, ())) - set(after[1].get(table, ()))) for table in EVENTS}
        assert not any(lost.values()), f"events the project held are gone: {lost}\n" + why
    if outcome.code == 2 and before is not None:
        assert after == before, "a refusal changed the project\n" + why
    if outcome.code == 2 and files_before is not None:
        left = folder_files(project.parent) - files_before
        assert not left, f"a refusal left files beside the project: {sorted(left)}\n" + why


# -- the prepared project ------------------------------------------------------------------

EVIL_RUN = "evil\u202e[bold]" + "\x1b]0;owned\x07"
"""A run whose name holds a bidi override, Rich markup and an escape sequence."""


def bm25_top(query: int, depth: int = 10) -> list[str]:
    """The chunks of run bm25 for query ``q{query}`` in rank order (see ``make_small_project``)."""
    return [f"c{(query * 3 + rank) % 20 + 1:02d}" for rank in range(1, depth + 1)]


def make_base_project(db: Path) -> Path:
    """The project every hostile test starts from (a fresh copy per example).

    ``make_small_project`` (scale 0-3, q1..q5, c01..c20, run bm25), plus a run ``dense``, a run
    named :data:`EVIL_RUN`, labels of alice and bob that disagree on some pairs, facets,
    nuggets, entities, answers and guidelines: enough that every command reaches its real work.
    """
    from projectkit import make_small_project

    from ragjudge.services.transfer.importing import import_file, import_guidelines

    project = make_small_project(str(db))
    with project:
        dense = "".join(f"q{q} Q0 c{(q * 7 + r) % 20 + 1:02d} {r} {1.0 / r} dense\n"
                        for q in range(1, 6) for r in range(1, 11))
        import_file(project, "run", dense, fmt="trec", name="dense")
        import_file(project, "run", "q1 Q0 c01 1 1.0 x\nq2 Q0 c02 1 1.0 x\n", fmt="trec",
                    name=EVIL_RUN)
        labels = []
        for q in range(1, 6):
            for rank, chunk in enumerate(bm25_top(q, 4), start=1):
                labels.append(f'{{"query_id": "q{q}", "chunk_id": "{chunk}", "grade": {(q + rank) % 4}, '
                              f'"annotator": "alice"}}\n')
                labels.append(f'{{"query_id": "q{q}", "chunk_id": "{chunk}", "grade": {(q * rank) % 4}, '
                              f'"annotator": "bob", "note": "bob\'s note"}}\n')
        import_file(project, "labels", "".join(labels), fmt="jsonl")
        import_file(project, "facets", '{"query_id": "q1", "facet": "cost"}\n'
                    f'{{"query_id": "q1", "facet": "cost", "chunk_id": "{bm25_top(1)[0]}", "annotator": "alice"}}\n',
                    fmt="jsonl")
        import_file(project, "nuggets", '{"query_id": "q1", "nugget": "costs 5 euro", "importance": "vital"}\n'
                    f'{{"query_id": "q1", "nugget": "costs 5 euro", "chunk_id": "{bm25_top(1)[0]}", '
                    '"annotator": "alice", "support": "full"}\n', fmt="jsonl")
        import_file(project, "entities", '{"query_id": "q1", "entity": "Euro"}\n', fmt="jsonl")
        import_file(project, "answers", f'{{"query_id": "q1", "run": "bm25", "text": "5 euro", '
                    f'"cited": ["{bm25_top(1)[0]}"]}}\n', fmt="jsonl")
        import_guidelines(project, "# Guidelines\n\nGrade 3 answers the whole query.\n", access=rights(project))
    return db
