"""The judging screen: one query–chunk pair at a time, a grade per keypress.

Durability: every key that records something calls the judging service synchronously, and that
call returns only after the transaction is committed; only then is the next pair shown. A
SQLite commit takes about a millisecond, so the UI thread can afford it. The pool totals (a
scan of the whole pool on big projects) are counted in a worker thread.

A grade or skip carries the label the screen showed (``seen``: its event id): when another
session of the same annotator (a second browser tab, a second terminal) recorded something on
the pair since, the service refuses (:class:`~ragjudge.services.labels.events.LabelConflict`),
and the screen shows what stands, on the same pair, for the annotator to grade again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Static

from ragjudge.errors import RagjudgeError
from ragjudge.safetext import visible
from ragjudge.services.events import marks as judging_marks
from ragjudge.services.labels import events as judging_events
from ragjudge.services.labels import facets as judging_facets
from ragjudge.services.labels import queue as judging_queue
from ragjudge.services.labels import texts as judging_texts
from ragjudge.services.labels import review
from ragjudge.services.labels.queue import JudgingQueue, PairView
from ragjudge.services.labels.scale import current_scale
from ragjudge.services.events.state import LabelState
from ragjudge.tui.host import host
from ragjudge.tui.screens.help import HelpRow
from ragjudge.tui.screens.session import SessionActions
from ragjudge.tui.widgets.fitted import FitBar, Fitted, Part
from ragjudge.tui.widgets.footer import PriorityFooter
from ragjudge.tui.widgets.literal import chunk_heading, highlighted, literal, query_block, query_terms

T = TypeVar("T")


_UNSET = object()

NARROW = 100
"""Below this many columns the judging screen stacks its panels above the chunk."""


@dataclass(frozen=True)
class Key:
    """One key of the judging contract: what the footer, the help screen and the palette show."""

    keys: str
    action: str
    name: str
    help: str
    show: bool = True
    key_display: str | None = None
    """How the footer shows the key."""
    help_key: str | None = None
    help_name: str | None = None
    """How the help screen shows the key and names the action (default: as the footer does)."""


JUDGE_KEYS: tuple[Key, ...] = (
    *(Key(str(g), f"grade({g})", "grade" if g == 0 else f"grade {g}", f"Give grade {g} and move on.",
          show=g == 0,
          key_display="0-9" if g == 0 else None) for g in range(10)),
    Key("y", "binary(1)", "relevant (binary)", "Binary scale: grade 1 and move on.", show=False),
    Key("n", "binary(0)", "not relevant (binary)", "Binary scale: grade 0 and move on.", show=False),
    Key("s", "skip", "skip", "Pass over the pair; it comes back when the rest is done."),
    Key("f", "flag", "flag", "Flag for review (optional note); f on a flagged pair unflags it."),
    Key("u,ctrl+z", "undo", "undo", "Undo your last label (a new event); the pair comes back."),
    Key("left,k", "previous", "prev", "Previous pair in the queue order, without labelling.", key_display="←/k",
        help_key="← / k", help_name="previous"),
    Key("right,j", "next", "next", "Next pair in the queue order, without labelling.", key_display="→/j",
        help_key="→ / j"),
    Key("left_square_bracket", "previous_query", "query",
        "Previous query in the queue order (depth order: within the round).", key_display="[/]",
        help_key="[", help_name="previous query"),
    Key("right_square_bracket", "next_query", "next query",
        "Next query in the queue order (depth order: within the round).", show=False,
        key_display="]"),
    Key("c", "comment", "comment", help="Comment on the pair (an empty comment removes it)."),
    Key("l", "history", "labels", help_name="your labels",
        help="Your labels, newest first; Enter on one goes back to that pair to relabel it."),
    Key("d", "document", "document", help_name="in the document",
        help="The chunks before and after this one in its document (← / → walk on)."),
    Key("slash", "find", "find", help_name="find a query", help="Find a query by id or text.",
        key_display="/"),
    Key("g", "facets", "facets", help_name="facets & nuggets",
        help="Facets and nuggets of the query: mark what this chunk covers."),
    Key("h", "guidelines", "guidelines", help="The project's judging guidelines."),
    Key("e", "evaluation", "evaluation",
        help="The evaluation screen (scores of every run, live)."),
    Key("a", "agreement", "agreement",
        help="The agreement screen (where annotators disagree)."),
    Key("question_mark", "help", "help", "This list of keys.", key_display="?"),
    Key("q", "quit", "quit", "Quit (every label is already saved)."),
    Key("escape", "home", "home", "Back to the home screen (when judging was opened from it).",
        show=False),
)


def key_rows(keys: tuple[Key, ...] = JUDGE_KEYS, scale=None) -> list[HelpRow]:  # noqa: ANN001
    """The help screen's rows; with the project's ``scale`` a row per grade, by its name."""
    rows: list[HelpRow] = []
    grades = [k for k in keys if k.action.startswith("grade(")]
    if grades and scale is None:
        rows.append(("0-9", "grade", "Give that grade and move on (the scale's digits)."))
    elif grades:
        rows += grade_rows(scale)
    for k in keys:
        if k.action.startswith("grade("):
            continue
        if k.action.startswith("binary(") and scale is not None and not scale.is_binary:
            continue
        label = k.help_key or k.key_display or " / ".join(k.keys.split(","))
        rows.append((label, k.help_name or k.name, k.help))
    return rows


def grade_rows(scale) -> list[HelpRow]:  # noqa: ANN001 - Scale
    """One help row per grade a digit key gives: the key, the grade's name, what it means."""
    rows: list[HelpRow] = []
    for level in scale.levels:
        if not 0 <= level.grade <= 9:
            continue
        meaning = f": {level.description}" if level.description else "."
        rows.append((str(level.grade), literal(level.name), literal(f"Give grade {level.grade} and move on{meaning}")))
    return rows


class JudgeScreen(SessionActions, Screen):
    """Judge the pairs of a :class:`JudgingQueue`."""

    HELP_TITLE = "Judging keys"

    BINDINGS = [
        Binding(k.keys, k.action, k.name, show=k.show, key_display=k.key_display, priority=True,
                tooltip=k.help)
        for k in JUDGE_KEYS
    ]
    FOOTER_PRIORITY = {"evaluation": 0, "agreement": 0, "help": 0, "quit": 0,
                       "grade(0)": 1, "skip": 1, "undo": 1, "flag": 2, "facets": 2,
                       "previous": 3, "next": 3, "previous_query": 4, "history": 4}
    """What a narrow footer keeps first: the ways out, then grading (see PriorityFooter)."""
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (NARROW, "-wide")]
    """Below 100 columns the panels stack above the chunk, which gets the full width."""
    ACTION_NAMES = {k.action: k.help_name or k.name for k in JUDGE_KEYS} | {"grade(0)": "grade 0"}
    """Names of the actions in the command palette (the footer's are shorter)."""
    ACTION_KEYS = {f"grade({g})": str(g) for g in range(10)}
    """The keys the palette shows where the footer's differ (its "0-9" stands for every grade)."""

    pair: reactive[PairView | None] = reactive(None, always_update=True, init=False)
    """The pair on screen (None when the queue is done)."""

    class TotalsCounted(Message):
        """The worker counted the queue's pool."""

    def __init__(self, project, queue: JudgingQueue, *, from_home: bool = False) -> None:  # noqa: ANN001
        super().__init__()
        self.project = project
        self.queue = queue
        self.from_home = from_home
        self.scale = current_scale(project)  # its names as stored now (a lead may rename them)
        self.project_name = project.name
        self.shown_at = time.monotonic()
        self.session_labels = 0
        self.session_start: float | None = None
        self._query_cache: dict[str, judging_texts.QueryText] = {}
        self._shown: dict[str, object] = {}

    def compose(self) -> ComposeResult:
        yield FitBar(id="topbar")
        with Horizontal(id="judge-main"):
            with Vertical(id="side"):
                yield Fitted(id="query-panel", classes="panel")
                yield Fitted(id="scale-panel", classes="panel")
                yield Fitted(id="earlier-panel", classes="panel")
                yield Fitted(id="facets-panel", classes="panel", squeeze=True)  # a row each when short
            with VerticalScroll(id="chunk-scroll", classes="panel"):
                yield Static(id="chunk-text")
        yield FitBar(id="progress")
        yield PriorityFooter(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.query_one("#query-panel").border_title = "query"
        self.query_one("#scale-panel").border_title = f"scale {self.scale.describe()}"
        self.query_one("#earlier-panel").border_title = "your label"
        self.query_one("#facets-panel").border_title = "facets & nuggets (g)"
        self.query_one("#scale-panel", Static).update(self._scale_text())
        self.query_one("#chunk-scroll").focus()
        self.pair = self.queue.first()
        news = review.news_message(self.project, self.queue.annotator)
        if news:
            self.notify(news, title="review", timeout=15)
        # the pool totals are a full scan on big projects: after the first pair is on screen
        self.call_after_refresh(self.count_totals)

    def offers(self, action: str) -> bool:
        """Whether the command palette lists the action: the grades of the project's scale
        only, and y/n on a binary scale only."""
        if action.startswith("grade("):
            return self.scale.contains(int(action[6:-1]))
        if action.startswith("binary("):
            return self.scale.is_binary
        return True

    # -- showing ---------------------------------------------------------------------------

    def watch_pair(self, pair: PairView | None) -> None:
        with self.app.batch_update():  # one frame for every panel of the new pair
            if pair is None:
                self._show_done()
            else:
                self._show_pair(pair)
            self._show_progress()
        self.shown_at = time.monotonic()

    def _query(self, query_id: str) -> judging_texts.QueryText:
        q = self._query_cache.get(query_id)
        if q is None:
            if len(self._query_cache) > 256:
                self._query_cache.clear()
            q = self._query_cache[query_id] = judging_texts.query_text(self.project, query_id)
        return q

    def _update(self, selector: str, key: object, make) -> None:  # noqa: ANN001
        """Update a panel only when what it shows changed: every update re-lays the screen out."""
        if self._shown.get(selector, _UNSET) == key:
            return
        self._shown[selector] = key
        self.query_one(selector, Static).update(make())

    def _show_pair(self, pair: PairView) -> None:
        q = self._query(pair.query_id)
        c = judging_texts.chunk_text(self.project, pair.chunk_id)
        self._update("#query-panel", q, lambda: query_block(q))
        scroll = self.query_one("#chunk-scroll", VerticalScroll)
        title = Text("chunk ")
        title.append_text(literal(c.id, "bold"))
        if c.doc_id:
            title.append("  doc ")
            title.append_text(literal(c.doc_id))
        if pair.sources:
            title.append("  ")
            title.append_text(literal(", ".join(f"{run} #{rank}" for run, rank in pair.sources[:4]),
                                      "italic"))
        scroll.border_title = title
        body = highlighted(c.text, query_terms(q.text))
        heading = chunk_heading(c)
        if heading.plain:  # the document's title and the section the chunk sits under
            body = heading + Text("\n\n") + body
        self.query_one("#chunk-text", Static).update(body)
        if scroll.scroll_y:
            scroll.scroll_home(animate=False)
        earlier = None if pair.recheck else pair.state
        answer = None if pair.recheck else review.answer_for(self.project, self.queue.annotator,
                                                             pair.query_id, pair.chunk_id)
        self._update("#earlier-panel", ("label", earlier and (earlier.grade, earlier.skipped,
                                                              earlier.undone, earlier.note),
                                        pair.marks, answer),
                     lambda: self._earlier_text(pair, answer))
        self._show_marks(pair)

    def _show_marks(self, pair: PairView) -> None:
        marks = judging_facets.marks_for(self.project, pair.query_id, annotator=self.queue.annotator,
                                  chunk_id=pair.chunk_id)
        self._update("#facets-panel", marks, lambda: self._facets_text(*marks))

    def _show_done(self) -> None:
        if self.queue.stopped:  # --until-settled: every comparison is settled, so judging stops
            self.app.exit(message=f"{self.queue.stopped} ({self.session_labels:,} labels this session.)")
            return
        self._shown.clear()
        self.query_one("#query-panel", Static).update(Text("—"))
        self.query_one("#chunk-scroll").border_title = "done"
        if not self.queue.query_ids:
            message = ("There is nothing to judge here: no query has retrieved chunks in this pool. "
                       "Import a run first (ragjudge import run FILE), or widen --runs, --queries "
                       "or --category.\n\nq quits.")
        else:
            message = ("Every pair of your queue is judged. Thank you!\n\n"
                       "u undoes your last label · [ and ] revisit queries · e opens the evaluation · "
                       "q quits.")
        self.query_one("#chunk-text", Static).update(Text(message))
        self.query_one("#earlier-panel", Static).update(Text(""))
        self.query_one("#facets-panel", Static).update(Text(""))

    def on_resize(self, event: events.Resize) -> None:
        """Narrow (the panels stacked above the chunk): the scale by its grades' names only,
        so that the chunk keeps its rows."""
        self.query_one("#scale-panel", Static).update(
            self._scale_text(descriptions=event.size.width >= NARROW))
        self._show_progress()

    def _scale_text(self, *, descriptions: bool = True) -> Text:
        out = Text()
        for i, level in enumerate(self.scale.levels):
            if i:
                out.append("\n")
            keys = str(level.grade)
            if self.scale.is_binary:
                keys += "/" + ("y" if level.grade == 1 else "n")
            out.append(f" {keys} ", style="bold reverse")
            out.append(" ")
            out.append_text(literal(level.name, "bold"))
            if level.description and descriptions:
                out.append("  ")
                out.append_text(literal(level.description, "dim"))
        return out

    def _earlier_text(self, pair: PairView, answer: review.Resolution | None = None) -> Text:
        """The grade (or skip, or undo), the grade's note, the flag with its note, the comment:
        each on its own line, each from its own state."""
        state = None if pair.recheck else pair.state
        marks = pair.marks
        out = Text()
        if state is not None and state.grade is not None:
            out.append(f"{state.grade} ", style="bold")
            out.append_text(literal(self.scale.level(state.grade).name
                                    if self.scale.contains(state.grade) else "off the scale"))
        elif state is not None and state.skipped:
            out.append("skipped", style="yellow")
        elif state is not None and state.undone:
            out.append("no grade (undone)", style="dim")
        else:
            out.append("no grade", style="dim")
        if state is not None and state.note and state.note not in (marks.flag_note, marks.comment):
            out.append("\n")
            out.append_text(literal(state.note, "italic"))
        if marks.flagged:
            out.append("\n⚑ flagged", style="bold red")
            if marks.flag_note:
                out.append(": ", style="bold red")
                out.append_text(literal(marks.flag_note, "italic"))
        if marks.comment:
            out.append("\ncomment: ", style="bold")
            out.append_text(literal(marks.comment, "italic"))
        if answer is not None:
            out.append("\n✓ resolved by " if answer.action == "resolve" else "\n↩ sent back by ",
                       style="bold green")
            out.append_text(literal(answer.by + (f": {answer.note}" if answer.note else ""), "italic"))
        return out

    def _facets_text(self, facets: list[judging_facets.FacetView], nuggets: list[judging_facets.NuggetView]) -> Text:
        if not facets and not nuggets:
            return Text("none yet — g to add", style="dim")
        out = Text()
        for f in facets:
            out.append("■ " if f.covered else "□ ", style="green" if f.covered else "dim")
            out.append_text(literal(f.name))
            out.append("\n")
        marks = {"full": ("●", "green"), "partial": ("◐", "yellow"), "none": ("○", "dim")}
        for n in nuggets:
            mark, style = marks.get(n.support, ("○", "dim"))
            out.append(mark + " ", style=style)
            if n.kind == "claim":
                out.append("claim ", style="italic")
            if n.importance == "vital":
                out.append("vital ", style="bold")
            out.append_text(literal(n.text))
            out.append("\n")
        out.rstrip()
        return out

    def _show_progress(self) -> None:
        pair = self.pair
        parts: list[Part] = []
        if pair is not None:
            parts.append(Part(Text(f"pair {pair.query_slot + 1} of {pair.query_pairs} in this query "
                                   f"({pair.query_handled} judged)"),
                              Text(f"pair {pair.query_slot + 1}/{pair.query_pairs} "
                                   f"({pair.query_handled} judged)")))
            parts.append(Part(Text(f"query {pair.position.query + 1:,} of {len(self.queue.query_ids):,}"),
                              Text(f"query {pair.position.query + 1:,}/{len(self.queue.query_ids):,}")))
        totals = self.queue.totals
        if totals is not None and totals["pairs"]:
            share = f"{totals['handled'] / totals['pairs']:.0%}"
            parts.append(Part(Text(f"{share} of your queue ({totals['handled']:,}/{totals['pairs']:,})"),
                              Text(f"{share} of your queue")))
        else:
            parts.append(Part(Text("queue: counting…")))
        if self.queue.until_settled:  # what --until-settled waits for
            still = self.queue.still_open
            if still is None:
                parts.append(Part(Text("comparisons: weighing…")))
            else:
                plural = "s" if still[0] != 1 else ""
                parts.append(Part(Text(f"{still[0]:,} of {still[1]:,} comparisons open"),
                                  Text(f"{still[0]:,} comparison{plural} open")))
        if self.session_start is not None and self.session_labels:
            hours = max(time.monotonic() - self.session_start, 60.0) / 3600
            parts.append(Part(Text(f"{self.session_labels / hours:,.0f} labels/h")))
        self._show_bar("#progress", parts)
        self._show_bar("#topbar", self._top_parts(pair))

    def _show_bar(self, selector: str, parts: Sequence[Part]) -> None:
        """Fill a bar only when what it says changed (as :meth:`_update` does for panels)."""
        key = ("bar", *((p.text.plain, p.short and p.short.plain) for p in parts))
        if self._shown.get(selector, _UNSET) != key:
            self._shown[selector] = key
            self.query_one(selector, FitBar).show(*parts)

    def _top_parts(self, pair: PairView | None) -> tuple[Part, ...]:
        """The top line: the project, who judges, the order, the pool, whether it is blind (at
        80 columns in short forms, the project's name cut first)."""
        queue = self.queue
        order, short_order = Text(f"order {queue.order}"), None
        if queue.order == "depth" and pair is not None:
            rnd, rounds = pair.position.round + 1, len(queue.rounds)
            order = Text(f"order depth (round {rnd} of {rounds}: top {queue.rounds[pair.position.round]})")
            short_order = Text(f"round {rnd}/{rounds}")
        who = Text("annotator ")
        who.append_text(literal(queue.annotator, "bold"))
        parts = [Part(literal(self.project_name, "bold"), cut=True),
                 Part(who, literal(queue.annotator, "bold")),
                 Part(order, short_order),
                 Part(Text(f"pool top {queue.depth}"))]
        if queue.assigned:
            parts.append(Part(Text("your assignment"), Text("assigned")))
        if not queue.show_source:
            parts.append(Part(Text("blind")))
        return tuple(parts)

    @work(thread=True, exclusive=True, group="totals")
    def count_totals(self) -> None:
        self.queue.count_totals()
        self.post_message(self.TotalsCounted())

    def on_judge_screen_totals_counted(self, _message: TotalsCounted) -> None:
        self._show_progress()

    # -- recording -------------------------------------------------------------------------

    def _elapsed_ms(self) -> int:
        return int((time.monotonic() - self.shown_at) * 1000)

    def _recorded(self, state: LabelState | None, *, move_on: bool) -> None:
        pair = self.pair
        assert pair is not None
        if not pair.recheck:
            self.queue.note_event(pair.query_id, pair.chunk_id, state)
        if move_on:
            nxt = None if pair.recheck else self.queue.maybe_recheck(pair)
            self.pair = nxt or self.queue.after(pair.position)
        else:
            self.pair = self.queue.refresh(pair) if not pair.recheck else pair

    def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
        try:
            return fn(*args, **kwargs)
        except judging_events.LabelConflict as exc:
            self._conflicted(exc)
            return None
        except RagjudgeError as exc:
            self.notify(str(exc), severity="error", timeout=8)
            return None

    def _conflicted(self, exc: judging_events.LabelConflict) -> None:
        """Another session wrote on the pair since it was shown: show what stands, stay."""
        pair = self.pair
        self.notify(str(exc), severity="warning", timeout=10)
        if pair is None:
            return
        self.queue.note_event(pair.query_id, pair.chunk_id, exc.current)
        self.pair = self.queue.refresh(pair)

    def _viewer_access(self):  # noqa: ANN202 - Access
        """What the annotator at this screen may see (the app's identity)."""
        return host(self.app, self.project).access()

    @staticmethod
    def _seen(pair: PairView) -> int | None:
        """The id of the annotator's label event the screen shows for ``pair`` (None: none)."""
        return None if pair.state is None else pair.state.id

    def action_grade(self, grade: int) -> None:
        pair = self.pair
        if pair is None:
            return
        if not self.scale.contains(grade):
            self.notify(f"{grade} is not on this project's scale ({self.scale.describe()}).",
                        severity="warning")
            return
        duration = self._elapsed_ms()
        event_id = self._run(judging_events.record_label, self.project, annotator=self.queue.annotator,
                             query_id=pair.query_id, chunk_id=pair.chunk_id, grade=grade,
                             duration_ms=duration, source="recheck" if pair.recheck else "tui",
                             seen=self._seen(pair))
        if event_id is None:
            return
        self._count_label()
        # a grade event is a whole new label state (flags and comments are marks, untouched)
        self._recorded(LabelState(event_id, grade, False, None, None, None, "tui"), move_on=True)
        if not pair.recheck:
            self._reveal_llm(pair.query_id, pair.chunk_id, grade)

    def _reveal_llm(self, query_id: str, chunk_id: str, grade: int) -> None:
        """With the project's setting on, the LLM's grade of the pair just graded, in one line:
        only after the annotator's own grade is on disk, never before."""
        from ragjudge.services.labels import llmhints as llm_judge

        if getattr(self, "_llm_reveal", None) is None:
            self._llm_reveal = self._run(llm_judge.reveal_after_grading, self.project) or False
        if not self._llm_reveal:
            return
        words = self._run(llm_judge.llm_grades, self.project, query_id, chunk_id,
                          access=self._viewer_access()) or []
        if words:
            said = ", ".join(f"{name} {'no grade (unparsed)' if g is None else g}" for name, g in words)
            self.notify(f"You gave {grade}; the LLM gave: {said}.", title="LLM", markup=False, timeout=4)

    def _grade_words(self, grade: int) -> str:
        """``2 (Partly)``: a grade with its name, made safe to show."""
        if not self.scale.contains(grade):
            return str(grade)
        return f"{grade} ({visible(self.scale.level(grade).name)})"

    def action_binary(self, grade: int) -> None:
        if not self.scale.is_binary:
            self.notify("y/n work on a binary scale; use the digit keys of this scale.",
                        severity="warning")
            return
        self.action_grade(grade)

    def _count_label(self) -> None:
        now = time.monotonic()
        if self.session_start is None:
            self.session_start = now
        self.session_labels += 1

    def action_skip(self) -> None:
        pair = self.pair
        if pair is None:
            return
        event_id = self._run(judging_events.skip_pair, self.project, annotator=self.queue.annotator,
                             query_id=pair.query_id, chunk_id=pair.chunk_id,
                             duration_ms=self._elapsed_ms(),
                             source="recheck" if pair.recheck else "tui", seen=self._seen(pair))
        if event_id is None:
            return
        self._recorded(LabelState(event_id, None, True, None, None, None, "tui"), move_on=True)

    def _marked(self, pair: PairView, marks: judging_marks.PairMarks, message: str) -> None:
        """Show the pair's flag and comment just written (the pair stays on screen)."""
        self.queue.note_marks(pair.query_id, pair.chunk_id, marks)
        self.notify(message)
        if self.pair == pair:
            self.pair = self.queue.refresh(pair)

    def action_flag(self) -> None:
        pair = self.pair
        if pair is None or pair.recheck:
            return
        from ragjudge.tui.screens.prompts import ConfirmPrompt, TextPrompt

        where = dict(annotator=self.queue.annotator, query_id=pair.query_id, chunk_id=pair.chunk_id)
        if pair.marks.flagged:
            def unflag(yes: bool | None) -> None:
                if not yes:
                    return
                marks = self._run(judging_events.unflag_pair, self.project, **where)
                if marks is not None:
                    self._marked(pair, marks, "Flag removed.")

            note = f" (note: {pair.marks.flag_note})" if pair.marks.flag_note else ""
            self.app.push_screen(ConfirmPrompt(f"This pair is flagged{note}. Remove your flag?"),
                                 unflag)
            return

        def done(note: str | None) -> None:
            if note is None:
                return
            marks = self._run(judging_events.flag_pair, self.project, note=note or None, **where)
            if marks is not None:
                self._marked(pair, marks, "Flagged for review.")

        self.app.push_screen(TextPrompt("Flag this pair for review — note (optional):",
                                        placeholder="why it needs a second look", allow_empty=True), done)

    def action_comment(self) -> None:
        pair = self.pair
        if pair is None or pair.recheck:
            return
        from ragjudge.tui.screens.prompts import TextPrompt

        current = pair.marks.comment or ""

        def done(note: str | None) -> None:
            if note is None or (not note and not current):
                return
            marks = self._run(judging_events.comment_pair, self.project, annotator=self.queue.annotator,
                              query_id=pair.query_id, chunk_id=pair.chunk_id, note=note)
            if marks is not None:
                self._marked(pair, marks, "Comment saved." if note else "Comment removed.")

        self.app.push_screen(TextPrompt("Comment on this pair (an empty comment removes it):",
                                        value=current, allow_empty=True), done)

    def action_undo(self) -> None:
        result = self._run(judging_events.undo_last, self.project, self.queue.annotator)
        if result is None:
            self.notify("Nothing to undo.")
            return
        if result.source == judging_events.RECHECK:
            self.notify("Undid your last recheck.")
            return
        state = self.queue.reload_state(result.query_id, result.chunk_id)
        if self.session_labels:
            self.session_labels -= 1
        view = self.queue.goto_pair(result.query_id, result.chunk_id)
        self.notify("Undone: the pair is back." if state is None or state.grade is None
                    else f"Undone: back to grade {self._grade_words(state.grade)}.", markup=False)
        if view is not None:
            self.pair = view

    # -- moving ----------------------------------------------------------------------------

    def action_next(self) -> None:
        if self.pair is None:
            self.notify("This is the end of your queue: k goes back.")
            return
        nxt = self.queue.step(self.pair.position, +1)
        if nxt is None:
            self.notify("This is the last pair of your queue.")
            return
        self.pair = nxt

    def action_previous(self) -> None:
        if self.pair is None:  # past the end: the last pair of the queue order
            view = self.queue.end(-1)
            if view is not None:
                self.pair = view
            return
        prev = self.queue.step(self.pair.position, -1)
        if prev is None:
            self.notify("This is the first pair of your queue.")
            return
        self.pair = prev

    def _goto_query(self, delta: int) -> None:
        """The next or previous query in the queue order (the order j and k walk)."""
        if self.pair is None:  # past the end: [ goes to the last query's first pair
            last = self.queue.end(-1) if delta < 0 else None
            view = None if last is None else self.queue.view(
                judging_queue.Position(last.position.round, last.position.query, 0))
        else:
            view = self.queue.step_query(self.pair.position, delta)
        if view is None:
            self.notify("No more queries that way.")
            return
        self.pair = view

    def action_next_query(self) -> None:
        self._goto_query(+1)

    def action_previous_query(self) -> None:
        self._goto_query(-1)

    def action_find(self) -> None:
        from ragjudge.tui.screens.prompts import FindQuery

        def done(query_id: str | None) -> None:
            if query_id is None:
                return
            pos = self.queue.query_position(query_id)
            if pos is not None:
                view = self.queue.goto_query(pos)
                if view is not None:
                    self.pair = view

        self.app.push_screen(FindQuery(self.queue.find_queries), done)

    def action_history(self) -> None:
        from ragjudge.tui.screens.history import HistoryScreen

        def done(chosen: tuple[str, str] | None) -> None:
            if chosen is None:
                return
            view = self.queue.goto_pair(*chosen)
            if view is None:
                self.notify("That pair is not in this queue (other queries, runs or depth): "
                            "open judging with them to relabel it.", severity="warning")
                return
            self.pair = view

        self.app.push_screen(HistoryScreen(self.project, self.queue.annotator, self.scale), done)

    def action_document(self) -> None:
        pair = self.pair
        if pair is None:
            return
        chunk = judging_texts.chunk_text(self.project, pair.chunk_id)
        if not chunk.doc_id:
            self.notify("This chunk has no doc_id: there is no document to show it in.")
            return
        from ragjudge.tui.screens.neighbours import NeighboursScreen

        terms = query_terms(self._query(pair.query_id).text)
        self.app.push_screen(NeighboursScreen(self.project, chunk.id, chunk.doc_id, terms))

    # -- other screens ---------------------------------------------------------------------

    def action_facets(self) -> None:
        pair = self.pair
        if pair is None:
            return
        from ragjudge.tui.screens.facets import FacetsScreen

        def done(_: object) -> None:
            if self.pair is not None:
                self._show_marks(self.pair)

        self.app.push_screen(FacetsScreen(self.project, self.queue.annotator, pair.query_id,
                                          pair.chunk_id), done)

    def help_rows(self) -> list[HelpRow]:
        return key_rows(scale=self.scale)
