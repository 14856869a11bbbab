"""The baton's record of holding replies sent: written before the send, kept across writes."""

from __future__ import annotations

from baton_kafka.schemas.baton import Baton

# Tickets of one session waiting at once are few; the bound keeps a stuck session's baton small.
HOLDING_KEEP = 20


def sent(baton: Baton | None, ticket_id: str) -> bool:
    """The baton records that ``ticket_id`` got its holding reply."""
    return baton is not None and ticket_id in baton.holding


def mark(baton: Baton, ticket_id: str) -> Baton:
    """``baton`` recording the holding reply of ``ticket_id`` (the version stays: no context)."""
    return baton.model_copy(update={"holding": [*baton.holding, ticket_id][-HOLDING_KEEP:]})


def carry(stored: Baton | None, new: Baton) -> Baton:
    """``new`` with the holding marks ``stored`` has and ``new`` lacks, for tickets not answered.

    A stage writes the baton it read before its model call; a holding reply recorded meanwhile
    must survive that write, or a redelivered copy would send it again. An answered ticket's
    mark goes: from then on the baton's answered list keeps a copy from any reply.
    """
    if not new.holding and (stored is None or not stored.holding):
        return new
    marks = [*new.holding, *(t for t in (stored.holding if stored else []) if t not in new.holding)]
    kept = [t for t in marks if t not in new.answered][-HOLDING_KEEP:]
    return new if kept == new.holding else new.model_copy(update={"holding": kept})
