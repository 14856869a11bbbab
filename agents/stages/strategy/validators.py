"""The strategy stage's checks of the model's draft: on topic, within policy, true to the store."""

from __future__ import annotations

from collections.abc import Sequence

from baton_kafka.agents.asking import Validator
from baton_kafka.agents.guards import (
    CustomerOrders,
    audit,
    cited,
    claims,
    commitments,
    drift_problems,
)
from baton_kafka.agents.guards.language import (
    language_problem,
)
from baton_kafka.agents.guards.order_facts import fact_problems
from baton_kafka.agents.models.llm import OutputInvalid
from baton_kafka.schemas.stages import OrderMatch, StrategyDraft


def on_topic(names: list[str], match: OrderMatch) -> Validator[StrategyDraft]:
    """Rejects a draft that drifts from the matched order or the customer's product."""

    def validate(draft: StrategyDraft) -> None:
        if problems := drift_problems(draft, names, match.order_id):
            raise OutputInvalid("; ".join(problems))

    return validate


def within_policy(books: CustomerOrders) -> Validator[StrategyDraft]:
    """Rejects a draft with money or ids the customer's own orders do not allow."""

    def validate(draft: StrategyDraft) -> None:
        if problems := audit(draft, books):
            raise OutputInvalid("; ".join(problems))

    return validate


def true_to_store(books: CustomerOrders) -> Validator[StrategyDraft]:
    """Rejects a reply whose carrier or status the matched order contradicts."""

    def validate(draft: StrategyDraft) -> None:
        if problems := fact_problems(draft, books):
            raise OutputInvalid("; ".join(problems))

    return validate


def cites_its_facts(books: CustomerOrders, articles: Sequence[str]) -> Validator[StrategyDraft]:
    """Rejects a reply stating a delivery time, size, validity or price that neither the policy,
    the help ``articles`` shown nor the store states."""

    def validate(draft: StrategyDraft) -> None:
        if problems := cited.problems(draft.reply, books, articles):
            raise OutputInvalid("; ".join(problems))

    return validate


def keeps_its_word(
    books: CustomerOrders, earlier: frozenset[str], languages: Sequence[str]
) -> Validator[StrategyDraft]:
    """Rejects a reply that commits to what is not a line of its offer, or says something was
    done that the records do not show (read in each of ``languages``)."""

    def validate(draft: StrategyDraft) -> None:
        promised = commitments.Promised(draft.offer, earlier, draft.needs_human)
        found: list[str] = []
        for text in (draft.reply, draft.solution):
            found += commitments.problems(text, promised, books.policy, books.context, languages)
            found += claims.problems(text, books.matched, earlier, languages, books.own)
        if found:
            raise OutputInvalid("; ".join(dict.fromkeys(found)))

    return validate


def in_language(
    language: str, names: Sequence[str], languages: Sequence[str] = ()
) -> Validator[StrategyDraft]:
    """Rejects a reply in another of ``languages`` than the customer's (the reason in theirs)."""

    def validate(draft: StrategyDraft) -> None:
        if problem := language_problem(draft.reply, language, names, languages or ("en", "zh")):
            raise OutputInvalid(problem)

    return validate
