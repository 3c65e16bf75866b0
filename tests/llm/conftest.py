"""Fixtures of the LLM judge's tests: a chat-completions server on loopback (no internet)."""

from __future__ import annotations

import pytest

from llmserver import FakeLLM


@pytest.fixture
def fake_llm():
    server = FakeLLM().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def keyed_llm():
    server = FakeLLM(key="sk-test-SECRET-4242").start()
    try:
        yield server
    finally:
        server.stop()
