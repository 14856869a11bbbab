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
DECISIONS = "support.decisions"
ACTIONS = "support.actions"

ALL = (
    TICKETS,
    SESSIONS,
    UNDERSTOOD,
    MATCHED,
    REPLIES,
    DEAD_LETTERS,
    MEMORY_INDEX,
    HANDOFFS,
    DECISIONS,
    ACTIONS,
)

# Each topic's role (the ``BATON_TOPIC_<ROLE>`` setting that renames it) and its default name.
ROLES: dict[str, str] = {
    "tickets": TICKETS,
    "sessions": SESSIONS,
    "understood": UNDERSTOOD,
    "matched": MATCHED,
    "replies": REPLIES,
    "dead_letters": DEAD_LETTERS,
    "memory_index": MEMORY_INDEX,
    "handoffs": HANDOFFS,
    "decisions": DECISIONS,
    "actions": ACTIONS,
}

MAX_TOPIC_CHARS = 249
_LEGAL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def topic_problem(name: str) -> str | None:
    """Why Kafka would refuse ``name`` as a topic name, or None when it is a legal one."""
    if not name:
        return "is empty"
    if name in (".", ".."):
        return "is reserved by Kafka"
    if len(name) > MAX_TOPIC_CHARS:
        return f"has {len(name)} characters, Kafka allows at most {MAX_TOPIC_CHARS}"
    bad = next((c for c in name if c not in _LEGAL), None)
    if bad is not None:
        shown = repr(bad) if bad.isprintable() else f"U+{ord(bad):04X}"
        return f"holds {shown}: Kafka allows only ASCII letters, digits, '.', '_' and '-'"
    return None
