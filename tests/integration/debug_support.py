"""Helpers shared by the debugging-tool tests: a deployment kept for a whole module."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from agents.testing.standin import StandIn
from streams.kafka.embedded import EmbeddedBroker
from streams.kafka.reader import read_topics
from streams.settings import Settings, load
from tests.integration.harness import Deployment, standin_env


@contextmanager
def module_deployment(broker: EmbeddedBroker, standin: StandIn, tmp: Path) -> Iterator[Deployment]:
    """A namespace whose workers call the stand-in, like the ``deployment`` fixture."""
    d = Deployment(
        broker=broker,
        namespace=f"t{uuid.uuid4().hex[:10]}",
        data_dir=tmp,
        env_extra=standin_env(standin.base_url),
    )
    try:
        yield d
    finally:
        d.stop()


def settings_of(d: Deployment, **env: str) -> Settings:
    """The settings a ``baton`` command run by ``d`` would load."""
    return load(d.env(**env))


async def counts(settings: Settings, topics: Sequence[str]) -> dict[str, int]:
    """How many records each topic holds now (read to its watermark)."""
    read = await read_topics(settings, list(topics))
    return {t: len(v) for t, v in read.items()}
