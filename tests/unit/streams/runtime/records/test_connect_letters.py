"""Dead letters in Kafka Connect's format: the record as read plus Connect's error headers."""

from __future__ import annotations

from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.schemas import StageRecord, dumps
from baton_kafka.streams.debug.dlq import as_json, described, letters, redrive
from baton_kafka.streams.kafka.client import Message
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.runtime.records.placement import session_partition
from baton_kafka.streams.testing import TestPipeline
from tests.fixtures.data import ticket
from tests.fixtures.pipelines import in_memory

# Every header Kafka Connect's dead-letter reporter writes for a record it consumed.
CONNECT_HEADERS = [
    "__connect.errors.topic",
    "__connect.errors.partition",
    "__connect.errors.offset",
    "__connect.errors.connector.name",
    "__connect.errors.task.id",
    "__connect.errors.stage",
    "__connect.errors.class.name",
    "__connect.errors.exception.class.name",
    "__connect.errors.exception.message",
    "__connect.errors.exception.stacktrace",
]
ORIGINAL_HEADERS = [
    ("x-origin", b"shop"),
    ("traceparent", b"00-" + b"1" * 32 + b"-" + b"2" * 16 + b"-01"),
]


def connect_pipeline(store: SQLiteOrderStore) -> TestPipeline:
    return in_memory(store, dead_letter_format="connect")


def stored(p: TestPipeline) -> list[Message]:
    """The dead-letter topic's records as a reader gets them."""
    topic = p.topics.dead_letters
    return [
        Message(topic, 0, i, 1_700_000_000_000, _raw(k), v, tuple(h))
        for i, ((k, v), h) in enumerate(zip(p.sink.sent[topic], p.sink.headers[topic], strict=True))
    ]


def _raw(key: str | None) -> bytes | None:
    return None if key is None else key.encode("utf-8", "surrogateescape")


def redrive_as_connect_does(m: Message) -> tuple[str, bytes | None, bytes | None, list]:
    """What a re-driver that knows only Connect's format does: the value, key and headers
    without the error headers, to the topic ``__connect.errors.topic`` names."""
    headers = dict(m.headers)
    kept = [(k, v) for k, v in m.headers if not k.startswith("__connect.errors.")]
    return headers["__connect.errors.topic"].decode(), m.key, m.value, kept


async def test_an_invalid_record_is_kept_as_read_with_every_connect_header(
    store: SQLiteOrderStore,
) -> None:
    p = connect_pipeline(store)
    n = p.topics
    raw = b'{"ticket_id": "t1", "text": 5'
    await p.intake(raw, Source(n.tickets, 3, 41, raw_key=b"\xffkey"), list(ORIGINAL_HEADERS))
    (m,) = stored(p)
    assert m.key == b"\xffkey" and m.value == raw
    assert list(m.headers[:2]) == ORIGINAL_HEADERS
    h = dict(m.headers)
    assert [k for k, _ in m.headers if k.startswith("__connect.errors.")] == CONNECT_HEADERS
    assert h["__connect.errors.topic"] == n.tickets.encode()
    assert (h["__connect.errors.partition"], h["__connect.errors.offset"]) == (b"3", b"41")
    assert h["__connect.errors.connector.name"] == b"baton-u"
    assert h["__connect.errors.stage"] == b"VALUE_CONVERTER"
    assert h["__connect.errors.exception.class.name"] == b"baton_kafka.schemas.codec.InvalidRecord"
    assert h["__connect.errors.exception.message"].startswith(b"value is not valid JSON")
    assert h["__connect.errors.exception.stacktrace"].startswith(
        b"baton_kafka.schemas.codec.InvalidRecord: "
    )
    assert (h["baton.reason"], h["baton.stage"]) == (b"invalid_input", b"intake")

    (letter,) = letters([m])
    assert (letter.dl.reason, letter.dl.stage) == ("invalid_input", "intake")
    assert (letter.dl.source_topic, letter.dl.source_offset) == (n.tickets, 41)
    assert letter.dl.payload == raw.decode() and letter.dl.id == h["baton.dead_letter_id"].decode()
    assert described(letter)["format"] == "connect"
    assert as_json(letter)["reason"] == "invalid_input"


async def test_a_shed_ticket_re_driven_the_connect_way_is_answered(
    store: SQLiteOrderStore,
) -> None:
    p = connect_pipeline(store)
    n = p.topics
    record = dumps(StageRecord(ticket=ticket("t1", "My kettle is leaking.")))
    await p.shed(
        "understand", record, Source(n.sessions, 0, 7, raw_key=b"S1"), list(ORIGINAL_HEADERS)
    )
    (m,) = stored(p)
    assert dict(m.headers)["__connect.errors.stage"] == b"TASK_PUT"
    assert dict(m.headers)["__connect.errors.exception.class.name"] == (
        b"baton.errors.SessionFlood"
    )
    topic, key, value, headers = redrive_as_connect_does(m)
    assert (topic, key, value) == (n.sessions, b"S1", record)
    assert headers == [*ORIGINAL_HEADERS, *[h for h in m.headers if h[0].startswith("baton.")]]

    # The record goes back where it was read, as it was read: the stage takes it this time.
    at = session_partition("S1", p.settings.partitions)
    source = Source(topic, at, 8, key=key.decode() if key else None, raw_key=key)
    await p.run_stage("understand", value, source, headers)
    assert len(p.sink.sent[n.understood]) == 1
    # ``baton dlq requeue`` finds the ticket in the Connect record too.
    (letter,) = letters([m])
    assert letter.dl.ticket is not None and letter.dl.reason == "session_flood"
    assert redrive(letter.dl) == ("S1", dumps(letter.dl.ticket))


async def test_a_record_failing_again_carries_one_set_of_error_headers(
    store: SQLiteOrderStore,
) -> None:
    p = connect_pipeline(store)
    n = p.topics
    await p.intake(b"nope", Source(n.tickets, 0, 1), list(ORIGINAL_HEADERS))
    topic, key, value, headers = redrive_as_connect_does(stored(p)[0])
    await p.intake(value, Source(topic, 0, 2, key=key), headers)
    again = stored(p)[1]
    keys = [k for k, _ in again.headers]
    assert len(keys) == len(set(keys))
    assert dict(again.headers)["__connect.errors.offset"] == b"2"
    assert list(again.headers[:2]) == ORIGINAL_HEADERS


async def test_the_default_format_is_baton_s_dead_letter_record(store: SQLiteOrderStore) -> None:
    p = in_memory(store)
    n = p.topics
    await p.intake(b"nope", Source(n.tickets, 0, 1, raw_key=b"k"), list(ORIGINAL_HEADERS))
    (m,) = stored(p)
    (letter,) = letters([m])
    assert m.value != b"nope" and described(letter)["format"] == "baton"
    assert letter.dl.payload == "nope"


def test_a_record_dead_lettered_by_kafka_connect_itself_is_listed() -> None:
    headers = (
        ("__connect.errors.topic", b"orders"),
        ("__connect.errors.partition", b"2"),
        ("__connect.errors.offset", b"10"),
        ("__connect.errors.exception.class.name", b"org.apache.kafka.connect.errors.DataException"),
        ("__connect.errors.exception.message", b"Converting byte[] to Kafka Connect data failed"),
    )
    m = Message("dlq", 0, 5, 1_700_000_000_000, b"k", b"\x00\x01", headers)
    (letter,) = letters([m])
    assert letter.dl.id == "dlq-0-5"
    assert letter.dl.reason == "org.apache.kafka.connect.errors.DataException"
    assert (letter.dl.source_topic, letter.dl.source_partition) == ("orders", 2)
