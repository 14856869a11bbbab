"""The strategy stage's baton update, once its reply is published: what was answered and
promised, what the ticket's model calls cost; the ticket leaves flight."""

from __future__ import annotations

from baton_kafka.agents.commit import commit, ticket_memory, with_memory
from baton_kafka.agents.stages.strategy import NAME
from baton_kafka.schemas.baton import Baton
from baton_kafka.schemas.records import Reply

ANSWERED_KEEP = 200


def apply_reply(baton: Baton, reply: Reply) -> Baton:
    """Record the answer and what the ticket's model calls cost; the ticket leaves flight."""
    memory = ticket_memory(baton, reply.ticket_id)
    tickets = baton.tickets
    if memory is not None:
        # As the ledger below: a handed-off reply promised nothing.
        promised = (
            reply.offer is not None
            and reply.offer.state == "approved"
            and reply.status != "handoff"
        )
        told = {
            "status": reply.status,
            "solution": reply.solution[:200],
            "offer": reply.offer.lines if promised and reply.offer else [],
            "restated": reply.offer.restated if promised and reply.offer else [],
        }
        tickets = with_memory(baton, memory.model_copy(update=told))
    usage = baton.usage.merge(reply.usage)
    # Every ticket of a burst answered as one turn: a copy of any of them is settled from it.
    answered = [*baton.answered, *reply.ticket_ids][-ANSWERED_KEEP:]
    offered = {order: dict(kinds) for order, kinds in baton.offered.items()}
    if reply.offer is not None and reply.offer.state == "approved" and reply.status != "handoff":
        for line in reply.offer.lines:
            if line.amount:
                kinds = offered.setdefault(line.order_id, {})
                kinds[line.kind] = max(kinds.get(line.kind, 0.0), line.amount)
    return commit(
        baton,
        reply.ticket_id,
        NAME,
        f"{reply.status} (confidence {reply.confidence:.2f})",
        reply.solution[:200],
        tickets=tickets,
        usage=usage,
        answered=answered,
        offered=offered,
        in_flight=None,
    )
