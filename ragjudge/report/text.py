"""Text from data as a report shows it: control, bidirectional and invisible characters made
visible and a URL's password masked (:mod:`ragjudge.safetext`), then escaped for the format by
its renderer; numbers formatted one way for both formats."""

from __future__ import annotations

import html
import math

from ragjudge.numeric import p_value_text, probability_text
from ragjudge.safetext import mask_secrets, visible

UNDEFINED = "–"
"""What a number that is undefined (NaN) shows as."""


def shown(text: object, *, multiline: bool = False) -> str:
    """``text`` with every character that would not show as itself made visible."""
    return visible(mask_secrets("" if text is None else text), multiline=multiline)


def html_text(text: object, *, multiline: bool = False) -> str:
    """:func:`shown`, escaped for HTML text and attribute values (quotes too)."""
    return html.escape(shown(text, multiline=multiline), quote=True)


def fmt(value: float | None, digits: int = 4) -> str:
    """A number with ``digits`` decimals; :data:`UNDEFINED` for None or NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return UNDEFINED
    return f"{value:.{digits}f}"


def fmt_order(p: float, status: str) -> str:
    """A comparison's p_order as ``ragjudge settled`` prints it: three decimals, 1.000 only for
    a certain or tied one (:func:`ragjudge.numeric.probability_text`); :data:`UNDEFINED` for NaN."""
    if math.isnan(p):
        return UNDEFINED
    return probability_text(p, 3, sure=status in ("certain", "tied"))


def fmt_p(value: float | None) -> str:
    """A p-value as ``compare`` prints it (:func:`ragjudge.numeric.p_value_text`);
    :data:`UNDEFINED` for None or NaN."""
    if value is None or math.isnan(value):
        return UNDEFINED
    return p_value_text(value)


def exact(value: float | None) -> str:
    """The shortest text that reads back as the same float (``repr``), for a data attribute; ''
    for None or NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return repr(float(value))


__all__ = ["UNDEFINED", "exact", "fmt", "fmt_p", "html_text", "shown"]
