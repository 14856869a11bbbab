"""The language packs' patterns a worker compiles before its first ticket, through the very
functions the stages read them with (their caches then hold them: no second copy)."""

from __future__ import annotations

from baton_kafka.agents import packs, risk, staff_notes
from baton_kafka.agents.guards import clauses
from baton_kafka.agents.risk import Triggers

# The (concern, group) tables the reply's guards read sentences with, in every language.
MARKS = (("commitments", "kinds"), ("claims", "claims"))


def patterns(triggers: Triggers = risk.NONE) -> None:
    """Compile every language's risk triggers (and the shop's ``triggers``), staff-note kinds
    and clause markers now: a pattern is otherwise compiled by the first ticket that needs it,
    and a burst of tickets in languages the worker had not read yet pays for them all."""
    risk.warm(triggers)
    staff_notes.flags("")
    for concern, group in MARKS:
        for language in packs.languages(concern):
            clauses.marks(concern, language, group)
