"""The checks a stage runs at each attempt, holding the session's turn: settle what the baton
settles, then ready the baton and the budget the stage runs on (``ATTEMPTING``, in order)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from baton_kafka.agents import people
from baton_kafka.agents.asking import budget_tokens
from baton_kafka.schemas.baton import Baton, InFlight
from baton_kafka.streams.runtime.records import dead_letters
from baton_kafka.streams.runtime.session import context
from baton_kafka.streams.runtime.session.bursts import turn_ids
from baton_kafka.streams.runtime.trust.admission_checks import Ownership
from baton_kafka.streams.runtime.trust.checks import DONE, GO, Check, Host, RecordView, Verdict


async def _resumed(host: Host, entry: InFlight, held: Baton) -> None:
    await host._answered(*await host.turns.waited(host.redelivery.resume(entry, held)))


@dataclass(frozen=True)
class PendingReply:
    """A reply the baton holds as pending for this ticket is finished, not made again: at the
    answering stage, or at the first stage of a taken-over session (its only copy)."""

    name: str = "pending_reply"

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        held, entry, stage = view.held(), view.entry(), view.stage
        if held is None or entry is None or not entry.pending:
            return GO
        if stage.answers or (stage.opens_session and held.taken_over):
            await _resumed(host, entry, held)
            return DONE
        return GO


@dataclass(frozen=True)
class Redelivered:
    """A copy of a ticket the stage has seen is settled from the baton's entry."""

    name: str = "redelivery"

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        stage = view.stage
        target = host.topics.role(stage.target_role)
        settled = await host.redelivery.settle(
            stage.name, view.ticket, view.entry(), target, view.held
        )
        return DONE if settled else GO


@dataclass(frozen=True)
class TakenOver:
    """A person has the session: no agent answers until it is handed back (a silent reply)."""

    name: str = "taken_over"

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        stage = view.stage
        held = view.held() if stage.opens_session else None
        if held is None or not held.taken_over:
            return GO
        assert view.record is not None
        reply, held = people.silent(view.ticket, held, llm=host.llm.name, policy=host.policy)
        reply = reply.model_copy(update={"ticket_ids": turn_ids(view.record)})
        await host._answered(reply, await host.turns.waited(host.redelivery.reply(reply, held)))
        host.observer.stage_done(stage.name, "taken_over", 0.0)
        return DONE


@dataclass(frozen=True)
class ContextComplete:
    """The record carries every earlier stage's result the stage reads; else the ticket fails
    (dead letter and a degraded reply)."""

    name: str = "context"

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        stage, record = view.stage, view.record
        assert record is not None
        missing = host.chain.missing(stage, record)
        if not missing:
            return GO
        host.observer.context(stage.name, "broken")
        dl = dead_letters.letter(
            stage=stage.name,
            reason="context_broken",
            error=f"the record reached {stage.name} without the result of {' and '.join(missing)}",
            payload="",
            source=view.source,
            ticket=record.ticket,
        )
        await host._fail_ticket(record, stage.name, dl, view.source)
        return DONE


@dataclass(frozen=True)
class Restore:
    """The baton the stage starts from (the table's, or rebuilt from the record), and how
    much of the context survived."""

    name: str = "restore"

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        assert view.record is not None
        view.started = time.monotonic()
        previous = host.chain.previous(view.stage.name)
        level, view.baton = context.restore(view.record, view.held(), previous)
        host.observer.context(view.stage.name, level)
        return GO


@dataclass(frozen=True)
class Budget:
    """The tokens the stage may spend: what is left of the session's budget and of the
    customer's."""

    name: str = "budget"

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        assert view.record is not None and view.baton is not None
        session_left = (
            host.settings.session_token_budget
            - budget_tokens(view.baton.usage)
            - budget_tokens(view.record.usage)
        )
        view.allowance = host.budgets.allowance(view.ticket.customer_id, session_left)
        return GO


# Once per attempt at the stage, holding the session's turn.
ATTEMPTING: tuple[Check, ...] = (
    Ownership(name="ownership_at_turn"),
    PendingReply(),
    Redelivered(),
    TakenOver(),
    ContextComplete(),
    Restore(),
    Budget(),
)
