"""User text on screen, shown literally: no Rich markup, no terminal escape sequences."""

from __future__ import annotations

from rich.text import Text

from ragjudge.safetext import for_terminal
from ragjudge.terms import query_terms, terms_pattern

__all__ = ["clean", "highlighted", "literal", "query_terms"]


def clean(value: object) -> str:
    """The text as the screen may draw it: control characters (escape sequences' ESC among them)
    shown as visible stand-ins, a URL's password masked (see :mod:`ragjudge.safetext`)."""
    return for_terminal(value, multiline=True)


def literal(value: object, style: str = "") -> Text:
    """A :class:`rich.text.Text` of the user's text, never parsed as markup.

    The style is a span (not the Text's base style), so it stays with these characters when
    the Text is appended to another."""
    text = Text(clean(value))
    if style:
        text.stylize(style)
    return text


def highlighted(value: object, terms: list[str], style: str = "reverse") -> Text:
    """The text with the words starting with a query term's root styled (case-insensitive)."""
    text = literal(value)
    pattern = terms_pattern(tuple(terms))
    if pattern is not None:
        text.highlight_regex(pattern, style)
    return text


def query_block(query) -> Text:  # noqa: ANN001 - judging.QueryText
    """A query as the judging and adjudication screens show it: id and category, the text,
    the description and the narrative, each literal."""
    out = literal(query.id, "bold cyan")
    if query.category:
        out.append("  ")
        out.append_text(literal(query.category, "italic magenta"))
    out.append("\n")
    out.append_text(literal(query.text, "bold"))
    if query.description:
        out.append("\n\n")
        out.append_text(literal(query.description))
    if query.narrative:
        out.append("\n\n")
        out.append_text(literal(query.narrative, "dim"))
    return out


def chunk_heading(chunk) -> Text:  # noqa: ANN001 - judging.ChunkText
    """A chunk's title and section (from its ``meta``) as one line, literal; empty without."""
    out = Text()
    if chunk.title:
        out.append_text(literal(chunk.title, "bold"))
    if chunk.section:
        if out:
            out.append(" › ", style="dim")
        out.append_text(literal(chunk.section, "italic"))
    return out
