"""The shop's system reporting an action's state: a signed webhook, read as untrusted input,
applied to the ledger at most once and never against what the ledger holds."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from baton_kafka.schemas.action import FINAL, LedgerEntry
from baton_kafka.streams.actions.executor import Outcome, RemoteState
from baton_kafka.streams.actions.ledger import Ledger
from baton_kafka.streams.actions.reconcile import settled
from baton_kafka.streams.actions.runner import Runner
from baton_kafka.streams.observe.guard import ACTION_WEBHOOK_PATH

PATH = ACTION_WEBHOOK_PATH
HEADER = "X-Baton-Signature"
TOLERANCE_S = 300
MAX_BODY = 8 * 1024
MIN_SECRET = 16
DETAIL_CHARS = 300
# Characters that reorder or hide text where a person reads it (the ledger, a hand-off).
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")


def sign(secret: bytes, body: bytes, at: int) -> str:
    """The ``X-Baton-Signature`` of ``body`` sent at ``at`` (unix seconds): ``t=…,v1=…``."""
    mac = hmac.new(secret, f"{at}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={at},v1={mac}"


def signed_at(
    secret: bytes, body: bytes, header: str | None, now: float, tolerance: float = TOLERANCE_S
) -> int | None:
    """When the shop's system signed ``body`` (unix seconds), if ``header`` is ``t=<time>,
    v1=<hex HMAC-SHA256 of "<time>." and the body>`` under ``secret`` and the time is within
    ``tolerance`` of ``now``; None otherwise (unsigned, forged, stale, malformed)."""
    if not secret or not header or not header.isascii() or not header.isprintable():
        return None
    parts: dict[str, list[str]] = {}
    for part in header.split(","):
        name, _, value = part.strip().partition("=")
        parts.setdefault(name, []).append(value)
    times = parts.get("t", [])
    at = times[0] if len(times) == 1 else ""
    if not at.isdigit() or len(at) > 12 or abs(now - int(at)) > tolerance:
        return None
    expected = sign(secret, body, int(at)).partition(",v1=")[2]
    if any(hmac.compare_digest(expected, v) for v in parts.get("v1", [])):
        return int(at)
    return None


class ActionReport(BaseModel):
    """What the shop's system says of one action: found by its key or the system's reference."""

    model_config = ConfigDict(extra="ignore", frozen=True, coerce_numbers_to_str=True)

    idempotency_key: str | None = Field(
        default=None, pattern=r"^bt-[0-9a-f]{37}$", description="The action's key, as sent."
    )
    # Printable ASCII without spaces, quotes or backslashes: every system's ids fit.
    remote_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=100,
        pattern=r"^[!#-\[\]-~]+$",
        description="The system's reference of the action (a number is read as text).",
    )
    state: RemoteState = Field(description="confirmed, failed, or pending (not done yet).")
    detail: str = Field(default="", max_length=DETAIL_CHARS, description="The system's words.")

    @field_validator("detail")
    @classmethod
    def _readable(cls, value: str) -> str:
        # Line breaks and tabs are a system's layout: folded to spaces, not refused.
        value = " ".join(value.replace("\t", " ").replace("\r", " ").split("\n"))
        if any(unicodedata.category(c) == "Cc" or c in _BIDI for c in value):
            raise ValueError("holds control or direction characters")
        return value.strip()

    @model_validator(mode="after")
    def _named(self) -> ActionReport:
        if self.idempotency_key is None and self.remote_id is None:
            raise ValueError("names neither an idempotency_key nor a remote_id")
        return self


def report_of(body: bytes) -> ActionReport:
    """The report ``body`` holds; ``ValueError`` (one line) when it is not one."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise ValueError("the body is not JSON") from None
    if not isinstance(data, dict):
        raise ValueError("the body is not a JSON object")
    try:
        return ActionReport.model_validate(data)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in error["loc"]) or "body"
        raise ValueError(f"{where}: {error['msg']}") from None


@dataclass(frozen=True)
class Answer:
    """The webhook's HTTP answer: its status and JSON body."""

    status: int
    body: dict[str, Any]


def find(
    ledger: Ledger, report: ActionReport, mine: Callable[[str], bool]
) -> tuple[LedgerEntry | None, bool]:
    """The entry ``report`` names among the sessions ``mine`` owns, and whether another
    worker's session (a copy held here) has it."""
    if report.idempotency_key is not None:
        marker = report.idempotency_key.encode()
    else:
        marker = orjson.dumps({"remote_id": report.remote_id})[1:-1]
    elsewhere = False
    for session, raw in ledger.table.items():
        if marker not in raw:
            continue  # most rows are not parsed
        for entry in ledger.row(session).values():
            if report.idempotency_key is not None:
                if entry.idempotency_key != report.idempotency_key:
                    continue
            elif entry.remote_id != report.remote_id:
                continue
            if mine(session):
                return entry, False
            elsewhere = True
    return None, elsewhere


async def apply(
    runner: Runner,
    report: ActionReport,
    mine: Callable[[str], bool],
    alone: Callable[[], bool] = lambda: True,
) -> Answer:
    """Apply ``report`` to the ledger: a ``sent`` action becomes final and its customer is told
    once; anything else (never sent, final already, unknown) changes nothing. ``alone``: this
    worker owns every session (an action not found here is unknown, not elsewhere)."""
    entry, elsewhere = find(runner.ledger, report, mine)
    if entry is None:
        if elsewhere or not alone():
            return Answer(503, {"error": "the action may be on another worker: retry"})
        return Answer(404, {"error": "no such action"})
    key = entry.idempotency_key
    if report.remote_id and entry.remote_id and report.remote_id != entry.remote_id:
        return Answer(409, {"error": f"action {key} has another remote_id"})
    if entry.attempts == 0 or entry.state == "requested":
        return Answer(409, {"error": f"action {key} was never sent"})
    if report.state == "pending" or entry.state in FINAL:
        if entry.state in FINAL and report.state not in ("pending", entry.state):
            return Answer(409, {"error": f"action {key} is {entry.state} already"})
        # A copy, or a report older than what the ledger knows: nothing to do.
        return Answer(200, {"idempotency_key": key, "state": entry.state, "applied": False})
    outcome = Outcome(
        report.state, report.remote_id or entry.remote_id, f"webhook: {report.detail}"
    )
    done = settled(entry, outcome)
    # No await from ``find`` to the row's write (``save`` puts it before awaiting the
    # changelog): a copy of the report arriving meanwhile finds the entry final already.
    await runner.ledger.save(done)
    done = await runner.told(done)
    return Answer(200, {"idempotency_key": key, "state": done.state, "applied": True})


async def receive(
    runner: Runner,
    secret: bytes,
    mine: Callable[[str], bool],
    headers: Any,
    body: bytes,
    alone: Callable[[], bool] = lambda: True,
) -> Answer:
    """One webhook request: 401 unsigned, forged or stale; 422 not a report; then ``apply``."""
    if signed_at(secret, body, headers.get(HEADER), time.time()) is None:
        return Answer(401, {"error": f"no valid {HEADER}"})
    try:
        report = report_of(body)
    except ValueError as exc:
        return Answer(422, {"error": str(exc)})
    return await apply(runner, report, mine, alone)


def route(
    app: Any,
    runner: Runner,
    secret: str,
    mine: Callable[[str], bool],
    alone: Callable[[], bool],
) -> None:
    """``POST /actions/webhook`` on the worker's web port (the path is open to the port's
    guard: each request carries its own signature)."""
    from aiohttp import web as aioweb
    from faust.web import View

    key = secret.encode()
    if len(key) < MIN_SECRET:
        raise ValueError(f"BATON_ACTION_WEBHOOK_SECRET must be {MIN_SECRET}+ characters")

    async def post(view: Any, request: Any) -> Any:
        size = request.content_length
        if size is None:
            answer = Answer(411, {"error": "a Content-Length is required"})
        elif size > MAX_BODY:
            answer = Answer(413, {"error": f"the body is over {MAX_BODY} bytes"})
        else:
            try:
                body = await request.content.readexactly(size)
            except asyncio.IncompleteReadError:
                body = None
            answer = (
                Answer(400, {"error": "the body is shorter than its Content-Length"})
                if body is None
                else await receive(runner, key, mine, request.headers, body, alone)
            )
        return aioweb.Response(
            body=orjson.dumps(answer.body),
            status=answer.status,
            content_type="application/json",
            headers={"Cache-Control": "no-store"},
        )

    app.page(PATH)(type("ActionWebhook", (View,), {"post": post}))
