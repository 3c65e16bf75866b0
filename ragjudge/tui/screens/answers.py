"""The answer-judging screen: a run's generated answer, sentence by sentence, judged as the TREC
2024 RAG track's assessors did — blind to the run.

On screen: the query and its description; the query's nuggets, each with the support this
annotator says the whole answer gives it; the answer, sentence by sentence with its citations;
and the cited chunk of the sentence in focus. One list of things to judge runs through the
answer: first the nuggets, then every (sentence, cited chunk) in reading order. ``2``/``f``,
``1``/``p`` and ``0``/``x`` say full, partial or no support for the thing in focus and move on;
``↑``/``↓`` move without judging, ``c`` moves to the sentence's next cited chunk, ``[``/``]`` the
previous or next answer.

One piece of state says what is on screen: :attr:`AnswerJudgeScreen.shown` (the answer and the
item in focus). Every panel and the prompt line are drawn from it, and every key acts on it, so a
key always judges the nugget or citation the prompt names: the cited chunk shown is the focused
item's chunk, never a second "current chunk" that could drift from it.

Durability: every judging key calls :func:`ragjudge.services.labels.answers.record_answer_judgment`
synchronously; the call returns once the event is committed, and only then does the focus move.
Undo writes a new event (:func:`~ragjudge.services.labels.answers.undo_last_answer_judgment`). Text from
data is shown through :mod:`ragjudge.tui.widgets.literal` (never as markup).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Static

from ragjudge.errors import RagjudgeError
from ragjudge.safetext import for_terminal
from ragjudge.services.labels import answers
from ragjudge.services.labels import texts as judging
from ragjudge.services.labels.answers import AnswerItem, AnswerQueue, AnswerView
from ragjudge.tui.screens.session import SessionActions
from ragjudge.tui.widgets.fitted import FitBar, Fitted, Part
from ragjudge.tui.widgets.footer import PriorityFooter
from ragjudge.tui.widgets.literal import highlighted, literal, query_terms

#: (keys, action, footer name, help text, shown in the footer)
ANSWER_KEYS = (
    ("2,f", "support('full')", "full", "Full support for the nugget or citation in focus; move on.", True),
    ("1,p", "support('partial')", "partial", "Partial support for the nugget or citation in focus; move on.", True),
    ("0,x", "support('none')", "none", "No support for the nugget or citation in focus; move on.", True),
    ("down,j", "move(1)", "next item", "The next nugget or citation, without judging.", True),
    ("up,k", "move(-1)", "previous item", "The previous nugget or citation, without judging.", False),
    ("c", "next_chunk", "next chunk", "The next chunk the sentence in focus cites (its citation "
     "comes into focus).", True),
    ("right_square_bracket,right", "answer(1)", "next answer", "The next answer.", True),
    ("left_square_bracket,left", "answer(-1)", "previous answer", "The previous answer.", False),
    ("u,ctrl+z", "undo", "undo", "Undo your last judgment of an answer (a new event).", True),
    ("g", "nuggets", "nuggets", "The query's facets and nuggets: add, edit, remove.", True),
    ("h", "guidelines", "guidelines", "The project's judging guidelines.", False),
    ("e", "evaluation", "evaluation", "The evaluation screen (scores of every run, live).", True),
    ("a", "agreement", "agreement", "The agreement screen.", False),
    ("question_mark", "help", "help", "This list of keys.", True),
    ("q", "quit", "quit", "Quit (every judgment is already saved).", True),
)

MARKS = {"full": ("●", "green"), "partial": ("◐", "yellow"), "none": ("○", "red"), None: ("·", "dim")}
WORDS = {"full": "full", "partial": "partial", "none": "none", None: "not judged"}

KEY_DISPLAY = {"2,f": "2/f", "1,p": "1/p", "0,x": "0/x", "down,j": "↓/j", "up,k": "↑/k",
               "right_square_bracket,right": "]/→", "left_square_bracket,left": "[/←",
               "u,ctrl+z": "u", "question_mark": "?"}
"""How the footer shows each key: every key that does the thing, then what it does."""


def key_rows() -> list[tuple[str, str, str]]:
    """(key, action, text) for the help screen."""
    shown = {"down,j": "↓ / j", "up,k": "↑ / k", "right_square_bracket,right": "] / →",
             "left_square_bracket,left": "[ / ←", "question_mark": "?", "u,ctrl+z": "u / ctrl+z"}
    return [(shown.get(k, " / ".join(k.split(","))), name, text) for k, _, name, text, _ in ANSWER_KEYS]


class AnswerScroll(VerticalScroll, inherit_bindings=False):
    """The answer's panel: scrolled by page, home and end. The arrows and ``j``/``k`` are the
    screen's (they move the focus between nuggets and citations), so the footer lists the
    screen's keys in the screen's order."""

    BINDINGS = [Binding("pageup", "page_up", show=False), Binding("pagedown", "page_down", show=False),
                Binding("home", "scroll_home", show=False), Binding("end", "scroll_end", show=False)]


@dataclass(frozen=True)
class Focus:
    """What the screen shows and what a key acts on: the answer at ``position`` of the queue
    (``view``, as read when shown) and the item in focus (``index`` into its items)."""

    position: int
    view: AnswerView
    index: int = 0

    @property
    def item(self) -> AnswerItem | None:
        return self.view.items[self.index] if self.view.items else None

    @property
    def sentence(self) -> int | None:
        """The sentence in focus: the focused citation's (None on a nugget)."""
        item = self.item
        return None if item is None or item.is_nugget else item.sentence

    @property
    def chunk_id(self) -> str | None:
        """The cited chunk on screen: the focused citation's (None on a nugget)."""
        item = self.item
        return None if item is None or item.is_nugget else item.chunk_id

    def at(self, index: int) -> Focus:
        """The same answer, the focus on item ``index`` (kept within the items)."""
        last = max(len(self.view.items) - 1, 0)
        return Focus(self.position, self.view, max(0, min(index, last)))


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

    BINDINGS: ClassVar[list[BindingType]] = [
        *(Binding(keys, action, name, show=show, priority=True, tooltip=text,
                  key_display=KEY_DISPLAY.get(keys))
          for keys, action, name, text, show in ANSWER_KEYS),
        Binding("escape", "home", "home", show=False),
    ]
    ACTION_NAMES = {action: name for _, action, name, _, _ in ANSWER_KEYS}
    FOOTER_PRIORITY = {"support('full')": 0, "support('partial')": 0, "support('none')": 0,
                       "help": 0, "quit": 0, "move(1)": 1, "answer(1)": 1, "undo": 1,
                       "next_chunk": 2, "nuggets": 2, "evaluation": 3}
    """What a narrow footer keeps first (see PriorityFooter)."""

    shown: reactive[Focus | None] = reactive(None, always_update=True, init=False)
    """The answer and the item on screen (None: nothing to judge). Every panel is drawn from
    it and every key acts on it."""

    def __init__(self, project, queue: AnswerQueue, *, from_home: bool = False) -> None:  # noqa: ANN001
        super().__init__()
        self.project = project
        self.queue = queue
        self.from_home = from_home
        self.project_name = project.name
        self.shown_at = time.monotonic()
        self._queries: dict[str, judging.QueryText] = {}

    @property
    def view(self) -> AnswerView | None:
        return None if self.shown is None else self.shown.view

    @property
    def position(self) -> int | None:
        return None if self.shown is None else self.shown.position

    @property
    def focus_index(self) -> int:
        return 0 if self.shown is None else self.shown.index

    def compose(self) -> ComposeResult:
        yield FitBar(id="topbar")
        with Horizontal(id="answers-main"):
            with Vertical(id="answers-side"):
                yield Fitted(id="answer-query", classes="panel")
                yield Fitted(id="answer-nuggets", classes="panel")
            with Vertical(id="answers-right"):
                with AnswerScroll(id="answer-scroll", classes="panel"):
                    yield Static(id="answer-text")
                with VerticalScroll(id="cited-scroll", classes="panel"):
                    yield Static(id="cited-text")
        yield FitBar(id="progress")
        yield PriorityFooter(compact=True, show_command_palette=False)

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

    def watch_shown(self, _shown: Focus | None) -> None:
        self.shown_at = time.monotonic()
        self._show()

    def _open(self, position: int, key: tuple | None = None) -> None:
        """Show the answer at ``position`` (read afresh), the focus on ``key`` or on its first
        open item."""
        view = self.queue.view(position)
        index = view.index(key) if key is not None else None
        if index is None:
            index = next((i for i, item in enumerate(view.items) if item.support is None), 0)
        self.shown = Focus(position, view).at(index)

    def _reload(self, key: tuple | None = None) -> None:
        """The answer on screen read again (nuggets added or removed meanwhile), the focus kept
        on the same nugget or citation."""
        focus = self.shown
        if focus is not None:
            self._open(focus.position, key if key is not None else self._item_key())

    def _item(self) -> AnswerItem | None:
        return None if self.shown is None else self.shown.item

    def _item_key(self) -> tuple | None:
        item = self._item()
        return None if item is None else item.key

    def action_move(self, delta: int) -> None:
        focus = self.shown
        if focus is not None and focus.view.items:
            self.shown = focus.at((focus.index + delta) % len(focus.view.items))

    def action_next_chunk(self) -> None:
        focus = self.shown
        if focus is None or focus.sentence is None:
            self.notify("c steps through the chunks a sentence cites: ↓ moves to the citations.")
            return
        cites = focus.view.sentences[focus.sentence].citations
        if len(cites) < 2:
            self.notify("This sentence cites one chunk.")
            return
        following = cites[(cites.index(focus.chunk_id) + 1) % len(cites)]
        index = focus.view.index((None, focus.sentence, following))
        if index is not None:
            self.shown = focus.at(index)

    def action_answer(self, delta: int) -> None:
        focus = self.shown
        if focus is None or not len(self.queue):
            return
        target = focus.position + delta
        if not 0 <= target < len(self.queue):
            self.notify("No more answers that way.")
            return
        self._open(target)

    # -- judging -------------------------------------------------------------------------

    def action_support(self, support: str) -> None:
        focus = self.shown  # what the prompt names, read once
        item = None if focus is None else focus.item
        if focus is None or item is None:
            self.notify("Nothing to judge in this answer: no nugget (g adds one) and no citation.",
                        severity="warning")
            return
        try:
            answers.record_answer_judgment(
                self.project, annotator=self.queue.annotator, answer_id=focus.view.answer_id,
                support=support, nugget_id=item.nugget_id, sentence=item.sentence,
                chunk_id=item.chunk_id, duration_ms=int((time.monotonic() - self.shown_at) * 1000))
        except RagjudgeError as exc:
            self.notify(for_terminal(exc), severity="error", timeout=8, markup=False)
            return
        # the event is committed: now the screen moves on
        self._move_on(focus.position, item.key, was_open=item.support is None)

    def _move_on(self, position: int, done: tuple, *, was_open: bool) -> None:
        """After a judgment of the item ``done`` (a key): the next item still to judge in this
        answer; when the answer is complete, the next answer with something to judge (revising
        an answer already complete steps through it)."""
        view = self.queue.view(position)
        self.queue.note(view)
        focus = Focus(position, view)
        items = view.items
        at = view.index(done)
        at = 0 if at is None else at
        still_open = [i for i, it in enumerate(items) if it.support is None]
        later = [i for i in still_open if i > at]
        if later or still_open:
            self.shown = focus.at((later or still_open)[0])
            return
        if not was_open and at + 1 < len(items):
            self.shown = focus.at(at + 1)
            return
        nxt = self.queue.first_open(position + 1)
        if nxt is not None and nxt != position:
            self._open(nxt)
            return
        self.notify("Every answer of your queue is judged. Thank you!")
        self.shown = focus.at(at)

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
        if self.shown is not None:
            self.queue.note(self.shown.view)
        self.notify("Undone: " + ("back to not judged." if result.support is None
                                  else f"back to {result.support}."))

    # -- other screens -------------------------------------------------------------------

    def action_nuggets(self) -> None:
        focus = self.shown
        if focus is None:
            return
        from ragjudge.tui.screens.facets import FacetsScreen

        self.app.push_screen(FacetsScreen(self.project, self.queue.annotator, focus.view.query_id,
                                          focus.chunk_id), lambda _: self._reload())

    def help_rows(self) -> list[tuple[str, str, str]]:
        return key_rows()

    def on_screen_resume(self) -> None:
        self._reload()

    # -- showing -------------------------------------------------------------------------

    def _chunk_in_view(self) -> str | None:
        return None if self.shown is None else self.shown.chunk_id

    def _query(self, query_id: str) -> judging.QueryText:
        if query_id not in self._queries:
            self._queries[query_id] = judging.query_text(self.project, query_id)
        return self._queries[query_id]

    def _show(self) -> None:
        """Every panel from :attr:`shown`, in one frame."""
        with self.app.batch_update():
            self._show_top()
            shown = self.shown
            if shown is None:
                self._show_empty()
                return
            view = shown.view
            q = self._query(view.query_id)
            self.query_one("#answer-query", Static).update(self._query_text(q))
            self.query_one("#answer-nuggets", Static).update(self._nuggets_text(view))
            self._show_answer(view)
            self._show_chunk(view, q)
            self._show_progress(shown)

    def _show_empty(self) -> None:
        message = ("There is no generated answer to judge here. Import answers first (ragjudge "
                   "import answers FILE), or widen --runs, --queries or --category.\n\nq quits.")
        self.query_one("#answer-text", Static).update(Text(message))
        self.query_one("#progress", FitBar).show()

    def _show_top(self) -> None:
        who = Text("annotator ")
        who.append_text(literal(self.queue.annotator, "bold"))
        parts = [Part(literal(self.project_name, "bold"), cut=True),
                 Part(who, literal(self.queue.annotator, "bold")),
                 Part(Text("judging answers"), Text("answers"))]
        if self.queue.show_source and self.view is not None:
            run = Text("run ")
            run.append_text(literal(self.view.run, "italic"))
            parts.append(Part(run))
        else:
            parts.append(Part(Text("blind")))
        self.query_one("#topbar", FitBar).show(*parts)

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

    def _nuggets_text(self, view: AnswerView) -> Table | Text:
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
        legend.rstrip()
        table.add_row(Text(""), legend)
        return table

    def _show_answer(self, view: AnswerView) -> None:
        scroll = self.query_one("#answer-scroll", AnswerScroll)
        same_query = [a for a, q in zip(self.queue.answer_ids, self.queue.query_ids) if q == view.query_id]
        title = Text("answer ")
        title.append(f"{same_query.index(view.answer_id) + 1} of {len(same_query)}", style="bold")
        title.append(" to this query")
        scroll.border_title = title
        if not view.sentences:
            self.query_one("#answer-text", Static).update(Text("(the answer is empty)", style="dim"))
            return
        focus = self._item()
        in_sentence = None if self.shown is None else self.shown.sentence
        table = self._rows()
        for s, sentence in enumerate(view.sentences):
            in_focus = s == in_sentence
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

    def _show_chunk(self, view: AnswerView, q: judging.QueryText) -> None:
        scroll = self.query_one("#cited-scroll", VerticalScroll)
        chunk_id, sentence = self._chunk_in_view(), None if self.shown is None else self.shown.sentence
        if chunk_id is None or sentence is None:
            scroll.border_title = "cited chunk"
            hint = ("A nugget is judged against the whole answer; ↓ reaches the citations, each "
                    "shown here with its chunk." if any(not i.is_nugget for i in view.items)
                    else "This answer cites no chunk sentence by sentence.")
            self.query_one("#cited-text", Static).update(Text(hint, style="dim"))
            return
        cites = view.sentences[sentence].citations
        chunk = judging.chunk_text(self.project, chunk_id)
        title = Text("chunk ")
        title.append_text(literal(chunk_id, "bold"))
        title.append(f"  cited by sentence {sentence + 1}")
        if len(cites) > 1:
            title.append(f"  ({cites.index(chunk_id) + 1} of {len(cites)}; c: next)")
        scroll.border_title = title
        self.query_one("#cited-text", Static).update(highlighted(chunk.text, query_terms(q.text)))
        if scroll.scroll_y:
            scroll.scroll_home(animate=False)

    def _show_progress(self, shown: Focus) -> None:
        view, item, sentence = shown.view, shown.item, shown.sentence
        parts = []
        if item is None:
            parts.append(Part(Text("nothing to judge here (g adds nuggets)")))
        elif sentence is None:  # a nugget; its text is what a narrow line cuts first
            parts.append(Part(literal(f"the answer supports nugget “{item.nugget}”? "
                                      f"({WORDS[item.support]})"), cut=True))
        else:
            parts.append(Part(literal(f"chunk {item.chunk_id} supports sentence "
                                      f"{sentence + 1}? ({WORDS[item.support]})"), cut=True))
        judged = len(view.items) - view.open
        parts.append(Part(Text(f"{judged} of {len(view.items)} judged"),
                          Text(f"{judged}/{len(view.items)} judged")))
        done, total = self.queue.progress()
        parts.append(Part(Text(f"answer {shown.position + 1:,} of {len(self.queue):,}"),
                          Text(f"answer {shown.position + 1:,}/{len(self.queue):,}")))
        parts.append(Part(Text(f"{done:,} of {total:,} answers done"), Text(f"{done:,}/{total:,} done")))
        self.query_one("#progress", FitBar).show(*parts)
