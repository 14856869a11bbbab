"""Schema Registry serde: framed and header forms at intake, the outputs registered and framed,
against Confluent's own client (its mock registry, and a registry server over HTTP)."""

from __future__ import annotations

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
from confluent_kafka.serialization import MessageField, SerializationContext

from agents.orders import SQLiteOrderStore
from schemas import Reply, dumps
from schemas.contracts import json_schema
from schemas.framing import VALUE_SCHEMA_ID_HEADER, frame, header_ref, unframe
from streams.kafka.client import Message
from streams.kafka.registry import Registry, RegistryError, register_contract, schema_text
from streams.runtime.dead_letters import Source
from streams.runtime.pipeline import Pipeline
from streams.settings import Settings
from tests.fixtures.data import ticket
from tests.fixtures.pipelines import hop, in_memory, names, sink
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
    n = names(p)
    value, headers = serialize(MockSchemaRegistryClient({"url": "mock://"}), n.tickets, header_form)
    assert (value[:1] == b"\x00") is not header_form
    assert (header_ref(headers) is not None) is header_form
    await p.intake(value, Source(n.tickets, 0, 0), headers)
    assert n.dead_letters not in sink(p).sent
    assert len(sink(p).sent[n.sessions]) == 1


async def test_without_the_registry_a_framed_ticket_is_invalid_and_says_why(
    store: SQLiteOrderStore,
) -> None:
    p = in_memory(store)
    n = names(p)
    value, _ = serialize(MockSchemaRegistryClient({"url": "mock://"}), n.tickets)
    await p.intake(value, Source(n.tickets, 0, 0))
    (raw,) = [v for _, v in sink(p).sent[n.dead_letters]]
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
    assert set(ids) == {"ns.support.replies", "ns.support.dead-letters"}
    state = server.state
    assert state.compatibility == {
        "ns.support.replies-value": "BACKWARD",
        "ns.support.dead-letters-value": "BACKWARD",
    }
    (reply,) = state.subjects["ns.support.replies-value"]
    assert reply.schema_type == "JSON" and reply.id == ids["ns.support.replies"]
    assert orjson.loads(reply.schema) == json_schema("reply")


def test_connect_format_dead_letters_are_not_registered() -> None:
    with registry_server() as server:
        settings = Settings(schema_registry_url=server.url, dead_letter_format="connect")
        assert set(register_contract(settings)) == {"support.replies"}
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


async def test_replies_are_framed_and_read_by_confluent_s_json_deserializer(
    store: SQLiteOrderStore, schema_registry: RegistryServer
) -> None:
    settings = Settings(namespace="u", schema_registry_url=schema_registry.url)
    ids = register_contract(settings)
    p = in_memory(store, schema_registry_url=schema_registry.url)
    p = Pipeline(p.settings, p.llm, p.store, p.sink, p.state, schema_ids=ids)
    n = names(p)
    await p.intake(dumps(ticket("t1", "My kettle is leaking, I want a refund.")), Source(n.tickets))
    for stage, topic in (("understand", n.sessions), ("lookup", n.understood)):
        await hop(p, stage, topic)
    await hop(p, "strategy", n.matched)
    (raw,) = [v for _, v in sink(p).sent[n.replies]]
    ref, payload = unframe(raw)
    assert ref is not None and ref.id == ids[n.replies]
    reply = Reply.model_validate_json(payload)
    assert reply.ticket_id == "t1"

    client = SchemaRegistryClient({"url": schema_registry.url})
    decoded = JSONDeserializer(None, schema_registry_client=client)(
        raw, SerializationContext(n.replies, MessageField.VALUE)
    )
    assert Reply.model_validate(decoded) == reply
    assert ("GET", f"/schemas/ids/{ids[n.replies]}") in {
        (m, path) for m, path, _ in schema_registry.state.requests
    }


def test_baton_s_readers_take_a_framed_record_as_its_json() -> None:
    from aiokafka.structs import ConsumerRecord

    headers = [(VALUE_SCHEMA_ID_HEADER, b"\x01" + bytes(16))]
    record = ConsumerRecord("t", 0, 1, 0, 0, None, frame(3, b'{"a":1}'), None, 0, 0, headers)
    m = Message.of(record)
    assert m.value == b'{"a":1}'
    assert header_ref(m.headers) is not None
