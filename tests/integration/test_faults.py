"""Nothing lost, nothing twice, nothing blocked: worker crashes, broker stalls, bad stores."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka.partitioner import murmur2

from baton_kafka.agents.testing.standin import StandIn, run_in_thread
from baton_kafka.schemas.codec import dumps
from baton_kafka.schemas.records import Reply, Ticket
from baton_kafka.schemas.stages import StageRecord, Understanding
from baton_kafka.streams.kafka.embedded import EmbeddedBroker, free_port
from tests.fixtures import delivery
from tests.fixtures.brokers import Broker
from tests.fixtures.data import KETTLE, OPENING, conversations, orders_of, ticket_record
from tests.fixtures.delivery import Tally, figures, settled
from tests.fixtures.deployments import Deployment
from tests.fixtures.models import FAST_SERVER
from tests.fixtures.paths import ARTIFACTS

pytestmark = pytest.mark.integration

PARTITIONS = 4


@pytest.fixture
def slow_models() -> Iterator[tuple[StandIn, StandIn]]:
    """Two stand-ins answering in ~0.3 s: one per worker incarnation, so calls are attributable."""
    with run_in_thread(latency=0.3, jitter=0.1) as first, run_in_thread(latency=0.3) as second:
        yield first, second


def model_env(standin: StandIn) -> dict[str, str]:
    return {"ANTHROPIC_BASE_URL": standin.base_url}


def ids_of(records: list[delivery.Read], model: type[Any]) -> set[str]:
    out = set()
    for r in records:
        value = model.model_validate_json(r.value)
        out.add(value.ticket_id if isinstance(value, Reply) else value.ticket.ticket_id)
    return out


@pytest.mark.timeout(400)
@pytest.mark.parametrize(
    "guarantee",
    [
        "at_least_once",
        pytest.param(
            "exactly_once",
            marks=[
                pytest.mark.kafka_only,
                pytest.mark.xfail(
                    strict=True,
                    reason="Faust 0.15.3 sends replies outside its transactions while the "
                    "baton's pending entry is aborted with them: every reply of the open "
                    "transaction is sent twice (docs/guarantees.md)",
                ),
            ],
        ),
    ],
)
async def test_kill_9_mid_stream_loses_nothing_and_repeats_no_finished_stage(
    deployment: Deployment, slow_models: tuple[StandIn, StandIn], guarantee: str
) -> None:
    before, after = slow_models
    prefix = deployment.namespace
    deployment.env_extra["BATON_PROCESSING_GUARANTEE"] = guarantee
    exactly_once = guarantee == "exactly_once"
    tickets, expected_order = conversations(prefix, 20)
    deployment.import_orders(o for i in range(20) for o in orders_of(f"{prefix}c{i}"))
    worker = deployment.start_worker(**model_env(before))
    await deployment.publish_tickets(tickets)
    await deployment.read("support.replies", lambda vs: len(vs) >= 15, timeout=150)

    worker.kill()
    killed_at = time.time()
    await asyncio.sleep(1.0)  # the stand-in notices the dropped connections
    at_kill = before.stats()
    in_flight = delivery.unanswered_calls(at_kill)
    stage_topics = {
        "understand": ("support.tickets-by-session", "support.understood", StageRecord),
        "lookup": ("support.understood", "support.order-matched", StageRecord),
        "strategy": ("support.order-matched", "support.replies", Reply),
    }
    done_at_kill = {
        stage: ids_of(await delivery.drain(deployment, out, quiet=1.5), model)
        for stage, (_, out, model) in stage_topics.items()
    }
    committed = await delivery.committed_offsets(
        deployment, {inp for inp, _, _ in stage_topics.values()}, PARTITIONS
    )
    recorded = await delivery.recorded_in_flight(deployment)
    # A reply is sent only after the baton holding it as pending is acknowledged, so no acked
    # reply can lack one; a crash in between is resolved from the replies topic, not repeated.
    window = {t for t in done_at_kill["strategy"] if (t, "strategy") not in recorded}
    # Under exactly_once the pending entry is written in the open transaction, which the kill
    # aborts, while Faust sends the reply outside it (no agent of the app reads the replies
    # topic): only the at_least_once protocol can promise this.
    if not exactly_once:
        assert not window, f"replies acknowledged without a pending entry: {window}"

    restarted_at = time.time()
    restarted = deployment.start_worker(**model_env(after))
    tally = Tally(delivery.sessions(tickets), await delivery.replies(deployment, len(tickets)))
    figures(
        f"kill -9 mid-stream, {deployment.broker.kind}, {guarantee}, first {len(tickets)} tickets",
        lost=len(tally.lost),
        duplicates=len(tally.duplicates),
        reordered=len(tally.out_of_order()),
        acked_replies_without_pending_entry=len(window),
        settled_from_entry_in_flight=delivery.reused_copies(restarted),
        worker_ready_after_restart_s=delivery.ready_after(restarted, restarted_at),
    )
    tally.assert_exactly_once_in_order()

    # No stage whose entry in flight was durable at the kill was asked again.
    first_pass = delivery.calls_by_ticket_stage(at_kill, prefix)
    second_pass = delivery.calls_by_ticket_stage(after.stats(), prefix)
    repeated = set(first_pass) & set(second_pass)
    asked_again = repeated & recorded
    assert not asked_again, f"recorded stages asked again after the restart: {asked_again}"
    assert all(n == 1 for n in [*first_pass.values(), *second_pass.values()]), "re-asked"

    # What the restarted worker re-read: every record at or past the committed offset whose
    # ticket had already passed that stage was settled from the baton (a model call saved).
    hits: dict[str, int] = {}
    rereads: dict[str, int] = {}
    saved = 0
    for stage, (inp, _, _) in stage_topics.items():
        records = await delivery.drain(deployment, inp, quiet=1.0)
        reread = [
            StageRecord.model_validate_json(r.value).ticket.ticket_id
            for r in records
            if r.offset >= committed[(inp, r.partition)]
        ]
        hits[stage] = sum(t in done_at_kill[stage] for t in reread)
        saved += sum(first_pass[(t, stage)] for t in reread if t in done_at_kill[stage])
        rereads[stage] = len(reread)
    assert sum(rereads.values()) > 0, "the kill left nothing to redeliver: the test proves nothing"
    if not exactly_once:
        assert sum(hits.values()) > 0, "no redelivered copy of a finished stage: proves nothing"

    # Batons came back from the changelog: a follow-up after the restart continues the session.
    follow = [
        ticket_record(f"{prefix}t{i}-3", f"{prefix}s{i}", f"{prefix}c{i}", "Any update on that?")
        for i in range(20)
    ]
    await deployment.publish_tickets(follow)
    everything = await delivery.replies(deployment, len(tickets) + len(follow))
    tally = Tally(delivery.sessions([*tickets, *follow]), everything)
    tally.assert_exactly_once_in_order()
    last = {r.session_id: r for r in everything}
    previous = {r.session_id: r for r in everything if r.ticket_id.endswith("-2")}
    for session, order_id in expected_order.items():
        reply = last[session]
        assert reply.order_id == order_id and order_id in reply.reply, reply
        assert reply.baton_version == previous[session].baton_version + 3, (reply, previous)

    replied = sorted(r.replied_at.timestamp() for r in tally.replies if r.ticket_id[-1] != "3")
    after_restart = [t for t in replied if t > killed_at]
    figures(
        f"kill -9 mid-stream, {deployment.broker.kind}, {guarantee}",
        tickets=len(tickets) + len(follow),
        replied_before_kill=len(replied) - len(after_restart),
        lost=len(tally.lost),
        duplicates=len(tally.duplicates),
        acked_replies_without_pending_entry=len(window),
        calls_in_flight_at_kill=len(in_flight),
        calls_repeated=sum(second_pass[p] for p in repeated),
        calls_repeated_in_flight=len(repeated & in_flight),
        reread_past_commit=rereads,
        redelivered_hits=hits,
        settled_from_entry_in_flight=delivery.reused_copies(restarted),
        model_calls_saved=saved,
        model_calls_total=sum(first_pass.values()) + sum(second_pass.values()),
        first_reply_after_restart_s=round(after_restart[0] - restarted_at, 1),
        all_replied_after_restart_s=round(after_restart[-1] - restarted_at, 1),
        worker_ready_after_restart_s=delivery.ready_after(restarted, restarted_at),
    )


def asked(standin: StandIn, tickets: set[str]) -> set[str]:
    """Which of ``tickets`` this stand-in was asked about."""
    return {r["ticket_id"] for r in standin.stats()["requests"]} & tickets


@pytest.mark.timeout(420)
async def test_a_killed_worker_is_taken_over_then_rejoins_with_one_reply_per_ticket(
    deployment: Deployment, slow_models: tuple[StandIn, StandIn]
) -> None:
    model_a, model_b = slow_models
    prefix = deployment.namespace
    deployment.import_orders(o for i in range(24) for o in orders_of(f"{prefix}c{i}"))
    a = deployment.start_worker(**model_env(model_a))
    b = deployment.start_worker(**model_env(model_b))
    await settled([a, b])
    first, _ = conversations(prefix, 16)
    await deployment.publish_tickets(first)
    await deployment.read("support.replies", lambda vs: len(vs) >= 10, timeout=150)
    first_ids = {t["ticket_id"] for t in first}
    assert asked(model_a, first_ids) and asked(model_b, first_ids), "both workers had work"

    a.kill()
    killed_at = time.time()
    done = await delivery.replies(deployment, len(first))
    Tally(delivery.sessions(first), done).assert_exactly_once_in_order()
    taken_over = [r for r in done if r.replied_at.timestamp() > killed_at]

    back = deployment.start_worker(**model_env(model_a))
    await settled([b, back])
    second = [
        ticket_record(f"{prefix}r{i}", f"{prefix}rs{i}", f"{prefix}c{16 + i % 8}", OPENING[KETTLE])
        for i in range(24)
    ]
    await deployment.publish_tickets(second)
    everything = await delivery.replies(deployment, len(first) + len(second))
    tally = Tally(delivery.sessions([*first, *second]), everything)
    tally.assert_exactly_once_in_order()
    second_ids = {t["ticket_id"] for t in second}
    rejoined = asked(model_a, second_ids)
    assert rejoined, "the worker that came back got no partitions after the rebalance"
    assert asked(model_b, second_ids), "the surviving worker got no partitions after the rebalance"
    figures(
        "two workers, one killed and back",
        tickets=len(first) + len(second),
        lost=len(tally.lost),
        duplicates=len(tally.duplicates),
        replied_by_survivor_after_kill=len(taken_over),
        second_batch_tickets_on_returned_worker=len(rejoined),
    )


@pytest.fixture
def own_broker() -> Iterator[EmbeddedBroker]:
    """A broker of this test's own: it is going to be frozen."""
    with EmbeddedBroker(log=ARTIFACTS / "broker-frozen.log") as b:
        yield b


@pytest.mark.timeout(420)
async def test_a_broker_that_stops_answering_for_20_s_loses_and_repeats_nothing(
    own_broker: EmbeddedBroker, namespace: str, tmp_path: Path
) -> None:
    with run_in_thread(latency=0.3) as model:
        d = Deployment(
            broker=Broker.embedded(own_broker),
            namespace=namespace,
            data_dir=tmp_path,
            env_extra={
                "BATON_LLM": "anthropic",
                "ANTHROPIC_API_KEY": "sk-test-not-a-real-key",
                "ANTHROPIC_BASE_URL": model.base_url,
                "BATON_MODEL_TIMEOUT": "60",
                **FAST_SERVER,
            },
        )
        try:
            await _freeze_broker_while_tickets_flow(d, own_broker)
        finally:
            d.stop()


async def _freeze_broker_while_tickets_flow(d: Deployment, broker: EmbeddedBroker) -> None:
    assert broker.process is not None
    prefix = d.namespace
    d.import_orders(o for i in range(12) for o in orders_of(f"{prefix}c{i}"))
    worker = d.start_worker()
    before, _ = conversations(prefix, 12)
    await d.publish_tickets(before)
    await d.read("support.replies", lambda vs: len(vs) >= 6, timeout=150)

    os.kill(broker.process.pid, signal.SIGSTOP)
    try:
        await asyncio.sleep(20)
    finally:
        os.kill(broker.process.pid, signal.SIGCONT)
    resumed_at = time.time()
    later = [
        ticket_record(f"{prefix}late{i}", f"{prefix}s{i}", f"{prefix}c{i}", "Any update on that?")
        for i in range(12)
    ]
    await d.publish_tickets(later)
    everything = await delivery.replies(d, len(before) + len(later), timeout=240)
    tally = Tally(delivery.sessions([*before, *later]), everything)
    tally.assert_exactly_once_in_order()
    assert worker.proc.poll() is None, "the worker recovers on its own, without a restart"
    after = sorted(
        r.replied_at.timestamp() for r in everything if r.replied_at.timestamp() > resumed_at
    )
    figures(
        "broker frozen 20 s",
        tickets=len(before) + len(later),
        replied_before_freeze=len(everything) - len(after),
        lost=len(tally.lost),
        duplicates=len(tally.duplicates),
        first_reply_after_resume_s=round(after[0] - resumed_at, 1),
        all_replied_after_resume_s=round(after[-1] - resumed_at, 1),
    )


STORE_DOWN = {"en": "could not check your order", "zh": "无法核实您的订单"}


@pytest.mark.parametrize("dsn", ["directory", "postgres-closed-port"])
async def test_an_unavailable_order_store_degrades_the_lookup_and_says_so(
    deployment: Deployment, dsn: str
) -> None:
    unusable = (
        str(deployment.data_dir)
        if dsn == "directory"
        else f"postgresql://baton@127.0.0.1:{free_port()}/orders?connect_timeout=2"
    )
    deployment.start_worker(BATON_ORDERS_DSN=unusable)
    p = deployment.namespace
    tickets = [
        ticket_record(f"{p}en", f"{p}s-en", "c-ana", "My kettle is leaking, I want a refund."),
        ticket_record(f"{p}zh", f"{p}s-zh", "c-li", "我的水壶漏水了，想退款"),
        ticket_record(f"{p}anon", f"{p}s-anon", None, "My kettle is leaking, I want a refund."),
    ]
    await deployment.publish_tickets(tickets)
    replies = {r.ticket_id: r for r in await delivery.replies(deployment, 3)}
    letters = [dl for dl, _ in await deployment.dead_letters(2)]
    assert len(replies) == 3
    for lang in ("en", "zh"):
        reply = replies[f"{p}{lang}"]
        assert reply.status == "degraded", reply
        assert reply.order_id is None
        assert STORE_DOWN[lang] in reply.reply, reply.reply
    assert {(dl.ticket_id, dl.stage, dl.reason) for dl in letters} == {
        (f"{p}en", "lookup", "order_store_unavailable"),
        (f"{p}zh", "lookup", "order_store_unavailable"),
    }
    # Without a customer there is nothing to look up, so the store is never needed.
    anon = replies[f"{p}anon"]
    assert anon.status == "answered" and STORE_DOWN["en"] not in anon.reply
    assert all(w.proc.poll() is None for w in deployment.workers)


def partition_of(session_id: str, partitions: int = PARTITIONS) -> int:
    """The partition the default partitioner gives a session's records."""
    return (murmur2(session_id.encode()) & 0x7FFFFFFF) % partitions


def same_partition(like: str, prefix: str, n: int) -> list[str]:
    """``n`` session ids whose records share a partition with ``like``'s."""
    target = partition_of(like)
    found = (f"{prefix}{i}" for i in range(10_000) if partition_of(f"{prefix}{i}") == target)
    return [next(found) for _ in range(n)]


async def test_a_poison_record_is_dead_lettered_after_bounded_attempts_and_the_partition_moves_on(
    deployment: Deployment,
) -> None:
    p = deployment.namespace
    deployment.import_orders([*orders_of(f"{p}c"), *orders_of(f"{p}bad")])
    # Another system wrote a row the order model cannot read: loading this customer's orders
    # raises a validation error inside the look-up, an exception no stage expects.
    with sqlite3.connect(deployment.data_dir / "orders.sqlite3") as db:
        db.execute(
            "UPDATE orders SET ordered_at = ? WHERE customer_id = ?", ("not a date", f"{p}bad")
        )
    deployment.start_worker()
    poison = Ticket(
        ticket_id=f"{p}poison",
        session_id=f"{p}s-poison",
        customer_id=f"{p}bad",
        text="My kettle is leaking, I want a refund.",
    )
    understanding = Understanding(
        product=KETTLE,
        problem="leaking",
        demand="refund",
        time_hint="last month",
        keywords=["kettle", "leaking"],
        language="en",
        core_problem="Customer's kettle is leaking and they want a refund.",
        refers_to_earlier=False,
    )
    envelope = dumps(StageRecord(ticket=poison, understanding=understanding))
    neighbours = same_partition(poison.session_id, f"{p}n", 3)
    await deployment.publish([(poison.session_id, envelope)], topic="support.understood")
    after = [
        ticket_record(
            f"{p}from-text", f"{p}s-text", f"{p}c", "My kettle, bought 5000 years ago, leaks."
        ),
        *(ticket_record(f"{p}t-{s}", s, f"{p}c", OPENING[KETTLE]) for s in neighbours),
    ]
    await deployment.publish_tickets(after)
    letters = [dl for dl, _ in await deployment.dead_letters(1)]
    # The other system repairs its row; the session (its owner's) goes on where it was.
    with sqlite3.connect(deployment.data_dir / "orders.sqlite3") as db:
        db.execute(
            "UPDATE orders SET ordered_at = ? WHERE customer_id = ?",
            ("2026-11-01T09:30:00+00:00", f"{p}bad"),
        )
    follow_up = ticket_record(f"{p}next", poison.session_id, f"{p}bad", "Can it be repaired?")
    await deployment.publish_tickets([follow_up])
    after.append(follow_up)
    replies = {r.ticket_id: r for r in await delivery.replies(deployment, 1 + len(after))}
    assert sorted(replies) == sorted([poison.ticket_id, *(t["ticket_id"] for t in after)])
    (dl,) = letters
    assert (dl.ticket_id, dl.stage, dl.reason, dl.attempts) == (
        poison.ticket_id,
        "lookup",
        "stage_error",
        3,
    ), dl
    assert "ValidationError" in dl.error and dl.payload, dl
    assert replies[poison.ticket_id].status == "degraded"
    assert StageRecord.model_validate_json(dl.payload).ticket == poison
    # An impossible time hint in a customer's own words is no poison: it is just no hint.
    for tid in (f"{p}from-text", f"{p}next", *(f"{p}t-{s}" for s in neighbours)):
        assert replies[tid].status == "answered", replies[tid]
    assert replies[f"{p}next"].baton_version > replies[poison.ticket_id].baton_version


@pytest.mark.timeout(240)
async def test_a_hung_model_call_blocks_only_its_own_session(
    deployment: Deployment, standin: StandIn
) -> None:
    p = deployment.namespace
    deployment.import_orders(orders_of(f"{p}c"))
    deployment.start_worker(BATON_MODEL_TIMEOUT="15", BATON_MODEL_MAX_RETRIES="0")
    hung = f"{p}s-hung"
    others = same_partition(hung, f"{p}o", 6)
    own = [
        ticket_record(
            f"{p}h1",
            hung,
            f"{p}c",
            "My kettle is leaking, I want a refund. [[fault:hang:strategy]]",
        ),
        ticket_record(f"{p}h2", hung, f"{p}c", "Actually, can I send it back for repair instead?"),
        ticket_record(f"{p}h3", hung, f"{p}c", "How long will that take?"),
    ]
    theirs = [ticket_record(f"{p}x-{s}", s, f"{p}c", OPENING[KETTLE]) for s in others]
    await deployment.publish_tickets([*own, *theirs])

    replies = await delivery.replies(deployment, len(own) + len(theirs))
    Tally(delivery.sessions([*own, *theirs]), replies).assert_exactly_once_in_order()
    hanging = [r for r in standin.stats()["requests"] if r["ticket_id"] == f"{p}h1"]
    assert [r["fault"] for r in hanging if r["stage"] == "strategy"] == ["hang"]
    # One partition holds all these sessions' replies, in the order they were produced: every
    # other session was answered before the hung call timed out.
    order = [r.ticket_id for r in replies]
    assert all(order.index(t["ticket_id"]) < order.index(f"{p}h1") for t in theirs), order
    session = [r for r in replies if r.session_id == hung]
    assert [r.ticket_id for r in session] == [f"{p}h1", f"{p}h2", f"{p}h3"]
    assert session[0].status == "degraded"
    assert [r.status for r in session[1:]] == ["answered", "answered"]
    # Each ticket read the baton its predecessor's reply left: three writes per ticket.
    versions = [r.baton_version for r in session]
    assert versions == [versions[0], versions[0] + 3, versions[0] + 6], versions
    letters = [dl for dl, _ in await deployment.dead_letters(1)]
    assert [(dl.ticket_id, dl.stage, dl.reason) for dl in letters] == [
        (f"{p}h1", "strategy", "timeout")
    ]
