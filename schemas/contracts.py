"""The contract in language-neutral files: a JSON Schema per record and an AsyncAPI document.

``python -m baton_kafka.schemas.contracts`` writes them under ``schemas/json/``; ``--check``
fails when the committed files differ from the models (a test runs it).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import BaseModel

from baton_kafka.schemas.action import Action
from baton_kafka.schemas.baton import Erasure, IndexUpdate
from baton_kafka.schemas.decision import Decision
from baton_kafka.schemas.handoff import HandoffPacket
from baton_kafka.schemas.records import SCHEMA_VERSION, DeadLetter, Order, Reply, Ticket
from baton_kafka.schemas.stages import StageRecord
from baton_kafka.schemas.topics import (
    ACTIONS,
    DEAD_LETTERS,
    DECISIONS,
    HANDOFFS,
    MATCHED,
    MEMORY_INDEX,
    REPLIES,
    ROLES,
    SESSIONS,
    TICKETS,
    UNDERSTOOD,
)

FOLDER = Path(__file__).parent / "json"
ID_BASE = "urn:baton:schema:"
Mode = Literal["validation", "serialization"]

# Records users write are described as baton accepts them; records baton writes as it writes.
RECORDS: dict[str, tuple[type[BaseModel], Mode]] = {
    "ticket": (Ticket, "validation"),
    "order": (Order, "validation"),
    "reply": (Reply, "serialization"),
    "dead-letter": (DeadLetter, "serialization"),
    "stage-record": (StageRecord, "serialization"),
    "index-update": (IndexUpdate, "serialization"),
    "erasure": (Erasure, "serialization"),
    "handoff-packet": (HandoffPacket, "serialization"),
    "decision": (Decision, "validation"),
    "action": (Action, "serialization"),
}

# topic: (record, key, who writes it, what it is for)
TOPICS: dict[str, tuple[str, str, str, str]] = {
    TICKETS: ("ticket", "any (session_id advised)", "users", "customer messages in"),
    SESSIONS: ("stage-record", "session_id", "baton", "valid tickets, keyed by session"),
    UNDERSTOOD: ("stage-record", "session_id", "baton", "after the understand stage"),
    MATCHED: ("stage-record", "session_id", "baton", "after the look-up stage"),
    REPLIES: ("reply", "session_id", "baton", "one reply per ticket, out"),
    DEAD_LETTERS: ("dead-letter", "session_id or none", "baton", "what could not be processed"),
    MEMORY_INDEX: ("index-update", "customer_id", "baton", "session summaries for the index"),
    HANDOFFS: ("handoff-packet", "session_id", "baton", "one packet per ticket handed to a person"),
    DECISIONS: ("decision", "session_id", "users", "people's decisions and answers in, signed"),
    ACTIONS: ("action", "session_id", "baton", "one action per approved offer line, out"),
}


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of record ``name``."""
    model, mode = RECORDS[name]
    schema = model.model_json_schema(mode=mode)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{ID_BASE}{name}",
        **schema,
    }


def _setting(topic: str) -> str:
    """The setting that renames ``topic``."""
    role = next(role for role, default in ROLES.items() if default == topic)
    return f"BATON_TOPIC_{role.upper()}"


def _headers(topic: str) -> dict[str, Any]:
    props: dict[str, Any] = {}
    if topic in (SESSIONS, UNDERSTOOD, MATCHED, MEMORY_INDEX, DECISIONS):
        props["baton-signature"] = {
            "type": "string",
            "description": "<key id>:<hex HMAC-SHA256 of topic, key and value> when signing.",
        }
    if topic in (SESSIONS, MEMORY_INDEX):
        props["baton-control"] = {
            "type": "string",
            "enum": ["erase"],
            "description": "Marks an erasure request (value: an erasure record), not data.",
        }
    if topic == DEAD_LETTERS:
        props["baton.reason"] = {"type": "string"}
        props["baton.dead_letter_id"] = {"type": "string"}
        props["__connect.errors.topic"] = {"type": "string"}
        props["__connect.errors.partition"] = {"type": "string"}
        props["__connect.errors.offset"] = {"type": "string"}
        props["__connect.errors.stage"] = {"type": "string"}
        props["__connect.errors.exception.class.name"] = {"type": "string"}
        props["__connect.errors.exception.message"] = {"type": "string"}
        # The rest of Connect's set and baton's details, in BATON_DEAD_LETTER_FORMAT=connect.
        for name in ("connector.name", "task.id", "class.name", "exception.stacktrace"):
            props[f"__connect.errors.{name}"] = {"type": "string"}
        for name in ("stage", "failure_attempts", "model", "prompt_version", "request_id"):
            props[f"baton.{name}"] = {"type": "string"}
        props["baton.model_output"] = {"type": "string"}
    return {"type": "object", "properties": props}


# The topics baton writes for others to read: with a Schema Registry set, their schemas are
# registered and their values written in the registry's framed form. The topics between the
# stages are baton's own (signed byte for byte), tickets and decisions the producers'.
FRAMED = (REPLIES, HANDOFFS, DEAD_LETTERS, ACTIONS)


def _binding(topic: str, key: str) -> dict[str, Any]:
    """The Kafka message binding: the key, and where a Schema Registry's schema id is."""
    binding: dict[str, Any] = {
        "key": {"type": "string", "description": key},
        "bindingVersion": "0.5.0",
    }
    if topic in FRAMED:
        # With BATON_SCHEMA_REGISTRY_URL set: byte 0, the id (4 bytes, big-endian), the JSON.
        binding |= {
            "schemaIdLocation": "payload",
            "schemaIdPayloadEncoding": "confluent",
            "schemaLookupStrategy": "TopicIdStrategy",
        }
    return binding


def asyncapi() -> dict[str, Any]:
    """An AsyncAPI 3.0 document of every topic: name, key, value schema, headers."""
    channels: dict[str, Any] = {}
    operations: dict[str, Any] = {}
    messages: dict[str, Any] = {}
    for topic, (record, key, writer, purpose) in TOPICS.items():
        channel = topic.replace(".", "-")
        message = f"{channel}-{record}"
        messages[message] = {
            "name": record,
            "contentType": "application/json",
            "payload": {"$ref": f"./{record}.schema.json"},
            "headers": _headers(topic),
            "bindings": {"kafka": _binding(topic, key)},
        }
        channels[channel] = {
            "address": topic,
            "description": (
                f"{purpose}; written by {writer}. The default name: {_setting(topic)} "
                "renames it, a namespace prefixes it."
            ),
            "messages": {record: {"$ref": f"#/components/messages/{message}"}},
        }
        action = "send" if writer == "users" else "receive"
        operations[f"{action}-{channel}"] = {
            "action": action,
            "channel": {"$ref": f"#/channels/{channel}"},
        }
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "baton topics",
            "version": str(SCHEMA_VERSION),
            "description": (
                "Kafka topics of a baton deployment; values are JSON (UTF-8). With a Schema "
                "Registry set (BATON_SCHEMA_REGISTRY_URL), replies, hand-off packets and dead "
                "letters are framed with their schema id (subject <topic>-value, the schema "
                "registered closed: additionalProperties false), and tickets are accepted plain, "
                "framed or with the id in the __value_schema_id header."
            ),
        },
        "channels": channels,
        "operations": operations,
        "components": {"messages": messages},
    }


def rendered() -> dict[str, bytes]:
    """Every contract file's name and bytes."""
    files = {f"{name}.schema.json": json_schema(name) for name in RECORDS}
    files["asyncapi.json"] = asyncapi()
    opts = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS
    return {name: orjson.dumps(doc, option=opts) + b"\n" for name, doc in files.items()}


def stale(folder: Path = FOLDER) -> list[str]:
    """The contract files missing from ``folder`` or different from the models."""
    out = []
    for name, data in rendered().items():
        path = folder / name
        if not path.exists() or path.read_bytes() != data:
            out.append(name)
    return out


def main(argv: list[str]) -> int:
    """Write the files, or with ``--check`` say which are stale (exit 1)."""
    if argv[1:] == ["--check"]:
        names = stale()
        for name in names:
            print(
                f"schemas/json/{name} is stale: run python -m baton_kafka.schemas.contracts",
                file=sys.stderr,
            )
        return 1 if names else 0
    FOLDER.mkdir(exist_ok=True)
    for name, data in rendered().items():
        (FOLDER / name).write_bytes(data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
