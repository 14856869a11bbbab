"""``stage()``: how every stage is declared, the built-in ones and a shop's own alike."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, overload

from pydantic import BaseModel

from baton_kafka.agents import memory
from baton_kafka.agents.asking import ask_with_data
from baton_kafka.agents.outcome import Outcome
from baton_kafka.agents.prompts import stage_results
from baton_kafka.agents.stage import Inputs, Stage
from baton_kafka.agents.stage_context import StageContext, wants_context
from baton_kafka.schemas.baton import Baton
from baton_kafka.schemas.records import Ticket

T = TypeVar("T", bound=BaseModel)

Agent = Callable[..., Awaitable[T]]
"""A stage as a plain async function: the ticket and the declared input, or a ``StageContext``,
or both (``(ticket, input, ctx)``), to the output."""
Rule = Callable[..., T | Awaitable[T]]
"""An offline rule (plain or async): the same without a model, and the fallback when the model
fails."""
Run = Callable[[Inputs], Awaitable[Outcome[T]]]
"""A stage's whole run: everything the chain gives it for one ticket (``Inputs``) to its result
with its model calls and failure (``Outcome``)."""


@overload
def stage(
    name: str,
    *,
    after: str = "",
    input: type[BaseModel],
    output: type[T],
    run: Run[T],
    prompt: str = "",
    offline: Callable[..., Any] | None = None,
    topic: str = "",
    update: Callable[[Baton, Ticket, T], Baton] | None = None,
    carries: str | None = None,
    role: str = "",
    opens_session: bool = False,
    answers: bool = False,
) -> Stage[T]: ...


@overload
def stage(
    name: str,
    *,
    after: str = "",
    input: type[BaseModel],
    output: type[T],
    agent: Agent[T] | None = None,
    prompt: str = "",
    offline: Rule[T] | None = None,
    topic: str = "",
    update: Callable[[Baton, Ticket, T], Baton] | None = None,
    max_tokens: int = 512,
    carries: str | None = None,
    role: str = "",
    opens_session: bool = False,
    answers: bool = False,
) -> Stage[T]: ...


def stage(
    name: str,
    *,
    after: str = "",
    input: type[BaseModel],
    output: type[T],
    agent: Agent[T] | None = None,
    prompt: str = "",
    offline: Callable[..., Any] | None = None,
    topic: str = "",
    update: Callable[[Baton, Ticket, T], Baton] | None = None,
    max_tokens: int = 512,
    run: Run[T] | None = None,
    carries: str | None = None,
    role: str = "",
    opens_session: bool = False,
    answers: bool = False,
) -> Stage[T]:
    """Declare a stage; given on its own, it goes right after the stage ``after``.

    With ``agent``, the stage is that function. Otherwise it asks the model with ``prompt``
    (the ticket and the input as JSON, the answer validated as ``output``, re-asked when
    invalid) and runs ``offline`` instead when the model is the offline one or fails (the
    ticket is then degraded, with a dead letter). Its result goes into the baton's chain of
    decisions unless ``update`` says otherwise; its records go out on ``topic`` (default
    ``support.<name>``).

    The built-in stages use the rest: ``run`` is the whole stage as a function of ``Inputs``
    to an ``Outcome`` (its ``prompt`` and ``offline`` rule, of any result type, are then
    declared alongside: what it asks the model with and what it falls back to);
    ``carries`` names the stage record's field of its own for the result (``understanding``,
    ``match``) instead of ``results``; ``role`` a ``TopicNames`` role for its topic instead of
    ``topic``; the chain's first stage ``opens_session``, its last ``answers`` (its result
    becomes the reply, which goes into the baton once published: no ``update``).
    """
    if sum(f is not None for f in (agent, run)) > 1:
        raise ValueError(f"stage {name}: give an agent function or a run function, not both")
    if agent is None and run is None and (offline is None or not prompt):
        raise ValueError(f"stage {name}: give an agent function, or a prompt and an offline rule")
    if answers and update is not None:
        raise ValueError(
            f"stage {name}: the answering stage's result reaches the baton as the reply"
        )
    if role and topic:
        raise ValueError(f"stage {name}: give a topic or a role, not both")

    agent_takes = wants_context(agent) if agent is not None else (True, False)
    rule_takes = wants_context(offline) if offline is not None else (True, False)

    def arguments(i: Inputs, takes: tuple[bool, bool], ctx: StageContext) -> list[Any]:
        given = i.given if i.given is not None else i.ticket
        return [i.ticket, *([given] if takes[0] else []), *([ctx] if takes[1] else [])]

    async def asks(i: Inputs) -> Outcome[T]:
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
        asked = await ask_with_data(
            i.llm,
            name,
            output,
            system=prompt,
            data=facts,
            max_tokens=max_tokens,
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
        run=run or asks,
        role=role,
        topic=topic,
        carries=carries,
        # The answering stage's result reaches the baton as the reply, once published.
        update=None if answers else (update or noted),
        prompt=prompt,
        offline=offline,
        opens_session=opens_session,
        answers=answers,
        after=after,
    )
