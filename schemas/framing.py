"""Confluent Schema Registry's wire forms of a JSON record: the id framed before the payload,
or named by a header beside a plain payload.

Framed: byte 0, then the schema id (4 bytes, big-endian), then the JSON; or byte 1, then the
schema's GUID (16 bytes), then the JSON. Header form: the payload is plain JSON and the header
``__value_schema_id`` holds byte 1 and the GUID. A JSON record never starts with byte 0 or 1,
so the forms cannot be mistaken for each other or for plain JSON.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

VALUE_SCHEMA_ID_HEADER = "__value_schema_id"
MAGIC_ID = 0
MAGIC_GUID = 1
_ID = struct.Struct(">bI")


@dataclass(frozen=True)
class SchemaRef:
    """Which registered schema a record names: its id, or its GUID."""

    id: int | None = None
    guid: str | None = None


def frame(schema_id: int, payload: bytes) -> bytes:
    """``payload`` in the framed form with schema id ``schema_id``."""
    return _ID.pack(MAGIC_ID, schema_id) + payload


def unframe(value: bytes) -> tuple[SchemaRef | None, bytes]:
    """The schema a framed value names and its JSON payload; a plain value comes back as is.

    Only a value whose payload after the frame starts like JSON is taken for a framed one.
    """
    if len(value) > _ID.size and value[0] == MAGIC_ID and value[_ID.size : _ID.size + 1] in b"{[":
        return SchemaRef(id=_ID.unpack_from(value)[1]), value[_ID.size :]
    if len(value) > 17 and value[0] == MAGIC_GUID and value[17:18] in b"{[":
        return SchemaRef(guid=str(uuid.UUID(bytes=value[1:17]))), value[17:]
    return None, value


def header_ref(headers: Iterable[tuple[str, bytes]] | None) -> SchemaRef | None:
    """The schema the ``__value_schema_id`` header names, if a record has a readable one."""
    for key, raw in headers or ():
        if key != VALUE_SCHEMA_ID_HEADER:
            continue
        if len(raw) == 17 and raw[0] == MAGIC_GUID:
            return SchemaRef(guid=str(uuid.UUID(bytes=raw[1:17])))
        if len(raw) == _ID.size and raw[0] == MAGIC_ID:
            return SchemaRef(id=_ID.unpack(raw)[1])
    return None
