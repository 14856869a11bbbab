"""``baton demo``: the pipeline end to end on an embedded broker with the sample data."""

from __future__ import annotations

import argparse
from typing import Any

from baton_kafka.streams.settings import Settings


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "demo", help="run the pipeline end to end on an embedded broker"
    )
    p.add_argument("--timeout", type=float, default=180.0)
    return p


def run(args: argparse.Namespace, settings: Settings) -> int:
    from baton_kafka.streams.demo import run_demo

    return run_demo(settings, timeout=args.timeout)
