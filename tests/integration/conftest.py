"""Integration fixtures: a deployment per test on the shared broker, the model stand-in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.testing.standin import StandIn, run_in_thread
from streams.kafka.embedded import EmbeddedBroker
from tests.integration.harness import Deployment, standin_env

pytestmark = pytest.mark.integration


@pytest.fixture(scope="session")
def standin() -> Iterator[StandIn]:
    """The Messages-API stand-in, in a background thread, shared by the run."""
    with run_in_thread() as s:
        yield s


@pytest.fixture
def deployment(
    broker: EmbeddedBroker, namespace: str, standin: StandIn, tmp_path: Path
) -> Iterator[Deployment]:
    """This test's namespace, with workers that call the stand-in through the real SDK."""
    d = Deployment(
        broker=broker,
        namespace=namespace,
        data_dir=tmp_path,
        env_extra=standin_env(standin.base_url),
    )
    try:
        yield d
    finally:
        d.stop()
