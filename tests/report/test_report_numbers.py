"""Every number of the demo project's report equals what the command line gives for the same
project and options: ``eval --format json`` (means, ``--ci`` intervals, ``--per-query``, ``--by``
strata, ``--curve``), ``agree --format json``, the gold's composition, the evaluation screen's
ranges, and the all-pairs comparison of the metrics library on eval's per-query values."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from projectkit import ragjudge
from pagekit import number, parse

pytestmark = pytest.mark.slow  # every test reads the demo's report, built once (about 20 s)


@pytest.fixture(scope="module")
def page(demo_html):
    return parse(demo_html.read_text(encoding="utf-8"))


def close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a == b  # the page holds repr() of the very float: equal, not close


def test_the_scorecard_is_evals_means_and_intervals(page, demo_eval):
    table = page.by_id("scorecard-table")
    seen = 0
    for row in table.find("tr"):
        run = row.get("data-run")
        if run is None:
            continue
        for cell in row.find("td"):
            measure = cell.get("data-measure")
            assert close(number(cell.get("data-value")), demo_eval["runs"][run]["aggregate"][measure])
            [ci] = cell.find("span", **{"class": "ci"})
            low, high = demo_eval["runs"][run]["ci95"][measure]
            assert (number(ci.get("data-low")), number(ci.get("data-high"))) == (low, high)
            if low is None:  # undefined on every query of the run (title_only has no answers)
                assert ci.text == "too few queries" and cell.find("span")[0].text == "–"
            else:
                assert ci.text == f"[{low:.4f}, {high:.4f}]"
            seen += 1
    # the project's scorecard, as eval's: the ranking measures and, answers being judged, the
    # answer measures
    assert seen == len(demo_eval["runs"]) * len(demo_eval["measures"]) == 3 * 18


def test_the_best_of_each_column_is_marked_as_eval_marks_it(page, demo_eval):
    table = page.by_id("scorecard-table")
    for measure in demo_eval["measures"]:
        values = {run: data["aggregate"][measure] for run, data in demo_eval["runs"].items()}
        defined = [v for v in values.values() if v is not None]
        top = max(defined)
        for cell in table.find("td", data_measure=measure):
            run = cell.ancestor("tr").get("data-run")
            marked = bool(cell.find("span", **{"class": "best"}))
            assert marked == (values[run] == top and len(set(defined)) > 1), (measure, run)


def test_the_per_query_tables_are_evals_per_query_values(page, demo_eval):
    tables = page.find("table", data_kind="measure")
    assert [t.get("data-key") for t in tables] == demo_eval["measures"]
    for table in tables:
        measure = table.get("data-key")
        columns = [th.get("data-run") for th in table.find("th") if th.get("data-run")]
        assert columns == list(demo_eval["runs"])
        rows = [tr for tr in table.find("tr") if tr.get("data-query")]
        assert len(rows) == demo_eval["queries"]
        for tr in rows:
            query = tr.get("data-query")
            cells = tr.find("td", **{"class": "num"})
            for run, cell in zip(columns, cells):
                expected = demo_eval["runs"][run]["per_query"][query][measure]
                assert close(number(cell.get("data-sort")), expected), (measure, run, query)


def test_the_strata_are_evals_by_category(page, demo_eval):
    blocks = page.find("table", **{"class": "stratum"})
    assert [b.get("data-stratum") for b in blocks] == list(demo_eval["strata"])
    for block in blocks:
        expected = demo_eval["strata"][block.get("data-stratum")]
        assert f"({expected['queries']} queries)" in block.find("caption")[0].text
        for cell in block.find("td"):
            run = cell.ancestor("tr").get("data-run")
            assert close(number(cell.get("data-value")),
                         expected["runs"][run]["aggregate"][cell.get("data-measure")])


@pytest.mark.parametrize("family", ["P", "R", "nDCG", "PR"])
def test_the_curves_are_evals_curves(page, demo_file, family):
    out = ragjudge("eval", "--db", str(demo_file), "--curve", family, "--k", "1-20", "--format", "json")
    assert out.returncode == 0, out.stderr
    expected = json.loads(out.stdout)
    [table] = page.find("table", data_curve=family)
    runs = [th.get("data-run") for th in table.find("th") if th.get("data-run")]
    assert runs == list(expected["runs"])
    rows = [tr for tr in table.find("tr") if tr.get("data-x")]
    xs = expected["recall"] if family == "PR" else expected["k"]
    assert [float(tr.get("data-x")) for tr in rows] == [float(x) for x in xs]
    key = "precision" if family == "PR" else "value"
    for j, tr in enumerate(rows):
        for run, cell in zip(runs, tr.find("td")):
            assert close(number(cell.get("data-value")), expected["runs"][run][key][j])
    # the plot draws the same points: each marker holds its exact value
    [figure] = page.find("figure", data_curve=family)
    for series in figure.find("g", **{"class": "series"}):
        ys = [float(m.get("data-y")) for m in series.iter() if m.get("data-y") is not None]
        assert ys == expected["runs"][series.get("data-run")][key]
    if family == "PR":
        [area] = [tr for tr in table.find("tr") if tr.get("class") == "area"]
        for run, cell in zip(runs, area.find("td")):
            assert close(number(cell.get("data-value")), expected["runs"][run]["area"])


def test_the_gold_is_the_gold_services_composition(page, demo_file, demo_eval):
    from ragjudge.services.gold.gold import gold
    from ragjudge.services.project.database import Project

    with Project.open(str(demo_file)) as project:
        composition = gold(project).composition.to_json()
    facts = {dd.get("data-key"): dd for dd in page.by_id("gold-facts").find("dd") if dd.get("data-key")}
    for key in ("pairs", "reference_pairs", "implied_pairs", "other_pairs", "adjudicated"):
        assert int(facts[key].get("data-value")) == composition[key]
    assert facts["rule"].text == composition["rule"]
    assert facts["annotators"].text == ", ".join(composition["annotators"])
    assert composition["pairs"] == 843  # the demo's judged pairs (agree: 843 pairs judged)
    assert demo_eval["gold"] == composition  # eval's "gold" says the same


def test_the_agreement_is_agrees(page, demo_file):
    out = ragjudge("agree", "--db", str(demo_file), "--format", "json")
    assert out.returncode == 0, out.stderr
    expected = json.loads(out.stdout)
    summary = {th.text: td for th, td in
               ((tr.find("th")[0], tr.find("td")[0]) for tr in page.by_id("agreement-summary").find("tr"))}
    assert close(number(summary["Krippendorff's α ordinal"].get("data-value")),
                 expected["krippendorff_alpha"]["ordinal"])
    assert close(number(summary["Gwet's AC1"].get("data-value")), expected["gwet_ac1"])
    assert close(number(summary["percent agreement"].get("data-value")), expected["percent_agreement"])
    assert expected["fleiss_kappa"] is None and summary["Fleiss' κ"].get("data-value") == ""
    for tr in page.by_id("agreement-pairs").find("tr"):
        if tr.get("data-a") is None:
            continue
        [pair] = [p for p in expected["pairwise"] if (p["a"], p["b"]) == (tr.get("data-a"), tr.get("data-b"))]
        kappa = tr.find("td")[5]
        assert close(number(kappa.get("data-value")), pair["cohen_kappa"])
        [matrix] = page.find("table", data_a=pair["a"], data_b=pair["b"])
        counts = [[int(td.text) for td in row.find("td")] for row in matrix.find("tbody")[0].find("tr")]
        assert counts == pair["confusion"]
    disputes = page.by_id("disputes").find("tbody")[0].find("tr")
    assert len(disputes) == 50  # the default limit, of 223
    first = expected["disputed"][0]
    assert [td.text for td in disputes[0].find("td")[:3]] == [first["query_id"], first["chunk_id"], str(first["spread"])]


def test_the_ranges_are_the_evaluation_screens(page, demo_file):
    from ragjudge.services.project.database import Project
    from ragjudge.services.scoring.answers import default_measures
    from ragjudge.services.scoring.live import LiveEvaluation

    with Project.open(str(demo_file)) as project:
        engine = LiveEvaluation(project, measures=default_measures(project))
        engine.load()
        snap = engine.snapshot()
    checked = 0
    for cell in page.by_id("scorecard-table").find("td"):
        run, measure = cell.ancestor("tr").get("data-run"), cell.get("data-measure")
        spread = cell.find("span", **{"class": "range"})
        if measure not in snap.ranges[run]:  # no annotator's value (the run has no answers)
            assert spread == [] and run == "title_only"
            continue
        assert (float(spread[0].get("data-low")), float(spread[0].get("data-high"))) == snap.ranges[run][measure]
        low, high = snap.range_ends[run][measure]
        assert spread[0].get("title") == f"lowest: {low}, highest: {high}"
        checked += 1
    assert checked == 3 * 14 + 2 * 4


def test_the_comparison_is_every_pair_under_fisher_and_holm(page, demo_eval):
    from ragjudge.metrics.allpairs import compare_all_pairs

    measures = demo_eval["measures"]
    queries = list(demo_eval["runs"]["bm25"]["per_query"])
    per_query = {run: np.array([[data["per_query"][q][m] for q in queries] for m in measures],
                               dtype=float)  # null (undefined) -> NaN
                 for run, data in demo_eval["runs"].items()}
    # title_only has no answers: the answer measures compare the two other runs
    ranking, answers = measures[:14], measures[14:]
    assert all(data is None for data in (demo_eval["runs"]["title_only"]["aggregate"][m] for m in answers))
    expected = [*compare_all_pairs({r: v[:14] for r, v in per_query.items()}, ranking,
                                   test="fisher", correction="holm").pairs,
                *compare_all_pairs({r: per_query[r][14:] for r in ("bm25", "hybrid")}, answers,
                                   test="fisher", correction="holm").pairs]
    rows = [tr for tr in page.by_id("comparison-table").find("tr") if tr.get("data-measure")]
    assert len(rows) == len(expected) == 14 * 3 + 4
    for tr, pair in zip(rows, expected):
        assert (tr.get("data-measure"), tr.get("data-a"), tr.get("data-b")) == (pair.measure, pair.run_a, pair.run_b)
        for cell in tr.find("td"):
            field = cell.get("data-field")
            if field:
                assert close(number(cell.get("data-value")), getattr(pair, field)), (pair.measure, field)
    assert "Fisher's randomization test" in page.by_id("comparisons").text
    assert "Holm-corrected" in page.by_id("comparisons").text
    assert "title_only is left out of the comparisons on AnswerNuggets(strict,vital)" in page.by_id("notes").text


def test_the_digests_are_stated_and_the_command_named(page, demo_file):
    from ragjudge.services.project.database import Project
    from ragjudge.services.scoring.provenance import label_snapshot, run_digests

    with Project.open(str(demo_file)) as project:
        digests = run_digests(project, ["bm25", "hybrid", "title_only"])
        snapshot = label_snapshot(project)
    shown = {tr.get("data-run"): tr.find("td")[0].text for tr in page.by_id("run-digests").find("tr")
             if tr.get("data-run")}
    assert shown == digests and len(set(digests.values())) == 3
    assert page.by_id("label-digest").text == snapshot.sha256
    command = page.by_id("command").text
    assert command.startswith("ragjudge report --db ") and command.endswith(" -q")
    import ragjudge

    facts = page.by_id("provenance").find("dd")
    assert ragjudge.__version__ in [dd.text for dd in facts]


def test_the_markdown_numbers_are_evals(demo_file, demo_eval):
    out = ragjudge("report", "--db", str(demo_file), "--format", "md", "--strata", "category", "-q")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("| measure | `bm25`"))
    runs = [cell.strip().split("`")[1] for cell in header.strip("|").split("|")[1:]]
    at = lines.index(header)
    for line in lines[at + 2: at + 2 + len(demo_eval["measures"])]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        measure = cells[0].strip("`")
        for run, cell in zip(runs, cells[1:]):
            value = demo_eval["runs"][run]["aggregate"][measure]
            low, high = demo_eval["runs"][run]["ci95"][measure]
            if value is None:  # undefined on every query of the run
                assert cell == "–", (measure, run, cell)
                continue
            assert cell.replace("**", "").startswith(f"{value:.4f}"), (measure, run, cell)
            assert f"[{low:.4f}, {high:.4f}]" in cell
    for stratum, block in demo_eval["strata"].items():
        assert f"**`category` = `{stratum}`** ({block['queries']} queries)" in text
    assert "## Curves" in text and "Markdown cannot carry the plots" in text
    assert "## Per query" not in text  # only on request in Markdown
    # the P@1 comparison bm25 / title_only as the metrics library gives it
    assert "| `P@1` | `bm25` | `title_only` | 45 | -0.2889 |" in text


def test_a_measure_undefined_on_some_queries_says_where(demo_file, tmp_path):
    """NuggetRecall is undefined on queries without nuggets: its mean is over the others, and
    the report says how many were left out (as eval's footer does)."""
    out = ragjudge("eval", "--db", str(demo_file), "-m", "NuggetRecall@10", "--format", "json")
    assert out.returncode == 0, out.stderr
    expected = json.loads(out.stdout)
    target = tmp_path / "nuggets.html"
    made = ragjudge("report", "--db", str(demo_file), "-m", "NuggetRecall@10", "-o", str(target),
                    "-q", "--curve", "P", "--no-pr")
    assert made.returncode == 0, made.stderr
    page = parse(target.read_text(encoding="utf-8"))
    for run, data in expected["runs"].items():
        [cell] = [c for c in page.by_id("scorecard-table").find("td")
                  if c.ancestor("tr").get("data-run") == run]
        assert close(number(cell.get("data-value")), data["aggregate"]["NuggetRecall@10"])
        left = data.get("undefined", {}).get("NuggetRecall@10")
        if left:
            assert f"left out of the mean on {left} of" in page.by_id("scorecard").text
    assert not math.isnan(number(cell.get("data-value")))
