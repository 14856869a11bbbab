"""``baton orders import``: validated orders into the order store, upserted by id."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from baton_kafka.agents.dsn import mask_dsn
from baton_kafka.schemas.records import Order
from baton_kafka.streams.cli.errors import Fail
from baton_kafka.streams.cli.records import load_records
from baton_kafka.streams.progress import Progress
from baton_kafka.streams.settings import Settings

CHUNK = 500


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser("orders", help="manage the order store")
    osub = p.add_subparsers(dest="orders_command", required=True, parser_class=type(p))
    imp = osub.add_parser("import", help="import orders from JSON Lines (FILE or -)")
    imp.add_argument("file")
    imp.add_argument("--skip-invalid", action="store_true")
    return p


def run(args: argparse.Namespace, settings: Settings) -> int:
    from baton_kafka.agents.orders import SourceMisconfigured, StoreUnavailable
    from baton_kafka.streams.runtime.faust_app.orders import build_store

    orders = load_records(Order, args.file, args.skip_invalid)
    progress = Progress(len(orders), "importing")

    async def upsert() -> int:
        store = build_store(settings)
        try:
            count = 0
            for start in range(0, len(orders), CHUNK):
                chunk = orders[start : start + CHUNK]
                count += await store.upsert(chunk)
                progress.advance(len(chunk))
            return count
        finally:
            await store.close()

    try:
        count = asyncio.run(upsert())
    except SourceMisconfigured as exc:
        raise Fail(f"baton: {exc}") from None
    except StoreUnavailable as exc:
        raise Fail(f"baton: order store unavailable: {exc}") from None
    print(f"baton: imported {count} order(s) into {mask_dsn(settings.orders_url)}")
    return 0
