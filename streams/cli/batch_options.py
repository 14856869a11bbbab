"""The ``--batch`` options ``baton replay`` and ``baton eval`` share, and their checks."""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING

from baton_kafka.streams.cli.errors import UsageError

if TYPE_CHECKING:
    from baton_kafka.streams.batched import BatchOptions


def add_batch_options(p: argparse.ArgumentParser, default_state: str) -> None:
    """``--batch``, ``--batch-state`` and ``--batch-poll``."""
    p.add_argument(
        "--batch",
        action="store_true",
        help="send the model calls through the Message Batches API (half price, up to 24 h)",
    )
    p.add_argument(
        "--batch-state",
        metavar="PATH",
        help=f"where the batches are recorded, to resume (default {default_state})",
    )
    p.add_argument(
        "--batch-poll",
        type=float,
        default=60.0,
        metavar="S",
        help="seconds between polls of a batch (default 60)",
    )


def check_batch_options(args: argparse.Namespace, command: str) -> BatchOptions | None:
    """The batch options, None without ``--batch``; a ``UsageError`` (one line) when bad."""
    if not args.batch:
        if args.batch_state is not None:
            raise UsageError(f"{command}: --batch-state needs --batch")
        return None
    if not math.isfinite(args.batch_poll) or args.batch_poll <= 0:
        raise UsageError(f"{command}: --batch-poll must be a positive number of seconds")
    if args.batch_state is not None and not args.batch_state.strip():
        raise UsageError(f"{command}: --batch-state must name a file")
    from baton_kafka.streams.batched import BatchOptions

    return BatchOptions(state=args.batch_state, poll_s=args.batch_poll)


def batches_served(llm: str) -> bool:
    """Whether provider ``llm`` declares the Message Batches API (a dotted path may: it is
    checked when built; the offline rules are refused elsewhere with their own reason)."""
    from baton_kafka.agents.models.capabilities import CAPABILITIES

    if llm == "offline" or llm not in CAPABILITIES:
        return True
    return CAPABILITIES[llm].batches
