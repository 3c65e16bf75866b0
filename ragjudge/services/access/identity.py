"""Who is at the keyboard: the one place a name is taken from the operating system."""

from __future__ import annotations

import getpass
from typing import TYPE_CHECKING


if TYPE_CHECKING:
    pass


def login_name() -> str:
    """Who is at the keyboard when no name was given: the operating system's login name."""
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no login name in some containers
        return "lead"
