"""The understand agent: what the customer means, in the context of the whole session."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from baton_kafka.agents import prompts, risk
from baton_kafka.agents.asking import ask
from baton_kafka.agents.languages import DEFAULT_LANGUAGES, customer_language
from baton_kafka.agents.models.llm import LLM
from baton_kafka.agents.outcome import Outcome
from baton_kafka.agents.prompts import EarlierSession
from baton_kafka.agents.rules import recall
from baton_kafka.agents.stages.understand import NAME
from baton_kafka.agents.stages.understand.rule import understand_rules
from baton_kafka.agents.stages.understand.validators import grounded_in
from baton_kafka.schemas.baton import Baton, OrderMemory
from baton_kafka.schemas.records import Order, Ticket
from baton_kafka.schemas.stages import Understanding

# How much of the customer's own message a fallback's core problem keeps.
OWN_WORDS_CHARS = 200
CORE_PROBLEM_CHARS = 400


def in_own_words(u: Understanding, text: str) -> Understanding:
    """The rules' understanding with the customer's own words (truncated) in its core problem.

    The rules name a problem kind ("is damaged"); the session's next tickets read the core
    problem as what the customer said, so a degraded understanding keeps what they wrote.
    """
    words = " ".join(text.split())
    if len(words) > OWN_WORDS_CHARS:
        words = words[: OWN_WORDS_CHARS - 1].rstrip() + "…"
    if not words or words in u.core_problem:
        return u
    quoted = f"客户原话：“{words}”" if u.language == "zh" else f' The customer wrote: "{words}"'
    label = u.core_problem[: CORE_PROBLEM_CHARS - len(quoted)]
    return u.model_copy(update={"core_problem": label + quoted})


async def understand(
    ticket: Ticket,
    baton: Baton,
    llm: LLM,
    *,
    orders: list[Order],
    earlier: list[EarlierSession] | None = None,
    history: list[OrderMemory] | None = None,
    reask_limit: int = 1,
    tokens_left: int | None = None,
    languages: Sequence[str] = DEFAULT_LANGUAGES,
    triggers: risk.Triggers | None = None,
) -> Outcome[Understanding]:
    """Extract product, problem, demand, time hint, core problem and risks from ticket + baton.

    The language is the one detector's, among the shop's ``languages``, whoever wrote the rest.
    The risks are the model's its words ground and the language packs' (with the shop's
    ``triggers``), the customer's product names cut out first.
    """
    shown = recall.relevant(
        ticket.text,
        history or [],
        recall.known_orders(orders),
        current=baton.order_id,
        now=ticket.written_at(),
    )
    prompt = prompts.build(
        NAME,
        Understanding,
        ticket=ticket,
        baton=baton,
        orders=orders,
        earlier=earlier,
        history=shown,
    )
    asked = await ask(
        llm,
        prompt,
        validators=[grounded_in(prompt.facts)],
        reask_limit=reask_limit,
        tokens_left=tokens_left,
    )
    outcome = Outcome.of(asked, lambda: in_own_words(understand_rules(prompt.facts), ticket.text))
    language = customer_language(ticket.text, languages)
    names = [n for o in orders for n in o.products()]
    risks = risk.read(ticket.text, outcome.value.risks, language, names, triggers or {})
    if outcome.value.language == language and outcome.value.risks == risks:
        return outcome
    update = {"language": language, "risks": risks}
    return replace(outcome, value=outcome.value.model_copy(update=update))
