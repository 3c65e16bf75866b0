"""The browser the browser tests drive: Debian's Chromium at /usr/bin/chromium through
Playwright (CI installs the ``chromium`` package; a browser is never downloaded), importable from
any test folder as ``chromium``.

A module of browser tests takes ``pytestmark = BROWSER_MARKS`` and the ``browser`` fixture
(``from chromium import BROWSER_MARKS``; tests/conftest.py registers the fixture for every
folder): one Chromium per module."""

from __future__ import annotations

from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
"""Headless, no sandbox (Chromium's sandbox refuses root), nothing fetched in the background."""

BROWSER_MARKS = [
    pytest.mark.slow,
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(),
                       reason=f"no Chromium at {CHROMIUM} (CI installs the 'chromium' package; "
                              "a browser is never downloaded)"),
]


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        launched.close()
