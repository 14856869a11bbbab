"""The strategy stage's function, where it was first published (its folder is
``stages.strategy``)."""

from baton_kafka.agents.stages.strategy.agent import (
    already_offered,
    asked_about,
    awaiting_approval,
    decide,
    earlier_remedies,
    fitting_articles,
    holding_reply,
    settle,
)
from baton_kafka.agents.stages.strategy.validators import (
    audit,
    cites_its_facts,
    in_language,
    keeps_its_word,
    on_topic,
    true_to_store,
    within_policy,
)

__all__ = [
    "already_offered",
    "asked_about",
    "audit",
    "awaiting_approval",
    "cites_its_facts",
    "decide",
    "earlier_remedies",
    "fitting_articles",
    "holding_reply",
    "in_language",
    "keeps_its_word",
    "on_topic",
    "settle",
    "true_to_store",
    "within_policy",
]
