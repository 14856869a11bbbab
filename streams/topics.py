"""Topic names: the public contract plus baton's internal, session-keyed hops."""

from __future__ import annotations

from dataclasses import dataclass

from streams.settings import Settings

TICKETS = "support.tickets"
SESSIONS = "support.tickets-by-session"
UNDERSTOOD = "support.understood"
MATCHED = "support.order-matched"
REPLIES = "support.replies"
DEAD_LETTERS = "support.dead-letters"

ALL = (TICKETS, SESSIONS, UNDERSTOOD, MATCHED, REPLIES, DEAD_LETTERS)


@dataclass(frozen=True)
class TopicNames:
    """Full topic names in one namespace (empty namespace: production names)."""

    tickets: str
    sessions: str
    understood: str
    matched: str
    replies: str
    dead_letters: str

    @classmethod
    def of(cls, settings: Settings) -> TopicNames:
        return cls(
            tickets=settings.topic(TICKETS),
            sessions=settings.topic(SESSIONS),
            understood=settings.topic(UNDERSTOOD),
            matched=settings.topic(MATCHED),
            replies=settings.topic(REPLIES),
            dead_letters=settings.topic(DEAD_LETTERS),
        )

    def all(self) -> tuple[str, ...]:
        return (
            self.tickets,
            self.sessions,
            self.understood,
            self.matched,
            self.replies,
            self.dead_letters,
        )
