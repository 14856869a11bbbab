"""End to end on the embedded broker: support.tickets -> three agents -> support.replies."""

from __future__ import annotations

import re
from collections import Counter, defaultdict

import pytest

from baton_kafka.schemas.records import Reply
from tests.fixtures.data import ORDERS, ticket_record
from tests.fixtures.deployments import Deployment

pytestmark = pytest.mark.integration


def by_session(replies: list[Reply]) -> dict[str, list[Reply]]:
    out: dict[str, list[Reply]] = defaultdict(list)
    for r in replies:
        out[r.session_id].append(r)
    return out


async def test_three_turn_session_keeps_product_problem_and_order(deployment: Deployment) -> None:
    deployment.import_orders(ORDERS)
    deployment.start_worker()
    await deployment.publish_tickets(
        [
            ticket_record("t1", "s-ana", "c-ana", "My kettle is leaking, I want a refund."),
            ticket_record(
                "t2", "s-ana", "c-ana", "Actually, can I send it back for repair instead?"
            ),
            ticket_record("t3", "s-ana", "c-ana", "How long will that take?"),
            ticket_record("z1", "s-li", "c-li", "我的水壶漏水了，想退款"),
            ticket_record("z2", "s-li", "c-li", "那这个能修吗？"),
        ]
    )
    replies = await deployment.replies(5)
    assert Counter(r.ticket_id for r in replies) == dict.fromkeys(["t1", "t2", "t3", "z1", "z2"], 1)
    sessions = by_session(replies)
    assert [r.ticket_id for r in sessions["s-ana"]] == ["t1", "t2", "t3"]
    versions = [r.baton_version for r in sessions["s-ana"]]
    assert versions == sorted(versions) and len(set(versions)) == 3
    last = sessions["s-ana"][-1]
    assert last.status == "answered", last
    assert last.order_id == "O-1001"
    assert "O-1001" in last.reply
    assert "kettle" in last.reply.lower()
    assert "leak" in (last.reply + last.internal_note).lower()
    assert last.product == "Midea Electric Kettle 1.7L"
    zh_last = sessions["s-li"][-1]
    assert zh_last.order_id == "O-2001" and "O-2001" in zh_last.reply
    assert zh_last.language == "zh" and "水壶" in zh_last.reply
    assert all(r.llm == "anthropic" for r in replies)
    assert all(r.usage.calls >= 2 for r in replies)


async def test_no_matching_order_is_null_and_nothing_invented(deployment: Deployment) -> None:
    deployment.import_orders(ORDERS)
    deployment.start_worker()
    await deployment.publish_tickets(
        [
            ticket_record("n1", "s-new", "c-nobody", "Where is my parcel? It has not arrived."),
            ticket_record("n2", "s-ana2", "c-ana", "My blender stopped working, I want a refund."),
            ticket_record("n3", "s-anon", None, "Hello, my order is late."),
        ]
    )
    replies = await deployment.replies(3)
    assert len(replies) == 3
    known = {o["order_id"] for o in ORDERS}
    for r in replies:
        assert r.order_id is None, r
        mentioned = set(re.findall(r"O-\d+", r.reply + r.solution + r.internal_note))
        assert not mentioned, f"{r.ticket_id} invents or leaks {mentioned}"
        assert not known & set(r.reply.split())


async def test_invalid_records_are_dead_lettered_while_valid_tickets_flow(
    deployment: Deployment,
) -> None:
    deployment.import_orders(ORDERS)
    deployment.start_worker()
    bad = [b"not json", b"", b"[1, 2]", b'{"ticket_id": "x1", "text": "hi"}', b"\xff\xfe\x00"]
    await deployment.publish([(None, v) for v in bad[:2]])
    await deployment.publish_tickets([ticket_record("v1", "s-v", "c-ana", "My kettle is leaking.")])
    await deployment.publish([(None, v) for v in bad[2:]])
    await deployment.publish_tickets([ticket_record("v2", "s-v2", "c-li", "水壶漏水")])
    replies = await deployment.replies(2)
    assert sorted(r.ticket_id for r in replies) == ["v1", "v2"]
    letters = await deployment.dead_letters(len(bad))
    assert len(letters) == len(bad)
    assert {dl.reason for dl, _ in letters} == {"invalid_input"}
    assert {dl.stage for dl, _ in letters} == {"intake"}
    errors = " | ".join(dl.error for dl, _ in letters)
    for expected in (
        "not valid JSON",
        "empty value",
        "got an array",
        "session_id: Field required",
        "UTF-8",
    ):
        assert expected in errors
    for dl, headers in letters:
        assert headers["__connect.errors.topic"] == deployment.topic("support.tickets").encode()
        assert int(headers["__connect.errors.offset"]) == dl.source_offset
        assert headers["baton.reason"] == b"invalid_input"
    payloads = {dl.payload for dl, _ in letters}
    assert "not json" in payloads and '{"ticket_id": "x1", "text": "hi"}' in payloads


async def test_invalid_model_output_gives_degraded_reply_and_dead_letter(
    deployment: Deployment,
) -> None:
    deployment.import_orders(ORDERS)
    deployment.start_worker()
    await deployment.publish_tickets(
        [
            ticket_record(
                "m1", "s-m1", "c-ana", "My kettle is leaking. [[fault:invalid_json:understand:9]]"
            ),
            ticket_record(
                "m2", "s-m2", "c-ana", "My kettle is leaking. [[fault:schema:strategy:9]]"
            ),
            ticket_record("m3", "s-m3", "c-ana", "My kettle is leaking, refund please."),
        ]
    )
    replies = {r.ticket_id: r for r in await deployment.replies(3)}
    letters = await deployment.dead_letters(2)
    by_ticket = {dl.ticket_id: dl for dl, _ in letters}
    assert replies["m1"].status == "degraded"
    assert replies["m1"].order_id == "O-1001"
    assert by_ticket["m1"].stage == "understand"
    assert by_ticket["m1"].reason == "validation_failed"
    assert by_ticket["m1"].attempts == 2
    assert replies["m2"].status == "handoff"
    assert by_ticket["m2"].stage == "strategy"
    assert by_ticket["m2"].reason == "validation_failed"
    assert by_ticket["m2"].payload, "the raw model output is kept"
    assert replies["m3"].status == "answered"
    assert "m3" not in by_ticket


async def test_two_tickets_with_one_ticket_id_get_one_reply(deployment: Deployment) -> None:
    deployment.import_orders(ORDERS)
    deployment.start_worker()
    same = ticket_record("d1", "s-d", "c-ana", "My kettle is leaking.")
    await deployment.publish_tickets([same, same])
    await deployment.publish_tickets([ticket_record("d2", "s-d", "c-ana", "Can it be repaired?")])
    replies = await deployment.replies(2)
    assert Counter(r.ticket_id for r in replies) == {"d1": 1, "d2": 1}


@pytest.mark.parametrize(
    ("before", "later"),
    [
        # The most recent earlier session's order, from the customer index.
        (
            [("My headphones stopped working, I want a repair.", "O-1002")],
            "Any news on the order I asked about earlier?",
        ),
        # The order history: a reference by what was done finds the session's first topic,
        # not its last.
        (
            [
                ("My headphones stopped working, can I send them in for repair?", "O-1002"),
                ("Also my kettle is leaking, I want a refund.", "O-1001"),
            ],
            "The one I sent in for repair, is it fixed yet?",
        ),
    ],
    ids=["earlier-session", "order-history"],
)
async def test_a_later_session_finds_the_earlier_order_after_a_restart(
    deployment: Deployment, before: list[tuple[str, str]], later: str
) -> None:
    deployment.import_orders(ORDERS)
    worker = deployment.start_worker()
    await deployment.publish_tickets(
        [ticket_record(f"x{i}", "s-first", "c-ana", text) for i, (text, _) in enumerate(before)]
    )
    first = {r.ticket_id: r.order_id for r in await deployment.replies(len(before))}
    assert first == {f"x{i}": order for i, (_, order) in enumerate(before)}
    worker.kill()
    deployment.start_worker()
    await deployment.publish_tickets([ticket_record("y", "s-second", "c-ana", later)])
    replies = {r.ticket_id: r for r in await deployment.replies(len(before) + 1)}
    assert replies["y"].order_id == "O-1002"
    assert "O-1002" in replies["y"].reply


async def test_idle_sessions_expire_with_tombstones_and_the_index_keeps_them(
    deployment: Deployment,
) -> None:
    deployment.import_orders(ORDERS)
    deployment.start_worker(BATON_SESSION_TTL="2", BATON_EXPIRY_INTERVAL="1")
    await deployment.publish_tickets(
        [ticket_record("e1", "s-old", "c-ana", "My headphones stopped working, I want a repair.")]
    )
    assert (await deployment.replies(1))[0].order_id == "O-1002"

    changelog = f"baton-{deployment.namespace}-batons-changelog"
    consumer = deployment.reader(changelog)
    await consumer.start()
    tombstones: list[bytes] = []
    try:
        for _ in range(60):
            batch = await consumer.getmany(timeout_ms=500)
            tombstones += [r.key for rs in batch.values() for r in rs if r.value is None]
            if tombstones:
                break
    finally:
        await consumer.stop()
    assert tombstones and b"s-old" in tombstones[0]

    await deployment.publish_tickets(
        [ticket_record("e2", "s-new", "c-ana", "Any news on the order I asked about earlier?")]
    )
    replies = {r.ticket_id: r for r in await deployment.replies(2)}
    assert replies["e2"].order_id == "O-1002" and "O-1002" in replies["e2"].reply


async def test_the_customer_index_forgets_a_customer_past_its_retention(
    deployment: Deployment,
) -> None:
    deployment.import_orders(ORDERS)
    # Three seconds of retention: the index sweep on the worker running the index agent drops
    # the summary and tombstones the customer's key, outside any stream.
    worker = deployment.start_worker(
        BATON_INDEX_RETENTION_DAYS=repr(3 / 86400), BATON_EXPIRY_INTERVAL="1"
    )
    await deployment.publish_tickets(
        [ticket_record("r1", "s-gone", "c-ana", "My headphones stopped working, I want a repair.")]
    )
    assert (await deployment.replies(1))[0].order_id == "O-1002"

    changelog = f"baton-{deployment.namespace}-customers-changelog"
    consumer = deployment.reader(changelog)
    await consumer.start()
    records: list[tuple[bytes | None, bytes | None]] = []
    try:
        for _ in range(60):
            batch = await consumer.getmany(timeout_ms=500)
            records += [(r.key, r.value) for rs in batch.values() for r in rs]
            if any(value is None for _, value in records):
                break
    finally:
        await consumer.stop()
    assert records and all(key and b"c-ana" in key for key, _ in records), records
    assert records[0][1] is not None and records[-1][1] is None
    assert "1 customers emptied" in worker.log.read_text()
