"""A stage of the shop's own (the shipped priority tagger): declared, inserted, run through the
pipeline with the offline rule and with a model over HTTP, its result in the reply."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from pydantic import BaseModel

from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.agents.testing import Request, Responder, StandIn
from baton_kafka.agents.testing.standin import echo_responder
from baton_kafka.schemas import Reply, Ticket
from baton_kafka.schemas.stages import Understanding
from baton_kafka.streams.kafka.topics import TopicNames, wanted_partitions
from baton_kafka.streams.observe.dashboard import Recent, summary
from baton_kafka.streams.runtime import Chain, stage
from baton_kafka.streams.runtime.worker import build_llm
from baton_kafka.streams.settings import Settings, load
from baton_kafka.streams.testing import TestPipeline
from examples.stages.priority import PRIORITY, Priority
from tests.fixtures.data import ticket
from tests.fixtures.models import standin_env
from tests.fixtures.pipelines import in_memory

CHAIN = Chain.of([PRIORITY])


def with_priority(store: SQLiteOrderStore, llm: Any = None) -> TestPipeline:
    return in_memory(store, client=llm, chain=CHAIN)


def test_the_stage_goes_between_understand_and_lookup_on_a_topic_of_its_own() -> None:
    assert CHAIN.names == ("understand", "priority", "lookup", "strategy")
    assert CHAIN.source_role(CHAIN["lookup"]) == "priority"
    assert CHAIN.source_role(CHAIN["priority"]) == "understood"
    assert CHAIN.feeder(CHAIN["lookup"]) is CHAIN["understand"]
    settings = Settings(namespace="u")
    names = TopicNames.of(settings, CHAIN)
    assert names.role("priority") == "u.support.priority"
    assert wanted_partitions(settings, CHAIN)["u.support.priority"] == settings.partitions
    assert "u.support.priority" not in TopicNames.of(settings).all()


async def test_its_result_reaches_the_reply_without_a_schema_edit(
    store: SQLiteOrderStore,
) -> None:
    p = with_priority(store)
    replies = await p.send(
        ticket("t1", "My kettle is leaking, this is unacceptable!! I want a refund."),
        ticket("t2", "How long does a repair take?", session="S2"),
    )
    by_id = {r.ticket_id: r for r in replies}
    assert by_id["t1"].status == "answered" and by_id["t1"].order_id == "O-1"
    assert by_id["t1"].stages["priority"]["level"] == "urgent"
    assert by_id["t1"].stages["priority"]["sentiment"] == "angry"
    assert by_id["t2"].stages["priority"] == {
        "level": "normal",
        "sentiment": "calm",
        "reason": by_id["t2"].stages["priority"]["reason"],
    }
    # Every stage found the session's context whole, the stage of the shop's own included.
    ctx = p.counts.counts
    assert ctx["context.full"] == 8 and ctx["done.priority.ok"] == 2, ctx
    assert not p.dead_letters
    baton = p.batons.get("S1")
    assert baton is not None
    assert [e.stage for e in baton.chain if e.ticket_id == "t1"] == [
        "understand",
        "priority",
        "lookup",
        "strategy",
    ]


async def test_the_dashboard_shows_the_stage_and_its_result(store: SQLiteOrderStore) -> None:
    recent = Recent(stages=("intake", *CHAIN.names))
    p = with_priority(store)
    p.observer = recent
    p.redelivery.observer = recent
    (reply,) = await p.send(ticket("t1", "My kettle is leaking, I want a refund."))
    shown = summary({}, recent)
    assert [s["stage"] for s in shown["stages"]][:5] == ["intake", *CHAIN.names]
    assert shown["tickets"][0]["results"] == {
        "priority": {"level": "high", "sentiment": "calm", "reason": "refund"}
    }
    assert reply.stages["priority"]["reason"] == "refund"


def priority_responder(answer: Mapping[str, Any] | str) -> Responder:
    """The stand-in answering the priority stage with ``answer``, the others by the rules."""

    def respond(request: Request) -> Any:
        if request.schema.get("title") == "Priority":
            return answer
        return echo_responder(request)

    return respond


@pytest.fixture
def responder() -> Responder:
    return priority_responder({"level": "normal", "sentiment": "calm", "reason": "the model's"})


async def test_with_a_model_the_stage_asks_it_over_http(
    store: SQLiteOrderStore, own_standin: StandIn
) -> None:
    llm = build_llm(load(standin_env(own_standin.base_url)))
    try:
        (reply,) = await with_priority(store, llm).send(
            ticket("t1", "My kettle is leaking, I want a refund.")
        )
    finally:
        await llm.aclose()
    assert reply.stages["priority"] == {
        "level": "normal",
        "sentiment": "calm",
        "reason": "the model's",
    }
    asked = [r for r in own_standin.stats()["requests"] if r.get("stage") == "other"]
    assert asked, own_standin.stats()["requests"]


async def test_the_shipped_standin_answers_the_stage_from_its_schema(
    store: SQLiteOrderStore,
) -> None:
    # No responder of the test's own: the stand-in builds the answer from the request's schema.
    async with StandIn() as server:
        llm = build_llm(load(standin_env(server.base_url)))
        try:
            (reply,) = await with_priority(store, llm).send(
                ticket("t1", "My kettle is leaking, I want a refund.")
            )
        finally:
            await llm.aclose()
        requests = server.stats()["requests"]
    assert reply.status == "answered", reply
    assert Priority.model_validate(reply.stages["priority"]) == Priority(
        level="low", sentiment="calm", reason="reason"
    )
    assert [r["status"] for r in requests if r["stage"] == "other"] == [200]
    assert {r["status"] for r in requests} == {200}


async def test_an_invalid_model_answer_falls_back_to_the_offline_rule(
    store: SQLiteOrderStore, own_standin: StandIn
) -> None:
    own_standin.responder = priority_responder({"level": "whenever", "sentiment": "calm"})
    llm = build_llm(load(standin_env(own_standin.base_url, BATON_REASK_LIMIT="1")))
    p = with_priority(store, llm)
    try:
        (reply,) = await p.send(ticket("t1", "My kettle is leaking, I want a refund."))
    finally:
        await llm.aclose()
    assert reply.stages["priority"]["level"] == "high"  # the rule's
    assert reply.status == "degraded"
    assert [(d.stage, d.reason) for d in p.dead_letters] == [("priority", "validation_failed")]


def test_a_chain_that_cannot_work_is_refused_in_one_line() -> None:
    async def same(t: Ticket, u: Understanding) -> Understanding:
        return u

    with pytest.raises(ValueError, match="no stage 'nowhere' to go after"):
        Chain.builtin().insert(PRIORITY, after="nowhere")
    with pytest.raises(ValueError, match="names a stage twice"):
        CHAIN.insert(PRIORITY, after="lookup")
    with pytest.raises(ValueError, match="reads Priority, which no stage before it writes"):
        Chain.builtin().insert(
            stage("late", after="understand", input=Priority, output=Priority, agent=same),
            after="understand",
        )
    with pytest.raises(ValueError, match="give an agent function, or a prompt and an offline"):
        stage("bare", after="understand", input=Understanding, output=Priority)
    with pytest.raises(ValueError, match="the name must be"):
        stage("Bad Name", after="understand", input=Understanding, output=Priority, agent=same)
    with pytest.raises(ValueError, match="'handoffs': the name is taken by baton"):
        stage("handoffs", after="understand", input=Understanding, output=Priority, agent=same)
    with pytest.raises(ValueError, match=r"topic support\.replies is one of baton.s own"):
        Chain.of(
            [
                stage(
                    "echo",
                    after="understand",
                    input=Understanding,
                    output=Priority,
                    agent=same,
                    topic="support.replies",
                )
            ]
        )
    with pytest.raises(ValueError, match="topic 'a b' holds ' '"):
        Chain.of(
            [
                stage(
                    "spaced",
                    after="understand",
                    input=Understanding,
                    output=Priority,
                    agent=same,
                    topic="a b",
                )
            ]
        )
    with pytest.raises(ValueError, match="say where it goes"):
        Chain.of([stage("x", after="", input=Understanding, output=Understanding, agent=same)])


async def test_a_plain_async_function_is_a_stage(store: SQLiteOrderStore) -> None:
    class Words(BaseModel):
        count: int

    async def count(t: Ticket, u: Understanding) -> Words:
        return Words(count=len(t.text.split()))

    chain = Chain.of(
        [stage("words", after="lookup", input=Understanding, output=Words, agent=count)]
    )
    p = in_memory(store, chain=chain)
    (reply,) = await p.send(ticket("t1", "My kettle is leaking."))
    assert isinstance(reply, Reply) and reply.stages == {"words": {"count": 4}}
