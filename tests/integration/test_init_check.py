"""``baton init`` then ``baton check`` in a fresh folder, against a real broker: all ok."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.brokers import Broker
from tests.fixtures.paths import ROOT


@pytest.mark.one_broker
def test_init_then_check_passes_on_a_running_broker(tmp_path: Path, broker: Broker) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BATON_", "ANTHROPIC_"))}
    env |= {"BATON_BROKER": broker.url, "PYTHONPATH": str(ROOT), **broker.env}
    baton = [sys.executable, "-m", "baton_kafka.streams"]
    subprocess.run([*baton, "init", "shop"], cwd=tmp_path, env=env, check=True)
    done = subprocess.run(
        [*baton, "check"], cwd=tmp_path / "shop", env=env, capture_output=True, text=True
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and done.stderr == "", (done.stdout, done.stderr)
    assert [line.split(":")[0] for line in lines] == [
        "ok   settings",
        "ok   policy",
        "ok   handbook",
        "ok   tone",
        "ok   cache",
        "ok   cache",
        "ok   cache",
        "ok   stages",
        "ok   orders",
        "ok   executor",
        "ok   broker",
        "ok   model",
    ]
    assert f"ok   broker: {broker.url} answers (cluster " in done.stdout
