"""baton's contract in a Confluent-compatible Schema Registry (Confluent, Apicurio, Karapace).

At start, with ``BATON_SCHEMA_REGISTRY_URL`` set, each output topic gets its record's JSON
Schema registered under the topic-name strategy (subject ``<topic>-value``), its subject set
to backward compatibility ("fields are only ever added"), and the schema ids are returned for
the writers to frame each record with. The tickets and decisions topics are the producers' to
govern. Spoken over HTTP (``httpx2``): it happens once per start, before any record.

The registered schemas are closed (``additionalProperties: false`` on every record object):
Confluent's JSON Schema check lets a new version add an optional property only to a closed
content model, since records of an open one may already hold that name with another type.
"""

from __future__ import annotations

import base64
import ssl
from typing import Any

import httpx2
import orjson

from baton_kafka.agents.dsn import mask_dsn
from baton_kafka.schemas.contracts import FRAMED, TOPICS, json_schema
from baton_kafka.schemas.topics import DEAD_LETTERS
from baton_kafka.streams.settings import Settings

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
COMPATIBILITY = "BACKWARD"
# The output topics and their record, written framed with their schema id.
OUTPUTS = {topic: TOPICS[topic][0] for topic in FRAMED}
# The keywords whose value is one subschema, a list of them, or a mapping of names to them.
_ONE = ("items", "additionalProperties", "not", "contains", "if", "then", "else")
_LIST = ("anyOf", "oneOf", "allOf", "prefixItems")
_MAP = ("properties", "patternProperties", "$defs", "definitions")


class RegistryError(RuntimeError):
    """The schema registry cannot be reached, refuses the login or refuses a schema."""


def subject(topic: str) -> str:
    """The topic-name strategy's subject of a topic's values."""
    return f"{topic}-value"


def closed(schema: Any) -> Any:
    """``schema`` with every object that declares properties closed to others; a map (an object
    without properties) and an object that already says what else it allows are kept."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    for key in _ONE:
        if key in out:
            out[key] = closed(out[key])
    for key in _LIST:
        if isinstance(out.get(key), list):
            out[key] = [closed(s) for s in out[key]]
    for key in _MAP:
        if isinstance(out.get(key), dict):
            out[key] = {name: closed(s) for name, s in out[key].items()}
    open_ended = ("additionalProperties", "patternProperties", "unevaluatedProperties")
    if "properties" in out and not any(k in out for k in open_ended):
        out["additionalProperties"] = False
    return out


def as_registered(schema: dict[str, Any]) -> str:
    """A JSON Schema as baton registers it: closed, compact, keys sorted."""
    return orjson.dumps(closed(schema), option=orjson.OPT_SORT_KEYS).decode()


def schema_text(record: str) -> str:
    """The schema of ``record`` as registered."""
    return as_registered(json_schema(record))


class Registry:
    """The few calls of the Confluent Schema Registry REST API that baton makes."""

    def __init__(self, url: str, user_info: str = "", timeout_s: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self._headers = {"Content-Type": CONTENT_TYPE, "Accept": CONTENT_TYPE}
        if user_info:
            token = base64.b64encode(user_info.encode()).decode()
            self._headers["Authorization"] = f"Basic {token}"

    @property
    def shown(self) -> str:
        """The registry's address as it may be printed (a password in it masked)."""
        return mask_dsn(self.url)

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """One request; raises :class:`RegistryError` with the registry's own message."""
        data = orjson.dumps(body) if body is not None else None
        try:
            response = httpx2.request(
                method,
                self.url + path,
                content=data,
                headers=self._headers,
                timeout=self.timeout_s,
                # The system's trusted CAs, as before: a registry behind a company CA is common.
                verify=ssl.create_default_context(),
            )
        except httpx2.HTTPError as exc:
            raise RegistryError(
                f"cannot reach the schema registry at {self.shown}: {exc}"
            ) from None
        # A redirect is not followed: the login would go along to wherever it points.
        if response.status_code >= 300:
            raise RegistryError(self._refusal(response, path))
        try:
            return orjson.loads(response.content or b"null")
        except orjson.JSONDecodeError as exc:
            raise RegistryError(
                f"the schema registry at {self.shown} answered {path} with no JSON: {exc}"
            ) from None

    def _refusal(self, response: httpx2.Response, path: str) -> str:
        code = response.status_code
        if code in (401, 403):
            return (
                f"the schema registry at {self.shown} refused the login ({code}); check "
                "BATON_SCHEMA_REGISTRY_USER_INFO"
            )
        try:
            message = str(orjson.loads(response.content).get("message", ""))
        except (orjson.JSONDecodeError, AttributeError):
            message = ""
        # Long enough for a refusal's details to reach past the fields a newer schema added.
        said = " ".join((message or response.reason_phrase or "").split())[:600]
        return f"the schema registry at {self.shown} answered {code} to {path}: {said}"

    def set_compatibility(self, subject_name: str, level: str = COMPATIBILITY) -> None:
        self.call("PUT", f"/config/{subject_name}", {"compatibility": level})

    def register(self, subject_name: str, schema: str) -> int:
        """Register ``schema`` (JSON Schema) under ``subject_name``; its id (the same id when
        it was registered before)."""
        answer = self.call(
            "POST", f"/subjects/{subject_name}/versions", {"schema": schema, "schemaType": "JSON"}
        )
        return int(answer["id"])


def register_contract(settings: Settings, registry: Registry | None = None) -> dict[str, int]:
    """Register each output topic's schema; the schema id of each, by full topic name.

    A subject whose registered versions our schema is not backward compatible with is
    refused by the registry: one line naming the subject, and the start stops. Connect-format
    dead letters are the failed records as read, so their topic is left alone.
    """
    registry = registry or Registry(
        settings.schema_registry_url, settings.schema_registry_user_info
    )
    outputs = dict(OUTPUTS)
    if settings.dead_letter_format == "connect":
        del outputs[DEAD_LETTERS]
    ids: dict[str, int] = {}
    for name, record in outputs.items():
        topic = settings.topic(name)
        subject_name = subject(topic)
        try:
            registry.set_compatibility(subject_name)
            ids[topic] = registry.register(subject_name, schema_text(record))
        except RegistryError as exc:
            raise RegistryError(
                f"{exc} (baton's {record} schema under subject {subject_name}; its fields are "
                "only ever added, so the subject holds a schema baton did not register, or an "
                "open one: see docs/consuming.md, Schema Registry)"
            ) from None
    return ids
