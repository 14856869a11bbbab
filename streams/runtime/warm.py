"""The language packs' patterns a worker compiles before its first ticket, through the very
functions the stages read them with (their caches then hold them: no second copy)."""

from __future__ import annotations

import importlib
import pkgutil

from baton_kafka.agents import guards, packs, prompts, risk, staff_notes
from baton_kafka.agents.guards import clauses, words
from baton_kafka.agents.policy import Policy
from baton_kafka.agents.rules import phrases, recall_clues, time_hints

# The (concern, group) tables the reply's guards read sentences with, in every language.
MARKS = (("commitments", "kinds"), ("claims", "claims"))


def patterns(policy: Policy | None = None) -> None:
    """Compile every pattern made from the packs (and the shop's ``policy``) now: a pattern is
    otherwise compiled by the first ticket that needs it, and a burst of tickets in languages
    the worker had not read yet pays for them all.

    Every guard module is imported first (some are imported by a reading only when it needs
    them), so each builder marked ``@words.builder`` is made: a new one is warmed with no
    change here.
    """
    for module in pkgutil.iter_modules(guards.__path__):
        importlib.import_module(f"{guards.__name__}.{module.name}")
    words.warm()
    risk.warm(policy.handoff.triggers if policy else risk.NONE)
    staff_notes.flags("")
    for concern, group in MARKS:
        for language in packs.languages(concern):
            clauses.marks(concern, language, group)
    for language in packs.languages(phrases.CONCERN):
        phrases.reading(language)
    recall_clues.warm()
    time_hints.warm()
    if policy is not None:
        policy.id_shapes  # noqa: B018  (a cached property: the shop's id patterns, compiled)
        prompts.prompt_version(policy)  # every stage's system prompt, with its output schema
