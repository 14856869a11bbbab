"""``baton dlq``: list and show dead letters, requeue them, and a requeued answered ticket is not
answered twice."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import orjson
import pytest

from baton_kafka.agents.testing.standin import StandIn
from baton_kafka.schemas.handoff import HandoffPacket
from baton_kafka.schemas.records import DeadLetter, Ticket
from baton_kafka.streams.debug.dlq import ATTEMPTS, REQUEUED_FROM
from baton_kafka.streams.kafka.reader import read_topics
from tests.fixtures.brokers import Broker
from tests.fixtures.data import ORDERS, ticket_record
from tests.fixtures.deployments import Deployment, open_deployment, settings_of

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def run(
    broker: Broker, standin: StandIn, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    """One worker for the module; a handed-off ticket and a record rejected at intake."""
    with open_deployment(broker, standin.base_url, tmp_path_factory.mktemp("dlq")) as d:
        d.import_orders(ORDERS)
        d.start_worker()

        async def setup() -> None:
            await d.publish_tickets(
                [
                    ticket_record(
                        "h1-" + d.namespace,
                        "s-h",
                        "c-ana",
                        "Kettle leaks. [[fault:schema:strategy:2]]",
                    ),
                    ticket_record("ok-" + d.namespace, "s-ok", "c-ana", "My kettle is leaking."),
                ]
            )
            await d.publish([(None, b"not json")])
            await d.replies(2)
            await d.dead_letters(2)

        asyncio.run(setup())
        yield d


def jsonl(out: bytes) -> list[dict]:
    return [orjson.loads(line) for line in out.splitlines()]


def test_list_filters_and_show_with_headers(run: Deployment) -> None:
    listed = run.baton("dlq", "list", "--json")
    assert listed.returncode == 0, listed.stderr.decode()
    letters = [DeadLetter.model_validate(x) for x in jsonl(listed.stdout)]
    assert {(dl.stage, dl.reason) for dl in letters} == {
        ("strategy", "validation_failed"),
        ("intake", "invalid_input"),
    }
    only = jsonl(run.baton("dlq", "list", "--json", "--stage", "intake").stdout)
    assert [x["reason"] for x in only] == ["invalid_input"]
    assert jsonl(run.baton("dlq", "list", "--json", "--reason", "timeout").stdout) == []
    later = run.baton("dlq", "list", "--json", "--since", "2999-01-01T00:00:00Z").stdout
    assert jsonl(later) == []
    text = run.baton("dlq", "list").stdout.decode().splitlines()
    assert len(text) == 2 and all(dl.id in "\n".join(text) for dl in letters)

    strategy = next(dl for dl in letters if dl.stage == "strategy")
    shown = run.baton("dlq", "show", strategy.id)
    assert shown.returncode == 0, shown.stderr.decode()
    doc = orjson.loads(shown.stdout)
    assert doc["dead_letter"]["id"] == strategy.id
    assert doc["headers"]["baton.dead_letter_id"] == strategy.id
    assert doc["headers"]["__connect.errors.stage"] == "strategy"
    assert doc["headers"]["__connect.errors.topic"] == run.topic("support.order-matched")
    assert doc["key"] == "s-h"

    missing = run.baton("dlq", "show", "no-such-id")
    assert missing.returncode == 1
    assert missing.stderr.decode().count("\n") == 1 and "no-such-id" in missing.stderr.decode()
    bad = run.baton("dlq", "list", "--since", "last tuesday")
    assert bad.returncode == 2 and b"Traceback" not in bad.stderr


async def test_requeued_answered_ticket_is_not_answered_twice(
    run: Deployment, standin: StandIn
) -> None:
    tid = "h1-" + run.namespace
    [(dl, _)] = [x for x in await run.dead_letters(2) if x[0].ticket_id == tid]
    calls_before = sum(1 for r in standin.stats()["requests"] if r["ticket_id"] == tid)

    done = run.baton("dlq", "requeue", "--id", dl.id)
    assert done.returncode == 0, done.stderr.decode()
    assert f"requeued {dl.id}: ticket {tid}" in done.stdout.decode()
    again = run.baton("dlq", "requeue", "--id", dl.id)
    assert again.returncode == 0 and b"already requeued" in again.stderr

    settings = settings_of(run)
    read = await read_topics(settings, [run.topic("support.tickets")])
    requeued = [m for m in read[run.topic("support.tickets")] if dict(m.headers).get(REQUEUED_FROM)]
    assert len(requeued) == 1
    assert dict(requeued[0].headers) == {REQUEUED_FROM: dl.id.encode(), ATTEMPTS: b"2"}
    assert Ticket.model_validate_json(requeued[0].value or b"").ticket_id == tid

    # Tickets of a session are handled in publication order, so once a ticket published after
    # the requeued copy is answered, the copy went through the pipeline too.
    follow_up = tid + "-next"
    await run.publish_tickets([ticket_record(follow_up, "s-h", "c-ana", "Any news on the kettle?")])
    replies = await run.replies(3)
    assert [r.status for r in replies if r.ticket_id == tid] == ["handoff"]
    assert [r.ticket_id for r in replies if r.session_id == "s-h"] == [tid, follow_up]
    calls_after = sum(1 for r in standin.stats()["requests"] if r["ticket_id"] == tid)
    assert calls_after == calls_before
    # Nor handed off twice: its one hand-off packet stays the only one.
    handoffs = run.topic("support.handoffs")
    packets = (await read_topics(settings, [handoffs]))[handoffs]
    mine = [HandoffPacket.model_validate_json(m.value or b"") for m in packets]
    assert [p.ticket_id for p in mine if p.ticket_id == tid] == [tid]


async def test_requeued_rejected_record_is_rejected_again_with_attempts_counted(
    run: Deployment,
) -> None:
    first = run.baton("dlq", "requeue", "--stage", "intake")
    assert first.returncode == 0, first.stderr.decode()
    assert "(attempt 2)" in first.stdout.decode()

    def intake_letters(values: list[bytes]) -> bool:
        return sum(1 for v in values if b'"stage":"intake"' in v) >= 2

    await run.read("support.dead-letters", intake_letters)
    second = run.baton("dlq", "requeue", "--stage", "intake")
    # The new dead letter is requeued; the old one was requeued already.
    assert "(attempt 3)" in second.stdout.decode()
    assert second.stdout.decode().count("requeued ") == 1

    settings = settings_of(run)
    read = await read_topics(settings, [run.topic("support.tickets")])
    copies = sorted(
        (m for m in read[run.topic("support.tickets")] if m.value == b"not json"),
        key=lambda m: m.timestamp,
    )
    attempts = [dict(m.headers).get(ATTEMPTS) for m in copies]
    assert attempts == [None, b"2", b"3"]
