"""The understand agent: what the customer means, in the context of the whole session."""

from __future__ import annotations

from agents import prompts
from agents.asking import Outcome, ask
from agents.models.llm import LLM
from agents.prompts import EarlierSession
from agents.rules.offline import understand_rules
from schemas.baton import Baton
from schemas.records import Order, Ticket
from schemas.stages import Understanding


async def understand(
    ticket: Ticket,
    baton: Baton,
    llm: LLM,
    *,
    orders: list[Order],
    earlier: list[EarlierSession] | None = None,
    reask_limit: int = 1,
    tokens_left: int | None = None,
) -> Outcome[Understanding]:
    """Extract product, problem, demand, time hint and core problem from ticket + baton."""
    prompt = prompts.build(
        "understand", Understanding, ticket=ticket, baton=baton, orders=orders, earlier=earlier
    )
    asked = await ask(llm, prompt, reask_limit=reask_limit, tokens_left=tokens_left)
    return Outcome.of(asked, lambda: understand_rules(prompt.facts))
