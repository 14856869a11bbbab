"""The strategy stage's run function: what the chain gives it, to its function's arguments."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from baton_kafka.agents.outcome import Outcome
from baton_kafka.agents.prompts import stage_results
from baton_kafka.agents.stage import Inputs
from baton_kafka.agents.stages.strategy.agent import decide
from baton_kafka.schemas.stages import StrategyDraft


async def run(i: Inputs) -> Outcome[StrategyDraft]:
    """Decide and write the reply with what the chain gives the stage; an earlier stage may
    hand the ticket to a person."""
    with i.shared():  # the reply's checks read the ticket's message as the understanding did
        outcome = await _decide(i)
    return handed_over(outcome, i.record.results)


async def _decide(i: Inputs) -> Outcome[StrategyDraft]:
    """``decide`` with what the chain gives the stage."""
    return await decide(
        i.ticket,
        i.baton,
        i.understanding,
        i.match,
        i.store,
        i.llm,
        reask_limit=i.reask_limit,
        tokens_left=i.tokens_left,
        policy=i.policy,
        history=i.history(),
        stages=i.record.results,
        read=i.read,
    )


def handed_over(outcome: Outcome[StrategyDraft], results: dict[str, Any]) -> Outcome[StrategyDraft]:
    """``outcome``, handed to a person when an earlier stage's result asks for one
    (``needs_human`` true), whatever the model wrote."""
    asked = [r.stage for r in stage_results(results) if r.needs_human]
    draft = outcome.value
    if not asked or draft.needs_human:
        return outcome
    note = f"{draft.internal_note} Stage {', '.join(asked)} asked for a person."
    draft = draft.model_copy(update={"needs_human": True, "internal_note": note.strip()})
    return replace(outcome, value=draft)
