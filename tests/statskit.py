"""statsmodels' ``multipletests``, the reference for ragjudge's corrections, importable from any
test folder as ``statskit``.

statsmodels' Holm branch calls ``gc.collect()`` on every call. In a test process with the app
loaded that is some 60 ms a call, so the reference checks spent most of their time collecting
garbage; here the call runs with ``gc.collect`` a no-op, which changes no number it returns.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

from statsmodels.stats.multitest import multipletests as _multipletests


def multipletests(pvals: Any, **kwargs: Any) -> Any:
    """``statsmodels.stats.multitest.multipletests``, without its full garbage collection."""
    with mock.patch("gc.collect", lambda *args: 0):
        return _multipletests(pvals, **kwargs)
