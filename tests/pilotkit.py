"""Driving a screen through Textual's pilot, importable from any test folder as ``pilotkit``."""

from __future__ import annotations

import time
from collections.abc import Callable


async def wait_for(pilot, predicate: Callable[[], object], timeout: float = 20.0,
                   what: str = "the screen did not catch up") -> None:
    """Let the app run until ``predicate()`` holds; a failed assertion naming ``what`` after
    ``timeout`` seconds (workers compute in threads, so a screen catches up a moment later)."""
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, what
        await pilot.pause(0.05)
