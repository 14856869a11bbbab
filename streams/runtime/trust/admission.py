"""What a record must be to be taken in: signed for where it was read, its session's and owner's,
not from before its customer's erasure; and a ticket's time bounded."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from baton_kafka.schemas.records import Ticket, utcnow
from baton_kafka.streams.runtime.records import placement
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.runtime.records.delivery import Delivery
from baton_kafka.streams.runtime.records.signing import Signer
from baton_kafka.streams.runtime.session import erasure, ownership
from baton_kafka.streams.runtime.session.batons import BatonStore
from baton_kafka.streams.settings import Settings


@dataclass(frozen=True)
class Admission:
    """The checks a stage runs on a record before it touches any state of the session."""

    settings: Settings
    signer: Signer
    batons: BatonStore

    def misplaced(self, source: Source) -> Callable[[str], str | None]:
        """Why a record of a session read at ``source`` is not on the session's key/partition."""
        return lambda session_id: placement.misplaced(source, session_id, self.settings.partitions)

    def erased(self, ticket: Ticket, source: Source) -> bool:
        """Whether the ticket's customer was erased after this record was written."""
        erased = self.batons.erased_at(ticket.customer_id)
        written = source.timestamp or (ticket.written_at() if ticket.created_at else None)
        return erased is not None and written is not None and written <= erased

    def dated(self, ticket: Ticket, source: Source) -> Ticket:
        """``ticket`` with a ``created_at``: its record's broker timestamp when it has none.

        The customer's wait then counts from the ticket's publication, not from when intake
        got to it: one that waited in the topic (a backlog, a burst) gets its holding reply
        and its hand-off deadline on time, and its time words count from when it was written.
        """
        at = source.timestamp
        # Some brokers and clients write -1 or 0 for "no timestamp".
        if ticket.created_at is not None or at is None or at.timestamp() <= 0:
            return ticket
        return ticket.model_copy(update={"created_at": min(at, utcnow())})

    def bounded(self, ticket: Ticket) -> Ticket:
        """``ticket`` with its ``created_at`` no further back than ``BATON_TICKET_MAX_AGE_DAYS``.

        The time words of the message count from it: a producer cannot move "last month" back.
        """
        if ticket.created_at is None:
            return ticket
        floor = utcnow() - timedelta(days=self.settings.ticket_max_age_days)
        if ticket.written_at() >= floor:
            return ticket
        return ticket.model_copy(update={"created_at": floor})

    def refuses(self, topic: str, delivery: Delivery) -> bool:
        """Whether the record read from ``topic`` is a ticket the stage refuses (not signed for
        where it was read, from before its customer's erasure, another sender's): it needs no
        place in the session's queue nor its turn.

        An erasure request and a record that does not parse go through the queue as usual.
        """
        if erasure.requested(delivery.headers):
            return False
        ticket = delivery.ticket()
        if ticket is None:
            return False
        source = delivery.source
        if delivery.problem(self.signer, topic):
            return True
        if self.misplaced(source)(ticket.session_id) is not None:
            return True
        if self.erased(ticket, source):
            return True
        return ownership.conflict(self.batons.get(ticket.session_id), ticket) is not None
