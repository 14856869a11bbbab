"""Session ownership: a session belongs to the principal of its first ticket.

The principal is the ticket's customer, or for a ticket without one its guest (the digest of
the guest id its producer issued). A guest session whose first ticket had no guest id has no
principal beyond its session id: whoever knows the id can use it.
"""

from __future__ import annotations

from baton_kafka.schemas.baton import Baton
from baton_kafka.schemas.records import Ticket

# A guest id is the only secret of a guest's session: shorter ones are guessed, so refused.
GUEST_ID_MIN_CHARS = 16

# What a refused sender is told: nothing about whose the session is or what it holds.
REFUSAL = (
    "this ticket may not use session {session}. "
    "Publish the ticket again under a session id of its own."
)


def conflict(held: Baton | None, ticket: Ticket) -> str | None:
    """Why ``ticket`` may not use the session's baton ``held``, or None when it may.

    An anonymous session stays anonymous: a customer who logs in mid-conversation starts a new
    session, so nobody can claim an anonymous context; a guest's session takes only that guest.
    """
    if held is None or _same(held.customer_id, held.guest, ticket):
        return None
    return REFUSAL.format(session=ticket.session_id)


def shares(first: Ticket, ticket: Ticket) -> bool:
    """Whether ``ticket`` may use the session that ``first`` opens (no baton yet): the rule of
    :func:`conflict`, with ``first``'s principal as the owner it will have."""
    return _same(first.customer_id, first.guest(), ticket)


def _same(customer_id: str | None, guest: str | None, ticket: Ticket) -> bool:
    if customer_id is not None or ticket.customer_id is not None:
        return customer_id == ticket.customer_id
    return guest == ticket.guest()


def short_guest_id(ticket: Ticket) -> str | None:
    """Why the ticket's guest id is refused (shorter than ``GUEST_ID_MIN_CHARS``), or None."""
    if ticket.customer_id is not None or ticket.guest_id is None:
        return None
    if len(ticket.guest_id) >= GUEST_ID_MIN_CHARS:
        return None
    return (
        f"guest_id: must be {GUEST_ID_MIN_CHARS} characters or more (a random value the "
        f"producer issues to the visitor), got {len(ticket.guest_id)}"
    )


def sender(ticket: Ticket) -> str:
    """Who sent ``ticket``: its customer, its guest (the digest), or the ticket alone."""
    if ticket.customer_id is not None:
        return ticket.customer_id
    guest = ticket.guest()
    return f"guest:{guest}" if guest else f"ticket:{ticket.ticket_id}"
