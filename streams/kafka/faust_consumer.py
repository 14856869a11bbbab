"""A Faust consumer that never skips records of partitions without a committed offset."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from faust.transport.consumer import ensure_TPset
from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread, Consumer
from faust.types import TP


def apply_options(consumer: Any, options: Mapping[str, Any]) -> None:
    """Set the operator's extra client ``options`` (``BATON_KAFKA_CLIENT_*``) on an unstarted
    aiokafka consumer that Faust built with its own: aiokafka keeps each as ``_<option>`` on
    the consumer or its client until ``start`` uses it."""
    for option, value in options.items():
        for target in (consumer, consumer._client):
            if hasattr(target, f"_{option}"):
                setattr(target, f"_{option}", value)
        if option == "retry_backoff_ms":
            consumer._client._retry_backoff = value / 1000


def seeking_consumer(
    source_topics: frozenset[str],
    *,
    fetch_wait_ms: int | None = None,
    options: Mapping[str, Any] | None = None,
) -> type[Consumer]:
    """A consumer class that rewinds uncommitted source partitions to their beginning.

    After an assignment Faust seeks every partition to its committed offset, and aiokafka
    leaves a partition without one wherever its fetcher already is. Records fetched while the
    worker was still recovering its tables are dropped by Faust, so such a partition would
    silently skip them until the next commit elsewhere. Rewinding makes the
    ``earliest`` reset policy hold for them too; the baton's entry in flight absorbs any re-read.

    Source partitions are handed on again only once they were sought: see
    ``SeekingConsumer.resume_partitions``.
    """

    class SeekingThread(AIOKafkaConsumerThread):
        def _create_worker_consumer(self, transport: Any) -> Any:
            consumer = super()._create_worker_consumer(transport)
            if fetch_wait_ms is not None:
                # Faust fixes the fetch wait at 1.5 s; a broker that holds every fetch for its
                # whole wait (the embedded one does) then adds that to each idle hop.
                consumer._fetch_max_wait_ms = fetch_wait_ms
            apply_options(consumer, options or {})
            return consumer

        async def seek_to_committed(self) -> Mapping[Any, int]:
            consumer = self._ensure_consumer()
            committed: Mapping[Any, int] = await self.call_thread(consumer.seek_to_committed)
            fresh = [
                tp
                for tp, offset in committed.items()
                if tp.topic in source_topics and (offset is None or offset <= 0)
            ]
            if fresh:
                await self.call_thread(consumer.seek_to_beginning, *fresh)
            return committed

    class SeekingConsumer(Consumer):
        # Source partitions Faust resumed whose seek to the committed offset is still to come.
        _unsought: frozenset[TP] = frozenset()

        def _new_consumer_thread(self) -> AIOKafkaConsumerThread:
            return SeekingThread(self, loop=self.loop, beacon=self.beacon)

        def resume_partitions(self, tps: Iterable[TP]) -> None:
            """Resume ``tps``, but source partitions only once :meth:`perform_seek` ran."""
            # After a rebalance Faust resumes the source partitions, then seeks them in a task
            # of its own. A fetch in between hands on records from wherever the fetcher got to
            # while they were paused, past records Faust dropped then, and the seek re-reads
            # those afterwards: a session's later ticket was answered before its earlier one.
            tps = ensure_TPset(tps)
            held = {tp for tp in tps if tp.topic in source_topics}
            self._unsought = self._unsought | held
            super().resume_partitions(tps - held)

        async def perform_seek(self) -> None:
            """Seek to the committed offsets, then hand on the source partitions held for it."""
            # Faust's fetcher asks for a seek whenever it finds the flow stopped, i.e. while a
            # rebalance is under way. That seek works on the assignment it started with and can
            # finish after the new generation's own seek, once the flow resumed: it moved the
            # partitions it knew back under records being handed on, and a partition whose
            # records were handed on meanwhile lost them until a restart. The seek at the end of
            # every rebalance covers the whole new assignment, so this one is skipped.
            if not self._unsought and not self.flow_active:
                return
            await super().perform_seek()
            sought, self._unsought = self._unsought, frozenset()
            super().resume_partitions(sought & self.assignment())

    return SeekingConsumer
