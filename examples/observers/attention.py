"""An observer of the shop's own: one JSON line per reply a person should look at.

A reply handed to a person, a degraded one, or one slower than ``slow_s`` from intake to
reply is written to ``out`` (stderr by default) with its ids, status and time; dead letters
are counted by stage and reason. One module and one argument to the worker:

    python examples/observers/attention.py        # a worker with it (else as `baton worker`)
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from typing import TextIO

from baton_kafka.schemas import Reply
from baton_kafka.streams.observe.observer import QuietObserver


class Attention(QuietObserver):
    """Writes the replies that need a person's eye; counts dead letters by stage and reason."""

    def __init__(self, out: TextIO | None = None, slow_s: float = 30.0) -> None:
        self.out = out or sys.stderr
        self.slow_s = slow_s
        self.dead_letters: Counter[tuple[str, str]] = Counter()

    def reply(self, reply: Reply, end_to_end_s: float | None) -> None:
        slow = end_to_end_s is not None and end_to_end_s > self.slow_s
        if reply.status == "answered" and not slow:
            return
        line = {
            "ticket_id": reply.ticket_id,
            "session_id": reply.session_id,
            "status": reply.status,
            "seconds": None if end_to_end_s is None else round(end_to_end_s, 3),
            "why": "slow" if reply.status == "answered" else reply.status,
        }
        self.out.write(json.dumps(line) + "\n")
        self.out.flush()

    def dead_letter(self, stage: str, reason: str) -> None:
        self.dead_letters[(stage, reason)] += 1


def main() -> int:
    """A worker with this observer (the same as ``baton worker`` otherwise)."""
    from baton_kafka.streams.kafka import BrokerUnreachable
    from baton_kafka.streams.runtime import worker
    from baton_kafka.streams.settings import load

    try:
        worker.run(load(), observers=[Attention()])
    except (ValueError, BrokerUnreachable) as exc:  # SettingsError is a ValueError
        print(f"attention: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
