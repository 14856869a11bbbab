"""Declaring a stage with ``stage()``: the built-in stages are declared with it as a shop's are,
with what only they need (a run function of their own, a record field of their own, a topic
role, opening the session, answering), and it refuses a declaration that cannot work."""

from __future__ import annotations

import dataclasses

import pytest

from baton_kafka.schemas import Ticket
from baton_kafka.schemas.stages import OrderMatch, StageRecord, StrategyDraft, Understanding
from baton_kafka.streams.runtime import STAGES, Chain, stage
from baton_kafka.streams.testing import MemoryOrders, TestPipeline
from tests.fixtures.data import C1_ORDERS, ticket
from tests.fixtures.shop_stages import Words, count_words, triage

RECORD = StageRecord(ticket=ticket("t1", "Where is my order?"))


def rule(ticket: Ticket, given: Understanding) -> Understanding:
    return given


def test_each_built_in_stage_is_what_stage_declares_from_its_parts() -> None:
    for builtin in STAGES:
        parts = {f.name: getattr(builtin, f.name) for f in dataclasses.fields(builtin)}
        name = parts.pop("name")
        parts.pop("after")  # the chain places the built-in stages; no ``after``
        if builtin.answers:
            assert parts.pop("update") is None  # its result reaches the baton as the reply
        assert stage(name, **parts) == builtin


def test_each_built_in_stage_declares_its_place_in_the_chain() -> None:
    first, middle, last = STAGES
    assert first.opens_session and first.carries == "understanding" and first.input is Ticket
    assert middle.carries == "match" and middle.input is Understanding
    assert last.answers and last.carries is None and last.update is None
    assert [s.target_role for s in STAGES] == ["understood", "matched", "replies"]
    assert not any(s.opens_session for s in STAGES[1:])
    assert [s.output for s in STAGES] == [Understanding, OrderMatch, StrategyDraft]


async def test_a_shops_stage_may_be_a_run_function_of_the_inputs_too() -> None:
    counted = stage("count", after="understand", input=Understanding, output=Words, run=count_words)
    assert counted.run is count_words and counted.update is not None  # the chain of decisions
    pipeline = TestPipeline(orders=MemoryOrders(*C1_ORDERS), stages=[counted])
    [reply] = await pipeline.send(ticket("t1", "My kettle is leaking, I want a refund."))
    assert reply.status == "answered" and reply.stages["count"] == {"words": 8}
    await pipeline.aclose()


def test_a_chain_may_open_with_a_stage_of_the_shops_own() -> None:
    _, lookup, strategy = STAGES
    opening = triage()
    chain = Chain((opening, lookup, strategy))
    assert chain.first is opening and chain.source_role(lookup) == "understood"
    assert chain.missing(strategy, RECORD) == ["triage", lookup.name]


@pytest.mark.parametrize(
    ("declared", "says"),
    [
        (
            {"agent": count_words, "run": count_words},
            "give an agent function or a run function, not both",
        ),
        ({}, "give an agent function, or a prompt and an offline rule"),
        ({"run": count_words, "role": "understood", "topic": "t.x"}, "a topic or a role, not both"),
        (
            {"run": count_words, "answers": True, "update": lambda b, t, v: b},
            "the answering stage's result reaches the baton as the reply",
        ),
        ({"run": count_words, "carries": "usage"}, "field holds no Words"),
        ({"run": count_words, "carries": "results"}, "no such field of its own"),
        ({"run": count_words, "carries": "nope"}, "no such field of its own"),
    ],
)
def test_a_declaration_that_cannot_work_is_refused_in_one_line(
    declared: dict[str, object], says: str
) -> None:
    with pytest.raises(ValueError, match=says) as raised:
        stage("mine", after="understand", input=Understanding, output=Words, **declared)  # type: ignore[call-overload]
    assert "\n" not in str(raised.value)


def test_a_chain_holds_each_record_field_to_one_stage() -> None:
    again = stage(
        "again",
        input=Understanding,
        output=Understanding,
        run=STAGES[0].run,
        carries="understanding",
    )
    with pytest.raises(
        ValueError, match="two stages carry their result in the record's understanding"
    ):
        Chain.builtin().insert(again, after="understand")
    plain = stage("plain", input=Understanding, output=Understanding, prompt="p", offline=rule)
    assert Chain.builtin().insert(plain, after="understand").names[1] == "plain"
