"""The bench's instruction count under a real callgrind: only the counted tickets are counted."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# A whole start-up (imports, packs, warm-up) runs to several billion instructions; one ticket of
# the stages, the offline model and the in-memory topics to about a hundred million.
WHOLE_PROCESS = 1_000_000_000


@pytest.fixture
def valgrind() -> str:
    found = shutil.which("valgrind")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("valgrind is not installed: .ci/run installs it")
        pytest.skip("valgrind is not installed")
    return found


@pytest.mark.timeout(900)
def test_under_callgrind_only_the_counted_tickets_are_counted(
    valgrind: str, tmp_path: Path
) -> None:
    done = subprocess.run(
        [
            valgrind,
            "--tool=callgrind",
            "--instr-atstart=no",
            "--cache-sim=no",
            f"--callgrind-out-file={tmp_path / 'callgrind.out'}",
            sys.executable,
            "-m",
            "baton_kafka.streams.bench.instructions",
            "--tickets",
            "2",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "0"},
        timeout=850,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "2 replies to 2 tickets (counted: see valgrind's Collected line)" in done.stdout
    line = next(x for x in done.stderr.splitlines() if "Collected :" in x)
    collected = int(line.rsplit(":", 1)[1])
    assert 10_000_000 < collected < WHOLE_PROCESS
