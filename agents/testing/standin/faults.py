"""The stand-in's faults: which exist, which a call gets, and what they do to a valid answer."""

from __future__ import annotations

import hashlib
import re
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from baton_kafka.agents.stages import lookup, strategy, understand
from baton_kafka.agents.testing.standin.messages import Request

# Schema-valid on the wire (bounds only travel as descriptions) but against the business rules.
RULE_BREAKS: dict[str, dict[str, Any]] = {
    understand.NAME: {"product": "Invented Gadget 9000"},
    lookup.NAME: {"order_id": "ORD-INVENTED-0000"},
    strategy.NAME: {"confidence": 1.7},
}
SPEND_LIMIT_CODE = "enforced_spend_limit_reached"
API_ERRORS = {
    "429": (429, "rate_limit_error", "Number of request tokens has exceeded your rate limit."),
    "529": (529, "overloaded_error", "Overloaded"),
    "500": (500, "api_error", "Internal server error"),
    "spend_limit": (429, "rate_limit_error", "You have reached your specified API usage limits."),
}
DRIFTED = {
    "solution": "Look into the customer's message.",
    "reply": "Thank you for contacting us. We have received your message and will get back to you.",
}
NOT_JSON = 'Here is the JSON you asked for: {"answer": yes, '
FAULTS = frozenset(
    {*API_ERRORS, "invalid_json", "schema", "rule", "drift", "hang", "max_tokens", "refusal"}
)
_DIRECTIVE = re.compile(r"\[\[fault:([a-z0-9_]+)((?::[a-z0-9_*]*)*)\]\]")


@dataclass
class FaultRule:
    """A queued fault: the next ``times`` calls matching ``match`` and ``stage`` get ``fault``."""

    fault: str
    match: str | None = None
    stage: str | None = None
    times: int = 1

    @classmethod
    def of(cls, rule: FaultRule | Mapping[str, Any]) -> FaultRule:
        data = dict(vars(rule)) if isinstance(rule, FaultRule) else dict(rule)
        made = cls(**data)
        if made.fault not in FAULTS:
            raise ValueError(f"unknown fault {made.fault!r}; known: {sorted(FAULTS)}")
        if not isinstance(made.times, int) or made.times < 1:
            raise ValueError("times must be a positive integer")
        return made


def directives(message: str) -> list[tuple[str, str | None, int]]:
    """The ``[[fault:NAME[:STAGE][:COUNT]]]`` directives of a message as (fault, stage, count)."""
    found = []
    for match in _DIRECTIVE.finditer(message):
        stage, times = None, 1
        for part in match.group(2).split(":")[1:]:
            if part.isdigit():
                times = int(part)
            elif part not in ("", "any", "*"):
                stage = part
        if match.group(1) in FAULTS:
            found.append((match.group(1), stage, times))
    return found


class FaultPlan:
    """Which fault each call gets: the first fitting queued rule, else the message's directives."""

    def __init__(self) -> None:
        # Calls are answered on the server's loop while tests queue rules from another thread.
        self._lock = threading.Lock()
        self._rules: list[FaultRule] = []
        self._fired: Counter[tuple[str, str, str]] = Counter()

    def add(self, rules: Iterable[FaultRule | Mapping[str, Any]]) -> None:
        """Queue rules after those already queued; raise ``ValueError`` on an unknown fault."""
        made = [FaultRule.of(rule) for rule in rules]
        with self._lock:
            self._rules.extend(made)

    def clear(self) -> None:
        """Forget queued rules and how often each directive has fired."""
        with self._lock:
            self._rules.clear()
            self._fired.clear()

    def take(self, request: Request) -> str | None:
        """The fault ``request`` gets, counting it as used, or None."""
        facts = request.facts
        message = facts.message if facts else request.text
        key = facts.ticket_id if facts else hashlib.sha256(message.encode()).hexdigest()
        with self._lock:
            for rule in self._rules:
                if rule.stage not in (None, request.stage) or rule.times < 1:
                    continue
                if rule.match is None or rule.match in request.text:
                    rule.times -= 1
                    return rule.fault
            for fault, stage, times in directives(message):
                if fault == "drift" and request.stage != strategy.NAME:
                    continue
                fired = (key, request.stage, fault)
                if stage in (None, request.stage) and self._fired[fired] < times:
                    self._fired[fired] += 1
                    return fault
        return None


def spoil(text: str, fault: str | None, stage: str, schema: Mapping[str, Any]) -> str:
    """A valid answer ``text`` as an output ``fault`` leaves it; unchanged for other faults."""
    if fault == "max_tokens":
        return text[: max(1, len(text) // 2)]
    if fault not in ("schema", "rule", "drift"):
        return text
    data = orjson.loads(text)
    if fault == "drift":
        data.update(DRIFTED if stage == strategy.NAME else {})
    elif fault == "rule":
        data.update(RULE_BREAKS.get(stage, {}))
    else:
        for name in list(schema.get("required") or data)[:1]:
            data.pop(name, None)
    return orjson.dumps(data).decode()
