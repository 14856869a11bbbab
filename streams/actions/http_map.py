"""The HTTP executor's map: per kind of action, the request to send and where its answer says
what happened; templates filled from the action's fields."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson

from baton_kafka.schemas.action import Action
from baton_kafka.streams.actions.executor import RemoteState

_FIELD = re.compile(r"\{([a-z_]+)\}")
FIELDS = frozenset(
    {"idempotency_key", "session_id", "customer_id", "ticket_id", "decision_id", "line", "kind"}
    | {"order_id", "item", "amount", "currency", "channel", "remote_id"}
)
_STATES = frozenset({"confirmed", "failed", "pending"})
MAP_KEYS = frozenset(
    {"base_url", "idempotency_header", "auth_header", "auth_env", "timeout_s", "probe", "kinds"}
)
KIND_KEYS = frozenset({"method", "url", "body", "remote_id", "state", "states", "lookup"})
LOOKUP_KEYS = frozenset({"url", "list", "item", "remote_id", "state"})


class MapProblem(ValueError):
    """The map cannot be used as written (one line, naming the key)."""


def values(action: Action, remote_id: str | None = None) -> dict[str, Any]:
    """The action's fields a template may name, typed as they are (the amount a number)."""
    out: dict[str, Any] = action.model_dump(include=set(FIELDS - {"remote_id"}))
    out["remote_id"] = remote_id
    return out


def fill_url(template: str, known: Mapping[str, Any]) -> str:
    """``template`` with each ``{field}`` as one percent-encoded path or query value."""
    return _FIELD.sub(lambda m: quote(_text(known.get(m.group(1))), safe=""), template)


def fill_body(template: Any, known: Mapping[str, Any]) -> Any:
    """The body ``template`` filled: a string that is one ``{field}`` becomes its value as it
    is typed (an amount stays a number), other strings get the fields' text."""
    if isinstance(template, str):
        whole = _FIELD.fullmatch(template)
        if whole:
            return known.get(whole.group(1))
        return _FIELD.sub(lambda m: _text(known.get(m.group(1))), template)
    if isinstance(template, Mapping):
        return {k: fill_body(v, known) for k, v in template.items()}
    if isinstance(template, list):
        return [fill_body(v, known) for v in template]
    return template


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def dig(body: Any, path: str) -> Any:
    """The value at dotted ``path`` in ``body`` ("" is the body; a number indexes a list)."""
    for part in filter(None, path.split(".")):
        if isinstance(body, Mapping):
            body = body.get(part)
        elif isinstance(body, list) and part.isdigit() and int(part) < len(body):
            body = body[int(part)]
        else:
            return None
    return body


@dataclass(frozen=True)
class Lookup:
    """How the shop's system is asked what it knows of an action."""

    url: str
    list: str | None = None
    item: str = ""
    remote_id: str = "id"
    state: str = "status"


@dataclass(frozen=True)
class KindMap:
    """The request that carries one kind of action out, and where its answer says what
    happened (``states``: the system's words to confirmed, failed or pending)."""

    method: str
    url: str
    lookup: Lookup
    body: Any = None
    remote_id: str = "id"
    state: str = "status"
    states: Mapping[str, RemoteState] = field(default_factory=dict)

    def remote_state(self, word: Any) -> RemoteState | None:
        """The system's state word read, or None when the map does not know it."""
        return self.states.get(str(word)) if word is not None else None


@dataclass(frozen=True)
class ActionMap:
    """Where the shop's system is and how each kind of action is sent to it."""

    base_url: str
    kinds: Mapping[str, KindMap]
    idempotency_header: str = "Idempotency-Key"
    auth_header: str = "Authorization"
    auth_env: str | None = None
    timeout_s: float = 10.0
    probe: str = "/"

    @classmethod
    def read(cls, path: Path) -> ActionMap:
        """The map in the JSON file at ``path``; raises ``MapProblem``."""
        try:
            raw = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError) as exc:
            raise MapProblem(f"cannot read the map: {exc}") from None
        return cls.parse(raw)

    @classmethod
    def parse(cls, raw: Any) -> ActionMap:
        """A map as the operator wrote it; raises ``MapProblem``."""
        _keys(raw, MAP_KEYS, "the map")
        base = raw.get("base_url")
        if not isinstance(base, str) or not base.startswith(("http://", "https://")):
            raise MapProblem("'base_url' must be an http:// or https:// URL")
        kinds = raw.get("kinds")
        if not isinstance(kinds, Mapping) or not kinds:
            raise MapProblem("'kinds' must map at least one kind of action to its request")
        timeout = raw.get("timeout_s", 10.0)
        if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
            raise MapProblem("'timeout_s' must be a positive number")
        named = ("idempotency_header", "auth_header", "auth_env", "probe")
        text = {k: raw[k] for k in named if k in raw}
        for k, v in text.items():
            if not isinstance(v, str) or not v:
                raise MapProblem(f"{k!r} must be a non-empty string")
        return cls(
            base_url=base.rstrip("/"),
            kinds={str(k): _kind(str(k), v) for k, v in kinds.items()},
            timeout_s=float(timeout),
            **text,
        )


def _keys(raw: Any, allowed: frozenset[str], what: str) -> None:
    if not isinstance(raw, Mapping):
        raise MapProblem(f"{what} must be a JSON object")
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise MapProblem(f"{what} has unknown key(s) {', '.join(map(repr, unknown))}")


def _template(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.startswith("/"):
        raise MapProblem(f"{where} must be a path starting with '/'")
    unknown = sorted(set(_FIELD.findall(value)) - FIELDS)
    if unknown:
        raise MapProblem(f"{where} names unknown field(s) {', '.join(unknown)}")
    return value


def _kind(name: str, raw: Any) -> KindMap:
    where = f"kinds.{name}"
    _keys(raw, KIND_KEYS, where)
    method = str(raw.get("method", "POST")).upper()
    if method not in ("POST", "PUT", "PATCH"):
        raise MapProblem(f"{where}.method must be POST, PUT or PATCH")
    states = raw.get("states", {})
    if not isinstance(states, Mapping) or not set(map(str, states.values())) <= _STATES:
        raise MapProblem(f"{where}.states must map the system's words to {sorted(_STATES)}")
    lookup = raw.get("lookup")
    _keys(lookup, LOOKUP_KEYS, f"{where}.lookup")
    found = Lookup(
        url=_template(lookup.get("url"), f"{where}.lookup.url"),
        **{k: str(lookup[k]) for k in ("list", "item", "remote_id", "state") if k in lookup},
    )
    return KindMap(
        method=method,
        url=_template(raw.get("url"), f"{where}.url"),
        lookup=found,
        body=raw.get("body"),
        remote_id=str(raw.get("remote_id", "id")),
        state=str(raw.get("state", "status")),
        states={str(k): v for k, v in states.items()},
    )
