"""A stage of the shop's own from a plain async function, or a prompt with an offline rule."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel

from baton_kafka.agents import memory
from baton_kafka.agents.asking import ask
from baton_kafka.agents.models.llm import Prompt
from baton_kafka.agents.outcome import Outcome
from baton_kafka.agents.prompts import stage_results
from baton_kafka.schemas.baton import Baton
from baton_kafka.schemas.records import Ticket
from baton_kafka.streams.runtime.stage_context import StageContext, wants_context
from baton_kafka.streams.runtime.stages import Inputs, Stage

T = TypeVar("T", bound=BaseModel)

Agent = Callable[..., Awaitable[T]]
"""A stage as a plain async function: the ticket and the declared input, or a ``StageContext``,
or both (``(ticket, input, ctx)``), to the output."""
Rule = Callable[..., T | Awaitable[T]]
"""An offline rule (plain or async): the same without a model, and the fallback when the model
fails."""


def stage(
    name: str,
    *,
    after: str,
    input: type[BaseModel],
    output: type[T],
    agent: Agent[T] | None = None,
    prompt: str = "",
    offline: Rule[T] | None = None,
    topic: str = "",
    update: Callable[[Baton, Ticket, T], Baton] | None = None,
    max_tokens: int = 512,
) -> Stage[T]:
    """Declare a stage that goes right after the stage ``after``.

    With ``agent``, the stage is that function. Otherwise it asks the model with ``prompt``
    (the ticket and the input as JSON, the answer validated as ``output``, re-asked when
    invalid) and runs ``offline`` instead when the model is the offline one or fails (the
    ticket is then degraded, with a dead letter). Its result goes into the baton's chain of
    decisions unless ``update`` says otherwise; its records go out on ``topic`` (default
    ``support.<name>``).
    """
    if agent is None and (offline is None or not prompt):
        raise ValueError(f"stage {name}: give an agent function, or a prompt and an offline rule")

    agent_takes = wants_context(agent) if agent is not None else (True, False)
    rule_takes = wants_context(offline) if offline is not None else (True, False)

    def arguments(i: Inputs, takes: tuple[bool, bool], ctx: StageContext) -> list[Any]:
        given = i.given if i.given is not None else i.ticket
        return [i.ticket, *([given] if takes[0] else []), *([ctx] if takes[1] else [])]

    async def run(i: Inputs) -> Outcome[T]:
        ctx = StageContext.of(name, i)
        if agent is not None:
            value = await agent(*arguments(i, agent_takes, ctx))
            # The model calls it made through the context count like any stage's.
            return Outcome(value, ctx.calls, ctx.failure, degraded=ctx.failure is not None)
        assert offline is not None

        async def rule() -> T:
            value = offline(*arguments(i, rule_takes, ctx))
            return await value if inspect.isawaitable(value) else value

        if i.llm.name == "offline":
            return Outcome(value=await rule())
        given = i.given if i.given is not None else i.ticket
        facts = {"message": i.ticket.text, "input": given.model_dump(mode="json")}
        if i.record.results:
            # The shop's earlier stages' results, as the strategy's prompt shows them: data.
            facts["stages"] = [r.model_dump(mode="json") for r in stage_results(i.record.results)]
        asked = await ask(
            i.llm,
            Prompt(
                stage=name,
                system=prompt,
                context=orjson.dumps(facts).decode(),
                output_type=output,
                facts=None,
                max_tokens=max_tokens,
            ),
            reask_limit=i.reask_limit,
            tokens_left=i.tokens_left,
        )
        fallback = await rule() if asked.value is None else asked.value
        outcome = Outcome.of(asked, lambda: fallback)
        outcome.calls.extend(ctx.calls)  # the rule's own calls, if it asked through the context
        return outcome

    def noted(baton: Baton, ticket: Ticket, value: T) -> Baton:
        return memory.apply_decision(baton, ticket, name, value.model_dump_json())

    return Stage(
        name=name,
        input=input,
        output=output,
        run=run,
        topic=topic,
        update=update or noted,
        prompt=prompt,
        offline=offline,
        after=after,
    )
