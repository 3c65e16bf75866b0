"""Which addresses a server bound to stays reachable from: the one rule both servers (``serve``'s
web pages and the terminal relay) and the command that starts them apply."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the server reachable from this machine only
    (``localhost``, ``127.0.0.0/8``, ``::1``; brackets around an IPv6 address are allowed)."""
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
