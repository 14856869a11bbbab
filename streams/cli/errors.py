"""One-line errors of the trace, replay and dlq commands (exit through ``SystemExit``)."""

from __future__ import annotations

import sys
from typing import NoReturn


def usage_error(message: str) -> NoReturn:
    """A wrong argument: one line on stderr, exit code 2."""
    print(message, file=sys.stderr, flush=True)
    raise SystemExit(2)


def failure(message: str) -> NoReturn:
    """A runtime failure: one line on stderr, exit code 1."""
    print(message, file=sys.stderr, flush=True)
    raise SystemExit(1)
