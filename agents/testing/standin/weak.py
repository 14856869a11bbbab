"""A weak model's habits for the stand-in: wrapped JSON, ignored structured output, near-miss
order ids, the handbook's example ids, a language switch on a re-ask, slow calls.

What a small self-hosted model was seen to do: answer with the JSON inside a Markdown fence or
after a sentence, whether or not structured output was asked for; copy an order id wrongly
(one character off) or write the handbook example's id instead of the customer's; answer a
re-ask in English, copying the handbook's English example; take
minutes for the first call and tens of seconds for later ones. Which ticket gets a habit is
decided by a hash of its id, so a run is repeatable.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from baton_kafka.agents.instructions import EXAMPLE_ORDER_IDS
from baton_kafka.agents.models.request_shape import FEEDBACK
from baton_kafka.agents.stages import lookup, strategy
from baton_kafka.agents.stages.strategy.rule import strategy_rules
from baton_kafka.agents.stages.understand.rule import understand_rules
from baton_kafka.agents.testing.standin.messages import Request

REASK_MARK = FEEDBACK.split("{}")[0].strip()
_PREFIXES = (
    "Sure! Here is the JSON you asked for:\n",
    "Based on the customer's message, my answer is ",
    "好的，以下是结果：\n",
)


def _share(key: str) -> float:
    """A number in [0, 1) fixed by ``key``."""
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 2**32


def near_miss(order_id: str) -> str:
    """``order_id`` one character off: its last two digits swapped, or its last digit changed."""
    digits = [i for i, c in enumerate(order_id) if c.isdigit()]
    chars = list(order_id)
    if len(digits) >= 2 and chars[digits[-1]] != chars[digits[-2]]:
        a, b = digits[-2], digits[-1]
        chars[a], chars[b] = chars[b], chars[a]
    elif digits:
        chars[digits[-1]] = str((int(chars[digits[-1]]) + 1) % 10)
    else:
        chars.append("1")
    return "".join(chars)


@dataclass(frozen=True)
class WeakStyle:
    """Which habits the stand-in shows, and on what share of the tickets.

    ``wrap``: share of answers wrapped in a fence or after a sentence (always, even when
    structured output was asked for, if ``ignores_structured_output``); ``near_miss``: share of
    tickets whose first look-up and reply name a near-miss of the order id (also on re-asks if
    ``stubborn``); ``example_copy``: share of tickets whose first reply names one of the
    handbook's example ids instead of the order's (also on re-asks if ``stubborn``);
    ``switch_language``: share of re-asked replies written in English;
    ``first_call_s`` and ``call_s``: extra seconds on the server's first call and on each.
    """

    wrap: float = 1.0
    ignores_structured_output: bool = True
    near_miss: float = 0.5
    example_copy: float = 0.25
    stubborn: bool = False
    switch_language: float = 1.0
    first_call_s: float = 0.0
    call_s: float = 0.0

    def delay_s(self, first: bool) -> float:
        """Extra seconds before answering a call."""
        return self.call_s + (self.first_call_s if first else 0.0)

    def answer(self, request: Request, answer: Any) -> Any:
        """A healthy ``answer`` (a record, a mapping or text) as this weak model gives it."""
        facts = request.facts
        if facts is None or isinstance(answer, str):
            return answer
        data = answer.model_dump(mode="json") if isinstance(answer, BaseModel) else dict(answer)
        reask = REASK_MARK in request.text
        key = facts.ticket_id
        if (
            reask
            and request.stage == strategy.NAME
            and _share(f"lang:{key}") < self.switch_language
        ):
            data = _in_english(request, data)
        if (not reask or self.stubborn) and _share(f"example:{key}") < self.example_copy:
            data = _copy_example(request, data, _share(f"which:{key}"))
        if (not reask or self.stubborn) and _share(f"id:{key}") < self.near_miss:
            data = _misspell_order(request, data)
        return data

    def wrap_text(self, request: Request, text: str) -> str:
        """``text`` (the JSON answer) in a fence or after a sentence, as this model writes it."""
        if request.schema and not self.ignores_structured_output:
            return text
        key = f"{request.facts.ticket_id if request.facts else request.text}:{request.stage}"
        if _share(f"wrap:{key}") >= self.wrap:
            return text
        pick = int(_share(f"how:{key}") * 3)
        if pick == 0:
            return f"```json\n{text}\n```"
        if pick == 1:
            return f"{_PREFIXES[0]}```\n{text}\n```\nLet me know if you need anything else."
        return f"{_PREFIXES[1 + int(_share(f'pre:{key}') * 2)]}{text}"


def _in_english(request: Request, data: Mapping[str, Any]) -> dict[str, Any]:
    facts = request.facts
    assert facts is not None
    understood = facts.understanding or understand_rules(facts)
    if understood.language == "en":
        return dict(data)
    english = facts.model_copy(
        update={"understanding": understood.model_copy(update={"language": "en"})}
    )
    return {**data, "reply": strategy_rules(english).reply}


def _copy_example(request: Request, data: Mapping[str, Any], pick: float) -> dict[str, Any]:
    out = dict(data)
    match = request.facts.match if request.facts else None
    reply = out.get("reply")
    if request.stage == strategy.NAME and match and match.order_id and isinstance(reply, str):
        example = EXAMPLE_ORDER_IDS[int(pick * len(EXAMPLE_ORDER_IDS))]
        out["reply"] = reply.replace(match.order_id, example)
    return out


def _misspell_order(request: Request, data: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(data)
    match = request.facts.match if request.facts else None
    if request.stage == lookup.NAME and isinstance(out.get("order_id"), str):
        out["order_id"] = near_miss(out["order_id"])
    elif request.stage == strategy.NAME and match and match.order_id:
        reply = out.get("reply")
        if isinstance(reply, str):
            out["reply"] = reply.replace(match.order_id, near_miss(match.order_id))
    return out


WEAK = WeakStyle()
# The stand-in's answering styles by name (``baton eval --llm`` and ``--style`` of the server).
STYLES: dict[str, WeakStyle | None] = {"echo": None, "weak": WEAK}
