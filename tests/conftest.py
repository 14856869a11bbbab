"""Shared fixtures: the real embedded broker, the Messages-API stand-in, worker processes."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from streams.kafka.embedded import EmbeddedBroker

ARTIFACTS = Path(__file__).parent / "artifacts"


@pytest.fixture(scope="session")
def broker() -> Iterator[EmbeddedBroker]:
    """One embedded Tansu broker for the whole run; tests isolate themselves by namespace."""
    ARTIFACTS.mkdir(exist_ok=True)
    with EmbeddedBroker(log=ARTIFACTS / "broker.log") as b:
        yield b


@pytest.fixture
def namespace() -> str:
    """A topic prefix / consumer group / table namespace of this test's own."""
    return f"t{uuid.uuid4().hex[:10]}"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's real key or broker settings."""
    for name in list(os.environ):
        if name.startswith("BATON_") or name.startswith("ANTHROPIC_"):
            monkeypatch.delenv(name)
