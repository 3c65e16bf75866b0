"""Every ```bash block of README.md runs as written.

Each block runs line by line in a folder of its own, in a real shell (bash, with ``ragjudge`` the
command of this checkout), the lines in the order written, each of them expected to exit 0. A
block that works on "the project" finds the demo project as ``ragjudge.db`` (the default
``--db``) and as ``support.db`` (the README's project of its own data), unless it builds them
itself. The files a user brings (queries, chunks, runs, qrels, a BEIR folder, TREC documents and
topics, a SMART collection, guidelines) are made first from the demo's fixtures, in the format
each line names; the demo itself makes the rest.

What is not run is listed below with the reason, block by block (:data:`NOT_RUN`) or line by line
(:data:`INSTEAD`): a block that installs packages, starts a server or needs one; a line that opens
the app (it refuses without a terminal, and a person judges there) or that is a synopsis rather
than a command. A README block that this file does not know fails
:func:`test_every_block_is_run_or_excluded_with_a_reason`, so a new example is run from the day it
is written.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "demo"


@dataclass(frozen=True)
class Block:
    heading: str
    index: int  # the n-th bash block under this heading
    line: int  # where it starts in README.md
    text: str

    @property
    def key(self) -> tuple[str, int]:
        return (self.heading, self.index)

    def commands(self) -> list[str]:
        """The block's shell lines, a line ending in a backslash joined with the next."""
        out: list[str] = []
        pending = ""
        for raw in self.text.splitlines():
            if raw.rstrip().endswith("\\"):
                pending += raw.rstrip()[:-1] + " "
                continue
            line = (pending + raw).strip()
            pending = ""
            if line and not line.startswith("#"):
                out.append(line)
        return out


def readme_blocks() -> list[Block]:
    blocks: list[Block] = []
    heading, counts = "", {}
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if re.match(r"#{1,6} ", line):
            heading = line
        elif line.strip() == "```bash":
            end = lines.index("```", i + 1)
            index = counts.get(heading, 0)
            counts[heading] = index + 1
            blocks.append(Block(heading, index, i + 1, "\n".join(lines[i + 1:end])))
            i = end
        i += 1
    return blocks


# -- what is not run, and why ----------------------------------------------------------------

NOT_RUN: dict[tuple[str, int], str] = {
    ("## Quick start", 0): "installs the package into a new virtualenv (pip) and opens the app",
    ("## Quick start", 1): "installs the package with its test extra (pip) and runs the test suite",
    ("## Teams: PostgreSQL", 0): "installs the postgres extra (pip) and needs a PostgreSQL server "
                                 "(tests/store runs the same commands against one)",
    ("## In the browser: `ragjudge serve`", 0): "installs the serve extra (pip) and starts the "
                                               "server (tests/web/test_readme_serve.py runs its "
                                               "setup lines and the server)",
    ("## In the browser: `ragjudge serve`", 1): "curl against a running server with the tokens the "
                                               "setup printed (tests/web/test_readme_serve.py runs "
                                               "it against one)",
    ("## In the browser: `ragjudge serve`", 2): "starts the server behind a proxy",
    ("## Development", 0): "regenerates the demo's files and the screenshots (a browser), and runs "
                           "the linters of the development install",
}

INSTEAD: dict[str, tuple[str | None, str]] = {
    # line as written -> (what runs in its place, or None for nothing; why)
    "ragjudge --db support.db annotate --annotator alice": (
        "ragjudge --db support.db import labels alice.jsonl",
        "annotate opens the app, where a person judges; the demo's labels of one annotator, "
        "renamed alice, stand for hers"),
    "ragjudge import queries|chunks|run|qrels|labels|facets|nuggets|entities|answers|answer-labels|guidelines FILE": (
        None, "a synopsis of the kinds, not a command"),
    "ragjudge import ir-datasets beir/scifact --split test": (
        None, "downloads the dataset through ir_datasets (tests/formats reads a local one)"),
    "ragjudge eval --db support.db --tui": (
        None, "opens the app (tests/tui_eval drives the evaluation screen)"),
    "ragjudge annotate --annotator ann": (
        None, "opens the app, where a person judges the drawn pairs"),
    "ragjudge llm-judge --base-url http://127.0.0.1:8000/v1 --model qwen2.5-7b --queries q01,q02": (
        "ragjudge llm-judge --base-url {llm} --model qwen2.5-7b --queries q01,q02",
        "the test's OpenAI-compatible server on loopback (tests/llmserver.py) answers in place of "
        "one on port 8000"),
    "OPENAI_API_KEY=... ragjudge llm-judge --base-url https://api.openai.com/v1 --model gpt-4o-mini --concurrency 8": (
        "OPENAI_API_KEY=... ragjudge llm-judge --base-url {llm} --model gpt-4o-mini --concurrency 8 --limit 40",
        "the test's server answers in place of OpenAI's (no key, no network), for 40 pairs of the pool"),
    "ragjudge annotate --queue-order settle --until-settled": (
        None, "opens the app, where a person judges in the settle order (tests/settled drives it)"),
}
"""Lines replaced or left out, each with its reason (matched without its trailing comment)."""

EXIT_CODES: dict[str, tuple[int, ...]] = {
    # line as written -> the exit codes it may end with, beside 0
    "ragjudge settled": (1,),  # 1: some comparison is still open (the README says so)
    "ragjudge settled --runs bm25,hybrid -m nDCG@10 -m AP --format json": (1,),
    'ragjudge settled --pairs adjacent --confidence 0.99 --quiet && echo "stop judging"': (1,),
}
"""Lines whose exit code is their answer: ``settled`` exits 1 while a comparison is open."""


def without_comment(line: str) -> str:
    return re.sub(r"\s+#.*$", "", line).strip()


# -- the files a user brings, made from the demo's fixtures ---------------------------------------

def _trec_run(name: str) -> list[tuple[str, str, str]]:
    rows = []
    for line in (FIXTURES / "runs" / f"{name}.trec").read_text().splitlines():
        q, _, c, rank, score, _tag = line.split()
        rows.append((q, c, score))
    return rows


def _labels_of(annotator: str, rename: str) -> str:
    out = []
    for line in (FIXTURES / "labels.jsonl").read_text().splitlines():
        label = json.loads(line)
        if label["annotator"] == annotator:
            label["annotator"] = rename
            out.append(json.dumps(label))
    return "\n".join(out) + "\n"


def _dense_jsonl() -> str:
    ranked: dict[str, list[str]] = {}
    for q, c, _ in _trec_run("hybrid"):
        ranked.setdefault(q, []).append(c)
    return "".join(json.dumps({"query_id": q, "chunks": cs}) + "\n" for q, cs in ranked.items())


def _gold_qrels() -> str:
    """The demo's labels as a qrels file (the grade of the first annotator of each pair)."""
    seen: dict[tuple[str, str], int] = {}
    for line in (FIXTURES / "labels.jsonl").read_text().splitlines():
        label = json.loads(line)
        seen.setdefault((label["query_id"], label["chunk_id"]), label["grade"])
    return "".join(f"{q} 0 {c} {g}\n" for (q, c), g in sorted(seen.items()))


def _beir(folder: Path) -> None:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        '{"_id": "s1", "title": "Aspirin", "text": "Aspirin lowers the risk of a second heart attack."}\n'
        '{"_id": "s2", "title": "Sleep", "text": "Adults need seven hours of sleep."}\n')
    (folder / "queries.jsonl").write_text('{"_id": "sq1", "text": "Does aspirin prevent heart attacks?"}\n')
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nsq1\ts1\t1\n")


def _sgml() -> bytes:
    return gzip.compress(
        b"<DOC>\n<DOCNO> FT911-1 </DOCNO>\n<HEADLINE>Parcel lockers open in Leeds</HEADLINE>\n"
        b"<TEXT>\nParcel lockers opened in three stations.\n</TEXT>\n</DOC>\n")


def _prels() -> str:
    """A strata prels file (sample_eval.pl's form: query, iteration, chunk, stratum, grade; -1
    pooled and not drawn) over bm25's top 20: ranks 1-10 all drawn, 11-20 every other one."""
    gold = {(q, c): int(g) for q, _, c, g in (line.split() for line in _gold_qrels().splitlines())}
    lines, rank = [], {}
    for q, c, _ in _trec_run("bm25"):
        rank[q] = rank.get(q, 0) + 1
        if rank[q] > 20:
            continue
        stratum, drawn = (1, True) if rank[q] <= 10 else (2, rank[q] % 2 == 0)
        lines.append(f"{q} 0 {c} {stratum} {gold.get((q, c), 0) if drawn else -1}\n")
    return "".join(lines)


FLAG = ('{"query_id": "q07", "chunk_id": "protect-05", "grade": 2, "annotator": "ana", '
        '"flagged": true, "flag_note": "is a price a cost?", "comment": "unsure"}\n')

TOPICS = ("<top>\n<num> Number: 301\n<title> International Organized Crime\n\n<desc> Description:\n"
          "Identify organizations that participate in international criminal activity.\n\n"
          "<narr> Narrative:\nA relevant document must name an organization.\n</top>\n")
CACM = (".I 1\n.T\nPreliminary Report-International Algebraic Language\n.W\nA report on a language.\n"
        ".I 2\n.T\nExtraction of Roots by Repeated Subtractions\n")
CACM_QRELS = "301 1 0 0\n301 2 0 0\n"  # CACM's form, 'query doc 0 0': each pair listed is relevant

FILES = {
    "queries.jsonl": lambda d: shutil.copy(FIXTURES / "queries.jsonl", d),
    "chunks.jsonl": lambda d: shutil.copy(FIXTURES / "chunks.jsonl", d),
    "bm25.trec": lambda d: shutil.copy(FIXTURES / "runs" / "bm25.trec", d),
    "dense.trec": lambda d: shutil.copy(FIXTURES / "runs" / "hybrid.trec", d / "dense.trec"),
    "bm25.trec.gz": lambda d: (d / "bm25.trec.gz").write_bytes(
        gzip.compress((FIXTURES / "runs" / "bm25.trec").read_bytes())),
    "dense.jsonl": lambda d: (d / "dense.jsonl").write_text(_dense_jsonl()),
    "alice.jsonl": lambda d: (d / "alice.jsonl").write_text(_labels_of("ana", "alice")),
    "guidelines.md": lambda d: shutil.copy(FIXTURES / "guidelines.md", d),
    "trec-dl.qrels": lambda d: (d / "trec-dl.qrels").write_text(_gold_qrels()),
    "gold.qrels": lambda d: (d / "gold.qrels").write_text(_gold_qrels()),
    "official.qrels": lambda d: (d / "official.qrels").write_text(_gold_qrels()),
    "labels.jsonl": lambda d: shutil.copy(FIXTURES / "labels.jsonl", d),
    "judged.jsonl": lambda d: shutil.copy(FIXTURES / "answer-labels.jsonl", d / "judged.jsonl"),
    "datasets/scifact": lambda d: _beir(d / "datasets" / "scifact"),
    "disk4/ft/ft911.gz": lambda d: ((d / "disk4" / "ft").mkdir(parents=True),
                                    (d / "disk4" / "ft" / "ft911.gz").write_bytes(_sgml())),
    "topics.301-350": lambda d: (d / "topics.301-350").write_text(TOPICS),
    "cacm.all": lambda d: (d / "cacm.all").write_text(CACM),
    "qrels.text": lambda d: (d / "qrels.text").write_text(CACM_QRELS),
    "web.prels": lambda d: (d / "web.prels").write_text(_prels()),
    "flag.jsonl": lambda d: (d / "flag.jsonl").write_text(FLAG),
}
"""The files the README's lines read that a user brings, each made here in the format its name
says. Those a block writes first itself (an export) are not made."""


@dataclass(frozen=True)
class Setting:
    projects: tuple[str, ...] = ("ragjudge.db", "support.db")
    """demo copies in the folder"""
    files: tuple[str, ...] = ()
    setup: tuple[str, ...] = ()
    """commands run first in the default project: what the block presumes has happened"""
    llm: bool = False
    """an OpenAI-compatible server on loopback, its URL given to the lines as {llm}"""


SETTINGS: dict[tuple[str, int], Setting] = {
    ("## A project from your own data", 0): Setting(
        projects=(), files=("queries.jsonl", "chunks.jsonl", "bm25.trec", "dense.jsonl", "alice.jsonl")),
    ("### `init`, `status`, `demo`, `scale`", 0): Setting(projects=(), files=("guidelines.md",)),
    ("### `import` and `export`", 0): Setting(files=(
        "bm25.trec.gz", "trec-dl.qrels", "datasets/scifact", "disk4/ft/ft911.gz", "topics.301-350",
        "cacm.all", "qrels.text", "judged.jsonl")),
    ("### `eval`, `compare`, `gate`, `explain`", 0): Setting(files=(
        "gold.qrels", "bm25.trec", "dense.trec", "official.qrels")),
    ("### `agree`, `assign`, `disputes`, `adjudicate`, `quality`", 0): Setting(files=("labels.jsonl",)),
    ("### Judging a sample of the pool", 0): Setting(files=("bm25.trec", "web.prels")),
    ("### `llm-judge`: an LLM as one more annotator", 0): Setting(llm=True),
    ("### `review`", 0): Setting(files=("flag.jsonl",), setup=(
        "ragjudge import labels flag.jsonl",  # ana flags a pair, with a note and a comment
        "ragjudge annotators add dora --role lead")),
}


# -- running a block -------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def demo_file(tmp_path_factory) -> Path:
    from ragjudge.services.transfer.demo import build_demo

    path = tmp_path_factory.mktemp("readme-demo") / "demo.db"
    build_demo(str(path))
    return path


def shell(line: str, folder: Path) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("RAGJUDGE_")}
    environment["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    environment["COLUMNS"] = "120"
    shim = f'ragjudge() {{ "{sys.executable}" -m ragjudge "$@"; }}\nset -e\n'
    return subprocess.run(["bash", "-c", shim + line], cwd=folder, env=environment, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)


def prepare(block: Block, folder: Path, demo_file: Path) -> None:
    setting = SETTINGS.get(block.key, Setting())
    for name in setting.projects:
        shutil.copy(demo_file, folder / name)
    for name in setting.files:
        FILES[name](folder)
    for line in setting.setup:
        done = shell(line, folder)
        assert done.returncode == 0, f"setup {line!r}: {done.stderr}"


def lines_to_run(block: Block, llm: str = "") -> list[str]:
    out = []
    for line in block.commands():
        replaced = INSTEAD.get(without_comment(line))
        if replaced is None:
            out.append(line)
        elif replaced[0] is not None:
            out.append(replaced[0].replace("{llm}", llm))
    return out


RUN = [b for b in readme_blocks() if b.key not in NOT_RUN]


@pytest.mark.slow
@pytest.mark.parametrize("block", RUN, ids=[f"line {b.line}" for b in RUN])
def test_the_block_runs_as_written(block, tmp_path, demo_file):
    from llmserver import FakeLLM

    prepare(block, tmp_path, demo_file)
    server = FakeLLM().start() if SETTINGS.get(block.key, Setting()).llm else None
    failed = []
    try:
        for line in lines_to_run(block, server.base_url if server else ""):
            done = shell(line, tmp_path)
            allowed = done.returncode in EXIT_CODES.get(without_comment(line), ()) and "Traceback" not in done.stderr
            if done.returncode != 0 and not allowed:
                failed.append(f"{line}\n  exit {done.returncode}: {(done.stderr or done.stdout).strip()[:600]}")
    finally:
        if server is not None:
            server.stop()
    assert not failed, f"README.md line {block.line} ({block.heading}):\n" + "\n".join(failed)


def test_every_block_is_run_or_excluded_with_a_reason():
    blocks = readme_blocks()
    assert len(blocks) >= 15  # the walk does find the blocks
    keys = [b.key for b in blocks]
    assert set(NOT_RUN) <= set(keys), set(NOT_RUN) - set(keys)  # no stale exclusion
    assert set(SETTINGS) <= set(keys), set(SETTINGS) - set(keys)
    written = {without_comment(line) for b in blocks for line in b.commands()}
    assert set(INSTEAD) <= written, set(INSTEAD) - written  # every replaced line is still in the README
