"""Decisions applied once: the ids a session applied, and how old a decision may be."""

from __future__ import annotations

from datetime import datetime, timedelta

from baton_kafka.schemas.baton import Baton
from baton_kafka.schemas.decision import AppliedDecision, Decision

# How far ahead of the worker's clock a decision's decided_at may be (the desk's clock drifts).
CLOCK_SKEW = timedelta(minutes=5)


def seen(baton: Baton, decision_id: str) -> AppliedDecision | None:
    """Where decision ``decision_id`` was read when the session applied it, if it did (kept
    beyond the notes, for as long as a copy of it is young enough to be applied)."""
    return baton.decided.get(decision_id)


def max_age(decision_max_age_s: float, session_ttl_s: float) -> timedelta:
    """How old a decision may be: never older than a session's baton (which holds the ids
    applied) outlives its last change, less the clock skew a decision may be ahead."""
    return min(timedelta(seconds=decision_max_age_s), timedelta(seconds=session_ttl_s) - CLOCK_SKEW)


def stale(decision: Decision, now: datetime, oldest: timedelta) -> str | None:
    """Why ``decision`` is too old or too far ahead to apply at ``now``; None: it is not."""
    if decision.decided_at < now - oldest:
        return (
            f"decided at {decision.decided_at.isoformat()}, more than "
            f"{oldest.total_seconds():.0f} s ago"
        )
    if decision.decided_at > now + CLOCK_SKEW:
        return f"decided at {decision.decided_at.isoformat()}, ahead of the worker's clock"
    return None
