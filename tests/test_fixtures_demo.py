"""The bundled demo project (fixtures/demo/) and the large-project generator (fixtures/make_large.py).

The demo files are committed; these tests check that they meet the demo's promises (counts,
references, clearly different runs, realistic disagreement) and that fixtures/make_demo.py
regenerates them byte for byte.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

from ragjudge.formats.records import build

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
DEMO = FIXTURES / "demo"
RUNS = ("bm25", "hybrid", "title_only")
JSONL = ("queries", "chunks", "labels", "facets", "nuggets", "entities", "answers", "answer-labels")
ANSWER_RUNS = ("hybrid", "bm25")


def _jsonl(name: str) -> list[dict]:
    with (DEMO / f"{name}.jsonl").open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _run(name: str) -> dict[str, list[tuple[str, int, float]]]:
    ranked: dict[str, list[tuple[str, int, float]]] = defaultdict(list)
    for line in (DEMO / "runs" / f"{name}.trec").read_text(encoding="utf-8").splitlines():
        qid, q0, docid, rank, score, tag = line.split()
        assert q0 == "Q0" and tag == name
        ranked[qid].append((docid, int(rank), float(score)))
    return ranked


@pytest.fixture(scope="module")
def demo() -> dict:
    data = {name: _jsonl(name) for name in JSONL}
    data["runs"] = {name: _run(name) for name in RUNS}
    return data


def _majority(grades: list[int]) -> int:
    """The most frequent grade; a tie goes to the lower grade."""
    counts = Counter(grades)
    top = max(counts.values())
    return min(g for g, n in counts.items() if n == top)


def _gold(labels: list[dict]) -> dict[tuple[str, str], int]:
    grades: dict[tuple[str, str], list[int]] = defaultdict(list)
    for label in labels:
        grades[(label["query_id"], label["chunk_id"])].append(label["grade"])
    return {pair: _majority(g) for pair, g in grades.items()}


# --------------------------------------------------------------------------------------------
# Counts and formats
# --------------------------------------------------------------------------------------------

def test_demo_files_exist():
    for name in JSONL:
        assert (DEMO / f"{name}.jsonl").stat().st_size > 0, name
    for name in RUNS:
        assert (DEMO / "runs" / f"{name}.trec").stat().st_size > 0, name
    assert "Perfectly relevant" in (DEMO / "guidelines.md").read_text(encoding="utf-8")
    assert "make_demo.py" in (DEMO / "README.md").read_text(encoding="utf-8")


def test_counts(demo):
    queries, chunks = demo["queries"], demo["chunks"]
    assert len(queries) >= 40
    categories = Counter(q["category"] for q in queries)
    assert len(categories) >= 3 and min(categories.values()) >= 5, categories
    assert all(q["description"] for q in queries)
    assert len(chunks) >= 400
    assert len({c["doc_id"] for c in chunks}) >= 40
    words = [len(c["text"].split()) for c in chunks]
    assert min(words) >= 40 and max(words) <= 150, (min(words), max(words))
    assert all(c["meta"]["title"] and c["meta"]["section"] for c in chunks)
    assert {label["annotator"] for label in demo["labels"]} == {"ana", "ben", "chen"}
    assert any("note" in label for label in demo["labels"])


def test_every_line_is_a_valid_import_record(demo):
    kinds = {"queries": "queries", "chunks": "chunks", "labels": "labels", "facets": "facets",
             "nuggets": "nuggets", "entities": "entities", "answers": "answers",
             "answer-labels": "answer-labels"}
    for name, kind in kinds.items():
        for line, record in enumerate(demo[name], start=1):
            build(kind, record, file=f"{name}.jsonl", line=line)


def test_ids_are_unique_and_every_reference_exists(demo):
    query_ids = [q["id"] for q in demo["queries"]]
    chunk_ids = [c["id"] for c in demo["chunks"]]
    assert len(set(query_ids)) == len(query_ids) and len(set(chunk_ids)) == len(chunk_ids)
    queries, chunks = set(query_ids), set(chunk_ids)
    for name in ("labels", "facets", "nuggets", "entities", "answers", "answer-labels"):
        for record in demo[name]:
            assert record["query_id"] in queries, (name, record)
            cited = [c for s in record.get("sentences", []) for c in s["citations"]]
            for chunk_id in [record.get("chunk_id")] * ("chunk_id" in record) + cited:
                assert chunk_id in chunks, (name, record)
    for name, run in demo["runs"].items():
        assert set(run) == queries, name
        for entries in run.values():
            assert all(docid in chunks for docid, _, _ in entries)


def test_runs_are_deep_ranked_and_unambiguous(demo):
    for name, run in demo["runs"].items():
        for qid, entries in run.items():
            assert len(entries) >= 20, (name, qid)
            docids = [d for d, _, _ in entries]
            assert len(set(docids)) == len(docids), (name, qid)
            assert [r for _, r, _ in entries] == list(range(1, len(entries) + 1))
            scores = [s for _, _, s in entries]
            # Strictly decreasing: ordering by score (trec_eval) and by rank agree.
            assert all(a > b for a, b in zip(scores, scores[1:])), (name, qid)


@pytest.mark.slow
def test_labels_cover_part_of_the_pool_with_overlap(demo):
    pool = {(q, d) for run in demo["runs"].values() for q, entries in run.items() for d, _, _ in entries[:10]}
    labels = demo["labels"]
    pairs = {(lab["query_id"], lab["chunk_id"]) for lab in labels}
    assert pairs <= pool
    assert 0.8 <= len(pairs) / len(pool) < 1.0  # part of the pool is left unjudged
    per_annotator = Counter(lab["annotator"] for lab in labels)
    for annotator, n in per_annotator.items():
        assert 0.5 <= n / len(pool) <= 0.8, (annotator, n, len(pool))
    seen = Counter((lab["query_id"], lab["chunk_id"], lab["annotator"]) for lab in labels)
    assert max(seen.values()) == 1
    by_pair = Counter((lab["query_id"], lab["chunk_id"]) for lab in labels)
    assert sum(1 for n in by_pair.values() if n == 3) > 100


def test_annotators_disagree_realistically(demo):
    grades: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    for lab in demo["labels"]:
        grades[(lab["query_id"], lab["chunk_id"])][lab["annotator"]] = lab["grade"]
    shared = [g for g in grades.values() if len(g) >= 2]
    exact = np.mean([len(set(g.values())) == 1 for g in shared])
    assert 0.5 < exact < 0.9, exact
    # The lenient annotator grades higher than the strict one on the pairs both judged.
    both = [(g["ana"], g["chen"]) for g in grades.values() if "ana" in g and "chen" in g]
    ana, chen = np.array(both).T
    assert ana.mean() - chen.mean() > 0.2
    assert np.any(np.abs(ana - chen) >= 2)  # a few big misses
    assert set(Counter(lab["grade"] for lab in demo["labels"])) == {0, 1, 2, 3}


def _precision_at_5(run, gold, rel):
    return float(np.mean([sum(gold.get((q, d), 0) >= rel for d, _, _ in entries[:5]) / 5
                          for q, entries in run.items()]))


def _mrr(run, gold, rel):
    values = []
    for q, entries in run.items():
        ranks = [i for i, (d, _, _) in enumerate(entries, start=1) if gold.get((q, d), 0) >= rel]
        values.append(1.0 / ranks[0] if ranks else 0.0)
    return float(np.mean(values))


def test_runs_differ_clearly_in_quality(demo):
    gold = _gold(demo["labels"])  # unjudged counts as not relevant
    runs = demo["runs"]
    p5 = {name: _precision_at_5(run, gold, rel=2) for name, run in runs.items()}
    mrr = {name: _mrr(run, gold, rel=2) for name, run in runs.items()}
    for good in ("bm25", "hybrid"):
        assert p5[good] - p5["title_only"] > 0.1, p5
        assert mrr[good] - mrr["title_only"] > 0.3, mrr
    # A hand check of the kernel on a toy case: relevant at ranks 2 and 5 of 5.
    toy = {"q": [("a", 1, 5.0), ("b", 2, 4.0), ("c", 3, 3.0), ("d", 4, 2.0), ("e", 5, 1.0)]}
    toy_gold = {("q", "b"): 2, ("q", "e"): 3, ("q", "a"): 1}
    assert _precision_at_5(toy, toy_gold, 2) == pytest.approx(0.4)
    assert _mrr(toy, toy_gold, 2) == pytest.approx(0.5)


# --------------------------------------------------------------------------------------------
# Facets, nuggets, claims, entities, answers
# --------------------------------------------------------------------------------------------

def test_facets_are_defined_and_links_follow_labels(demo):
    facets = demo["facets"]
    defined = {(f["query_id"], f["facet"]) for f in facets if "chunk_id" not in f}
    links = [f for f in facets if "chunk_id" in f]
    assert len({q for q, _ in defined}) >= 10
    assert links and all((f["query_id"], f["facet"]) in defined for f in links)
    grade = {(lab["query_id"], lab["chunk_id"], lab["annotator"]): lab["grade"] for lab in demo["labels"]}
    for link in links:
        # A chunk covering a facet is relevant in the same annotator's own label.
        assert grade[(link["query_id"], link["chunk_id"], link["annotator"])] >= 2, link
    assert {link["annotator"] for link in links} == {"ana", "ben", "chen"}


def test_nuggets_and_claims(demo):
    rows = demo["nuggets"]
    defined = {(n["query_id"], n["nugget"]): n for n in rows if "chunk_id" not in n}
    support = [n for n in rows if "chunk_id" in n]
    nugget_queries = {q for (q, _), n in defined.items() if n["kind"] == "nugget"}
    claim_queries = {q for (q, _), n in defined.items() if n["kind"] == "claim"}
    assert len(nugget_queries) >= 10 and len(claim_queries) >= 5
    assert {n["importance"] for n in defined.values()} == {"vital", "okay"}
    assert all((n["query_id"], n["nugget"]) in defined for n in support)
    assert Counter(n["support"] for n in support).keys() == {"full", "partial", "none"}
    # Most nuggets and claims are fully supported by a pooled chunk in someone's judgment; the rest
    # are stated only in chunks no run retrieved, so Nugget Recall stays below 1 as in real pools.
    full = {(n["query_id"], n["nugget"]) for n in support if n["support"] == "full"}
    assert 0.6 <= len(full) / len(defined) < 1.0, (len(full), len(defined))
    labelled = {(lab["query_id"], lab["chunk_id"], lab["annotator"]) for lab in demo["labels"] if lab["grade"] >= 1}
    assert all((n["query_id"], n["chunk_id"], n["annotator"]) in labelled for n in support)


def test_entities_appear_literally_in_chunks(demo):
    entities = demo["entities"]
    assert len({e["query_id"] for e in entities}) >= 8
    corpus = "\n".join(c["text"] for c in demo["chunks"]).lower()
    for e in entities:
        assert re.search(r"(?<!\w)" + re.escape(e["entity"].lower()) + r"(?!\w)", corpus), e


def test_two_runs_answer_every_query_sentence_by_sentence_citing_their_top_5(demo):
    answers = demo["answers"]
    queries = {q["id"] for q in demo["queries"]}
    assert len(answers) == 2 * len(queries)
    for name in ANSWER_RUNS:
        assert {a["query_id"] for a in answers if a["run"] == name} == queries
    gold = _gold(demo["labels"])
    off_topic = uncited = 0
    for a in answers:
        top5 = [d for d, _, _ in demo["runs"][a["run"]][a["query_id"]][:5]]
        cited = {c for s in a["sentences"] for c in s["citations"]}
        assert 1 <= len(cited) <= 4 and cited <= set(top5), a
        assert all(s["text"].strip() for s in a["sentences"])
        off_topic += any(gold.get((a["query_id"], c), 0) == 0 for c in cited)
        uncited += any(not s["citations"] for s in a["sentences"])
    assert 0 < off_topic < len(answers) / 2  # sometimes a cited chunk does not help
    assert 0 < uncited < len(answers) / 2  # "the retrieved articles do not answer this directly"


def test_two_annotators_judge_most_answers_with_some_disagreement(demo):
    lines = demo["answer-labels"]
    assert {lab["annotator"] for lab in lines} == {"ana", "ben"}
    answers = {(a["query_id"], a["run"]): a for a in demo["answers"]}
    nuggets = {(n["query_id"], n["nugget"]) for n in demo["nuggets"]
               if "chunk_id" not in n and n["kind"] == "nugget"}
    support: dict[tuple, dict[str, str]] = defaultdict(dict)
    for line in lines:
        answer = answers[(line["query_id"], line["run"])]
        if "nugget" in line:
            assert (line["query_id"], line["nugget"]) in nuggets, line
            key = (line["query_id"], line["run"], line["nugget"])
        else:
            assert line["chunk_id"] in answer["sentences"][line["sentence"]]["citations"], line
            key = (line["query_id"], line["run"], line["sentence"], line["chunk_id"])
        assert line["annotator"] not in support[key], line  # one judgment per annotator
        support[key][line["annotator"]] = line["support"]
    judged = {(lab["query_id"], lab["run"]) for lab in lines}
    assert 0.6 * len(answers) <= len(judged) < len(answers)  # some answers are left to judge
    both = [v for v in support.values() if len(v) == 2]
    disagree = [v for v in both if v["ana"] != v["ben"]]
    assert len(both) >= 100 and 0 < len(disagree) < len(both) / 4
    levels = Counter(line["support"] for line in lines)
    assert all(levels[s] > 10 for s in ("full", "partial", "none")), levels


# --------------------------------------------------------------------------------------------
# Regeneration
# --------------------------------------------------------------------------------------------

def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.suffix in (".jsonl", ".trec")}


@pytest.mark.slow
def test_make_demo_reproduces_the_committed_files(tmp_path):
    subprocess.run([sys.executable, str(FIXTURES / "make_demo.py"), "--out", str(tmp_path)],
                   check=True, capture_output=True, timeout=300)
    fresh, committed = _files(tmp_path), _files(DEMO)
    assert sorted(fresh) == sorted(committed)
    for name in committed:
        assert fresh[name] == committed[name], f"{name} differs from a fresh make_demo.py run"


@pytest.mark.slow
def test_make_large_writes_a_consistent_project(tmp_path):
    out = tmp_path / "large"
    subprocess.run([sys.executable, str(FIXTURES / "make_large.py"), "--queries", "40", "--depth", "25",
                    "--runs", "2", "--out", str(out), "--chunks", "500"],
                   check=True, capture_output=True, timeout=120)
    queries = [json.loads(line) for line in (out / "queries.jsonl").read_text().splitlines()]
    chunks = {json.loads(line)["id"] for line in (out / "chunks.jsonl").read_text().splitlines()}
    assert len(queries) == 40 and len(chunks) == 500
    qids = {q["id"] for q in queries}
    runs = {}
    for name in ("run1", "run2"):
        ranked: dict[str, list[tuple[str, float]]] = defaultdict(list)
        for line in (out / "runs" / f"{name}.trec").read_text().splitlines():
            q, _, d, rank, score, tag = line.split()
            assert tag == name and d in chunks and int(rank) == len(ranked[q]) + 1
            ranked[q].append((d, float(score)))
        assert set(ranked) == qids
        assert all(len(v) == 25 and len({d for d, _ in v}) == 25 for v in ranked.values())
        assert all(a[1] >= b[1] for v in ranked.values() for a, b in zip(v, v[1:]))
        runs[name] = ranked
    labels = [json.loads(line) for line in (out / "labels.jsonl").read_text().splitlines()]
    assert labels and all(lab["query_id"] in qids and lab["chunk_id"] in chunks and 0 <= lab["grade"] <= 3
                          for lab in labels)
    gold = _gold(labels)
    as_run = lambda r: {q: [(d, i, s) for i, (d, s) in enumerate(v, 1)] for q, v in r.items()}  # noqa: E731
    assert _mrr(as_run(runs["run1"]), gold, 1) > _mrr(as_run(runs["run2"]), gold, 1) + 0.2
    # The same seed gives the same files.
    again = tmp_path / "again"
    subprocess.run([sys.executable, str(FIXTURES / "make_large.py"), "--queries", "40", "--depth", "25",
                    "--runs", "2", "--out", str(again), "--chunks", "500"],
                   check=True, capture_output=True, timeout=120)
    assert _files(again) == _files(out)


def test_generators_use_only_the_standard_library_and_numpy():
    import ast

    allowed = set(sys.stdlib_module_names) | {"numpy", "demo_kb"}
    for script in ("make_demo.py", "demo_kb.py", "make_large.py"):
        tree = ast.parse((FIXTURES / script).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            for name in names:
                assert name.split(".")[0] in allowed, (script, name)
