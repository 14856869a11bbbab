"""Session ownership: a session belongs to the customer of its first ticket."""

from __future__ import annotations

from schemas.baton import Baton
from schemas.records import Ticket


def conflict(held: Baton | None, ticket: Ticket) -> str | None:
    """Why ``ticket`` may not use the session's baton ``held``, or None when it may.

    An anonymous session (first ticket without a customer) stays anonymous: a customer who
    logs in mid-conversation starts a new session, so nobody can claim an anonymous context.
    """
    if held is None or held.customer_id == ticket.customer_id:
        return None
    owner = "an anonymous customer" if held.customer_id is None else "another customer"
    sender = "a ticket without a customer" if ticket.customer_id is None else "this customer"
    return (
        f"session {ticket.session_id} belongs to {owner}; {sender} may not use it. "
        "Publish the ticket again under a session id of its own."
    )
