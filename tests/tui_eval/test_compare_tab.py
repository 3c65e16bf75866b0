"""The evaluation screen's compare tab corrects its p-values over its measures and says so: Holm's
correction by default, ``x`` steps to Bonferroni, Benjamini-Hochberg and none. Its figures equal
Fisher's randomization test per measure (the same test ``ragjudge compare`` runs) corrected by
statsmodels' ``multipletests`` over the measures, and each verdict follows the corrected p."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from statskit import multipletests
from textual.widgets import DataTable, Static
from pilotkit import wait_for

from ragjudge.metrics.significance import randomization_test
from ragjudge.services.scoring.evaluation import pairing
from ragjudge.tui.evalapp import evaluation_app
from ragjudge.tui.screens.evaluation import EvaluationScreen

pytestmark = pytest.mark.slow

STATSMODELS = {"holm": "holm", "bonferroni": "bonferroni", "bh": "fdr_bh"}


def reference(screen: EvaluationScreen) -> tuple[list[str], np.ndarray, list[float]]:
    """The measures, each one's randomization p-value of B against A on the paired queries
    where both values are defined, and B - A, from the screen's own evaluation of the two runs."""
    a, b = screen.pair
    evaluation = screen.engine.evaluation([a, b])
    queries = pairing(evaluation, a, b).queries
    p, differences = [], []
    for j, _ in enumerate(evaluation.measures):
        values = []
        for name in (a, b):
            result = evaluation.results[name]
            position = {q: i for i, q in enumerate(result.query_ids)}
            values.append(result.values[[position[q] for q in queries], j])
        keep = ~np.isnan(values[0]) & ~np.isnan(values[1])
        p.append(randomization_test(values[0][keep], values[1][keep]))
        differences.append(float((values[1][keep] - values[0][keep]).mean()))
    return list(evaluation.measures), np.array(p), differences


def table_rows(screen: EvaluationScreen) -> list[list[str]]:
    table = screen.query_one("#compare-table", DataTable)
    return [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]


def shown_p(text: str) -> float:
    return 0.0 if text == "<0.0001" else float(text)


def test_the_compare_tab_corrects_over_its_measures_and_says_which_correction(demo):
    asyncio.run(_compare_tab(demo))


async def _compare_tab(demo) -> None:
    app = evaluation_app(demo)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, EvaluationScreen) and app.screen.snapshot)
        screen = app.screen
        await pilot.press("c")
        table = screen.query_one("#compare-table", DataTable)
        await wait_for(pilot, lambda: table.row_count > 0)
        measures, p, differences = reference(screen)
        m = len(measures)
        for correction in ("holm", "bonferroni", "bh", "none"):
            assert screen.correction == correction
            hint = str(screen.query_one("#compare-hint", Static).content)
            if correction == "none":
                assert f"p-values not corrected over the {m} measures" in hint
            else:
                name = {"holm": "Holm", "bonferroni": "Bonferroni", "bh": "Benjamini-Hochberg"}[correction]
                assert f"p-values {name}-corrected over the {m} measures" in hint
            assert "interval of B − A is not adjusted" in hint
            headers = [str(c.label) for c in table.columns.values()]
            adjusted = p if correction == "none" else multipletests(p, method=STATSMODELS[correction])[1]
            if correction == "none":
                assert "95% CI" in headers and not any(h.startswith("p (") for h in headers)
            else:
                short = {"holm": "Holm", "bonferroni": "Bonferroni", "bh": "BH"}[correction]
                assert f"p ({short})" in headers and "95% CI (unadjusted)" in headers
            rows = table_rows(screen)
            assert [row[0] for row in rows] == measures
            for row, raw, corrected, difference in zip(rows, p, adjusted, differences):
                assert shown_p(row[5]) == round(raw, 4) or (raw < 1e-4 and row[5] == "<0.0001")
                shown = row[6] if correction != "none" else row[5]
                assert shown_p(shown) == round(corrected, 4) or (corrected < 1e-4 and shown == "<0.0001")
                called = corrected < 0.05 and difference != 0
                assert row[-1].startswith("B better" if called and difference > 0 else
                                          "A better" if called else "within noise"), (row, corrected)
            if correction == "none":
                break
            await pilot.press("x")
            await wait_for(pilot, lambda: table.row_count > 0 and screen._compared[-1] == screen.correction
                           and not screen._busy["compare"])
            await pilot.pause()
            await wait_for(pilot, lambda: table.row_count > 0)
