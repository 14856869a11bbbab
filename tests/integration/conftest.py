"""Integration tests: real worker processes against a real broker (fixtures in tests/fixtures)."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under this folder is marked ``integration``."""
    # A ``pytestmark`` in a conftest marks nothing, and this hook sees every collected item.
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.integration)
