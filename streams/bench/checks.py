"""The reply audit and policy check's CPU per draft, and the promise checks' per reply, alone:
the cpu workload's tickets through the in-process pipeline, without a broker
(``python -m baton_kafka.streams.bench.checks --sessions 600``)."""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path
from typing import Any

from baton_kafka.agents.orders import open_store
from baton_kafka.streams.bench.load import Workload
from baton_kafka.streams.bench.run import DEFAULT_PER_SESSION, DEFAULT_SESSIONS
from baton_kafka.streams.settings import Settings, load


async def figure(settings: Settings, sessions: int, per_session: int) -> dict[str, Any]:
    """The audit and policy figures of the cpu workload's tickets, run in this process."""
    from baton_kafka.streams.bench.inproc import measure
    from baton_kafka.streams.bench.report import check_figures

    workload = Workload("cpu", sessions, per_session)
    store = open_store(settings.orders_url)
    try:
        await store.upsert(workload.orders())
    finally:
        await store.close()
    return check_figures(await measure(settings, workload.tickets()))


def main(argv: list[str] | None = None) -> None:
    """Print the reply audit + policy check figure of the cpu workload's tickets."""
    parser = argparse.ArgumentParser(prog="python -m baton_kafka.streams.bench.checks")
    parser.add_argument("--sessions", type=int, default=DEFAULT_SESSIONS["cpu"])
    parser.add_argument("--per-session", type=int, default=DEFAULT_PER_SESSION)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as data:
        settings = load({}).with_(data_dir=Path(data))
        figures = asyncio.run(figure(settings, args.sessions, args.per_session))
    spread = figures.get("audit_and_policy_us_per_draft", {})
    print(
        f"reply audit + policy check {figures.get('audit_and_policy_ms_per_draft')} ms CPU "
        f"per draft (p50 {spread.get('p50')} us, p99 {spread.get('p99')} us, "
        f"max {spread.get('max')} us, mean {spread.get('mean')} us, "
        f"{spread.get('drafts')} drafts)"
    )
    print(f"promise checks {figures.get('promise_checks_ms_per_reply')} ms CPU per reply")


if __name__ == "__main__":
    main()
