"""Which lines of an approved offer restate a line already agreed for the customer.

A line is identified by its kind, order and item: the same remedy for the same order (or the
same item of it) that an earlier answered reply agreed is that remedy stated again, not a
second one, as long as its money is not more than what was agreed for it (the earlier lines of
that identity added up). A different remedy for the same order or item, a line for another item
or for the whole order, or more money than was agreed is a new line. The channel is not part of
the identity: the same refund paid elsewhere is still the same refund.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from baton_kafka.agents.policy.offer import CENT
from baton_kafka.schemas.action import idempotency_key
from baton_kafka.schemas.baton import Baton, OrderMemory, TicketMemory
from baton_kafka.schemas.records import Offer, OfferLine

Identity = tuple[str, str, str | None]


def identity(line: OfferLine) -> Identity:
    """What a line is for: its kind, order and item (null: the whole order)."""
    return (line.kind, line.order_id, line.item)


def ticket_agreed(session_id: str, ticket: TicketMemory) -> dict[str, OfferLine]:
    """The lines ``ticket``'s reply agreed and wrote an action for, by the action's key."""
    skipped = set(ticket.restated)
    return {
        idempotency_key(session_id, ticket.ticket_id, n, line): line
        for n, line in enumerate(ticket.offer)
        if n not in skipped
    }


def agreed_lines(baton: Baton, history: Sequence[OrderMemory] = ()) -> dict[str, OfferLine]:
    """Every line agreed for the customer, by its action's key: the session's answered
    replies' and those the customer's index holds for the orders it keeps."""
    found: dict[str, OfferLine] = {}
    for order in history:
        found.update(order.agreed)
    for ticket in baton.tickets:
        found.update(ticket_agreed(baton.session_id, ticket))
    return found


def restated(lines: Sequence[OfferLine], agreed: Iterable[OfferLine]) -> list[int]:
    """The places in ``lines`` of those that restate an ``agreed`` line: same identity, and
    money (with the offer's earlier restated lines of that identity) not above the agreed."""
    money: dict[Identity, float] = {}
    for line in agreed:
        key = identity(line)
        money[key] = money.get(key, 0.0) + (line.amount or 0.0)
    found = []
    for n, line in enumerate(lines):
        key = identity(line)
        amount = line.amount or 0.0
        if key not in money or amount > money[key] + CENT:
            continue
        money[key] -= amount
        found.append(n)
    return found


def marked(offer: Offer | None, baton: Baton, history: Sequence[OrderMemory] = ()) -> Offer | None:
    """``offer`` with its restated lines marked when it is approved (it writes actions);
    unchanged otherwise."""
    if offer is None or offer.state != "approved":
        return offer
    places = restated(offer.lines, agreed_lines(baton, history).values())
    return offer.model_copy(update={"restated": places})
