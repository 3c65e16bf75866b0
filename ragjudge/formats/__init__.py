"""Reading and writing ragjudge's file formats: TREC qrels and runs, JSONL, CSV, BEIR folders,
TREC SGML documents and topics, SMART's test collections.

Readers are generators over a path, an open file or inline text (:mod:`.source`); they stream,
read ``.gz`` transparently, and turn every problem into an :class:`~ragjudge.errors.InputError`
naming the file, the line and the field. The record fields are a contract (:mod:`.records`).

>>> list(read_records("qrels", "q1 0 c1 2\\n", "trec"))
[Judgment(query_id='q1', chunk_id='c1', grade=2, annotator=None, note=None)]

The package's names (``read_records``, ``detect_format``, ``FORMATS``, every reader and writer)
are those of :mod:`.api`, loaded on first use: importing one light submodule, such as
:mod:`.source` to tell a file from a folder, does not load the record models (pydantic).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names as the type checker sees them; at run time they load on first use
    from ragjudge.formats.api import *  # noqa: F403
    from ragjudge.formats.api import __all__ as __all__

_SUBMODULES = frozenset({"api", "beir", "csvfile", "irds", "jsonl", "records", "sentences", "smart",
                         "source", "trec", "trec_sgml"})


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name.startswith("__"):  # __all__, __path__ ... of the package itself: not api's
        if name == "__all__":
            return importlib.import_module(f"{__name__}.api").__all__
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    api = importlib.import_module(f"{__name__}.api")
    try:
        value = getattr(api, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__getattr__("__all__")) | _SUBMODULES)
