"""The answer-judging screen: a run's generated answer, sentence by sentence, judged as the TREC
2024 RAG track's assessors did — blind to the run.

On screen: the query and its description; the query's nuggets, each with the support this
annotator says the whole answer gives it; the answer, sentence by sentence with its citations;
and the cited chunk of the sentence in focus. One list of things to judge runs through the
answer: first the nuggets, then every (sentence, cited chunk) in reading order. ``2``/``f``,
``1``/``p`` and ``0``/``x`` say full, partial or no support for the thing in focus and move on;
``↑``/``↓`` move without judging, ``c`` shows the sentence's next cited chunk, ``[``/``]`` the
previous or next answer.

Durability: every judging key calls :func:`ragjudge.services.labels.answers.record_answer_judgment`
synchronously; the call returns once the event is committed, and only then does the focus move.
Undo writes a new event (:func:`~ragjudge.services.labels.answers.undo_last_answer_judgment`). Text from
data is shown through :mod:`ragjudge.tui.widgets.literal` (never as markup).
"""

from __future__ import annotations

import time

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from ragjudge.errors import RagjudgeError
from ragjudge.safetext import for_terminal
from ragjudge.services.labels import answers
from ragjudge.services.labels import texts as judging
from ragjudge.services.labels.answers import AnswerItem, AnswerQueue, AnswerView
from ragjudge.tui.screens.session import SessionActions
from ragjudge.tui.widgets.literal import highlighted, literal, query_terms

#: (keys, action, footer name, help text, shown in the footer)
ANSWER_KEYS = (
    ("2,f", "support('full')", "full", "Full support for the nugget or citation in focus; move on.", True),
    ("1,p", "support('partial')", "partial", "Partial support for the nugget or citation in focus; move on.", True),
    ("0,x", "support('none')", "none", "No support for the nugget or citation in focus; move on.", True),
    ("down,j", "move(1)", "next", "The next nugget or citation, without judging.", True),
    ("up,k", "move(-1)", "prev", "The previous nugget or citation, without judging.", False),
    ("c", "next_chunk", "chunk", "Show the next chunk the sentence in focus cites.", True),
    ("right_square_bracket,right", "answer(1)", "answer", "The next answer.", True),
    ("left_square_bracket,left", "answer(-1)", "previous answer", "The previous answer.", False),
    ("u,ctrl+z", "undo", "undo", "Undo your last judgment of an answer (a new event).", True),
    ("g", "nuggets", "nuggets", "The query's facets and nuggets: add, edit, remove.", True),
    ("h", "guidelines", "guide", "The project's judging guidelines.", False),
    ("e", "evaluation", "eval", "The evaluation screen (scores of every run, live).", True),
    ("a", "agreement", "agree", "The agreement screen.", False),
    ("question_mark", "help", "help", "This list of keys.", True),
    ("q", "quit", "quit", "Quit (every judgment is already saved).", True),
)

MARKS = {"full": ("●", "green"), "partial": ("◐", "yellow"), "none": ("○", "red"), None: ("·", "dim")}
WORDS = {"full": "full", "partial": "partial", "none": "none", None: "not judged"}


def key_rows() -> list[tuple[str, str, str]]:
    """(key, action, text) for the help screen."""
    shown = {"down,j": "↓ / j", "up,k": "↑ / k", "right_square_bracket,right": "] / →",
             "left_square_bracket,left": "[ / ←", "question_mark": "?", "u,ctrl+z": "u / ctrl+z"}
    return [(shown.get(k, " / ".join(k.split(","))), name, text) for k, _, name, text, _ in ANSWER_KEYS]


class AnswerJudgeScreen(SessionActions, Screen):
    """Judge the answers of an :class:`AnswerQueue`: nugget support and citation support."""

    HELP_TITLE = "Answer-judging keys"

    DEFAULT_CSS = """
    AnswerJudgeScreen #answers-main { height: 1fr; }
    AnswerJudgeScreen #answers-side { width: 46; height: 100%; }
    AnswerJudgeScreen #answer-query { height: auto; max-height: 12; }
    AnswerJudgeScreen #answer-nuggets { height: 1fr; min-height: 5; }
    AnswerJudgeScreen #answers-right { width: 1fr; height: 100%; }
    AnswerJudgeScreen #answer-scroll { height: 1fr; min-height: 6; }
    AnswerJudgeScreen #cited-scroll { height: 1fr; min-height: 6; }
    AnswerJudgeScreen #answer-scroll:focus { border: round $accent; }
    """

    BINDINGS = [
        Binding(keys, action, name, show=show, priority=True, tooltip=text,
                key_display={"2,f": "2f", "1,p": "1p", "0,x": "0x", "down,j": "↓j",
                             "right_square_bracket,right": "]→", "question_mark": "?"}.get(keys))
        for keys, action, name, text, show in ANSWER_KEYS
    ] + [Binding("escape", "home", "home", show=False)]
    ACTION_NAMES = {action: name for _, action, name, _, _ in ANSWER_KEYS}

    def __init__(self, project, queue: AnswerQueue, *, from_home: bool = False) -> None:  # noqa: ANN001
        super().__init__()
        self.project = project
        self.queue = queue
        self.from_home = from_home
        self.project_name = project.name
        self.position: int | None = None
        self.view: AnswerView | None = None
        self.focus_index = 0
        self.sentence_focus = 0
        self.chunk_focus = 0
        self.shown_at = time.monotonic()
        self._queries: dict[str, judging.QueryText] = {}

    def compose(self) -> ComposeResult:
        yield Static(id="topbar")
        with Horizontal(id="answers-main"):
            with Vertical(id="answers-side"):
                yield Static(id="answer-query", classes="panel")
                yield Static(id="answer-nuggets", classes="panel")
            with Vertical(id="answers-right"):
                with VerticalScroll(id="answer-scroll", classes="panel"):
                    yield Static(id="answer-text")
                with VerticalScroll(id="cited-scroll", classes="panel"):
                    yield Static(id="cited-text")
        yield Static(id="progress")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.query_one("#answer-query").border_title = "query"
        self.query_one("#answer-nuggets").border_title = "nuggets: support by the whole answer"
        self.query_one("#answer-scroll").focus()
        if len(self.queue):
            start = self.queue.first_open()
            self._open(0 if start is None else start)
        else:
            self._show()

    # -- moving --------------------------------------------------------------------------

    def _open(self, position: int, key: tuple | None = None) -> None:
        """Show the answer at ``position``, the focus on ``key`` or on its first open item."""
        self.position = position
        self.view = self.queue.view(position)
        index = self.view.index(key) if key is not None else None
        if index is None:
            index = next((i for i, item in enumerate(self.view.items) if item.support is None), 0)
        self._focus(index)

    def _focus(self, index: int) -> None:
        view = self.view
        if view is not None and view.items:
            self.focus_index = max(0, min(index, len(view.items) - 1))
            item = view.items[self.focus_index]
            if not item.is_nugget:
                self.sentence_focus = item.sentence
                cites = view.sentences[item.sentence].citations
                self.chunk_focus = cites.index(item.chunk_id) if item.chunk_id in cites else 0
            elif self.sentence_focus >= len(view.sentences):
                self.sentence_focus, self.chunk_focus = 0, 0
        else:
            self.focus_index, self.sentence_focus, self.chunk_focus = 0, 0, 0
        self.shown_at = time.monotonic()
        self._show()

    def _reload(self, key: tuple | None = None) -> None:
        if self.position is not None:
            keep = key if key is not None else self._item_key()
            self._open(self.position, keep)

    def _item(self) -> AnswerItem | None:
        if self.view is None or not self.view.items:
            return None
        return self.view.items[self.focus_index]

    def _item_key(self) -> tuple | None:
        item = self._item()
        return None if item is None else item.key

    def action_move(self, delta: int) -> None:
        if self.view is not None and self.view.items:
            self._focus((self.focus_index + delta) % len(self.view.items))

    def action_next_chunk(self) -> None:
        view = self.view
        if view is None or not view.sentences:
            return
        cites = view.sentences[self.sentence_focus].citations
        if not cites:
            self.notify("This sentence cites no chunk.")
            return
        self.chunk_focus = (self.chunk_focus + 1) % len(cites)
        self._show()

    def action_answer(self, delta: int) -> None:
        if self.position is None or not len(self.queue):
            return
        target = self.position + delta
        if not 0 <= target < len(self.queue):
            self.notify("No more answers that way.")
            return
        self._open(target)

    # -- judging -------------------------------------------------------------------------

    def action_support(self, support: str) -> None:
        item, view = self._item(), self.view
        if item is None or view is None:
            self.notify("Nothing to judge in this answer: no nugget (g adds one) and no citation.",
                        severity="warning")
            return
        try:
            answers.record_answer_judgment(
                self.project, annotator=self.queue.annotator, answer_id=view.answer_id,
                support=support, nugget_id=item.nugget_id, sentence=item.sentence,
                chunk_id=item.chunk_id, duration_ms=int((time.monotonic() - self.shown_at) * 1000))
        except RagjudgeError as exc:
            self.notify(for_terminal(exc), severity="error", timeout=8, markup=False)
            return
        # the event is committed: now the screen moves on
        self._move_on(self.focus_index, was_open=item.support is None)

    def _move_on(self, done: int, *, was_open: bool) -> None:
        """After a judgment of item ``done``: the next item still to judge in this answer;
        when the answer is complete, the next answer with something to judge (revising an
        answer already complete steps through it)."""
        self.view = self.queue.view(self.position)
        self.queue.note(self.view)
        items = self.view.items
        still_open = [i for i, it in enumerate(items) if it.support is None]
        later = [i for i in still_open if i > done]
        if later or still_open:
            self._focus((later or still_open)[0])
            return
        if not was_open and done + 1 < len(items):
            self._focus(done + 1)
            return
        nxt = self.queue.first_open(self.position + 1)
        if nxt is not None and nxt != self.position:
            self._open(nxt)
            return
        self.notify("Every answer of your queue is judged. Thank you!")
        self._focus(done)

    def action_undo(self) -> None:
        try:
            result = answers.undo_last_answer_judgment(self.project, self.queue.annotator)
        except RagjudgeError as exc:
            self.notify(for_terminal(exc), severity="error", timeout=8, markup=False)
            return
        if result is None:
            self.notify("Nothing to undo.")
            return
        position = self.queue.position_of(result.answer_id)
        if position is None:
            self.notify("Undone (an answer outside this queue).")
            return
        self._open(position, (result.nugget_id, result.sentence, result.chunk_id))
        self.queue.note(self.view)
        self.notify("Undone: " + ("back to not judged." if result.support is None
                                  else f"back to {result.support}."))

    # -- other screens -------------------------------------------------------------------

    def action_nuggets(self) -> None:
        view = self.view
        if view is None:
            return
        from ragjudge.tui.screens.facets import FacetsScreen

        chunk = self._chunk_in_view()
        self.app.push_screen(FacetsScreen(self.project, self.queue.annotator, view.query_id, chunk),
                             lambda _: self._reload())

    def help_rows(self) -> list[tuple[str, str, str]]:
        return key_rows()

    def on_screen_resume(self) -> None:
        self._reload()

    # -- showing -------------------------------------------------------------------------

    def _chunk_in_view(self) -> str | None:
        view = self.view
        if view is None or not view.sentences:
            return None
        cites = view.sentences[self.sentence_focus].citations
        return cites[self.chunk_focus] if cites else None

    def _query(self, query_id: str) -> judging.QueryText:
        if query_id not in self._queries:
            self._queries[query_id] = judging.query_text(self.project, query_id)
        return self._queries[query_id]

    def _show(self) -> None:
        with self.app.batch_update():
            self._show_top()
            if self.view is None:
                self._show_empty()
                return
            q = self._query(self.view.query_id)
            self.query_one("#answer-query", Static).update(self._query_text(q))
            self.query_one("#answer-nuggets", Static).update(self._nuggets_text())
            self._show_answer()
            self._show_chunk(q)
            self._show_progress()

    def _show_empty(self) -> None:
        message = ("There is no generated answer to judge here. Import answers first (ragjudge "
                   "import answers FILE), or widen --runs, --queries or --category.\n\nq quits.")
        self.query_one("#answer-text", Static).update(Text(message))
        self.query_one("#progress", Static).update(Text(""))

    def _show_top(self) -> None:
        top = Text()
        top.append_text(literal(self.project_name, "bold"))
        top.append("  ·  annotator ")
        top.append_text(literal(self.queue.annotator, "bold"))
        top.append("  ·  judging answers")
        if self.queue.show_source and self.view is not None:
            top.append("  ·  run ")
            top.append_text(literal(self.view.run, "italic"))
        else:
            top.append("  ·  blind")
        self.query_one("#topbar", Static).update(top)

    def _query_text(self, q: judging.QueryText) -> Text:
        out = literal(q.id, "bold cyan")
        if q.category:
            out.append("  ")
            out.append_text(literal(q.category, "italic magenta"))
        out.append("\n")
        out.append_text(literal(q.text, "bold"))
        if q.description:
            out.append("\n\n")
            out.append_text(literal(q.description))
        return out

    @staticmethod
    def _rows() -> Table:
        """Two columns (a mark, then text): wrapped text stays clear of the marks."""
        table = Table.grid(padding=(0, 1))
        table.add_column(no_wrap=True)
        table.add_column(ratio=1)
        return table

    def _nuggets_text(self) -> Table | Text:
        view = self.view
        nuggets = [(i, item) for i, item in enumerate(view.items) if item.is_nugget]
        if not nuggets:
            return Text("no nuggets yet — g to add", style="dim")
        table = self._rows()
        for i, item in nuggets:
            focused = i == self.focus_index
            mark, style = MARKS[item.support]
            head = Text("▶ " if focused else "  ", style="bold")
            head.append(mark, style=style)
            text = Text()
            if item.vital:
                text.append("vital ", style="bold")
            text.append_text(literal(item.nugget, "reverse" if focused else ""))
            table.add_row(head, text)
        legend = Text()
        for support in ("full", "partial", "none", None):
            mark, style = MARKS[support]
            legend.append(mark + " ", style=style)
            legend.append(("not yet" if support is None else WORDS[support]) + "  ", style="dim")
        table.add_row(Text(""), Text(""))
        table.add_row(Text(""), legend.rstrip() or legend)
        return table

    def _show_answer(self) -> None:
        view = self.view
        scroll = self.query_one("#answer-scroll", VerticalScroll)
        same_query = [a for a, q in zip(self.queue.answer_ids, self.queue.query_ids) if q == view.query_id]
        title = Text("answer ")
        title.append(f"{same_query.index(view.answer_id) + 1} of {len(same_query)}", style="bold")
        title.append(" to this query")
        scroll.border_title = title
        if not view.sentences:
            self.query_one("#answer-text", Static).update(Text("(the answer is empty)", style="dim"))
            return
        focus = self._item()
        table = self._rows()
        for s, sentence in enumerate(view.sentences):
            in_focus = s == self.sentence_focus and (focus is None or not focus.is_nugget)
            out = literal(sentence.text, "bold" if in_focus else "")
            for chunk in sentence.citations:
                item_index = view.index((None, s, chunk))
                support = view.items[item_index].support if item_index is not None else None
                mark, style = MARKS[support]
                focused = focus is not None and item_index == self.focus_index
                out.append(" [", style="dim")
                out.append_text(literal(chunk, "reverse" if focused else "italic"))
                out.append(" " + mark, style=style)
                out.append("]", style="dim")
            table.add_row(Text(f"{s + 1:>2}", style="bold cyan" if in_focus else "dim"), out)
        self.query_one("#answer-text", Static).update(table)

    def _show_chunk(self, q: judging.QueryText) -> None:
        view = self.view
        scroll = self.query_one("#cited-scroll", VerticalScroll)
        chunk_id = self._chunk_in_view()
        if chunk_id is None:
            scroll.border_title = "cited chunk"
            self.query_one("#cited-text", Static).update(
                Text("This sentence cites no chunk." if view.sentences else "", style="dim"))
            return
        cites = view.sentences[self.sentence_focus].citations
        chunk = judging.chunk_text(self.project, chunk_id)
        title = Text("chunk ")
        title.append_text(literal(chunk_id, "bold"))
        title.append(f"  cited by sentence {self.sentence_focus + 1}")
        if len(cites) > 1:
            title.append(f"  ({self.chunk_focus + 1} of {len(cites)}; c: next)")
        scroll.border_title = title
        self.query_one("#cited-text", Static).update(highlighted(chunk.text, query_terms(q.text)))
        if scroll.scroll_y:
            scroll.scroll_home(animate=False)

    def _show_progress(self) -> None:
        view = self.view
        item = self._item()
        parts = []
        if item is None:
            parts.append("nothing to judge here (g adds nuggets)")
        elif item.is_nugget:
            parts.append(f"the answer supports this nugget? ({WORDS[item.support]})")
        else:
            parts.append(f"chunk {item.chunk_id} supports sentence {item.sentence + 1}? "
                         f"({WORDS[item.support]})")
        judged = len(view.items) - view.open
        parts.append(f"{judged} of {len(view.items)} judged")
        done, total = self.queue.progress()
        parts.append(f"answer {self.position + 1:,} of {len(self.queue):,}")
        parts.append(f"{done:,} of {total:,} answers done")
        self.query_one("#progress", Static).update(literal("  ·  ".join(parts)))
