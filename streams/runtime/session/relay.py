"""A stage's output passed straight to the next stage on this worker; its copy read back from
the topic then waits for that run and stops, so the stage runs once."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from baton_kafka.streams.observe.redaction import describe
from baton_kafka.streams.observe.shown import shown
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.runtime.records.delivery import Delivery
from baton_kafka.streams.runtime.records.signing import Headers

log = logging.getLogger("baton.pipeline")

# A stage's output given straight to the next stage: that stage's name and the record.
Passed = tuple[str, Delivery]

# Whether this worker reads a topic's partition of a session now: (topic, session id) -> bool.
Owns = Callable[[str, str], bool]

# How long a finished run's mark waits for its copy from the topic (a copy that never comes
# here, read by another worker after a rebalance, must not keep it for ever).
KEEP_S = 300.0


# Where a record is on its topic: topic, partition, offset.
Place = tuple[str, int, int]


@dataclass
class _Mark:
    ran: asyncio.Future[bool]
    sent: bytes | None = None
    # Where the output passed on was written, when the broker told its offset.
    at: Place | None = None


def _place(source: Source) -> Place | None:
    topic, partition, offset = source.topic, source.partition, source.offset
    if topic is None or partition is None or offset is None:
        return None
    return topic, partition, offset


@dataclass
class Relay:
    """The runs passed on in-process, by ticket and stage, until their copy from the topic is read.

    A mark is made before the output is sent, so a copy read back before the run starts still
    finds it and waits. The copy stops once the run finished, if its bytes are those sent; it
    runs the stage as any record does when the run here could not finish, and so does any other
    record of the ticket at that stage (a forged one meets the stage's checks), after waiting
    for the run too. A copy read where the broker wrote the output, with its bytes, is told
    without being decoded (``copy_of``). No mark is made while a record read from the topic
    runs the ticket at that stage (an old copy read again after a crash): the output then waits
    its turn on the topic, so the stage never runs twice at once on one ticket.
    """

    owns: Owns | None = None
    keep_s: float = KEEP_S
    _marks: dict[tuple[str, str], _Mark] = field(default_factory=dict)
    _running: Counter[tuple[str, str]] = field(default_factory=Counter)
    # The marks by where their output was written: a copy read back is told by its place.
    _at: dict[Place, tuple[str, str]] = field(default_factory=dict)

    @property
    def enabled(self) -> bool:
        """Whether outputs are passed on at all (off: no ``owns``)."""
        return self.owns is not None

    @property
    def marked(self) -> int:
        """Runs passed on whose copy was not read yet."""
        return len(self._marks)

    def mark(self, ticket_id: str, stage: str, topic: str, session_id: str) -> bool:
        """Mark the ticket's run at ``stage`` as passed on here, when this worker reads the
        session's partition of ``topic``; False (no mark) when it does not."""
        if self.owns is None or not self.owns(topic, session_id):
            return False
        if self._running[(ticket_id, stage)]:
            return False  # a record read from the topic runs the ticket at the stage now
        old = self._marks.get((ticket_id, stage))
        if old is not None and not old.ran.done():
            return False  # a run of this ticket at the stage is passed on already
        if old is not None:
            self._remove((ticket_id, stage), old)
        self._marks[(ticket_id, stage)] = _Mark(asyncio.get_running_loop().create_future())
        return True

    def _reads(self, topic: str | None, key: str | None) -> bool:
        """Whether this worker still reads the partition a passed-on record's copy is on."""
        owns = self.owns
        return owns is not None and topic is not None and key is not None and owns(topic, key)

    def given(
        self,
        ticket_id: str,
        stage: str,
        source: Source,
        value: bytes,
        headers: Headers | None,
    ) -> Passed:
        """What the marked run at ``stage`` reads: ``value`` as sent, with its headers, as if
        read at ``source`` (where its copy is on the topic)."""
        mark = self._marks.get((ticket_id, stage))
        if mark is not None and not mark.ran.done():
            mark.sent = value
            at = _place(source)
            if at is not None:
                mark.at = at
                self._at[at] = (ticket_id, stage)
        return stage, Delivery(value, source, headers)

    def copy_of(self, stage: str, source: Source, value: bytes | None) -> str | None:
        """The ticket whose run at ``stage`` was passed on here as the record read at
        ``source`` with ``value``: told from its place and its bytes, without decoding them;
        None when the record is not known to be such a copy."""
        at = _place(source)
        key = self._at.get(at) if at is not None else None
        if key is None or key[1] != stage:
            return None
        mark = self._marks.get(key)
        # The broker wrote one record at a place: the same bytes there are the record sent.
        if mark is None or mark.at != at or value is None or mark.sent != value:
            return None
        return key[0]

    async def carry(
        self, passed: Passed | None, run: Callable[[str, Delivery], Awaitable[Passed | None]]
    ) -> None:
        """``run`` each record passed on in turn (each run may pass its own output on)."""
        while passed is not None:
            stage, delivery = passed
            ticket_id = delivery.record().ticket.ticket_id
            source = delivery.source
            if not self._reads(source.topic, source.key):
                # The partition moved on (a rebalance): its new reader runs the copy.
                self.finish(ticket_id, stage, False)
                return
            ran = False
            try:
                passed = await run(stage, delivery)
                ran = True
            except Exception as exc:
                # Its copy from the topic runs the stage instead, as any record.
                log.warning("%s: passing %s on failed: %s", stage, shown(ticket_id), describe(exc))
                passed = None
            finally:
                self.finish(ticket_id, stage, ran)

    def finish(self, ticket_id: str, stage: str, ran: bool) -> None:
        """The passed-on run is over: ``ran`` when the stage finished its record."""
        key = (ticket_id, stage)
        mark = self._marks.get(key)
        if mark is None or mark.ran.done():
            return
        mark.ran.set_result(ran)
        asyncio.get_running_loop().call_later(self.keep_s, self._drop, key, mark)

    def _drop(self, key: tuple[str, str], mark: _Mark) -> None:
        if self._marks.get(key) is mark:
            self._remove(key, mark)

    def _remove(self, key: tuple[str, str], mark: _Mark) -> None:
        """Forget ``mark`` and where its output was written."""
        if self._marks.get(key) is mark:
            del self._marks[key]
        if mark.at is not None and self._at.get(mark.at) == key:
            del self._at[mark.at]

    async def copy_done(self, ticket_id: str, stage: str, value: bytes | None) -> bool:
        """For a record read from the topic: wait for the ticket's passed-on run at ``stage``;
        True when it finished and ``value`` is what it was given (the copy stops), False when
        there was none, it failed, or the record is another (it runs)."""
        key = (ticket_id, stage)
        # A run passed on after the awaited one (the stage before ran again) is waited for too.
        while (mark := self._marks.get(key)) is not None and not mark.ran.done():
            await asyncio.shield(mark.ran)
        if mark is None or not mark.ran.result() or value is None or mark.sent != value:
            return False
        self._remove(key, mark)
        return True

    @contextmanager
    def running(self, ticket_id: str, stage: str) -> Iterator[None]:
        """A record read from the topic runs the ticket at ``stage``: nothing is passed on to
        that stage for the ticket meanwhile (see ``mark``)."""
        key = (ticket_id, stage)
        self._running[key] += 1
        try:
            yield
        finally:
            self._running[key] -= 1
            if not self._running[key]:
                del self._running[key]
