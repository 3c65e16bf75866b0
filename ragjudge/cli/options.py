"""Typer options built from the shared option types of :mod:`ragjudge.cli.base`.

Every integer option of every command is declared with :func:`int_option`, so that it is read
by :class:`~ragjudge.cli.base.Integer` (digits only, bounded, the option named in the message;
``tests/cli/test_cli_options.py`` walks the application and checks it). The options of
``eval`` are declared from :data:`~ragjudge.cli.base.EVAL_OPTIONS` with :func:`spec_option`,
the table the lean path reads the command line with. ``--raw`` (:data:`RawOption`) is the one
switch of every command that writes CSV.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ragjudge.cli.base import EVAL_OPTIONS, Integer, OptionSpec

__all__ = ["RAW_HELP", "RawOption", "eval_option", "int_option", "spec_option"]


def int_option(*flags: str, low: int, high: int, what: str, **kwargs: Any) -> Any:
    """``typer.Option(*flags, **kwargs)`` read by ``Integer(flags[0], low, high, what)``."""
    return typer.Option(*flags, parser=Integer(flags[0], low, high, what), **kwargs)


def spec_option(spec: OptionSpec, **kwargs: Any) -> Any:
    """The typer option of ``spec`` (its words, an integer's parser), with ``help`` and the
    other keywords of ``typer.Option``."""
    if spec.integer is not None:
        kwargs["parser"] = spec.integer
    return typer.Option(*spec.flags, **kwargs)


def eval_option(param: str, **kwargs: Any) -> Any:
    """The typer option of ``eval``'s ``param`` in :data:`~ragjudge.cli.base.EVAL_OPTIONS`."""
    (spec,) = (s for s in EVAL_OPTIONS if s.param == param)
    return spec_option(spec, **kwargs)


RAW_HELP = ("With --format csv: write every cell exactly as it is. By default a text cell that a "
            "spreadsheet would run as a formula (it starts with =, +, -, @, a tab or a CR) gets a "
            "' before it.")
RawOption = Annotated[bool, typer.Option("--raw", help=RAW_HELP)]
"""``--raw``: CSV cells written exactly, not made safe for spreadsheets
(:func:`ragjudge.formats.csvfile.spreadsheet_safe`)."""
