"""Reading what an unconstrained model writes: JSON recovered from fences and prose, the schema
in the prompt when the provider cannot constrain output, and a re-ask that says what was wrong."""

from __future__ import annotations

import pytest

from baton_kafka.agents.asking import ask
from baton_kafka.agents.instructions import EXAMPLE_ORDER_IDS
from baton_kafka.agents.models.llm import OutputInvalid
from baton_kafka.agents.models.parsing import (
    ONLY_JSON,
    parse_output,
    recover_json,
    schema_instruction,
)
from baton_kafka.agents.testing import Request, Responder, StandIn
from baton_kafka.agents.testing.standin import WeakStyle, echo_responder, near_miss
from baton_kafka.schemas import Order, OrderChoice, OrderMatch
from tests.fixtures.agents import ORDERS, client, prompt, respond

CHOICE = '{"order_id": "ORD-1001", "reason": "the kettle {and} more"}'


@pytest.fixture
def responder() -> Responder:
    return respond


@pytest.mark.parametrize(
    "text",
    [
        CHOICE,
        f"  {CHOICE}\n",
        f"```json\n{CHOICE}\n```",
        f"```\n{CHOICE}\n```",
        f"Sure! Here is the JSON:\n```json\n{CHOICE}\n```\nAnything else?",
        f"Based on the message, the answer is {CHOICE} (I hope this helps).",
        f"好的，以下是结果：\n{CHOICE}",
        f"I think {{maybe}} it is {CHOICE}",
    ],
)
def test_the_json_object_is_recovered_then_validated_as_usual(text: str) -> None:
    assert recover_json(text) == CHOICE
    value, recovered = parse_output(text, OrderChoice)
    assert value == OrderChoice(order_id="ORD-1001", reason="the kettle {and} more")
    assert recovered == (text.strip() != CHOICE)


def test_a_recovered_object_must_still_match_the_schema() -> None:
    with pytest.raises(OutputInvalid) as caught:
        parse_output('Here you go: ```json\n{"order_id": "ORD-1001"}\n```', OrderChoice)
    assert caught.value.message == "reason: Field required"
    assert caught.value.raw.startswith("Here you go")


@pytest.mark.parametrize(
    "text", ["I cannot decide.", 'Here is the JSON: {"answer": yes, ', "```json\n[1, 2]\n```"]
)
def test_text_without_an_object_says_how_to_answer(text: str) -> None:
    assert recover_json(text) is None
    with pytest.raises(OutputInvalid) as caught:
        parse_output(text, OrderChoice)
    assert "Invalid JSON" in caught.value.message and ONLY_JSON in caught.value.message


async def test_without_structured_output_the_schema_is_in_the_prompt(own_standin: StandIn) -> None:
    seen: list[Request] = []
    own_standin.responder = lambda r: (seen.append(r), respond(r))[1]
    own_standin.style = WeakStyle(near_miss=0.0)
    llm = client(own_standin, structured_output="off")
    try:
        answer = await llm.ask(prompt("lookup"))
    finally:
        await llm.aclose()
    # No output_config went out; the system prompt ends with the answer's schema instead.
    assert seen[0].schema == {}
    assert seen[0].system.endswith(schema_instruction(OrderChoice))
    assert '"order_id"' in seen[0].system
    # The weak model wrapped its JSON; it was recovered.
    assert not answer.raw.startswith("{") and llm.recovered == 1
    assert answer.value.order_id == ORDERS[0].order_id


async def test_structured_output_accepted_but_ignored_is_still_read(own_standin: StandIn) -> None:
    own_standin.style = WeakStyle(near_miss=0.0, ignores_structured_output=True)
    llm = client(own_standin)
    try:
        answers = [await llm.ask(prompt("lookup", ticket_id=f"t-{i}")) for i in range(6)]
    finally:
        await llm.aclose()
    assert all(a.value.order_id == ORDERS[0].order_id for a in answers)
    assert all(not a.raw.startswith("{") for a in answers) and llm.recovered == 6
    assert all(r["fault"] is None for r in own_standin.stats()["requests"])


async def test_the_reask_says_the_answer_was_not_json(own_standin: StandIn) -> None:
    seen: list[Request] = []
    own_standin.responder = lambda r: (seen.append(r), respond(r))[1]
    llm = client(own_standin, structured_output="off")
    try:
        asked = await ask(llm, prompt("lookup", "kettle [[fault:invalid_json]]"))
    finally:
        await llm.aclose()
    assert asked.value is not None and asked.attempts == 2
    calls = own_standin.stats()["requests"]
    assert [c["fault"] for c in calls] == ["invalid_json", None]
    # The second request carries the complaint: what was wrong and how to answer.
    assert "Your previous answer was rejected: output: Invalid JSON" in seen[-1].text
    assert ONLY_JSON in seen[-1].text


def matched(order: Order) -> dict[str, OrderMatch]:
    """The prompt facts of a ticket whose order was matched deterministically."""
    return {
        "match": OrderMatch(
            order_id=order.order_id, order=order, method="deterministic", confidence=0.9, reason="r"
        )
    }


async def test_the_weak_style_misspells_ids_then_switches_language_on_a_reask(
    own_standin: StandIn,
) -> None:
    own_standin.responder = echo_responder
    own_standin.style = WeakStyle(near_miss=1.0, example_copy=0.0, switch_language=1.0)
    order = ORDERS[0]
    facts = matched(order)
    zh = prompt("strategy", "我的水壶漏水了，订单 ORD-1001，请退款。", **facts)
    llm = client(own_standin)
    try:
        first = await llm.ask(zh)
        again = await llm.ask(zh, feedback="reply: names no order")
    finally:
        await llm.aclose()
    assert near_miss(order.order_id) in first.value.reply
    assert order.order_id not in first.value.reply
    assert any("\u4e00" <= c <= "\u9fff" for c in first.value.reply)
    # The re-ask is answered in English, as the weak model copies the English example.
    assert not any("\u4e00" <= c <= "\u9fff" for c in again.value.reply)
    assert order.order_id in again.value.reply


async def test_the_weak_style_copies_the_handbooks_example_ids(own_standin: StandIn) -> None:
    own_standin.responder = echo_responder
    own_standin.style = WeakStyle(near_miss=0.0, example_copy=1.0, switch_language=0.0)
    order = ORDERS[0]
    facts = matched(order)
    llm = client(own_standin)
    try:
        first = await llm.ask(prompt("strategy", "My kettle leaks, please refund.", **facts))
    finally:
        await llm.aclose()
    assert order.order_id not in first.value.reply
    assert any(example in first.value.reply for example in EXAMPLE_ORDER_IDS)


@pytest.mark.parametrize(
    ("order_id", "miss"), [("ORD-1001", "ORD-1010"), ("O-1002", "O-1020"), ("A-11", "A-12")]
)
def test_a_near_miss_is_one_character_off(order_id: str, miss: str) -> None:
    assert near_miss(order_id) == miss


def test_an_example_or_the_schema_quoted_before_the_answer_is_skipped() -> None:
    text = (
        'The schema is {"type": "object", "required": ["order_id"]}, for example '
        '```json\n{"order_id": "O-1001"}\n```\nMy answer:\n'
        f"```json\n{CHOICE}\n```"
    )
    value, recovered = parse_output(text, OrderChoice)
    assert recovered and value.order_id == "ORD-1001"
    # None valid: the complaint is about the likeliest one (the first fenced block).
    with pytest.raises(OutputInvalid) as caught:
        parse_output('```json\n{"order_id": "O-1"}\n``` or {"reason": "r"}', OrderChoice)
    assert caught.value.message == "reason: Field required"
