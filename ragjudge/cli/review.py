"""``ragjudge review``: the flags and comments annotators left, and a lead's answers to them."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from ragjudge.cli.app import app
from ragjudge.cli.common import access_of, console, err_console, open_project, print_json, reads_only, safe
from ragjudge.errors import UsageError
from ragjudge.safetext import quote

ACTIONS = ("list", "resolve", "send-back")

EPILOG = (
    "Actions:\n\n"
    "  list         the open flags and comments (default; --all: answered ones too)\n\n"
    "  resolve      settle a flag or comment; the annotator sees --note next time\n\n"
    "  send-back    back to the top of the annotator's queue, with --note\n\n"
    "An item is one annotator's current flag (with its note) and comment on one pair. It is open "
    "until a lead answers it; a new flag note or comment opens it again. Answers are events "
    "(nothing is overwritten): 'review --all --format json' shows each item's answers. Once the "
    "project has a lead, only leads read everyone's items and resolve or send back; anyone else "
    "lists their own flags and comments and the answers to them (--by names who asks; default: "
    "$RAGJUDGE_USER, else the login name).\n\n"
    "Examples:\n\n"
    "  ragjudge review --by dora\n\n"
    "  ragjudge review --annotator ana --format json --by dora\n\n"
    "  ragjudge review --query q7 --all --by ana        # ana's own\n\n"
    "  ragjudge review resolve --query q7 --chunk c123 --annotator ana --note 'refunds count' --by dora\n\n"
    "  ragjudge review send-back --query q7 --chunk c123 --annotator ana --note 'read the 2nd part' --by dora"
)


@app.command(epilog=EPILOG)
def review(
    action: Annotated[str, typer.Argument(help="list, resolve or send-back.")] = "list",
    annotator: Annotated[str | None, typer.Option("--annotator", help="Whose flag or comment (list: only theirs; resolve, send-back: needed when several annotators marked the pair).", show_default=False)] = None,
    query: Annotated[str | None, typer.Option("--query", help="The query id (list: only its pairs).", show_default=False)] = None,
    chunk: Annotated[str | None, typer.Option("--chunk", help="The chunk id (resolve, send-back).", show_default=False)] = None,
    note: Annotated[str | None, typer.Option("--note", help="What the annotator will see (resolve, send-back).", show_default=False)] = None,
    by: Annotated[str | None, typer.Option("--by", help="Who reads or answers (default: $RAGJUDGE_USER, else your login name); a lead reads everyone's items and answers them, anyone else reads their own.", show_default=False)] = None,
    all_: Annotated[bool, typer.Option("--all", help="list: answered items too.")] = False,
    format: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
) -> None:
    """List the open flags and comments, and resolve them or send them back."""
    from ragjudge.services.labels import review as svc

    if action not in ACTIONS:
        raise UsageError(f"The action is one of {', '.join(ACTIONS)}, not {quote(action)}. "
                         "See 'ragjudge review --help'.")
    if format not in ("table", "json"):
        raise UsageError(f"--format is table or json, not {quote(format)}.")
    if action == "list":
        reads_only()
        given = [o for o, v in (("--chunk", chunk), ("--note", note)) if v is not None]
        if given:
            raise UsageError(f"{', '.join(given)} go with 'review resolve' or 'review send-back', "
                             "not with the list. Nothing was changed.")
        with open_project() as project:
            found = svc.items(project, access=access_of(project, by), annotator=annotator,
                              query_id=query, include_resolved=all_)
        _print_items(found, format, all_)
        return
    if all_:
        raise UsageError(f"--all goes with the list, not with 'review {action}'. Nothing was changed.")
    missing = [o for o, v in (("--query", query), ("--chunk", chunk)) if v is None]
    if missing:
        raise UsageError(f"'review {action}' needs {' and '.join(missing)} (and --annotator when "
                         "several annotators marked the pair). Nothing was changed.")
    assert query is not None and chunk is not None
    answer = svc.resolve if action == "resolve" else svc.send_back
    with open_project() as project:
        done = answer(project, query_id=query, chunk_id=chunk, annotator=annotator,
                      access=access_of(project, by), note=note)
    if format == "json":
        print_json(done.to_json())
        return
    verb = "Resolved" if action == "resolve" else "Sent back"
    console.print(f"{verb} {safe(done.annotator)}'s {_what(done)} on {safe(done.query_id)} / "
                  f"{safe(done.chunk_id)}.", highlight=False)


def _what(item) -> str:  # noqa: ANN001 - ReviewItem
    return " and ".join(w for w, on in (("flag", item.flagged), ("comment", item.comment)) if on)


def _print_items(found: list, format: str, include_resolved: bool) -> None:
    if format == "json":
        print_json({"items": [i.to_json() for i in found]})
        return
    if not found:
        err_console.print("No flags or comments to review." if not include_resolved
                          else "No flags or comments.")
        return
    title = "flags and comments" if include_resolved else "open flags and comments"
    table = Table(title=f"{title} ({len(found)})", title_justify="left")
    for col in ("query", "chunk", "annotator", "flag", "comment", "at", "review"):
        table.add_column(col, no_wrap=col == "at")
    for i in found:
        flag = ("⚑ " + safe(i.note or "", prose=True)).rstrip() if i.flagged else "-"
        at = "-" if i.created_at is None else i.created_at.strftime("%Y-%m-%d %H:%M")
        table.add_row(safe(i.query_id), safe(i.chunk_id), safe(i.annotator), flag,
                      safe(i.comment, prose=True) if i.comment else "-", at, _review_cell(i))
    console.print(table)


def _review_cell(item) -> str:  # noqa: ANN001 - ReviewItem
    answer = item.resolved
    if answer is None:
        if item.answer is not None and item.answer.sent_back:
            return "open (relabelled after a send-back)"
        return "open"
    said = f": {safe(answer.note, prose=True)}" if answer.note else ""
    return f"{answer.action} by {safe(answer.by)}{said}"
