"""The evaluation screen's header and its overview, per-query, curves and strata tabs: how each
is filled from the last snapshot and details (:class:`EvalTabs`, a mixin of
:class:`ragjudge.tui.screens.evaluation.EvaluationScreen`, which keeps the workers, the message
handlers, the bindings and the reactive attributes; only its message handlers call these)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.widgets import DataTable, Static

from ragjudge.errors import RagjudgeError
from ragjudge.services.scoring import live as svc
from ragjudge.tui.widgets.evalpane import (
    CurvePlot,
    ExplainModal,
    best_rows,
    column_width,
    curve_note,
    fmt,
    knee,
    lowest_cells,
    overview_note,
    per_query_order,
    settled_cell,
    spread_text,
)
from ragjudge.tui.widgets.fitted import FitBar, Part
from ragjudge.tui.widgets.literal import literal

if TYPE_CHECKING:
    from textual.screen import Screen

    from ragjudge.services.gold.gold import Composition
    from ragjudge.services.scoring.settled import Settled as SettledReport
    from ragjudge.tui.host import Host

    TabsBase = Screen
else:
    TabsBase = object

FIRST_MEASURE = 2
"""The overview's first measure column: after the run and the settled column."""
SORTS = ("query", "value ↓", "value ↑", "disputed ↓", "judged ↑")


class EvalTabs(TabsBase):
    """The header and the overview, per-query, curves and strata tabs of the evaluation screen
    (a mixin: the screen sets what is annotated here)."""

    project: Any
    engine: svc.LiveEvaluation | None
    snapshot: svc.LiveSnapshot | None
    details: svc.LiveDetails | None
    composition: Composition | None
    settled: SettledReport | None
    measure: str
    category: str | None
    sort: int
    _fields: list[str]
    _query_rows: list[str]
    _added: str | None

    clock = staticmethod(lambda snapshot: snapshot.updated_at.astimezone().strftime("%H:%M:%S"))
    """How the time of the last update is shown (tests freeze it)."""

    if TYPE_CHECKING:
        @property
        def host(self) -> Host: ...

    # -- header ------------------------------------------------------------------------------

    def _show_header(self) -> None:
        """Four lines: the labels and the gold, Judged@10 per run, agreement, what the gold is
        made of; each fitted to the width (short forms, then an ellipsis)."""
        s, d = self.snapshot, self.details
        if s is None:
            return
        counts = Text()
        counts.append(f"{s.labels_used:,}", style="bold")
        counts.append(f" labels ({len(s.annotators)} annotators) → ")
        counts.append(f"{s.gold_pairs:,}", style="bold")
        counts.append(" gold pairs")
        line = [Part(counts, Text(f"{s.labels_used:,} labels → {s.gold_pairs:,} gold pairs")),
                Part(Text(f"{s.n_queries}/{s.n_queries_total} queries"))]
        if d is not None and d.pool_pairs:
            share = f"{100 * d.pool_judged / d.pool_pairs:.0f}%"
            line.append(Part(Text(f"pool@10 {share} judged"), Text(f"pool {share}")))
        line += [Part(Text(f"rel ≥ {s.threshold}")), Part(Text(f"at {self.clock(s)}"), Text(""))]
        judged = []
        for i, name in enumerate(s.run_names):
            cell = Text("Judged@10 " if i == 0 else "")
            cell.append_text(literal(name))
            cell.append(f" {fmt(s.judged_at_10[name], 2)}")
            short = cell.copy()
            unjudged = s.unjudged_top10[name]
            if unjudged:
                cell.append(f" ({unjudged:,} unjudged)", style="yellow")
                short.append(f" ({unjudged:,})", style="yellow")
            judged.append(Part(cell, short, cut=True))
        judged.append(Part(Text("(unjudged: scores are lower bounds)", style="dim"), Text("")))
        if d is None:
            agree = [Part(Text.assemble("agreement: ", ("computing…", "dim")))]
        else:
            agree = [Part(Text(f"agreement: Krippendorff's α ordinal {fmt(d.alpha_ordinal, 3)}, "
                               f"nominal {fmt(d.alpha_nominal, 3)}"),
                          Text(f"α ordinal {fmt(d.alpha_ordinal, 3)}")),
                     Part(Text(f"Cohen's κ {fmt(d.mean_kappa, 3)} over {d.kappa_units:,} shared pairs"),
                          Text(f"κ {fmt(d.mean_kappa, 3)}")),
                     Part(Text(f"{d.disputed:,} disputed pairs", style="bold" if d.disputed else ""),
                          Text(f"{d.disputed:,} disputed", style="bold" if d.disputed else ""))]
        self.query_one("#eval-header", FitBar).show_lines(
            line, judged, agree, [Part(self._gold_line(s), cut=True)], wide=False)

    def _gold_line(self, s: svc.LiveSnapshot) -> Text:
        """The gold's composition under the rule shown; until it is counted, the rule alone."""
        composition = self.composition
        if composition is not None and composition.rule == s.rule:
            return literal(composition.describe())
        line = Text("gold: ")
        line.append_text(literal(s.rule, "bold"))
        line.append(" · counting what it is made of…", style="dim")
        return line

    # -- overview ----------------------------------------------------------------------------

    def _show_overview(self) -> None:
        s, d = self.snapshot, self.details
        if s is None:
            return
        table = self.query_one("#overview-table", DataTable)
        keep = table.cursor_coordinate
        table.clear(columns=True)
        table.fixed_columns = FIRST_MEASURE  # the run and the settled column stay in view
        # explicit widths: the table lays out at once, not on the next idle moment
        table.add_column("run", key="run", width=column_width(["run", *s.run_names]))
        settled = {n: settled_cell(self.settled, self.measure, n) for n in s.run_names}
        table.add_column(literal(f"settled {self.measure}"), key="settled", width=max(
            len(self.measure) + 8, *(len(line) for t in settled.values() for line in t.plain.split("\n"))))
        spreads = {(n, m): spread_text(s, n, m) for n in s.run_names for m in s.measures}
        for m in s.measures:
            table.add_column(literal(m), key=m, width=max(
                len(m), 14, *(len(spreads[n, m]) for n in s.run_names)))
        best = {m: best_rows([s.means[n][m] for n in s.run_names]) for m in s.measures}
        for i, name in enumerate(s.run_names):
            cells: list[Text] = [literal(name, "bold"), settled[name]]
            for m in s.measures:
                value = s.means[name][m]
                cell = Text(("*" if i in best[m] else " ") + fmt(value),
                            style="bold green" if i in best[m] else "")
                ci = d.intervals.get(name, {}).get(m) if d is not None else None
                if d is not None and m in d.too_few.get(name, ()):
                    cell.append("\ntoo few queries", style="dim")
                else:
                    cell.append("\n" + (f"[{ci[0]:.3f},{ci[1]:.3f}]" if ci and not math.isnan(ci[0])
                                        else ""), style="dim")
                cell.append_text(literal("\n" + spreads[name, m], "cyan"))
                cells.append(cell)
            table.add_row(*cells, height=3, key=name)
        if s.run_names and s.measures:
            table.cursor_coordinate = (keep if keep.column < len(s.measures) + FIRST_MEASURE
                                       else keep._replace(column=FIRST_MEASURE))
        added, self._added = self._added, None
        if added in s.measures and s.run_names:  # a measure just added: its column in view
            table.move_cursor(column=s.measures.index(added) + FIRST_MEASURE, animate=False)
            self.notify(f"Added {added}: column {s.measures.index(added) + 1} of {len(s.measures)}.",
                        timeout=3)
        elif added is not None:
            self._added = added  # the snapshot with it has not come yet
        self.query_one("#overview-note", Static).update(overview_note(
            s, d.resamples if d is not None else None, self.settled, self.measure))

    # -- per query ---------------------------------------------------------------------------

    def _show_per_query(self) -> None:
        s, d = self.snapshot, self.details
        if s is None or s.rows is None:
            return
        rows = s.rows
        disputed = d.disputed_by_query if d is not None else {}
        categories = sorted({c or "(none)" for c in rows.categories})
        if self.category is not None and self.category not in categories:
            self.category = None
        hint = Text()
        hint.append_text(literal(rows.measure, "bold"))
        hint.append(" per query · category: ")
        hint.append_text(literal(self.category or "all"))
        hint.append(f" · sort: {SORTS[self.sort]} · m measure · f category · t sort · "
                    "Enter: explain and judge")
        if rows.hidden:
            hint.append(f" · blind: {len(rows.hidden):,} values not shown (you have not "
                        "judged every pair of their gold)", style="dim")
        self.query_one("#per-query-hint", Static).update(hint)
        order = per_query_order(rows, self.category, SORTS[self.sort],
                                s.run_names[0] if s.run_names else None, disputed)
        table = self.query_one("#per-query-table", DataTable)
        keep = table.cursor_row
        table.clear(columns=True)
        for label, texts in (("query", rows.query_ids), ("category", [c or "" for c in rows.categories]),
                             ("judged", ["judged"]), ("disputed", ["disputed"])):
            table.add_column(label, width=column_width([label, *texts]))
        for name in s.run_names:
            table.add_column(literal(name), width=max(len(name), 7))
        self._query_rows = []
        for i in order:
            qid = rows.query_ids[i]
            values = [rows.values[n][i] for n in s.run_names]
            top = best_rows(values)
            cells = [literal(qid), literal(rows.categories[i] or ""), str(int(rows.judged[i])),
                     str(disputed.get(qid, 0))]
            if qid in rows.hidden:  # a blind reader: the value would tell a grade not theirs
                cells += [Text("hidden", style="dim") for _ in values]
            else:
                cells += [Text(fmt(v), style="bold green" if j in top else "")
                          for j, v in enumerate(values)]
            table.add_row(*cells)
            self._query_rows.append(qid)
        if self._query_rows:
            table.move_cursor(row=min(keep, len(self._query_rows) - 1))


    def _explain(self, query_id: str) -> None:
        """The computation per run, as the viewer may read it (in a blind project, without the
        grades and ranks of the pairs they have not judged: the service leaves them out)."""
        engine, s = self.engine, self.snapshot
        if engine is None or s is None or s.rows is None:
            return
        access = self.host.access()
        parts = []
        for name in s.run_names:
            parts.append(f"── run {name} ──\n" + engine.explain(name, query_id, s.rows.measure,
                                                                access=access))
        unjudged = engine.unjudged_pairs(query_id)
        title = f"{s.rows.measure} for query {query_id} (rule {s.rule})"

        def chosen(answer: str | None) -> None:
            if answer == "judge":
                self._judge(query_id)

        self.app.push_screen(ExplainModal(title, "\n\n".join(parts), unjudged), chosen)

    def _judge(self, query_id: str) -> None:
        """Judge the query's unjudged pairs: the judging screen on a queue of exactly the pairs
        of the runs' top 10 for this query that have no gold grade yet."""
        unjudged = self.engine.unjudged_pairs(query_id) if self.engine else []
        from ragjudge.tui.screens.prompts import TextPrompt

        def named(name: str | None) -> None:
            if not name:
                return
            self.host.confirm_annotator(
                name, start, cancelled=lambda: None,
                refuse=lambda message: self.notify(message, severity="error", timeout=8))

        def start(name: str) -> None:
            from ragjudge.services.events import annotators as judging_annotators
            from ragjudge.services.labels import queue as judging_queue
            from ragjudge.tui.screens.judge import JudgeScreen

            try:
                name = judging_annotators.check_annotator(name)
                judging_annotators.ensure_annotator(self.project, name)
                queue_ = judging_queue.JudgingQueue(self.project, name,
                                              pairs=[(query_id, c) for c in unjudged])
            except RagjudgeError as exc:
                self.notify(str(exc), severity="error", timeout=8)
                return
            self.host.annotator = name
            self.app.push_screen(JudgeScreen(self.project, queue_, from_home=True))

        annotator = self.host.annotator
        if annotator:
            named(annotator)
        else:
            self.app.push_screen(TextPrompt("Your name (every label you give is recorded under it):",
                                            placeholder="e.g. alice"), named)

    # -- curves ------------------------------------------------------------------------------

    def _show_curves(self) -> None:
        s = self.snapshot
        if s is None or not s.run_names:
            return
        ks = list(svc.CURVE_K)
        best = max(s.run_names, key=lambda n: sum(0 if math.isnan(v) else v for v in s.curve_values[n]))
        mark = knee(s.curve_values[best], ks)
        self.query_one("#curve-k", CurvePlot).show(f"{s.curve}@K", ks, s.curve_values, "K", mark,
                                                 whole_x=True)
        self.query_one("#curve-pr", CurvePlot).show(
            "interpolated precision at recall", list(svc.PR_LEVELS), s.pr_values, "recall")
        self.query_one("#curves-note", Static).update(curve_note(s.curve, best, mark))

    # -- strata ------------------------------------------------------------------------------

    def _show_strata(self) -> None:
        s = self.snapshot
        if s is None or s.strata_field is None:
            return
        hint = Text()
        hint.append_text(literal(f"by {s.strata_field}", "bold"))
        hint.append_text(literal(f" (f: next field of {', '.join(self._fields)})"))
        hint.append(" · the lowest value per measure is red, so an aggregate cannot hide a failing group")
        self.query_one("#strata-hint", Static).update(hint)
        table = self.query_one("#strata-table", DataTable)
        table.clear(columns=True)
        first = s.strata_field or "stratum"
        table.add_column(literal(first), width=column_width([first, *s.strata]))
        table.add_column("queries", width=7)
        table.add_column("run", width=column_width(["run", *s.run_names]))
        for m in s.measures:
            table.add_column(literal(m), width=max(len(m), 7))
        worst = lowest_cells(s)
        for stratum, by_run in s.strata.items():
            for j, name in enumerate(s.run_names):
                cells = [literal(stratum if j == 0 else ""), str(s.strata_sizes[stratum]) if j == 0 else "",
                         literal(name)]
                for m in s.measures:
                    style = "bold red" if worst.get(m) == (stratum, name) else ""
                    cells.append(Text(fmt(by_run[name][m]), style=style))
                table.add_row(*cells)

