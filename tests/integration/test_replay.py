"""``baton replay``: selection, isolation from production, the diff, dry runs and resuming."""

from __future__ import annotations

from collections.abc import Iterator

import orjson
import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient

from baton_kafka.agents.testing.standin import StandIn
from baton_kafka.schemas.codec import dumps
from baton_kafka.schemas.records import Reply
from baton_kafka.streams.kafka.reader import read_topics
from baton_kafka.streams.kafka.topics import TopicNames, changelog_topic
from tests.fixtures.brokers import Broker
from tests.fixtures.data import ticket_record
from tests.fixtures.deployments import Deployment, counts, recorded_deployment, settings_of

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def run(
    broker: Broker, standin: StandIn, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    """A finished production run: two sessions (one ticket handed off after invalid strategy
    output), one record rejected at intake; its worker is stopped."""
    with recorded_deployment(
        broker, standin.base_url, tmp_path_factory.mktemp("replay"), with_invalid=True
    ) as d:
        yield d


def replay(d: Deployment, *args: str) -> tuple[int, dict]:
    done = d.baton("replay", *args, "--json", timeout=280)
    assert done.stdout, done.stderr.decode()
    return done.returncode, orjson.loads(done.stdout)


def production_topics(d: Deployment) -> list[str]:
    settings = settings_of(d)
    return [
        *TopicNames.of(settings).all(),
        changelog_topic(settings),
    ]


async def namespace_topics(d: Deployment, namespace: str) -> list[str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=d.broker.bootstrap)
    await admin.start()
    try:
        return [t for t in await admin.list_topics() if namespace in t]
    finally:
        await admin.close()


async def test_dry_run_lists_the_selection_and_creates_nothing(run: Deployment) -> None:
    ns = run.namespace
    a1, a2, b1 = f"{ns}-a1", f"{ns}-a2", f"{ns}-b1"

    def selected(*args: str) -> list[str]:
        code, doc = replay(run, "--dry-run", "--namespace", f"{ns}-dry", *args)
        assert code == 0 and doc["dry_run"] is True and doc["namespace"] == f"{ns}-dry"
        ids = [t["ticket_id"] for t in doc["tickets"]]
        # A session's tickets keep their order; sessions may interleave.
        if a1 in ids and a2 in ids:
            assert ids.index(a1) < ids.index(a2)
        return sorted(ids)

    # Each is a `baton replay` process against the broker; how the filters combine is
    # tested on records in tests/unit/streams/debug/test_debug_tools.py.
    assert selected() == [a1, a2, b1]
    assert selected("--session", "s-a") == [a1, a2]
    assert selected("--from-dead-letters") == [b1]
    # A time past the log's end: the embedded broker answers it with offset 0, not none.
    assert selected("--since", "2999-01-01T00:00:00Z") == []

    read = await read_topics(settings_of(run), [run.topic("support.tickets")])
    later = [
        m for m in read[run.topic("support.tickets")] if m.offset >= 1 and b"ticket_id" in m.value
    ]
    assert later, "one session's two tickets share a partition"
    expected = [t for t in (a1, a2, b1) if any(t.encode() in (m.value or b"") for m in later)]
    assert selected("--from-offset", "1") == expected

    bad = run.baton("replay", "--dry-run", "--from-offset", "x")
    assert bad.returncode == 2 and bad.stderr.count(b"\n") == 1
    assert await namespace_topics(run, f"{ns}-dry") == []


async def test_replay_diffs_against_production_and_leaves_it_untouched(run: Deployment) -> None:
    ns = run.namespace
    topics = production_topics(run)
    before = await counts(settings_of(run), topics)
    assert before[run.topic("support.replies")] == 3

    code, doc = replay(run, "--namespace", f"{ns}-iso")
    assert code == 0, doc
    assert (doc["namespace"], doc["replayed"], doc["failed"]) == (f"{ns}-iso", 3, 0)
    assert (doc["same"], doc["changed"]) == (2, 1)
    by_ticket = {t["ticket_id"]: t for t in doc["tickets"]}
    changed = by_ticket[f"{ns}-b1"]
    assert changed["result"] == "changed"
    assert changed["changes"]["status"] == {"before": "handoff", "after": "answered"}
    assert "reply" in changed["changes"]
    assert by_ticket[f"{ns}-a2"] == {
        "ticket_id": f"{ns}-a2",
        "session_id": "s-a",
        "changes": {},
        "result": "same",
    }

    assert await counts(settings_of(run), topics) == before
    replica = settings_of(run, BATON_NAMESPACE=f"{ns}-iso")
    replayed = await counts(replica, [TopicNames.of(replica).replies])
    assert replayed == {f"{ns}-iso.support.replies": 3}


async def test_interrupted_replay_resumes_with_one_reply_per_ticket(run: Deployment) -> None:
    ns = run.namespace
    # No worker and a short wait stands for a replay interrupted before any reply.
    code, doc = replay(
        run, "--namespace", f"{ns}-res", "--session", "s-a", "--no-worker", "--timeout", "2"
    )
    assert code == 1
    assert (doc["replayed"], doc["failed"], doc["published"]) == (2, 2, 2)

    # A second copy of a ticket in the namespace, as a replay killed mid-publish could leave.
    copy = ticket_record(f"{ns}-a1", "s-a", "c-ana", "My kettle is leaking, I want a refund.")
    producer = AIOKafkaProducer(bootstrap_servers=run.broker.bootstrap, acks="all")
    await producer.start()
    try:
        await producer.send_and_wait(f"{ns}-res.support.tickets", dumps(copy), key=b"s-a")
    finally:
        await producer.stop()
    code, doc = replay(run, "--namespace", f"{ns}-res", "--session", "s-a")
    assert code == 0, doc
    assert (doc["replayed"], doc["failed"], doc["published"], doc["same"]) == (2, 0, 0, 2)

    replica = settings_of(run, BATON_NAMESPACE=f"{ns}-res")
    read = await read_topics(replica, [TopicNames.of(replica).replies])
    replies = [Reply.model_validate_json(m.value or b"") for m in read[f"{ns}-res.support.replies"]]
    assert sorted(r.ticket_id for r in replies) == [f"{ns}-a1", f"{ns}-a2"]

    code, doc = replay(run, "--namespace", f"{ns}-res", "--session", "s-a")
    assert code == 0 and (doc["published"], doc["same"]) == (0, 2)
