"""``ragjudge annotators``: who labels the project, with which role, and their login tokens."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from ragjudge.cli.app import app
from ragjudge.cli.common import (
    BY_LEAD_HELP, access_of, console, err_console, open_project, print_json, reads_only, safe,
)
from ragjudge.errors import UsageError
from ragjudge.safetext import quote

ACTIONS = ("list", "add", "rename", "retire", "role", "token", "roster", "blind")

EPILOG = (
    "Actions:\n\n"
    "  list                     every annotator with role, kind, status and label counts (default)\n\n"
    "  add NAME [--role R] [--token]   register NAME (or change a known one's role); --token\n"
    "                           prints a personal login token once (only its hash is kept)\n\n"
    "  rename OLD NEW           rename everywhere the name is recorded\n\n"
    "  retire NAME              keep NAME's labels; the name can no longer label or log in\n\n"
    "  role NAME annotator|lead change a role\n\n"
    "  token NAME               issue a new login token for NAME; the old one stops working\n\n"
    "  roster open|closed       closed: only registered annotators may label\n\n"
    "  blind on|off             on (the default): an annotator who is not a lead sees no other "
    "annotator's grade, gold grade or run rank of a pair they have not judged\n\n"
    "Once a project has a lead, only leads adjudicate, assign, resolve flags, see other "
    "annotators' labels and change the roster (--by NAME, default $RAGJUDGE_USER, else your "
    "login name; the first lead may be added by anyone). On a SQLite file this is a courtesy "
    "(anyone with the file can change it); 'ragjudge serve' enforces it, identifying people by "
    "their tokens.\n\n"
    "Examples:\n\n"
    "  ragjudge annotators\n\n"
    "  ragjudge annotators add dora --role lead\n\n"
    "  ragjudge annotators add ana --token --format json --by dora\n\n"
    "  ragjudge annotators rename Ana ana --by dora\n\n"
    "  ragjudge annotators roster closed --by dora\n\n"
    "  ragjudge annotators blind off --by dora"
)


@app.command(epilog=EPILOG)
def annotators(
    action: Annotated[str, typer.Argument(help="list, add, rename, retire, role, token, roster or blind.")] = "list",
    name: Annotated[str | None, typer.Argument(help="The annotator (or open|closed for roster, on|off for blind).",
                                               show_default=False)] = None,
    value: Annotated[str | None, typer.Argument(help="The new name (rename) or role (role).",
                                                show_default=False)] = None,
    role: Annotated[str, typer.Option("--role", help="annotator or lead (with add).")] = "annotator",
    kind: Annotated[str, typer.Option("--kind", help="human or llm (with add).")] = "human",
    token: Annotated[bool, typer.Option("--token", help="With add: issue a login token, printed once.")] = False,
    by: Annotated[str | None, typer.Option("--by", help=BY_LEAD_HELP)] = None,
    format: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
) -> None:
    """List the project's annotators, add them with a role, rename, retire, issue tokens."""
    from ragjudge.services.access import roster

    if action not in ACTIONS:
        raise UsageError(f"The action is one of {', '.join(ACTIONS)}, not {quote(action)}. "
                         "See 'ragjudge annotators --help'.")
    if action == "list":
        reads_only()
    if format not in ("table", "json"):
        raise UsageError(f"--format is table or json, not {quote(format)}.")
    needs = {"add": 1, "rename": 2, "retire": 1, "role": 2, "token": 1, "roster": 1, "blind": 1,
             "list": 0}[action]
    given = [v for v in (name, value) if v is not None]
    if len(given) != needs:
        raise UsageError(f"'annotators {action}' takes {needs} name{'s' if needs != 1 else ''} "
                         f"after it, not {len(given)}. See 'ragjudge annotators --help'.")
    if token and action != "add":
        raise UsageError("--token goes with 'add'; use 'ragjudge annotators token NAME' to issue "
                         "a new token. Nothing was changed.")
    if action == "blind" and name not in ("on", "off"):
        raise UsageError(f"'annotators blind' takes on or off, not {quote(name)}. Nothing was changed.")
    with open_project(create=action == "add") as project:
        if action == "list":
            _print_members(roster.members(project), format)
            return
        assert name is not None
        from ragjudge.services.access import visibility

        access = access_of(project, by)
        if action == "blind":
            visibility.set_blind(project, name == "on", access=access)
            _say(format, {"blind": name == "on"},
                 "Blind: annotators who are not leads see only their own grades." if name == "on"
                 else "Not blind: every annotator sees everyone's grades.")
            return
        if action == "roster":
            roster.set_roster(project, name, access=access)
            _say(format, {"roster": name}, f"The roster is {name}.")
            return
        if action == "add":
            found, issued = roster.add(project, name, role=role, kind=kind, token=token,
                                       access=access)
            data = {"name": found.name, "role": found.role, "kind": found.kind}
            if issued is not None:
                data["token"] = issued
            text = f"{safe(found.name)}: {found.role} ({found.kind})."
            if issued is not None:
                text += f"\nToken (shown once, keep it private): {issued}"
            _say(format, data, text)
            return
        if action == "token":
            issued = roster.issue_token(project, name, access=access)
            _say(format, {"name": name, "token": issued},
                 f"New token for {safe(name)} (shown once; the old one no longer works): {issued}")
            return
        if action == "retire":
            found = roster.retire(project, name, access=access)
            _say(format, found.to_json(), f"{safe(found.name)} is retired; their labels are kept.")
            return
        assert value is not None
        if action == "rename":
            found = roster.rename(project, name, value, access=access)
            _say(format, found.to_json(), f"{safe(name)} is now {safe(found.name)}.")
            return
        found = roster.set_role(project, name, value, access=access)
        _say(format, found.to_json(), f"{safe(found.name)} is now a {found.role}.")


def _say(format: str, data: dict, text: str) -> None:
    if format == "json":
        print_json(data)
    else:
        console.print(text, highlight=False)


def _print_members(found: list, format: str) -> None:
    if format == "json":
        print_json({"annotators": [m.to_json() for m in found]})
        return
    if not found:
        err_console.print("No annotators yet. Add one with 'ragjudge annotators add NAME'.")
        return
    table = Table(title="annotators", title_justify="left")
    for col in ("name", "role", "kind", "status", "labels", "queries", "last label", "token"):
        table.add_column(col, justify="right" if col in ("labels", "queries") else "left",
                         no_wrap=col == "last label")
    for m in found:
        last = "-" if m.last_label_at is None else m.last_label_at.strftime("%Y-%m-%d %H:%M")
        role = m.role + (" (reference, complete)" if m.reference and m.complete else
                         " (reference)" if m.reference else "")
        table.add_row(safe(m.name), role, m.kind, m.status, str(m.labels), str(m.queries), last,
                      "yes" if m.has_token else "-")
    console.print(table)
