"""Stopping a child process: gracefully first, forcefully when it does not listen."""

from __future__ import annotations

import subprocess
from typing import Any

__all__ = ["stop"]


def stop(proc: subprocess.Popen[Any], timeout: float = 20.0) -> None:
    """SIGTERM ``proc`` and wait ``timeout`` s for it to exit, then SIGKILL it."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
