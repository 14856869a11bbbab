"""Reference chains for ``baton bench``: the same records through three bare hops, nothing else.

Each hop decodes and validates its record and encodes the next one (the first hop turns a
``Ticket`` into a ``StageRecord``): the JSON work every pipeline stage does too, without baton,
tables, model or dead letters. Run as
``python -m baton_kafka.streams.bench.chains faust|aiokafka`` with the ``BATON_*`` variables of
the run (broker, namespace, partitions, data dir, web port).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from typing import Any

from baton_kafka.schemas.codec import dumps, parse
from baton_kafka.schemas.records import Ticket
from baton_kafka.schemas.stages import StageRecord
from baton_kafka.streams.settings import Settings, load

KINDS = ("faust", "aiokafka")


def chain_topics(settings: Settings, kind: str) -> tuple[str, str, str, str]:
    """Input, two intermediate topics and output of a reference chain in this namespace."""
    names = ("in", "hop1", "hop2", "out")
    return tuple(settings.topic(f"bench.{kind}.{n}") for n in names)  # type: ignore[return-value]


def transform(value: bytes | None, first: bool) -> bytes:
    """One hop's work: decode and validate, then encode what the next hop reads."""
    if first:
        return dumps(StageRecord(ticket=parse(Ticket, value)))
    return dumps(parse(StageRecord, value))


def run_faust(settings: Settings) -> None:
    """Three Faust agents in a row, configured like the pipeline's worker."""
    import faust

    from baton_kafka.streams.runtime.faust_app.app import faust_settings

    topics = chain_topics(settings, "faust")
    conf = faust_settings(settings)
    datadir = settings.data_dir / "faust" / "bench-chain"
    datadir.mkdir(parents=True, exist_ok=True)
    conf["datadir"] = str(datadir)
    app = faust.App(f"{settings.app_id}-bench-chain", **conf)
    made = [
        app.topic(
            name,
            partitions=settings.partitions,
            key_type=bytes,
            value_type=bytes,
            key_serializer="raw",
            value_serializer="raw",
        )
        for name in topics
    ]

    def hop(index: int) -> None:
        source, target = made[index], made[index + 1]

        async def agent(stream: Any) -> None:
            async for event in stream.events():
                await target.send(key=event.key, value=transform(event.value, index == 0))

        app.agent(source, name=f"hop{index}")(agent)

    for index in range(3):
        hop(index)
    faust.Worker(
        app, loglevel=settings.log_level, quiet=True, redirect_stdouts=False
    ).execute_from_commandline()


async def run_aiokafka(settings: Settings) -> None:
    """Three consumer-group loops sharing one producer; offsets auto-committed."""
    from baton_kafka.streams.kafka.connect import new_consumer, new_producer

    topics = chain_topics(settings, "aiokafka")
    producer = new_producer(settings, acks="all", linger_ms=5)
    await producer.start()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)

    async def hop(index: int) -> None:
        consumer = new_consumer(
            settings,
            topics[index],
            group_id=f"{settings.app_id}-bench-aiokafka-{index}",
            auto_offset_reset="earliest",
        )
        await consumer.start()
        try:
            while True:
                batch = await consumer.getmany(timeout_ms=200)
                sent = [
                    await producer.send(
                        topics[index + 1], transform(r.value, index == 0), key=r.key
                    )
                    for records in batch.values()
                    for r in records
                ]
                await asyncio.gather(*sent)
        finally:
            await consumer.stop()

    tasks = [asyncio.create_task(hop(i)) for i in range(3)]
    try:
        await stop.wait()
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await producer.stop()


def main(argv: list[str] | None = None) -> None:
    """Run one reference chain until terminated."""
    parser = argparse.ArgumentParser(prog="python -m baton_kafka.streams.bench.chains")
    parser.add_argument("kind", choices=KINDS)
    args = parser.parse_args(argv)
    settings = load()
    if args.kind == "faust":
        run_faust(settings)
    else:
        asyncio.run(run_aiokafka(settings))


if __name__ == "__main__":
    main()
