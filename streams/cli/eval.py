"""``baton eval FILE``: the amnesia rate of the pipeline on a labelled ticket set."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from baton_kafka.streams.cli.batch_options import add_batch_options, check_batch_options
from baton_kafka.streams.cli.errors import Fail, UsageError
from baton_kafka.streams.settings import Settings

MODES = ("offline", "anthropic", "echo", "weak")


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "eval", help="measure the amnesia rate on a labelled ticket set"
    )
    p.add_argument("file", help="labelled tickets (JSON Lines: a Ticket plus a 'label' object)")
    p.add_argument(
        "--orders",
        default=None,
        help="orders (JSON Lines); default: FILE with 'tickets' -> 'orders'",
    )
    p.add_argument(
        "--llm",
        choices=MODES,
        default=None,
        help="model (echo, weak: the stand-in, healthy or as a weak model answers); "
        "default: as BATON_LLM would choose",
    )
    p.add_argument("--json", action="store_true", help="print one JSON report instead of a table")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for each phase")
    p.add_argument("--phase-gap", type=float, default=3.0, help="seconds between phases")
    add_batch_options(p, "<data dir>/eval/<FILE name>-batch.json")
    p.add_argument(
        "--judge",
        action="store_true",
        help="grade each reply with a judge model: remedy, understood, grounded, tone",
    )
    p.add_argument(
        "--judge-llm",
        choices=("anthropic", "stand-in"),
        default=None,
        help="the judge: Claude (needs ANTHROPIC_API_KEY) or the stand-in's fixed rules; "
        "default: Claude with --llm anthropic, else the stand-in",
    )
    p.add_argument(
        "--judge-model", default=None, help="the judge's model (default: claude-sonnet-4-6)"
    )
    return p


def _judge_options(args: argparse.Namespace, settings: Settings, mode: str) -> Any:
    from baton_kafka.streams.eval.judge import DEFAULT_JUDGE_MODEL, JudgeOptions

    if not args.judge:
        if args.judge_llm or args.judge_model:
            raise UsageError("baton eval: --judge-llm and --judge-model need --judge")
        return None
    via = args.judge_llm or ("anthropic" if mode == "anthropic" else "stand-in")
    if via == "anthropic" and not settings.anthropic_api_key:
        raise UsageError("baton eval: --judge-llm anthropic needs ANTHROPIC_API_KEY")
    return JudgeOptions(
        model=args.judge_model or (DEFAULT_JUDGE_MODEL if via == "anthropic" else "stand-in"),
        api_key=(settings.anthropic_api_key or "") if via == "anthropic" else "",
        base_url=settings.anthropic_base_url if via == "anthropic" else None,
        via=via,
    )


def _say(message: str) -> None:
    print(f"baton eval: {message}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace, settings: Settings) -> int:
    import orjson

    from baton_kafka.agents.models.batch_journal import BatchFailed
    from baton_kafka.streams.eval.run import (
        BadInput,
        RunFailed,
        evaluate,
        orders_path_for,
        render_text,
    )

    if args.timeout <= 0 or args.phase_gap < 0:
        raise UsageError("baton eval: --timeout must be positive and --phase-gap not negative")
    mode = args.llm or settings.llm
    if mode == "anthropic" and not settings.anthropic_api_key:
        raise UsageError("baton eval: --llm anthropic needs ANTHROPIC_API_KEY")
    batch = check_batch_options(args, "baton eval")
    judge = _judge_options(args, settings, mode)
    if batch is not None and mode == "offline":
        raise UsageError(
            "baton eval: --batch needs --llm anthropic or echo (the rules call no API)"
        )
    tickets_file = Path(args.file)
    try:
        orders_file = Path(args.orders) if args.orders else orders_path_for(tickets_file)
        report = evaluate(
            settings,
            mode,
            tickets_file,
            orders_file,
            timeout=args.timeout,
            phase_gap=args.phase_gap,
            say=_say,
            batch=batch,
            judge=judge,
        )
    except (BadInput, RunFailed, BatchFailed) as exc:
        raise Fail(f"baton: eval: {exc}") from None
    if args.json:
        sys.stdout.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.write(render_text(report) + "\n")
    sys.stdout.flush()
    return 0
