"""JSON Lines input of the ``orders import`` and ``publish`` commands: valid or nothing is sent."""

from __future__ import annotations

import sys
from typing import Any

from baton_kafka.schemas.records import Order, Ticket
from baton_kafka.streams import jsonl
from baton_kafka.streams.cli.errors import Fail

SHOWN_ERRORS = 20


def report_invalid(errors: list[tuple[int, str]], source: str, skip: bool) -> None:
    """Print the first invalid lines; ``Fail`` when there are any and ``skip`` is not set."""
    for line, reason in errors[:SHOWN_ERRORS]:
        print(f"baton: {source}:{line}: {reason}", file=sys.stderr)
    if len(errors) > SHOWN_ERRORS:
        print(f"baton: … and {len(errors) - SHOWN_ERRORS} more invalid lines", file=sys.stderr)
    if errors and not skip:
        raise Fail(
            f"baton: {len(errors)} invalid line(s); nothing was sent "
            "(use --skip-invalid to send the rest)"
        )


def load_records(model: type[Ticket] | type[Order], source: str, skip: bool) -> list[Any]:
    """The valid records of ``source`` (a file or ``-``), after ``report_invalid``."""
    try:
        loaded = jsonl.load(model, source)
    except FileNotFoundError as exc:
        raise Fail(f"baton: {exc}") from None
    report_invalid(loaded.errors, source, skip)
    return loaded.records
