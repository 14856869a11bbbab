"""Schema Registry serde: framed and header forms at intake, the outputs registered and framed,
against Confluent's own client (its mock registry, and a registry server over HTTP)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson
import pytest
from confluent_kafka.schema_registry import (
    SchemaRegistryClient,
    header_schema_id_serializer,
)
from confluent_kafka.schema_registry._sync.mock_schema_registry_client import (
    MockSchemaRegistryClient,
)
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext, SerializationError

from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.schemas import Reply, dumps
from baton_kafka.schemas.contracts import FRAMED, TOPICS, asyncapi, json_schema
from baton_kafka.schemas.framing import VALUE_SCHEMA_ID_HEADER, frame, header_ref, unframe
from baton_kafka.schemas.topics import ACTIONS, DEAD_LETTERS, HANDOFFS, MEMORY_INDEX, REPLIES, ROLES
from baton_kafka.streams.kafka.client import Message
from baton_kafka.streams.kafka.registry import (
    OUTPUTS,
    Registry,
    RegistryError,
    as_registered,
    closed,
    register_contract,
    schema_text,
)
from baton_kafka.streams.runtime.chain import BUILTIN
from baton_kafka.streams.runtime.pipeline import Pipeline
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.settings import Settings
from tests.fixtures.data import handoff_packet, ticket
from tests.fixtures.paths import TEST_DATA
from tests.fixtures.pipelines import in_memory
from tests.fixtures.registry import RegistryServer, registry_server

TICKET_SCHEMA = orjson.dumps(json_schema("ticket")).decode()
RAW_TICKET = {
    "ticket_id": "t1",
    "session_id": "S1",
    "customer_id": "C1",
    "text": "My kettle leaks.",
}


def serialize(client: Any, topic: str, header_form: bool = False) -> tuple[bytes, list]:
    """A ticket as Confluent's JSONSerializer writes it: framed, or with the id in a header."""
    conf: dict[str, Any] = {"auto.register.schemas": True}
    if header_form:
        conf["schema.id.serializer"] = header_schema_id_serializer
    serializer = JSONSerializer(TICKET_SCHEMA, client, conf=conf)
    ctx = SerializationContext(topic, MessageField.VALUE, headers=[])
    value = serializer(RAW_TICKET, ctx)
    assert value is not None
    return value, list(ctx.headers or [])


def registry_pipeline(store: SQLiteOrderStore, **settings: Any) -> Pipeline:
    return in_memory(store, schema_registry_url="http://registry.invalid", **settings)


def test_the_framed_form_is_the_id_before_the_json() -> None:
    assert frame(7, b'{"a":1}') == b'\x00\x00\x00\x00\x07{"a":1}'
    ref, payload = unframe(frame(7, b'{"a":1}'))
    assert ref is not None and ref.id == 7 and payload == b'{"a":1}'
    assert unframe(b'{"a":1}') == (None, b'{"a":1}')
    # A value that only starts like a frame is left alone.
    assert unframe(b"\x00\x00\x00\x00\x07not json") == (None, b"\x00\x00\x00\x00\x07not json")


@pytest.mark.parametrize("header_form", [False, True])
async def test_intake_takes_tickets_from_confluent_s_json_serializer(
    store: SQLiteOrderStore, header_form: bool
) -> None:
    p = registry_pipeline(store)
    n = p.topics
    value, headers = serialize(MockSchemaRegistryClient({"url": "mock://"}), n.tickets, header_form)
    assert (value[:1] == b"\x00") is not header_form
    assert (header_ref(headers) is not None) is header_form
    await p.intake(value, Source(n.tickets, 0, 0), headers)
    assert n.dead_letters not in p.sink.sent
    assert len(p.sink.sent[n.sessions]) == 1


async def test_without_the_registry_a_framed_ticket_is_invalid_and_says_why(
    store: SQLiteOrderStore,
) -> None:
    p = in_memory(store)
    n = p.topics
    value, _ = serialize(MockSchemaRegistryClient({"url": "mock://"}), n.tickets)
    await p.intake(value, Source(n.tickets, 0, 0))
    (raw,) = [v for _, v in p.sink.sent[n.dead_letters]]
    letter = orjson.loads(raw)
    assert letter["reason"] == "invalid_input"
    assert "framed by a Schema Registry serializer" in letter["error"]
    assert "BATON_SCHEMA_REGISTRY_URL" in letter["error"]


def test_outputs_are_registered_backward_compatible_under_the_topic_name_strategy() -> None:
    with registry_server() as server:
        settings = Settings(namespace="ns", schema_registry_url=server.url)
        ids = register_contract(settings)
        again = register_contract(settings)
    assert ids == again
    outputs = {
        "ns.support.replies",
        "ns.support.handoffs",
        "ns.support.dead-letters",
        "ns.support.actions",
    }
    assert set(ids) == outputs
    state = server.state
    assert state.compatibility == {f"{topic}-value": "BACKWARD" for topic in outputs}
    for topic, record in (("replies", "reply"), ("handoffs", "handoff-packet")):
        (version,) = state.subjects[f"ns.support.{topic}-value"]
        assert version.schema_type == "JSON" and version.id == ids[f"ns.support.{topic}"]
        assert orjson.loads(version.schema) == closed(json_schema(record))


def test_every_topic_baton_writes_for_others_is_registered_and_framed() -> None:
    """What the worker writes and others read (not the signed hops between the stages, nor the
    tickets and decisions people write) is registered with its record's schema."""
    internal = {ROLES[role] for role in BUILTIN.internal_roles()} | {MEMORY_INDEX}
    written = {topic for topic, (_, _, writer, _) in TOPICS.items() if writer == "baton"}
    assert set(FRAMED) == written - internal
    assert set(OUTPUTS) == set(FRAMED) == {REPLIES, HANDOFFS, DEAD_LETTERS, ACTIONS}
    # The AsyncAPI document says where the schema id is, on those topics only.
    doc = asyncapi()
    messages = doc["components"]["messages"]
    located = {
        channel["address"]
        for channel in doc["channels"].values()
        for ref in channel["messages"].values()
        if messages[ref["$ref"].rsplit("/", 1)[1]]["bindings"]["kafka"].get("schemaIdLocation")
    }
    assert located == set(FRAMED)

    assert [OUTPUTS[t] for t in (REPLIES, HANDOFFS, DEAD_LETTERS)] == [
        "reply",
        "handoff-packet",
        "dead-letter",
    ]


def _objects(schema: Any, path: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every object schema in ``schema`` (the record's own, its properties', its $defs')."""
    if isinstance(schema, dict):
        if schema.get("type") == "object" or "properties" in schema:
            yield path, schema
        for key, value in schema.items():
            if key not in ("enum", "const", "default", "examples"):
                yield from _objects(value, f"{path}/{key}")
    elif isinstance(schema, list):
        for i, value in enumerate(schema):
            yield from _objects(value, f"{path}/{i}")


@pytest.mark.parametrize("record", sorted(set(OUTPUTS.values())))
def test_every_record_object_of_a_registered_schema_is_closed(record: str) -> None:
    schema = orjson.loads(schema_text(record))
    models = [(p, o) for p, o in _objects(schema) if "properties" in o]
    # A record of its own fields only (an action) has no nested models to close.
    assert models and (len(models) == 1 or any(p.startswith("#/$defs/") for p, _ in models))
    still_open = [p for p, o in models if o.get("additionalProperties") is not False]
    assert not still_open, f"{record}: open content models at {still_open}"
    # Maps keep their values' schema: a reply's timings and the shop's stages' results.
    if record == "reply":
        props, contract = schema["properties"], json_schema(record)["properties"]
        assert props["timings_ms"] == contract["timings_ms"]
        assert props["stages"]["additionalProperties"]["additionalProperties"] is True
    # The committed contract stays open, for readers that validate with the files alone.
    assert "additionalProperties" not in json_schema(record)


async def test_what_baton_writes_passes_confluent_s_serializers_with_the_closed_schemas(
    store: SQLiteOrderStore,
) -> None:
    """Confluent's JSONSerializer and JSONDeserializer validate each record baton writes against
    its closed schema: a field the schema lacks would fail them."""
    from tests.fixtures.data import reply as a_reply

    p = in_memory(store)
    n = p.topics
    await p.intake(dumps(ticket("t1", "I will sue you over this kettle.")), Source(n.tickets))
    await p.intake(b'{"ticket_id": 5}', Source(n.tickets, 0, 1))
    for stage, topic in (("understand", n.sessions), ("lookup", n.understood)):
        await p.hop(stage, topic)
    await p.hop("strategy", n.matched)
    written = {
        record: [orjson.loads(v) for _, v in p.sink.sent[n.role(role)]]
        for record, role in (
            ("reply", "replies"),
            ("handoff-packet", "handoffs"),
            ("dead-letter", "dead_letters"),
        )
    }
    assert all(len(values) == 1 for values in written.values()), written
    # And records of every part: a packet with its offer and history, a reply with stages.
    written["handoff-packet"].append(orjson.loads(dumps(handoff_packet())))
    written["reply"].append(orjson.loads(dumps(a_reply(stages={"triage": {"queue": "k"}}))))
    client = MockSchemaRegistryClient({"url": "mock://"})
    for record, values in written.items():
        topic = next(t for t, r in OUTPUTS.items() if r == record)
        ctx = SerializationContext(topic, MessageField.VALUE)
        conf = {"auto.register.schemas": True}
        serializer = JSONSerializer(schema_text(record), client, conf=conf)
        for value in values:
            framed = serializer(value, ctx)
            assert framed is not None
            assert JSONDeserializer(None, schema_registry_client=client)(framed, ctx) == value
        with pytest.raises(SerializationError, match="field_it_lacks"):
            serializer({**values[0], "field_it_lacks": 1}, ctx)


@pytest.mark.parametrize(
    ("record", "topic"),
    [
        ("reply", "support.replies"),
        ("handoff-packet", "support.handoffs"),
        ("dead-letter", "support.dead-letters"),
    ],
)
def test_an_older_schema_is_followed_by_today_s(record: str, topic: str) -> None:
    """A subject holding an earlier version of a record's schema, registered as baton registers
    it, takes today's: fields were only added (a reply's stages' results, an order's lines in
    a hand-off packet) and enums extended, and a closed model may gain optional fields."""
    older = orjson.loads((TEST_DATA / "registry" / f"{record}-older.schema.json").read_bytes())
    assert as_registered(older) != schema_text(record)
    with registry_server() as server:
        first = Registry(server.url).register(f"{topic}-value", as_registered(older))
        ids = register_contract(Settings(schema_registry_url=server.url))
    assert ids[topic] != first
    assert len(server.state.subjects[f"{topic}-value"]) == 2


def test_a_subject_holding_the_older_open_schema_refuses_the_closed_one() -> None:
    """Closing a content model is itself incompatible (docs/consuming.md says what to do)."""
    older = (TEST_DATA / "registry" / "reply-older.schema.json").read_text("utf-8")
    with registry_server() as server:
        Registry(server.url).register("support.replies-value", older)
        with pytest.raises(RegistryError, match="ADDITIONAL_PROPERTIES_REMOVED"):
            register_contract(Settings(schema_registry_url=server.url))


A: dict[str, Any] = {"a": {"type": "string"}}
B: dict[str, Any] = {"b": {"type": "integer"}}
OBJECT: dict[str, Any] = {"type": "object", "properties": A, "required": ["a"]}
CLOSED: dict[str, Any] = {**OBJECT, "additionalProperties": False}


def _with(schema: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**schema, **changes}


@pytest.mark.parametrize(
    ("old", "new", "accepted", "why"),
    [
        (CLOSED, _with(CLOSED, properties={**A, **B}), True, "optional added"),
        (OBJECT, _with(OBJECT, properties={**A, **B}), False, "ADDED_TO_OPEN"),
        (OBJECT, _with(OBJECT, properties={**A, "b": {}}), True, "EMPTY_SCHEMA"),
        (
            _with(CLOSED, properties={**A, **B}),
            CLOSED,
            False,
            "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        ),
        (
            _with(OBJECT, properties={**A, **B}),
            OBJECT,
            True,
            "removed from open",
        ),
        (
            _with(CLOSED, properties={**A, **B}),
            _with(CLOSED, properties={**A, **B}, required=["a", "b"]),
            False,
            "REQUIRED_ATTRIBUTE_ADDED",
        ),
        (
            CLOSED,
            _with(CLOSED, properties={**A, **B}, required=["a", "b"]),
            False,
            "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
        ),
        (OBJECT, CLOSED, False, "ADDITIONAL_PROPERTIES_REMOVED"),
        (CLOSED, OBJECT, True, "opened"),
        (
            CLOSED,
            _with(CLOSED, properties={"a": {"type": "string", "pattern": "^x"}}),
            False,
            "PATTERN_ADDED",
        ),
        (
            CLOSED,
            _with(CLOSED, properties={"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}}),
            True,
            "null allowed",
        ),
        (
            _with(CLOSED, properties={"a": {"type": "string", "enum": ["x"]}}),
            _with(CLOSED, properties={"a": {"type": "string", "enum": ["x", "y"]}}),
            True,
            "enum extended",
        ),
        (
            _with(CLOSED, properties={"a": {"type": "string", "enum": ["x", "y"]}}),
            _with(CLOSED, properties={"a": {"type": "string", "enum": ["x"]}}),
            False,
            "ENUM_ARRAY_NARROWED",
        ),
        (
            CLOSED,
            _with(CLOSED, properties={"a": {"type": "integer"}}),
            False,
            "TYPE_CHANGED",
        ),
        (
            _with(CLOSED, properties={"a": {"$ref": "#/$defs/A"}}, **{"$defs": {"A": CLOSED}}),
            _with(
                CLOSED,
                properties={"a": {"$ref": "#/$defs/A"}},
                **{"$defs": {"A": _with(CLOSED, properties={**A, **B})}},
            ),
            True,
            "added inside a $defs model",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_the_test_registry_judges_backward_compatibility_by_confluent_s_rules(
    schema_registry: RegistryServer,
    old: dict[str, Any],
    new: dict[str, Any],
    accepted: bool,
    why: str,
) -> None:
    registry = Registry(schema_registry.url)
    registry.register("s-value", orjson.dumps(old).decode())
    if accepted:
        registry.register("s-value", orjson.dumps(new).decode())
        assert len(schema_registry.state.subjects["s-value"]) == 2
    else:
        with pytest.raises(RegistryError, match=f"answered 409.*{why}"):
            registry.register("s-value", orjson.dumps(new).decode())


def test_connect_format_dead_letters_are_not_registered() -> None:
    with registry_server() as server:
        settings = Settings(schema_registry_url=server.url, dead_letter_format="connect")
        assert set(register_contract(settings)) == {
            "support.replies",
            "support.handoffs",
            "support.actions",
        }
    assert "support.dead-letters-value" not in server.state.subjects


def test_a_subject_holding_an_incompatible_schema_stops_the_start_in_one_line() -> None:
    with registry_server() as server:
        richer = orjson.loads(schema_text("reply"))
        richer["properties"]["extra_field"] = {"type": "string"}
        Registry(server.url).register("support.replies-value", orjson.dumps(richer).decode())
        with pytest.raises(RegistryError) as caught:
            register_contract(Settings(schema_registry_url=server.url))
    message = str(caught.value)
    assert "\n" not in message
    assert "answered 409" in message and "support.replies-value" in message
    assert "extra_field: PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL" in message


def test_a_refused_login_names_the_setting_never_the_secret() -> None:
    with registry_server(user_info="key:right-secret") as server:
        settings = Settings(schema_registry_url=server.url, schema_registry_user_info="key:wrong")
        with pytest.raises(RegistryError, match="BATON_SCHEMA_REGISTRY_USER_INFO") as caught:
            register_contract(settings)
        assert "wrong" not in str(caught.value)
        good = settings.with_(schema_registry_user_info="key:right-secret")
        assert register_contract(good)


def test_an_unreachable_registry_is_one_line() -> None:
    settings = Settings(schema_registry_url="http://127.0.0.1:9")
    with pytest.raises(RegistryError, match="cannot reach the schema registry at http://127"):
        register_contract(settings)


@contextmanager
def answering(status: int, body: bytes, **headers: str) -> Iterator[str]:
    """A server that answers every request with ``status`` and ``body``; its URL."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_PUT = do_POST = do_GET = _answer

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_registry_answer_that_is_not_json_is_one_line() -> None:
    with (
        answering(200, b"<html>maintenance</html>") as url,
        pytest.raises(RegistryError, match=r"answered /config/support\.replies-value with no JSON"),
    ):
        register_contract(Settings(schema_registry_url=url))


def test_a_redirect_is_not_followed_so_the_login_stays_home() -> None:
    with answering(307, b"", Location="http://127.0.0.1:9/steal") as url:
        settings = Settings(schema_registry_url=url, schema_registry_user_info="key:secret")
        with pytest.raises(RegistryError, match="answered 307") as caught:
            register_contract(settings)
    assert "secret" not in str(caught.value)


async def framed_output(
    store: SQLiteOrderStore, schema_registry: RegistryServer, text: str, topic: str
) -> tuple[str, int, bytes, bytes, Any]:
    """One ticket through the chain with the registry on: the record it left on ``topic`` (a
    default name), framed, with its topic's name and id, the unframed payload and the decoding
    Confluent's JSONDeserializer gives."""
    settings = Settings(namespace="u", schema_registry_url=schema_registry.url)
    ids = register_contract(settings)
    p = in_memory(store, schema_registry_url=schema_registry.url)
    p.pipeline = Pipeline(p.settings, p.llm, p.store, p.sink, p.state, schema_ids=ids)
    n = p.topics
    await p.intake(dumps(ticket("t1", text)), Source(n.tickets))
    for stage, source in (("understand", n.sessions), ("lookup", n.understood)):
        await p.hop(stage, source)
    await p.hop("strategy", n.matched)
    name = p.settings.topic(topic)
    (raw,) = [v for _, v in p.sink.sent[name]]
    ref, payload = unframe(raw)
    assert ref is not None and ref.id == ids[name]
    client = SchemaRegistryClient({"url": schema_registry.url})
    decoded = JSONDeserializer(None, schema_registry_client=client)(
        raw, SerializationContext(name, MessageField.VALUE)
    )
    return name, ids[name], raw, payload, decoded


async def test_replies_are_framed_and_read_by_confluent_s_json_deserializer(
    store: SQLiteOrderStore, schema_registry: RegistryServer
) -> None:
    text = "My kettle is leaking, I want a refund."
    _, schema_id, _, payload, decoded = await framed_output(
        store, schema_registry, text, "support.replies"
    )
    reply = Reply.model_validate_json(payload)
    assert reply.ticket_id == "t1"
    assert Reply.model_validate(decoded) == reply
    assert ("GET", f"/schemas/ids/{schema_id}") in {
        (m, path) for m, path, _ in schema_registry.state.requests
    }


async def test_hand_off_packets_are_framed_and_read_by_confluent_s_json_deserializer(
    store: SQLiteOrderStore, schema_registry: RegistryServer
) -> None:
    text = "I will sue you over this kettle."
    *_, payload, decoded = await framed_output(store, schema_registry, text, "support.handoffs")
    assert decoded == orjson.loads(payload) and decoded["ticket_id"] == "t1"


def test_baton_s_readers_take_a_framed_record_as_its_json() -> None:
    from aiokafka.structs import ConsumerRecord

    headers = [(VALUE_SCHEMA_ID_HEADER, b"\x01" + bytes(16))]
    record = ConsumerRecord("t", 0, 1, 0, 0, None, frame(3, b'{"a":1}'), None, 0, 0, headers)
    m = Message.of(record)
    assert m.value == b'{"a":1}'
    assert header_ref(m.headers) is not None
