"""The checks a stage runs once per record: is it trusted, decodable, the session's, and its
turn (``ADMITTING``, in order)."""

from __future__ import annotations

from dataclasses import dataclass

from baton_kafka.schemas.codec import InvalidRecord
from baton_kafka.schemas.stages import StageRecord
from baton_kafka.streams.observe import tracing
from baton_kafka.streams.runtime.records.delivery import Delivery
from baton_kafka.streams.runtime.session import erasure, ownership
from baton_kafka.streams.runtime.session.bursts import Bursts, joined
from baton_kafka.streams.runtime.trust.checks import DONE, GO, Check, Host, RecordView, Verdict


@dataclass(frozen=True)
class Signature:
    """The record is signed for the topic and key it was read at; else an untrusted letter."""

    name: str = "signature"

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        if not host.signer.enabled:
            return GO  # signing is off: every record is trusted (``Delivery.problem``)
        d = view.delivery
        problem = d.problem(host.signer, host.source_topic(view.stage))
        if problem is None:
            return GO
        await host._untrusted(view.stage.name, d.value, problem, view.source, d.ticket())
        return DONE


@dataclass(frozen=True)
class ErasureRequest:
    """At the session's first stage an erasure request erases the session's baton."""

    name: str = "erasure"

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        if not (view.stage.opens_session and erasure.requested(view.delivery.headers)):
            return GO
        misplaced = host.admission.misplaced(view.source)
        await erasure.erase_session(view.batons, host.gate, view.delivery.value, misplaced)
        return DONE


@dataclass(frozen=True)
class Decode:
    """The bytes hold a stage record (decoded once); else an invalid-input dead letter."""

    name: str = "decode"

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        try:
            view.record = view.delivery.record()
        except InvalidRecord as exc:
            await host._reject(view.stage.name, view.delivery.value, exc, view.source)
            host.observer.stage_done(view.stage.name, "invalid", 0.0)
            return DONE
        return GO


@dataclass(frozen=True)
class Placement:
    """The record was read on its session's key and partition; else an untrusted letter."""

    name: str = "placement"

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        ticket = view.ticket
        problem = host.admission.misplaced(view.source)(ticket.session_id)
        if problem is None:
            return GO
        await host._untrusted(view.stage.name, view.delivery.value, problem, view.source, ticket)
        return DONE


@dataclass(frozen=True)
class Erased:
    """A record written before its customer's erasure is dropped: nothing keeps it."""

    name: str = "erased"

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        if not host.admission.erased(view.ticket, view.source):
            return GO
        host._drop_erased(view.stage.name, view.ticket)
        return DONE


@dataclass(frozen=True)
class Trace:
    """The admitted record's span is named by its ticket and session."""

    name: str = "trace"

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        tracing.annotate(view.ticket.ticket_id, view.ticket.session_id)
        return GO


@dataclass(frozen=True)
class Ownership:
    """The ticket's sender owns the session (the baton as read now); else refused, no reply."""

    name: str = "ownership"
    # Only at the stage that opens the session (before its turn there), or at every stage.
    opening_only: bool = False

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        if self.opening_only and not view.stage.opens_session:
            return GO
        problem = ownership.conflict(view.held(), view.ticket)
        if problem is None:
            return GO
        assert view.record is not None
        await host._refuse(view.record, view.stage.name, problem, view.source)
        return DONE


@dataclass(frozen=True)
class AnsweredCopy:
    """At the first stage a copy of a ticket its baton shows answered stops before the turn.

    After a crash the session's copies come back in order; waiting for the session's next
    ticket, it would hold back that ticket's own copy, queued behind it, until the turn's
    timeout.
    """

    name: str = "answered_copy"

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        if not view.stage.opens_session:
            return GO
        held, ticket = view.held(), view.ticket
        if held is None or ticket.ticket_id not in held.answered:
            return GO
        host.gate.leave(ticket.session_id, ticket.ticket_id)
        host.observer.stage_done(view.stage.name, "reused", 0.0)
        return DONE


@dataclass(frozen=True)
class Turn:
    """At the first stage the ticket's clock starts and it waits for the session's turn."""

    name: str = "session_gate"

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        if not view.stage.opens_session:
            return GO
        assert view.record is not None
        ticket = view.ticket
        host.clocks.start(view.record)  # before the wait: the customer is waiting
        unfinished = host.redelivery.unfinished
        entering = host.gate.enter(ticket.session_id, ticket.ticket_id, lambda: unfinished(ticket))
        # Waiting for the session's previous ticket, the chain's other work goes on; a
        # ticket that need not wait keeps its turn.
        waits = host.gate.held(ticket.session_id, ticket.ticket_id)
        await (host.turns.waited(entering) if waits else entering)
        view.refresh()
        return GO


@dataclass(frozen=True)
class Burst:
    """At the first stage the session's tickets that follow within the coalescing window join
    the turn (their clocks started: the customer is waiting on each)."""

    name: str = "bursts"

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        if host.bursts is None or not view.stage.opens_session:
            return GO
        view.record = await host.turns.waited(self._gathered(host, host.bursts, view))
        view.refresh()
        return GO

    async def _gathered(self, host: Host, bursts: Bursts, view: RecordView) -> StageRecord:
        assert view.record is not None
        record, held = view.record, view.held()
        if host.redelivery.known(record.ticket, view.held):
            return record
        if held is not None and (held.taken_over or held.pending is not None):
            return record  # a person has the session: each ticket is theirs to read
        topic = host.source_topic(host.chain.first)
        later = await bursts.gather(record, view.source, lambda d: joins(host, topic, d))
        for each in later:
            host.clocks.start(each)
        return joined(record, later)


def joins(host: Host, topic: str, delivery: Delivery) -> bool:
    """A queued record may be answered in an earlier ticket's turn: a valid ticket the
    session takes, not a copy of one the baton knows, not an erasure request."""
    ticket = delivery.ticket()
    if ticket is None or erasure.requested(delivery.headers) or host.redelivery.known(ticket):
        return False
    return not host.admission.refuses(topic, delivery)


# Once per record, before its session is touched beyond a read.
ADMITTING: tuple[Check, ...] = (
    Signature(),
    ErasureRequest(),
    Decode(),
    Placement(),
    Erased(),
    Trace(),
    Ownership(opening_only=True),
    AnsweredCopy(),
    Turn(),
    Burst(),
)
