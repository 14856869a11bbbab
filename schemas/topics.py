"""The topics' names (before a namespace prefix): part of the contract, like the records."""

from __future__ import annotations

TICKETS = "support.tickets"
SESSIONS = "support.tickets-by-session"
UNDERSTOOD = "support.understood"
MATCHED = "support.order-matched"
REPLIES = "support.replies"
DEAD_LETTERS = "support.dead-letters"
MEMORY_INDEX = "support.memory-index"
HANDOFFS = "support.handoffs"

ALL = (TICKETS, SESSIONS, UNDERSTOOD, MATCHED, REPLIES, DEAD_LETTERS, MEMORY_INDEX, HANDOFFS)
