"""The context health check: the baton a stage starts from, and how much of it survived."""

from __future__ import annotations

from typing import Literal

from baton_kafka.agents import memory
from baton_kafka.schemas.baton import Baton
from baton_kafka.schemas.records import StageName
from baton_kafka.schemas.stages import StageRecord

Level = Literal["full", "partial", "minimal"]


def restore(
    record: StageRecord, held: Baton | None, previous: StageName | None
) -> tuple[Level, Baton]:
    """The baton a stage starts from, and how much of the session's context it holds.

    Full: the table's, which saw stage ``previous`` of this ticket (the first stage always
    starts full); partial: rebuilt from the record's snapshot; minimal: a new one. A rebuilt
    baton keeps what a stale table baton still knows for sure: the tickets answered.
    """
    ticket = record.ticket
    if previous is None:
        return "full", held or memory.new_baton(ticket)
    level: Level
    if (
        held is not None
        and held.version >= record.baton_version
        and any(e.ticket_id == ticket.ticket_id and e.stage == previous for e in held.chain)
        and any(t.ticket_id == ticket.ticket_id for t in held.tickets)
    ):
        return "full", held
    if record.snapshot.core_problems:
        level = "partial"
        baton = memory.from_snapshot(ticket, record.snapshot, record.baton_version)
    else:
        level = "minimal"
        baton = memory.new_baton(ticket)
    if held is not None:
        # The table's baton is stale (a crash lost its last writes), but what it does hold
        # stays true: the tickets already answered (a rebuilt baton that forgot them would let
        # a redelivered copy be answered twice), and a version that only moves forward.
        baton = baton.model_copy(
            update={
                "answered": held.answered,
                "version": max(baton.version, held.version),
                "usage": held.usage,
            }
        )
    if record.understanding is not None:
        baton = memory.apply_understanding(baton, ticket, record.understanding)
    return level, baton
