"""A stage of the shop's own: a priority and sentiment tag, between understand and look-up.

One module and one registration, without editing baton. Its result travels in the stage
records under ``priority``, reaches the reply (``Reply.stages["priority"]``), the dashboard and
the strategy's prompt; ``needs_human`` true (a VIP's money-back request) hands the ticket to a
person.

    BATON_STAGES=examples.stages.priority:PRIORITY baton worker    # registered in the settings
    python examples/stages/priority.py        # a worker with this stage (else as `baton worker`)

``prioritise`` is the stage: through its context it asks the model with ``PROMPT`` (with the
offline model, or when the model fails, ``tag`` decides from the customer's words and what the
understand stage read), then reads the customer's orders to find a VIP.
"""

from __future__ import annotations

import re
import sys
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from baton_kafka.agents.orders import StoreUnavailable
from baton_kafka.schemas import Ticket
from baton_kafka.schemas.stages import Understanding
from baton_kafka.streams.runtime import StageContext, stage

# A customer whose orders add up to this much is a VIP: a person answers their money back.
VIP_SPEND = 500.0


class Priority(BaseModel):
    """How soon a person should look at the ticket, and how the customer feels."""

    model_config = ConfigDict(extra="forbid")

    level: Literal["low", "normal", "high", "urgent"] = Field(
        description="low: a question; normal: a problem; high: money back or a cancellation; "
        "urgent: high and the customer is angry, or a safety risk."
    )
    sentiment: Literal["calm", "unhappy", "angry"] = Field(description="The customer's tone.")
    reason: str = Field(description="Why, in a few words.", max_length=200)
    # Shown only when true: the strategy hands a ticket whose stage result says so to a person.
    needs_human: bool = Field(
        default=False,
        exclude_if=lambda v: not v,
        description="True: a person answers this ticket (a VIP customer's money-back request).",
    )


PROMPT = """You tag customer-support tickets for a shop's support team.
Read the customer's message and what the shop understood of it (input), and answer with the
ticket's priority (low, normal, high, urgent) and the customer's sentiment (calm, unhappy,
angry), with a short reason. Money back or a cancellation is high; high and angry, or any
safety risk (fire, smoke, shock, burn), is urgent; a plain question is low."""

_ANGRY = re.compile(
    r"unacceptable|ridiculous|furious|worst|disgusting|scam|lawyer|!!|"
    r"太差|垃圾|投诉|骗子|气死",
    re.IGNORECASE,
)
_UNHAPPY = re.compile(r"disappointed|annoyed|again|still|not happy|失望|又|还是", re.IGNORECASE)
_SAFETY = re.compile(r"fire|smoke|shock|burn|spark|着火|冒烟|漏电|烫伤", re.IGNORECASE)


async def prioritise(ticket: Ticket, understanding: Understanding, ctx: StageContext) -> Priority:
    """The stage: the model's tag (the rule's with the offline model or when the model fails),
    then a VIP's money-back request goes to a person."""
    asked = await ctx.ask(Priority, prompt=PROMPT, data=understanding)
    tagged = asked or tag(ticket, understanding)
    if tagged.level not in ("high", "urgent") or tagged.reason == "a safety risk":
        return tagged
    try:
        spent = sum(o.amount for o in await ctx.orders())
    except StoreUnavailable:
        return tagged  # not known to be a VIP: the usual answer
    if spent < VIP_SPEND:
        return tagged
    ctx.metrics.count("vip")
    ctx.log.info("VIP customer (%.2f spent): a person answers", spent)
    reason = f"VIP customer, {tagged.reason}"[:200]
    return tagged.model_copy(update={"needs_human": True, "reason": reason})


def tag(ticket: Ticket, understanding: Understanding) -> Priority:
    """The offline rule: the priority from the demand, the tone from the customer's words."""
    text = ticket.text
    sentiment: Literal["calm", "unhappy", "angry"] = (
        "angry" if _ANGRY.search(text) else "unhappy" if _UNHAPPY.search(text) else "calm"
    )
    if _SAFETY.search(text):
        return Priority(level="urgent", sentiment=sentiment, reason="a safety risk")
    if understanding.demand in ("refund", "cancel", "compensation"):
        if sentiment == "angry":
            return Priority(level="urgent", sentiment=sentiment, reason="money back, angry")
        return Priority(level="high", sentiment=sentiment, reason=f"{understanding.demand}")
    if understanding.demand == "information":
        return Priority(level="low", sentiment=sentiment, reason="a question")
    return Priority(level="normal", sentiment=sentiment, reason=understanding.problem[:200])


PRIORITY = stage(
    "priority",
    after="understand",
    input=Understanding,
    output=Priority,
    agent=prioritise,
)
"""The registration: ``BATON_STAGES=examples.stages.priority:PRIORITY``, or in code
``worker.run(settings, stages=[PRIORITY])`` (``create_app`` takes the same)."""


def main() -> int:
    """A worker with this stage (the same as ``baton worker`` otherwise)."""
    from baton_kafka.streams.kafka import BrokerUnreachable
    from baton_kafka.streams.runtime import worker
    from baton_kafka.streams.settings import load

    try:
        worker.run(load(), stages=[PRIORITY])
    except (ValueError, BrokerUnreachable) as exc:  # SettingsError is a ValueError
        print(f"priority: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
