"""The suite's fixtures, registered once; and no test sees the developer's own settings."""

from __future__ import annotations

import os

import pytest

# In dependency order: pytest rewrites a plugin's asserts only if nothing imported it before.
pytest_plugins = [
    "tests.fixtures.paths",
    "tests.fixtures.faust_app",
    "tests.fixtures.brokers",
    "tests.fixtures.models",
    "tests.fixtures.data",
    "tests.fixtures.agents",
    "tests.fixtures.stores",
    "tests.fixtures.pipelines",
    "tests.fixtures.deployments",
    "tests.fixtures.delivery",
    "tests.fixtures.observability",
    "tests.fixtures.registry",
    "tests.fixtures.postgres",
    "tests.fixtures.shop_api",
    "tests.fixtures.shop_shapes",
]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's real key or broker settings."""
    for name in list(os.environ):
        if name.startswith("BATON_") or name.startswith("ANTHROPIC_"):
            monkeypatch.delenv(name)
