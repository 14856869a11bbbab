"""The dashboard's desk: the hand-off queue as JSON, and a person's approve, deny, answer, done
or failed sent as the signed ``Decision`` the ``baton`` commands send; same-origin requests only."""

from __future__ import annotations

import functools
import hashlib
import hmac
import logging
import re
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import orjson
from aiohttp import web as aioweb

from baton_kafka.schemas.decision import MAX_AMOUNT, ON_ACTION, ON_OFFER, Decision
from baton_kafka.schemas.records import utcnow
from baton_kafka.streams.admin.decisions import BadDecision, build, send
from baton_kafka.streams.kafka.connect import BrokerUnreachable
from baton_kafka.streams.observe.handoff_queue import HandoffQueue, Sent, money_lines
from baton_kafka.streams.observe.shown import shown
from baton_kafka.streams.settings import Settings

log = logging.getLogger("baton.desk")

QUEUE_PATH = "/dashboard/queue.json"
DECIDE_PATH = "/dashboard/decide"
ANSWER_PATH = "/dashboard/answer"
PATHS = (QUEUE_PATH, DECIDE_PATH, ANSWER_PATH)
COOKIE = "baton-desk"
CSRF_HEADER = "X-Baton-CSRF"
BODY_BYTES = 20_000
"""The largest action body read: an answer of 4,000 characters, each up to 4 UTF-8 bytes."""
FIELDS = {
    "decide": {
        "session_id",
        "ticket_id",
        "verdict",
        "amount",
        "idempotency_key",
        "reference",
        "note",
        "by",
    },
    "answer": {"session_id", "ticket_id", "text", "by"},
}
_NONCE = re.compile(r"[A-Za-z0-9_-]{32}")
NO_TOKEN = "the hand-off queue needs BATON_DESK_TOKEN (it names sessions and sends decisions)"


class Refusal(Exception):
    """A request the desk does not act on: its HTTP status and the one line it answers."""

    def __init__(self, status: int, error: str) -> None:
        super().__init__(error)
        self.status = status


def answer(data: Mapping[str, Any], status: int = 200) -> aioweb.Response:
    """``data`` as a JSON answer that no cache keeps."""
    return aioweb.Response(
        body=orjson.dumps(data),
        status=status,
        content_type="application/json",
        headers={"Cache-Control": "no-store"},
    )


def unreadable(exc: Exception) -> aioweb.Response:
    """The answer when the topics could not be read: one line, 503."""
    if isinstance(exc, BrokerUnreachable):
        return answer({"error": f"cannot read the hand-offs: {exc}"}, 503)
    log.exception("reading the hand-off queue failed")
    return answer({"error": f"cannot read the hand-offs ({type(exc).__name__})"}, 503)


def same_origin(headers: Mapping[str, str]) -> None:
    """Raise :class:`Refusal` unless the browser says the request comes from this page's own
    origin: ``Sec-Fetch-Site`` (when sent) ``same-origin``, ``Origin`` naming the ``Host``."""
    site = headers.get("Sec-Fetch-Site")
    if site is not None and site != "same-origin":
        raise Refusal(403, "cross-site request refused")
    origin, host = headers.get("Origin"), headers.get("Host")
    parts = urlsplit(origin or "")
    if not host or parts.scheme not in ("http", "https") or parts.netloc.lower() != host.lower():
        raise Refusal(403, "cross-site request refused: Origin must be this page's own")


async def body_of(request: Any, kind: str) -> dict[str, Any]:
    """The action's JSON object, at most ``BODY_BYTES``, with only the action's fields."""
    if request.content_type != "application/json":
        raise Refusal(415, "the body must be JSON (Content-Type: application/json)")
    if request.content_length is not None and request.content_length > BODY_BYTES:
        raise Refusal(413, f"the body is over {BODY_BYTES} bytes")
    data = b""
    while chunk := await request.content.read(BODY_BYTES + 1 - len(data)):
        data += chunk
        if len(data) > BODY_BYTES:
            raise Refusal(413, f"the body is over {BODY_BYTES} bytes")
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise Refusal(400, "the body is not valid JSON") from None
    if not isinstance(body, dict):
        raise Refusal(400, "the body must be a JSON object")
    unknown = sorted(set(body) - FIELDS[kind])
    if unknown:
        raise Refusal(400, f"unknown field {shown(unknown[0], 40)}")
    return body


def text_of(body: Mapping[str, Any], name: str, required: bool = False) -> str | None:
    """Field ``name`` of the body: text, or absent/null unless ``required``."""
    value = body.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise Refusal(400, f"{name} must be text")
    return value


def amount_of(body: Mapping[str, Any]) -> float | None:
    """The approved amount asked for: a JSON number, or absent/null for the proposed one."""
    value = body.get("amount")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Refusal(400, "amount must be a number")
    # A JSON integer of any size reaches here: compared before it is made a float.
    if not 0 <= value <= MAX_AMOUNT:
        raise Refusal(400, f"amount must be a number from 0 to {MAX_AMOUNT:.0f}")
    return float(value)


@dataclass
class Desk:
    """The desk's views over one queue; ``send`` publishes a decision (the commands' own)."""

    settings: Settings
    queue: HandoffQueue
    send: Callable[[Settings, Decision], Awaitable[str]] = send
    secret: bytes = b""

    def __post_init__(self) -> None:
        # From the token: every worker of the deployment, restarted or not, hands out the
        # same CSRF token for a cookie, and only the token's holders can compute it.
        token = (self.settings.desk_token or "").encode("utf-8", "surrogateescape")
        self.secret = self.secret or hmac.new(token, b"baton desk csrf", hashlib.sha256).digest()

    @functools.cached_property
    def allowed_hosts(self) -> tuple[str, ...] | None:
        """The hosts the shop's policy lets a reply link to (an answer is checked against them
        before it is sent); None when the policy cannot be read here (the worker checks)."""
        from baton_kafka.agents.policy import load

        try:
            return load(self.settings.policy_file).links.allowed_hosts
        except (OSError, ValueError):
            return None

    def csrf(self, nonce: str) -> str:
        """The CSRF token of a browser's desk cookie: only a page of this origin can read it."""
        return hmac.new(self.secret, nonce.encode(), hashlib.sha256).hexdigest()

    async def queue_view(self, request: Any) -> aioweb.Response:
        """GET: the open hand-offs, oldest first, and the CSRF token for the actions."""
        if not self.settings.desk_token:
            return answer({"error": NO_TOKEN}, 403)
        nonce = request.cookies.get(COOKIE, "")
        fresh = not _NONCE.fullmatch(nonce)
        if fresh:
            nonce = secrets.token_urlsafe(24)
        try:
            data = await self.queue.shown()
        except Exception as exc:
            return unreadable(exc)
        response = answer({**data, "csrf": self.csrf(nonce)})
        if fresh:
            response.set_cookie(COOKIE, nonce, path="/dashboard", httponly=True, samesite="Strict")
        return response

    async def decide_view(self, request: Any) -> aioweb.Response:
        """POST: approve (at the proposed amount or another) or deny a pending offer; done (with
        the system's reference) or failed for an action a hand-off gave a person."""
        return await self._act(request, "decide")

    async def answer_view(self, request: Any) -> aioweb.Response:
        """POST: a person's written answer to the customer of a hand-off."""
        return await self._act(request, "answer")

    def _checked(self, request: Any) -> None:
        if not self.settings.desk_token:
            raise Refusal(403, NO_TOKEN)
        same_origin(request.headers)
        nonce = request.cookies.get(COOKIE, "")
        given = request.headers.get(CSRF_HEADER, "")
        if not _NONCE.fullmatch(nonce) or not hmac.compare_digest(
            given.encode("utf-8", "surrogateescape"), self.csrf(nonce).encode()
        ):
            raise Refusal(403, "missing or stale CSRF token: reload the page")

    async def _act(self, request: Any, kind: str) -> aioweb.Response:
        try:
            self._checked(request)
            decision = await self._decision(await body_of(request, kind), kind)
        except Refusal as exc:
            return answer({"error": str(exc)}, exc.status)
        except Exception as exc:
            return unreadable(exc)
        key = (decision.session_id, decision.item or "")
        # Reserved before the send's await: a second click meanwhile is refused, not sent.
        self.queue.sent[key] = Sent(decision.decision_id, decision.action, utcnow())
        try:
            topic = await self.send(self.settings, decision)
        except BrokerUnreachable as exc:
            self.queue.sent.pop(key, None)
            return answer({"error": f"the decision was not sent: {exc}"}, 503)
        except Exception as exc:
            self.queue.sent.pop(key, None)
            log.exception("sending decision %s failed", decision.decision_id)
            return answer({"error": f"the decision was not sent ({type(exc).__name__})"}, 500)
        log.info(
            "desk: decision %s (%s of ticket %s) sent to %s",
            shown(decision.decision_id),
            decision.action,
            shown(decision.item),
            topic,
        )
        return answer(
            {"decision_id": decision.decision_id, "action": decision.action, "topic": topic}
        )

    async def _decision(self, body: Mapping[str, Any], kind: str) -> Decision:
        session = text_of(body, "session_id", required=True) or ""
        ticket = text_of(body, "ticket_id", required=True) or ""
        verdict = text_of(body, "verdict", required=kind == "decide") if kind == "decide" else None
        if kind == "decide" and verdict not in ON_OFFER | ON_ACTION:
            raise Refusal(400, "verdict must be approve, deny, done or failed")
        amount = amount_of(body) if kind == "decide" else None
        key = text_of(body, "idempotency_key", required=verdict in ON_ACTION)
        if key is not None and verdict not in ON_ACTION:
            raise Refusal(400, "idempotency_key goes with done and failed")
        reference = text_of(body, "reference")
        if verdict == "done" and not reference:
            raise Refusal(400, "done needs reference, the system's reference of what was done")
        packet = await self.queue.find(session, ticket)
        if packet is None:
            raise Refusal(404, "no open hand-off of that session and ticket")
        if key is not None:
            # The action is named by its key: a ticket's offer may hand several to a person.
            packet = await self.queue.find(session, ticket, key)
            if packet is None:
                raise Refusal(409, "that hand-off has no action of that key waiting for a person")
        sent = self.queue.sent.get((session, key or ticket))
        if sent is not None:
            raise Refusal(409, f"a decision was sent on that hand-off already ({sent.action})")
        if verdict in ON_OFFER and packet.proposed_offer is None:
            raise Refusal(409, "that hand-off has no offer waiting for approval")
        if amount is not None and verdict == "approve" and money_lines(packet) != 1:
            raise Refusal(400, "a changed amount needs an offer with one money line")
        text_field = "text" if kind == "answer" else "note"
        try:
            return build(
                verdict or kind,
                session,
                item=key or ticket,
                amount=amount,
                text=text_of(body, text_field) or "",
                by=text_of(body, "by") or "dashboard",
                allowed_hosts=self.allowed_hosts,
                reference=reference,
            )
        except BadDecision as exc:
            raise Refusal(400, str(exc)) from None


def routes(desk: Desk) -> list[tuple[str, str, Callable[[Any], Awaitable[aioweb.Response]]]]:
    """The desk's ``(method, path, handler)``: one GET, two POSTs; no other method is routed."""
    return [
        ("GET", QUEUE_PATH, desk.queue_view),
        ("POST", DECIDE_PATH, desk.decide_view),
        ("POST", ANSWER_PATH, desk.answer_view),
    ]
