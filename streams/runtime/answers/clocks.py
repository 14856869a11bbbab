"""First-reply deadlines: a ticket not answered in time gets one holding reply, then its own."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from baton_kafka.agents import memory
from baton_kafka.agents.fixed_texts import fixed
from baton_kafka.schemas.baton import Baton
from baton_kafka.schemas.codec import dumps
from baton_kafka.schemas.records import Reply, utcnow
from baton_kafka.schemas.stages import StageRecord
from baton_kafka.streams.observe.redaction import describe
from baton_kafka.streams.observe.shown import shown
from baton_kafka.streams.runtime.answers import replies
from baton_kafka.streams.runtime.records.sink import Sink
from baton_kafka.streams.runtime.session import holding
from baton_kafka.streams.runtime.session.batons import BatonStore

log = logging.getLogger("baton.clocks")

HOLDING = "holding"
# Upper bounds (seconds) of the open-ticket age buckets the metrics and the dashboard show.
AGE_BUCKETS: tuple[float, ...] = (5.0, 10.0, 20.0, 60.0, 180.0)
# A ticket this worker stopped seeing (its session moved to another worker) is forgotten then.
FORGET_AFTER_S = 3600.0


def answered(baton: Baton | None, ticket_id: str) -> bool:
    """The ticket has its reply: sent (answered) or recorded as pending before the send."""
    if baton is None:
        return False
    entry = baton.in_flight
    pending = entry is not None and entry.ticket_id == ticket_id and entry.pending
    return pending or ticket_id in baton.answered


def holding_reply(
    record: StageRecord, baton: Baton, languages: Sequence[str], policy_version: str
) -> Reply:
    """The ticket's holding reply: a fixed text in the customer's language that promises nothing,
    under the shop's policy of ``policy_version``."""
    ticket = record.ticket
    language = replies.language_of(record, languages)
    waited = (utcnow() - record.received_at).total_seconds()
    return Reply(
        ticket_id=ticket.ticket_id,
        session_id=ticket.session_id,
        customer_id=ticket.customer_id,
        status=HOLDING,
        reply=fixed("still_working", language, languages[0]),
        solution="",
        internal_note="The first-reply deadline passed; the ticket's own reply follows.",
        confidence=0.0,
        order_id=None,
        language=language,
        baton_version=baton.version,
        policy_version=policy_version,
        timings_ms={"end_to_end": round(waited * 1000, 1)},
    )


@dataclass
class _Open:
    """A ticket this worker started and has not answered yet."""

    session_id: str
    written: datetime
    # A timer until the deadline, then the task that sends the holding reply.
    timer: asyncio.TimerHandle | asyncio.Task[None] | None = None
    sending: asyncio.Task[None] | None = None


@dataclass
class Clocks:
    """Starts each ticket's first-reply clock; sends the holding reply once; shows the ages.

    The timer is the loop's (a task of its own only once it is due): it never holds the
    session gate or a stage, and the holding reply is recorded in the baton (acknowledged)
    before it is sent.
    """

    deadline_s: float
    batons: BatonStore
    sink: Sink
    replies_topic: str
    languages: Sequence[str]
    policy_version: str
    open: dict[str, _Open] = field(default_factory=dict)
    sent: int = 0
    # Other deadlines of the worker's sessions (an approval's), by key: one task each.
    alarms: dict[str, asyncio.Task[None]] = field(default_factory=dict)

    def start(self, record: StageRecord) -> None:
        """Start ``record``'s ticket's clock at its writing time, unless it is off or answered."""
        ticket = record.ticket
        if self.deadline_s <= 0 or ticket.ticket_id in self.open:
            return
        if answered(self.batons.get(ticket.session_id), ticket.ticket_id):
            return  # a copy of a ticket answered already
        written = ticket.written_at(record.received_at)
        left = self.deadline_s - (utcnow() - written).total_seconds()
        clock = _Open(ticket.session_id, written)
        self.open[ticket.ticket_id] = clock
        # A timer, not a sleeping task per ticket: most tickets are answered before it is due.
        clock.timer = asyncio.get_running_loop().call_later(
            max(left, 0.0), self._due, clock, record
        )

    def _due(self, clock: _Open, record: StageRecord) -> None:
        # Runs in the context the timer copied at start(), as the task would have.
        clock.timer = asyncio.get_running_loop().create_task(self._fire(record))

    async def answering(self, ticket_id: str) -> None:
        """Stop the ticket's clock before its reply is sent; a holding reply on its way goes
        first, so the customer never reads it after the answer."""
        clock = self.open.pop(ticket_id, None)
        if clock is None:
            return
        if clock.timer is not None and clock.sending is None:
            clock.timer.cancel()
        if clock.sending is not None:
            # A failed holding reply was logged where it failed: the answer goes on.
            with contextlib.suppress(Exception):
                await asyncio.shield(clock.sending)

    def close(self) -> None:
        """Stop every clock (the worker shuts down; a restarted one starts them again)."""
        for clock in self.open.values():
            if clock.timer is not None:
                clock.timer.cancel()
        self.open.clear()
        for alarm in self.alarms.values():
            alarm.cancel()
        self.alarms.clear()

    def alarm(self, key: str, at: datetime, ring: Callable[[], Awaitable[None]]) -> bool:
        """Await ``ring`` once at ``at`` (at once if it passed), unless alarm ``key`` is set.

        Like a first-reply clock, it is a task of its own; what it does is recorded in the
        baton by ``ring``, so a worker that sets it again after a restart does nothing twice.
        """
        if key in self.alarms:
            return False
        delay = max((at - utcnow()).total_seconds(), 0.0)
        # A context of its own: not the trace or the stream event of the record that set it.
        self.alarms[key] = asyncio.get_running_loop().create_task(
            self._ring(key, delay, ring), context=contextvars.Context()
        )
        return True

    async def _ring(self, key: str, delay: float, ring: Callable[[], Awaitable[None]]) -> None:
        try:
            await asyncio.sleep(delay)
            await ring()
        except Exception as exc:  # the next sweep of the batons sets it again
            log.warning("the deadline %s failed: %s", shown(key), describe(exc))
        finally:
            if self.alarms.get(key) is asyncio.current_task():
                del self.alarms[key]

    async def _fire(self, record: StageRecord) -> None:
        ticket = record.ticket
        clock = self.open.get(ticket.ticket_id)
        baton = self.batons.get(ticket.session_id)
        if clock is None or holding.sent(baton, ticket.ticket_id):
            return
        if answered(baton, ticket.ticket_id):
            self.open.pop(ticket.ticket_id, None)
            return
        # Read, mark and write with no wait between: no other write of the baton is lost.
        base = baton if baton is not None else memory.new_baton(ticket)
        reply = holding_reply(record, base, self.languages, self.policy_version)
        clock.sending = asyncio.current_task()
        try:
            await self.batons.save_durably(holding.mark(base, ticket.ticket_id))
            await self.sink.send(self.replies_topic, ticket.session_id, dumps(reply))
        except Exception as exc:  # the ticket's own reply still comes
            log.warning("holding reply of %s failed: %s", shown(ticket.ticket_id), describe(exc))
            return
        self.sent += 1
        log.info("holding reply sent for %s", shown(ticket.ticket_id))

    def ages(self) -> list[float]:
        """Seconds since the customer wrote, of every open ticket (forgetting stale ones)."""
        at = utcnow()
        out = []
        for ticket_id, clock in list(self.open.items()):
            age = (at - clock.written).total_seconds()
            if age > FORGET_AFTER_S:
                self.open.pop(ticket_id, None)
                continue
            out.append(age)
        return out


def age_bucket(age: float, buckets: Iterable[float] = AGE_BUCKETS) -> str:
    """The label of the age bucket ``age`` falls in: ``le_5``, ... or ``over_180``."""
    last = 0.0
    for bound in buckets:
        if age <= bound:
            return f"le_{bound:g}"
        last = bound
    return f"over_{last:g}"


def age_labels(buckets: Sequence[float] = AGE_BUCKETS) -> list[str]:
    """Every bucket label, youngest first."""
    return [f"le_{b:g}" for b in buckets] + [f"over_{buckets[-1]:g}"]


class ClockGauges(Collector):
    """Open tickets by age, tickets past their first-reply deadline, holding replies sent."""

    def __init__(self, clocks: Clocks) -> None:
        self.clocks = clocks

    def describe(self) -> Iterable[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        ages = self.clocks.ages()
        by_age = GaugeMetricFamily(
            "baton_open_tickets",
            "Tickets this worker started and has not answered, by seconds since they were written",
            labels=["age"],
        )
        counts = dict.fromkeys(age_labels(), 0)
        for age in ages:
            counts[age_bucket(age)] += 1
        for label, n in counts.items():
            by_age.add_metric([label], n)
        yield by_age
        deadline = self.clocks.deadline_s
        yield GaugeMetricFamily(
            "baton_tickets_past_deadline",
            "Open tickets past their first-reply deadline (0 while the deadline is off)",
            value=sum(1 for a in ages if deadline > 0 and a > deadline),
        )
        yield CounterMetricFamily(
            "baton_holding_replies",
            "Holding replies sent (one at most per ticket)",
            value=self.clocks.sent,
        )
