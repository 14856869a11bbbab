"""The instruction count's runner: the counted tickets answered, counting switched only under
valgrind, a bad count refused with one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from baton_kafka.streams.bench import instructions


def test_outside_valgrind_the_tickets_run_uncounted(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LD_PRELOAD", "")
    switched: list[str] = []
    monkeypatch.setattr(instructions, "_control", switched.append)
    instructions.main(["--tickets", "6"])
    said = capsys.readouterr().out.strip()
    assert said == "6 replies to 6 tickets (not under valgrind: uncounted)"
    assert switched == []


def test_counting_switches_callgrind_on_and_off_around_the_block(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    switched: list[str] = []
    monkeypatch.setattr(instructions, "_control", switched.append)
    with pytest.raises(RuntimeError), instructions.counting(True):
        switched.append("inside")
        raise RuntimeError("a failed run still stops the count")
    assert switched == ["on", "inside", "off"]


def test_valgrind_is_told_by_its_preload_library(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LD_PRELOAD", "/usr/libexec/valgrind/vgpreload_core-amd64-linux.so")
    assert instructions.under_valgrind()
    monkeypatch.delenv("LD_PRELOAD")
    assert not instructions.under_valgrind()


@pytest.mark.parametrize("tickets", ["0", str(instructions.MOST + 1)])
def test_a_count_out_of_range_is_one_line(tickets: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "baton_kafka.streams.bench.instructions", "--tickets", tickets],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[4],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[4])},
    )
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .endswith(f"--tickets must be between 1 and {instructions.MOST}")
    )
    assert "Traceback" not in done.stderr
