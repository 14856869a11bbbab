"""``python -m baton_kafka.agents.testing.standin``: serve the stand-in until interrupted."""

from __future__ import annotations

import argparse
import asyncio
import signal
from dataclasses import replace

from baton_kafka.agents.testing import standin
from baton_kafka.agents.testing.standin.ratelimits import RateBudget
from baton_kafka.agents.testing.standin.server import StandIn
from baton_kafka.agents.testing.standin.weak import STYLES


def rate_budget(text: str) -> RateBudget:
    """``REQUESTS/SECONDS`` (``50/60``) as a budget."""
    requests, _, seconds = text.partition("/")
    try:
        budget = RateBudget(requests=int(requests), window_s=float(seconds or "60"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected REQUESTS/SECONDS, got {text!r}") from None
    if budget.requests < 1 or budget.window_s <= 0:
        raise argparse.ArgumentTypeError(f"expected positive numbers, got {text!r}")
    return budget


async def _serve(args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    options = {"latency": args.latency, "jitter": args.jitter, "retry_after": args.retry_after}
    style = STYLES[args.style]
    if style is not None and (args.first_call_s or args.call_s):
        style = replace(style, first_call_s=args.first_call_s, call_s=args.call_s)
    options["style"] = style
    server = StandIn(
        host=args.host, port=args.port, seed=args.seed, rate_limit=args.rate_limit, **options
    )
    async with server:
        print(server.base_url, flush=True)
        await stop.wait()


def main(argv: list[str] | None = None) -> None:
    """Run the stand-in until interrupted, printing its base URL first."""
    parser = argparse.ArgumentParser(
        prog="python -m baton_kafka.agents.testing.standin", description=standin.__doc__
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per answer")
    parser.add_argument("--jitter", type=float, default=0.0, help="± uniform seconds")
    parser.add_argument("--retry-after", type=float, default=1.0, help="seconds, on 429/529/500")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--rate-limit",
        type=rate_budget,
        default=None,
        metavar="REQUESTS/SECONDS",
        help="a 429 past this many calls per window; rate-limit headers on every answer",
    )
    parser.add_argument(
        "--style",
        choices=sorted(STYLES),
        default="echo",
        help="echo: a healthy model's answers; weak: wrapped JSON, near-miss ids, English "
        "re-asks, structured output ignored",
    )
    parser.add_argument(
        "--first-call-s", type=float, default=0.0, help="weak style: extra seconds, first call"
    )
    parser.add_argument("--call-s", type=float, default=0.0, help="weak style: extra seconds")
    asyncio.run(_serve(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
