"""Child processes of a ``baton bench`` run: workers, the stand-in, reference chains."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from baton_kafka.streams import processes
from baton_kafka.streams.bench.stats import cpu_seconds, memory_mib


class BenchError(RuntimeError):
    """The run could not go on (a child died, nothing arrived in time)."""


@dataclass
class Child:
    """A child process of the run (worker, stand-in, reference chain) and its log."""

    name: str
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def cpu(self) -> float:
        value = cpu_seconds(self.pid)
        if value is None:
            raise BenchError(f"{self.name} exited (code {self.proc.poll()}):\n{self.tail()}")
        return value

    def memory(self) -> tuple[float, float] | None:
        return memory_mib(self.pid)

    def tail(self, chars: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self, timeout: float = 20.0) -> None:
        processes.stop(self.proc, timeout)


def spawn(name: str, args: list[str], env: Mapping[str, str], log: Path) -> Child:
    """Start ``python args…`` with ``env``, output to ``log``."""
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, *args],
            env=dict(env),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Child(name, proc, log)


def start_standin(latency: float, env: Mapping[str, str], log: Path) -> tuple[Child, str]:
    """The Messages-API stand-in in its own process; returns it and its base URL."""
    child = spawn(
        "stand-in",
        ["-m", "baton_kafka.agents.testing.standin", "--latency", str(latency)],
        env,
        log,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        first = child.tail(500).splitlines()
        if first and first[0].startswith("http"):
            return child, first[0].strip()
        if not child.alive():
            break
        time.sleep(0.1)
    child.stop()
    raise BenchError(f"the stand-in did not start:\n{child.tail()}")


@dataclass
class Sampler:
    """Samples the resident memory of processes (and ``backlog()``) every ``interval`` seconds."""

    children: list[Child]
    interval: float = 1.0
    backlog: Callable[[], int] | None = None
    samples: list[tuple[float, float]] = field(default_factory=list)
    backlog_samples: list[tuple[float, int]] = field(default_factory=list)
    _task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._started = time.monotonic()
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            total = 0.0
            for child in self.children:
                mem = child.memory()
                total += mem[0] if mem else 0.0
            at = time.monotonic() - self._started
            self.samples.append((at, total))
            if self.backlog is not None:
                self.backlog_samples.append((at, self.backlog()))
            await asyncio.sleep(self.interval)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
