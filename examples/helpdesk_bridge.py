"""A helpdesk bridge: hand-off packets out to the desk's API, the desk's webhooks in as decisions.

    python examples/helpdesk_bridge.py --bootstrap 127.0.0.1:9092 \\
        --desk-url https://desk.example/api/handoffs --group desk-bridge \\
        --webhook-secret-file desk.secret --signing-key-file bridge.key --port 8787

**Out.** Every ``HandoffPacket`` on ``support.handoffs`` is POSTed as JSON to ``--desk-url``
with the header ``Idempotency-Key: <packet_id>``. The group's offset is committed only after
the desk answered 2xx, so a crash or a desk that is down sends the packet again later (at least
once; the desk keeps the first of a key). The packet's ``internal_note`` is written by the
model from the customer's text: it arrives labelled as such, its links inert and instructions
aimed at staff flagged (``note``), and a packet of an older worker is labelled when read here.

**In.** The desk calls ``POST /webhook`` when a person acts on a case. The body is one JSON
object: ``event_id`` (the desk's id of the event), ``session_id``, ``action`` (approve, deny,
answer, takeover, handback, close; done and failed for an action a person was handed), and as
the action needs ``item`` (the packet's ``ticket_id``; for done and failed its
``action.idempotency_key``), ``reference`` (done: the system's reference), ``amount``,
``text``, ``offer`` (an answer's promise as typed lines),
``override`` (``role`` and ``reason``: a promise past the policy's money limits, as far as the
policy lets the role) and ``agent``. The header ``X-Desk-Signature: t=<unix seconds>,v1=<hex>``
holds when the desk sent it and the HMAC-SHA256 of ``<t>.`` followed by the raw body, under
the webhook secret. A request without a valid signature, or signed more than ``--tolerance``
seconds (default 300) before or after the bridge's clock, gets 401; a body that is not a
valid decision gets 422 with the reason; neither sends anything. A valid one becomes a
``Decision`` on ``support.decisions``, keyed by session, ``decided_at`` the signature's time,
and signed as baton's workers verify it; its ``decision_id`` is ``desk-<event_id>``, so an
event the desk delivers twice is applied once (the copy is refused by the worker as a
replay), and a captured webhook sent again later is refused here.

Needs only ``schemas``, aiokafka and aiohttp: no Faust, no Anthropic.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import hmac
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from pydantic import ValidationError

from baton_kafka.schemas.decision import Decision
from baton_kafka.schemas.handoff import HandoffPacket

SIGNATURE_HEADER = "baton-signature"
WEBHOOK_HEADER = "X-Desk-Signature"
MAX_BODY = 64 * 1024
TOLERANCE_S = 300.0


def record_signature(key_id: str, secret: str, topic: str, key: str, value: bytes) -> bytes:
    """The ``baton-signature`` header value for a record (see docs/people.md, "The record")."""
    message = topic.encode() + b"\0" + f"{len(key.encode())}:{key}".encode() + b"\0" + value
    mac = hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()
    return f"{key_id}:{mac}".encode()


def webhook_signature(secret: bytes, body: bytes, at: int) -> str:
    """The ``X-Desk-Signature`` of ``body`` sent at ``at`` (unix seconds): ``t=…,v1=…``."""
    mac = hmac.new(secret, f"{at}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={at},v1={mac}"


def webhook_signed(
    secret: bytes, body: bytes, header: str | None, now: float, tolerance: float = TOLERANCE_S
) -> int | None:
    """When the desk signed ``body`` (unix seconds), if ``header`` is ``t=<time>,v1=<hex HMAC
    of "<time>." and body>`` under ``secret`` and the time is within ``tolerance`` of ``now``;
    None otherwise (a header of other than printable ASCII included)."""
    if not header or not header.isascii() or not header.isprintable():
        return None
    parts: dict[str, list[str]] = {}
    for part in header.split(","):
        name, _, value = part.strip().partition("=")
        parts.setdefault(name, []).append(value)
    times = parts.get("t", [])
    at = times[0] if len(times) == 1 else ""
    if not at.isdigit() or len(at) > 12 or abs(now - int(at)) > tolerance:
        return None
    expected = webhook_signature(secret, body, int(at)).partition(",v1=")[2]
    if any(hmac.compare_digest(expected, v) for v in parts.get("v1", [])):
        return int(at)
    return None


def decision_of(event: Any, at: int | None = None) -> Decision:
    """The ``Decision`` a desk event stands for, decided at ``at`` (unix seconds; now if
    None); ``ValueError`` (one line) when it is not one."""
    if not isinstance(event, dict) or not isinstance(event.get("event_id"), str):
        raise ValueError("the body is a JSON object with an event_id")
    names = ("session_id", "action", "item", "amount", "text", "offer", "override", "reference")
    fields = {k: event[k] for k in names if k in event}
    if at is not None:
        fields["decided_at"] = datetime.fromtimestamp(at, UTC)
    try:
        return Decision(decision_id=f"desk-{event['event_id']}", by=event.get("agent"), **fields)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in error["loc"]) or "body"
        raise ValueError(f"{where}: {error['msg']}") from None


class Bridge:
    """The two directions of one desk, on one producer and one consumer."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.webhook_secret = Path(args.webhook_secret_file).read_bytes().strip()
        key_id, _, secret = Path(args.signing_key_file).read_text().strip().partition(":")
        if not key_id or not secret:
            raise SystemExit("bridge: the signing key file holds <key id>:<secret>")
        self.signing_key = (key_id, secret)
        self.producer: AIOKafkaProducer | None = None

    async def webhook(self, request: web.Request) -> web.Response:
        body = await request.read()
        header = request.headers.get(WEBHOOK_HEADER)
        at = webhook_signed(self.webhook_secret, body, header, time.time(), self.args.tolerance)
        if at is None:
            error = "bad signature, or signed outside the tolerance (t=<unix time>,v1=<hex>)"
            return web.json_response({"error": error}, status=401)
        try:
            decision = decision_of(json.loads(body), at)
        except ValueError as exc:  # json.JSONDecodeError is one
            return web.json_response({"error": str(exc).splitlines()[0]}, status=422)
        value = decision.model_dump_json().encode()
        topic, key = self.args.decisions_topic, decision.session_id
        signature = record_signature(*self.signing_key, topic, key, value)
        assert self.producer is not None  # started before the web server
        await self.producer.send_and_wait(
            topic, value, key=key.encode(), headers=[(SIGNATURE_HEADER, signature)]
        )
        return web.json_response({"decision_id": decision.decision_id}, status=202)

    async def forward_packets(self, session: aiohttp.ClientSession) -> None:
        consumer = AIOKafkaConsumer(
            self.args.handoffs_topic,
            bootstrap_servers=self.args.bootstrap,
            group_id=self.args.group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        await consumer.start()
        try:
            while True:
                batch = await consumer.getmany(timeout_ms=1000)
                for records in batch.values():
                    for record in records:
                        await self._post(session, record.value)
                if batch:
                    await consumer.commit()
        finally:
            await consumer.stop()

    async def _post(self, session: aiohttp.ClientSession, value: bytes) -> None:
        try:
            packet = HandoffPacket.model_validate_json(value)
        except ValidationError as exc:
            print(
                f"bridge: skipped an unreadable packet ({exc.error_count()} error(s))",
                file=sys.stderr,
            )
            return
        body = packet.model_dump(mode="json")
        headers = {"Idempotency-Key": packet.packet_id}
        delay = 0.5
        while True:  # the desk being down holds the packets back, it never drops one
            try:
                async with session.post(self.args.desk_url, json=body, headers=headers) as r:
                    if r.status < 300:
                        return
                    print(f"bridge: the desk answered {r.status}; retrying", file=sys.stderr)
            except aiohttp.ClientError as exc:
                print(
                    f"bridge: the desk is unreachable ({type(exc).__name__}); retrying",
                    file=sys.stderr,
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, 30.0)

    async def run(self) -> None:
        self.producer = AIOKafkaProducer(bootstrap_servers=self.args.bootstrap, acks="all")
        await self.producer.start()
        app = web.Application(client_max_size=MAX_BODY)
        app.router.add_post("/webhook", self.webhook)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, self.args.host, self.args.port).start()
        print(
            f"bridge: webhooks on http://{self.args.host}:{self.args.port}/webhook", file=sys.stderr
        )
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
                await self.forward_packets(session)
        finally:
            await runner.cleanup()
            await self.producer.stop()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bootstrap", default="127.0.0.1:9092", help="host:port[,host:port]")
    p.add_argument("--handoffs-topic", default="support.handoffs")
    p.add_argument("--decisions-topic", default="support.decisions")
    p.add_argument("--group", default="helpdesk-bridge", help="consumer group of the packets")
    p.add_argument("--desk-url", required=True, help="where each packet is POSTed")
    p.add_argument("--webhook-secret-file", required=True, help="the desk's webhook secret")
    p.add_argument("--signing-key-file", required=True, help="<key id>:<secret>, a signing key")
    p.add_argument(
        "--tolerance",
        type=float,
        default=TOLERANCE_S,
        help="seconds a webhook's signed time may be off the bridge's clock",
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8787)
    args = p.parse_args()
    if not args.tolerance > 0:
        p.error("--tolerance: a number of seconds above 0")
    for name in ("webhook_secret_file", "signing_key_file"):
        if not Path(getattr(args, name)).is_file():
            p.error(f"--{name.replace('_', '-')}: no such file: {getattr(args, name)}")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(Bridge(args).run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
