"""``python -m agents.testing.standin``: serve the stand-in until interrupted, printing its URL."""

from __future__ import annotations

import argparse
import asyncio
import signal

from agents.testing import standin
from agents.testing.standin.server import StandIn


async def _serve(args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    options = {"latency": args.latency, "jitter": args.jitter, "retry_after": args.retry_after}
    async with StandIn(host=args.host, port=args.port, seed=args.seed, **options) as server:
        print(server.base_url, flush=True)
        await stop.wait()


def main(argv: list[str] | None = None) -> None:
    """Run the stand-in until interrupted, printing its base URL first."""
    parser = argparse.ArgumentParser(
        prog="python -m agents.testing.standin", description=standin.__doc__
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per answer")
    parser.add_argument("--jitter", type=float, default=0.0, help="± uniform seconds")
    parser.add_argument("--retry-after", type=float, default=1.0, help="seconds, on 429/529/500")
    parser.add_argument("--seed", type=int, default=0)
    asyncio.run(_serve(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
