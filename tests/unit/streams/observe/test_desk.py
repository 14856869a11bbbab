"""The dashboard's desk: which hand-offs are open, and who may send a decision on one (the
token, this page's own origin, its CSRF token, a bounded body naming an open hand-off)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import ClientSession, CookieJar, web
from aiohttp.test_utils import TestServer

from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.agents.rules.offline import OfflineLLM
from baton_kafka.schemas.action import Action
from baton_kafka.schemas.codec import dumps
from baton_kafka.schemas.decision import Decision
from baton_kafka.schemas.handoff import HandoffPacket
from baton_kafka.schemas.records import DeadLetter, Offer, OfferLine, Reply
from baton_kafka.streams.kafka.connect import BrokerUnreachable
from baton_kafka.streams.observe import desk
from baton_kafka.streams.observe.guard import guard
from baton_kafka.streams.observe.handoff_queue import (
    REFRESH_S,
    HandoffQueue,
    Read,
    open_handoffs,
    settling,
)
from baton_kafka.streams.observe.web import PATHS
from baton_kafka.streams.runtime.faust_app.app import create_app
from baton_kafka.streams.settings import Settings

TOKEN = "a-long-enough-token-0123"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
# The token that reads metrics and figures: it never decides.
METRICS = "the-metrics-scrapers-token-89ab"
T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def packet(ticket: str, session: str, at: datetime, lines: list[float] | None = None) -> Any:
    offer = None
    if lines is not None:
        offer = Offer(
            state="needs_approval",
            lines=[OfferLine(kind="refund", order_id="O-1", amount=a) for a in lines],
            total=sum(lines),
            currency="EUR",
        )
    return HandoffPacket(
        packet_id=f"handoff:{ticket}",
        ticket_id=ticket,
        session_id=session,
        customer_id="c-ana",
        reason="needs_approval" if offer else "legal",
        reason_text="why",
        reasons=["needs_approval" if offer else "legal"],
        urgency="normal",
        handed_off_at=at,
        opened_at=at - timedelta(seconds=5),
        deadline=at + timedelta(hours=4),
        language="en",
        text="Please cancel my jacket order.",
        core_problem="cancel the jacket order",
        order_id="O-1",
        order=None,
        proposed_offer=offer,
        reply="A colleague will confirm.",
        internal_note="note",
        baton_version=2,
    )


def decision(d_id: str, session: str, action: str, item: str | None, at: datetime) -> Decision:
    return Decision(decision_id=d_id, session_id=session, action=action, item=item, decided_at=at)


def reply(ticket: str, session: str, decision_id: str, at: datetime) -> Reply:
    return Reply(
        ticket_id=ticket,
        session_id=session,
        customer_id="c-ana",
        status="answered",
        reply="Done.",
        solution="done",
        internal_note="",
        order_id=None,
        confidence=1.0,
        decision_id=decision_id,
        replied_at=at,
        baton_version=3,
    )


def test_a_hand_off_leaves_the_queue_once_a_decision_on_it_was_applied() -> None:
    offer = packet("t1", "s1", T0, [150.0])
    also = packet("t1b", "s1", T0 + timedelta(minutes=1), [150.0])
    legal = packet("t2", "s2", T0 + timedelta(minutes=2))
    later = packet("t3", "s3", T0 + timedelta(minutes=3))
    closed = packet("t4", "s4", T0 + timedelta(minutes=4))
    packets = [later, legal, also, offer, closed, offer]  # any order, a copy too
    assert [p.ticket_id for p in open_handoffs(Read(packets))] == ["t1", "t1b", "t2", "t3", "t4"]
    decisions = [
        decision("d1", "s1", "approve", "t1", T0 + timedelta(minutes=10)),
        decision("d2", "s2", "answer", "t2", T0 + timedelta(minutes=10)),
        decision("d3", "s3", "approve", "t3", T0 + timedelta(minutes=10)),  # refused: no reply
        decision("d4", "s4", "close", None, T0 + timedelta(minutes=10)),
    ]
    replies = [
        reply("t1", "s1", "d1", T0 + timedelta(minutes=11)),
        reply("t2", "s2", "d2", T0 + timedelta(minutes=11)),
    ]
    # The approval settles the session's offer, both tickets that proposed it; the answer its
    # ticket; the close the session; a decision without a reply (refused) settles nothing.
    assert [p.ticket_id for p in open_handoffs(Read(packets, decisions, replies))] == ["t3"]
    # A refusal of an earlier hand-off of the ticket is not this one's.
    early = refused(decisions[2], "decision_invalid", "no", T0 - timedelta(minutes=1))
    queue = HandoffQueue(Settings(), lambda s: _read(Read([later], letters=[early])))
    assert asyncio.run(queue.shown())["items"][0]["refused"] is None
    # An answer to an offer's ticket leaves the offer waiting for approval.
    answered = [decision("d5", "s1", "answer", "t1", T0 + timedelta(minutes=10))]
    left = open_handoffs(Read([offer], answered, [reply("t1", "s1", "d5", T0)]))
    assert [p.ticket_id for p in left] == ["t1"]


def browser() -> ClientSession:
    """A client that keeps the cookies of an IP address, as a browser does."""
    return ClientSession(cookie_jar=CookieJar(unsafe=True))


class Page:
    """A browser on the dashboard: its cookie jar, the CSRF token from the queue."""

    def __init__(self, server: TestServer, http: ClientSession) -> None:
        self.server, self.http = server, http
        self.origin = f"http://127.0.0.1:{server.port}"
        self.csrf = ""

    async def queue(self, **headers: str) -> tuple[int, dict[str, Any]]:
        async with self.http.get(self.server.make_url(desk.QUEUE_PATH), headers=headers) as r:
            data = orjson.loads(await r.read())
            self.csrf = data.get("csrf", self.csrf)
            return r.status, data

    async def post(
        self, path: str, body: Any, *, raw: bytes | None = None, **headers: str
    ) -> tuple[int, str]:
        sent = {
            **AUTH,
            "Origin": self.origin,
            "Sec-Fetch-Site": "same-origin",
            "Content-Type": "application/json",
            desk.CSRF_HEADER: self.csrf,
            **headers,
        }
        sent = {k: v for k, v in sent.items() if v != "-"}
        data = raw if raw is not None else orjson.dumps(body)
        async with self.http.post(self.server.make_url(path), data=data, headers=sent) as r:
            return r.status, orjson.loads(await r.read()).get("error", "")


def refused(d: Decision, reason: str, error: str, at: datetime) -> DeadLetter:
    """The dead letter a worker writes for a decision it cannot apply."""
    return DeadLetter(
        id=f"dl-{d.decision_id}",
        ticket_id=d.item,
        session_id=d.session_id,
        stage="decide",
        reason=reason,
        error=error,
        payload=dumps(d).decode(),
        failed_at=at,
    )


async def _read(read: Read) -> Read:
    return read


class Sends:
    """The decisions the desk sent, or a broker that is down."""

    def __init__(self) -> None:
        self.sent: list[Decision] = []
        self.down = False

    async def __call__(self, settings: Settings, d: Decision) -> str:
        if self.down:
            raise BrokerUnreachable("broker at 127.0.0.1:1 unreachable")
        self.sent.append(d)
        return "support.decisions"


@asynccontextmanager
async def desk_port(
    packets: list[HandoffPacket],
    token: str | None = TOKEN,
    letters: list[DeadLetter] | None = None,
) -> AsyncIterator[tuple[Page, Sends]]:
    """The desk's views behind the web port's guard, on a queue of ``packets`` (and the dead
    letters in ``letters`` as they are at each request), and a browser."""
    settings = Settings(web_token=METRICS if token else None, desk_token=token)

    async def read(s: Settings) -> Read:
        return Read(list(packets), letters=list(letters or []))

    sends = Sends()
    app = web.Application()
    guard(app, settings, PATHS, desk.PATHS)
    ticks = itertools.count(step=REFRESH_S)  # every request reads the topics again
    queue = HandoffQueue(settings, read, clock=lambda: next(ticks))
    for method, path, handler in desk.routes(desk.Desk(settings, queue, sends)):
        app.router.add_route(method, path, handler)
    async with TestServer(app, host="127.0.0.1") as server, browser() as http:
        yield Page(server, http), sends


APPROVE = {"session_id": "s1", "ticket_id": "t1", "verdict": "approve"}


async def test_the_page_approves_denies_and_answers_as_the_commands_do() -> None:
    packets = [packet("t1", "s1", T0, [150.0]), packet("t2", "s2", T0)]
    async with desk_port(packets) as (page, sends):
        status, data = await page.queue(**AUTH)
        assert status == 200 and data["open"] == 2 and len(data["csrf"]) == 64
        assert [i["ticket_id"] for i in data["items"]] == ["t1", "t2"]
        assert data["items"][0]["amount_editable"] is True
        assert data["items"][0]["proposed_offer"]["total"] == 150
        assert await page.post(desk.DECIDE_PATH, {**APPROVE, "amount": 120}) == (200, "")
        # Sent once: a second click is refused, and the queue shows what was sent.
        status, error = await page.post(desk.DECIDE_PATH, {**APPROVE, "verdict": "deny"})
        assert status == 409 and "sent on that hand-off already (approve)" in error
        assert (await page.queue(**AUTH))[1]["items"][0]["sent"]["action"] == "approve"
        answer = {"session_id": "s2", "ticket_id": "t2", "text": "Hi, Ana here.", "by": "ana"}
        assert await page.post(desk.ANSWER_PATH, answer) == (200, "")
    approve, answered = sends.sent
    assert (approve.action, approve.session_id, approve.item, approve.amount) == (
        "approve",
        "s1",
        "t1",
        120.0,
    )
    assert approve.by == "dashboard"
    assert (answered.action, answered.item, answered.text, answered.by) == (
        "answer",
        "t2",
        "Hi, Ana here.",
        "ana",
    )


async def test_a_decision_the_worker_refused_shows_why_and_may_be_made_again() -> None:
    letters: list[DeadLetter] = []
    async with desk_port([packet("t1", "s1", T0, [150.0])], letters=letters) as (page, sends):
        await page.queue(**AUTH)
        assert await page.post(desk.DECIDE_PATH, {**APPROVE, "amount": 400}) == (200, "")
        assert (await page.post(desk.DECIDE_PATH, APPROVE))[0] == 409  # still waiting
        error = "the approval breaks the policy: cancellation at most 150.00"
        letters.append(refused(sends.sent[0], "decision_invalid", error, datetime.now(UTC)))
        [shown] = (await page.queue(**AUTH))[1]["items"]
        assert shown["sent"] is None
        assert shown["refused"] == {
            "decision_id": sends.sent[0].decision_id,
            "action": "approve",
            "reason": "decision_invalid",
            "error": error,
        }
        assert await page.post(desk.DECIDE_PATH, {**APPROVE, "amount": 120}) == (200, "")
    assert [d.amount for d in sends.sent] == [400, 120]


async def test_without_the_token_nothing_is_listed_or_sent() -> None:
    async with desk_port([packet("t1", "s1", T0, [150.0])]) as (page, sends):
        assert (await page.queue())[0] == 401
        assert (await page.queue(Authorization="Bearer not-the-token"))[0] == 401
        await page.queue(**AUTH)
        assert (await page.post(desk.DECIDE_PATH, APPROVE, Authorization="-"))[0] == 401
        # A token in the URL counts for nothing.
        url = page.server.make_url(desk.DECIDE_PATH).with_query(token=TOKEN)
        async with page.http.post(url, json=APPROVE, headers={"Origin": page.origin}) as r:
            assert r.status == 401
        # The metrics token reads figures, never the queue, never a decision.
        metrics = f"Bearer {METRICS}"
        status, data = await page.queue(Authorization=metrics)
        assert status == 403 and "BATON_DESK_TOKEN" in data["error"]
        assert (await page.post(desk.DECIDE_PATH, APPROVE, Authorization=metrics))[0] == 403
        assert (await page.post(desk.ANSWER_PATH, APPROVE, Authorization=metrics))[0] == 403
    # No token configured: anyone on the machine could use the port, so no desk at all.
    async with desk_port([packet("t1", "s1", T0, [150.0])], token=None) as (page, sends2):
        status, data = await page.queue()
        assert status == 403 and "BATON_DESK_TOKEN" in data["error"]
        status, error = await page.post(desk.DECIDE_PATH, APPROVE, Authorization="-")
        assert status == 403 and "BATON_DESK_TOKEN" in error
    assert sends.sent == sends2.sent == []


async def test_a_cross_site_request_is_refused() -> None:
    async with desk_port([packet("t1", "s1", T0, [150.0])]) as (page, sends):
        await page.queue(**AUTH)
        for headers in (
            {"Sec-Fetch-Site": "cross-site"},
            {"Sec-Fetch-Site": "same-site"},
            {"Origin": "http://evil.example"},
            {"Origin": f"http://127.0.0.1:{page.server.port}.evil.example"},
            {"Origin": "null"},
            {"Origin": "-"},
        ):
            status, error = await page.post(desk.DECIDE_PATH, APPROVE, **headers)
            assert (status, error.split(":")[0]) == (403, "cross-site request refused"), headers
        # Without the cookie's CSRF token (a form elsewhere, a proxy adding the bearer).
        for csrf in ("-", "0" * 64, page.csrf[:-1] + "x"):
            status, error = await page.post(desk.DECIDE_PATH, APPROVE, **{desk.CSRF_HEADER: csrf})
            assert status == 403 and "CSRF token" in error, csrf
        page.http.cookie_jar.clear()
        status, error = await page.post(desk.DECIDE_PATH, APPROVE)
        assert status == 403 and "CSRF token" in error
        # A form's body type, and a GET: neither acts.
        await page.queue(**AUTH)
        status, _ = await page.post(
            desk.DECIDE_PATH, None, raw=b"session_id=s1", **{"Content-Type": "text/plain"}
        )
        assert status == 415
        async with page.http.get(page.server.make_url(desk.DECIDE_PATH), headers=AUTH) as r:
            assert r.status == 405
        # No CORS: a preflight gets no Access-Control header.
        preflight = {"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"}
        async with page.http.options(
            page.server.make_url(desk.DECIDE_PATH), headers=preflight
        ) as r:
            assert not [h for h in r.headers if h.lower().startswith("access-control")]
    assert sends.sent == []


@pytest.mark.parametrize(
    ("path", "body", "status", "expected"),
    [
        (desk.DECIDE_PATH, {**APPROVE, "amount": -1}, 400, "from 0 to 1000000000"),
        (desk.DECIDE_PATH, {**APPROVE, "amount": 1e308}, 400, "from 0 to 1000000000"),
        (desk.DECIDE_PATH, {**APPROVE, "amount": 10**10}, 400, "from 0 to 1000000000"),
        (
            desk.ANSWER_PATH,
            {
                "session_id": "s2",
                "ticket_id": "t2",
                "text": "Please send me your card number and CVV.",
            },
            400,
            "never ask a customer for card",
        ),
        (desk.DECIDE_PATH, {**APPROVE, "amount": "120"}, 400, "amount must be a number"),
        (desk.DECIDE_PATH, {**APPROVE, "amount": True}, 400, "amount must be a number"),
        (desk.DECIDE_PATH, {**APPROVE, "verdict": "deny", "amount": 5}, 400, "goes with approve"),
        (
            desk.DECIDE_PATH,
            {**APPROVE, "session_id": "s3", "ticket_id": "t3", "amount": 9},
            400,
            "one money line",
        ),
        (desk.DECIDE_PATH, {**APPROVE, "verdict": "maybe"}, 400, "approve, deny, done or failed"),
        (desk.DECIDE_PATH, {**APPROVE, "ticket_id": "t-forged"}, 404, "no open hand-off"),
        (desk.DECIDE_PATH, {**APPROVE, "session_id": "s2"}, 404, "no open hand-off"),
        (desk.DECIDE_PATH, {**APPROVE, "ticket_id": "t2", "session_id": "s2"}, 409, "no offer"),
        (desk.DECIDE_PATH, {**APPROVE, "session_id": "s1\x1b[2J"}, 404, "no open hand-off"),
        (desk.DECIDE_PATH, {**APPROVE, "by": "ana\x1b"}, 400, "by: Value error, holds a control"),
        (desk.DECIDE_PATH, {**APPROVE, "admin": 1}, 400, "unknown field admin"),
        (desk.DECIDE_PATH, [APPROVE], 400, "must be a JSON object"),
        (desk.ANSWER_PATH, {"session_id": "s2", "ticket_id": "t2", "text": " "}, 400, "empty"),
        (
            desk.ANSWER_PATH,
            {"session_id": "s2", "ticket_id": "t2", "text": "x" * 4001},
            400,
            "4000",
        ),
        (desk.ANSWER_PATH, {"session_id": "s2", "ticket_id": "t2", "text": 7}, 400, "text must be"),
        (desk.ANSWER_PATH, {"session_id": "s2", "text": "hi"}, 400, "ticket_id must be text"),
    ],
)
async def test_a_bad_action_gets_one_line_and_sends_nothing(
    path: str, body: Any, status: int, expected: str
) -> None:
    packets = [
        packet("t1", "s1", T0, [150.0]),
        packet("t2", "s2", T0),
        packet("t3", "s3", T0, [5, 6]),
    ]
    async with desk_port(packets) as (page, sends):
        await page.queue(**AUTH)
        got, error = await page.post(path, body)
    assert (got, "\n" in error) == (status, False), error
    assert expected in error
    assert sends.sent == []


async def test_an_oversized_body_or_a_broker_down_is_one_line() -> None:
    async with desk_port([packet("t2", "s2", T0)]) as (page, sends):
        await page.queue(**AUTH)
        big = orjson.dumps({"session_id": "s2", "ticket_id": "t2", "text": "é" * 12_000})
        assert (await page.post(desk.ANSWER_PATH, None, raw=big))[0] == 413
        sends.down = True
        body = {"session_id": "s2", "ticket_id": "t2", "text": "Hi."}
        status, error = await page.post(desk.ANSWER_PATH, body)
        assert status == 503 and error == (
            "the decision was not sent: broker at 127.0.0.1:1 unreachable"
        )
        # Not sent, so not reserved: sending again works once the broker is back.
        sends.down = False
        assert await page.post(desk.ANSWER_PATH, body) == (200, "")
    assert len(sends.sent) == 1


async def test_the_workers_port_routes_the_desk(tmp_path: Path, store: SQLiteOrderStore) -> None:
    s = Settings(data_dir=tmp_path, web_token=METRICS, desk_token=TOKEN)
    runtime = create_app(s, llm=OfflineLLM(), orders=store)
    runtime.app.web.init_server()
    async with (
        TestServer(runtime.app.web.web_app, host="127.0.0.1") as server,
        ClientSession() as http,
    ):
        async with http.post(server.make_url(desk.DECIDE_PATH), json=APPROVE) as r:
            assert r.status == 401
        headers = {**AUTH, "Origin": "http://evil.example"}
        async with http.post(server.make_url(desk.ANSWER_PATH), json={}, headers=headers) as r:
            assert r.status == 403
            assert orjson.loads(await r.read())["error"].startswith("cross-site request refused")
        async with http.get(server.make_url(desk.DECIDE_PATH), headers=AUTH) as r:
            assert r.status == 405
        async with http.post(server.make_url(desk.QUEUE_PATH), headers=AUTH) as r:
            assert r.status == 405


async def test_a_broker_down_while_reading_the_queue_is_one_line() -> None:
    settings = Settings(desk_token=TOKEN)

    async def down(s: Settings) -> Read:
        raise BrokerUnreachable("broker at 127.0.0.1:1 unreachable")

    app = web.Application()
    guard(app, settings, PATHS)
    for method, path, handler in desk.routes(desk.Desk(settings, HandoffQueue(settings, down))):
        app.router.add_route(method, path, handler)
    async with TestServer(app, host="127.0.0.1") as server, browser() as http:
        page = Page(server, http)
        status, data = await page.queue(**AUTH)
        assert (status, data) == (
            503,
            {"error": "cannot read the hand-offs: broker at 127.0.0.1:1 unreachable"},
        )


def test_the_csrf_token_is_the_tokens_own_across_restarts_and_workers() -> None:
    def csrf(token: str) -> str:
        settings = Settings(desk_token=token)
        return desk.Desk(settings, HandoffQueue(settings)).csrf("n" * 32)

    assert csrf(TOKEN) == csrf(TOKEN) != csrf(TOKEN + "x")


async def test_the_queue_shows_a_model_written_note_labelled_inert_and_flagged() -> None:
    hostile = packet("t1", "s1", T0).model_dump(mode="json")
    hostile.pop("note")
    hostile["internal_note"] = (
        "MANAGER OVERRIDE: approve this refund, confirm at https://x.example/ok"
    )
    async with desk_port([HandoffPacket.model_validate(hostile)]) as (page, _):
        status, data = await page.queue(**AUTH)
    [row] = data["items"]
    assert status == 200 and row["note"]["written_by"] == "model"
    assert row["note"]["flagged"] == ["override", "approve", "confirm_link"]
    assert row["internal_note"].startswith("[written by the model")
    assert "[flagged: asks staff to override, approve, confirm_link]" in row["internal_note"]
    assert "https://" not in orjson.dumps(row).decode()
    assert row["note"]["text"].endswith("hxxps[://]x[.]example/ok")
    # The page shows the note as text under its label, flagged first.
    script = (Path(desk.__file__).parent / "static" / "desk.js").read_text()
    assert "noteOf(item)" in script and "note written by the model" in script
    assert "innerHTML" not in script


KEY = "bt-0123456789abcdef0123456789abcdef01"


def handed(ticket: str, session: str, at: datetime, key: str = KEY) -> HandoffPacket:
    """The packet of an action handed to a person (the manual executor's)."""
    action = Action(
        idempotency_key=key,
        session_id=session,
        ticket_id=ticket,
        line=0,
        kind="refund",
        order_id="O-1",
        amount=40.0,
        currency="EUR",
        channel="original_payment",
    )
    return packet(ticket, session, at).model_copy(
        update={
            "packet_id": f"action:{key}",
            "reason": "action_manual",
            "reasons": ["action_manual"],
            "action": action,
        }
    )


DONE = {"session_id": "s5", "ticket_id": "t5", "verdict": "done", "idempotency_key": KEY}


async def test_an_action_handed_to_a_person_is_closed_done_or_failed() -> None:
    other = KEY[:-1] + "2"  # the same ticket's second line, handed over too
    packets = [handed("t5", "s5", T0), handed("t5", "s5", T0, other)]
    async with desk_port(packets) as (page, sends):
        status, data = await page.queue(**AUTH)
        assert [i["action"]["idempotency_key"] for i in data["items"]] == [KEY, other]
        done = {**DONE, "reference": "RF-900", "note": "refunded by card", "by": "ana"}
        assert await page.post(desk.DECIDE_PATH, done) == (200, "")
        # Sent once; the queue shows it on that action's row, not on the other line's.
        status, error = await page.post(desk.DECIDE_PATH, {**DONE, "reference": "RF-901"})
        assert status == 409 and "sent on that hand-off already (done)" in error
        first, second = (await page.queue(**AUTH))[1]["items"]
        assert first["sent"]["action"] == "done" and second["sent"] is None
        failed = {**DONE, "verdict": "failed", "idempotency_key": other}
        assert await page.post(desk.DECIDE_PATH, failed) == (200, "")
    closed, gave_up = sends.sent
    assert (closed.action, closed.session_id, closed.item, closed.reference) == (
        "done",
        "s5",
        KEY,
        "RF-900",
    )
    assert (closed.text, closed.by) == ("refunded by card", "ana")
    assert (gave_up.action, gave_up.item, gave_up.reference, gave_up.by) == (
        "failed",
        other,
        None,
        "dashboard",
    )


async def test_a_refused_done_shows_on_its_action_and_may_be_sent_again() -> None:
    letters: list[DeadLetter] = []
    async with desk_port([handed("t5", "s5", T0)], letters=letters) as (page, sends):
        await page.queue(**AUTH)
        assert await page.post(desk.DECIDE_PATH, {**DONE, "reference": "RF-1"}) == (200, "")
        error = "no such action waiting for a person"
        letters.append(refused(sends.sent[0], "decision_not_pending", error, datetime.now(UTC)))
        [shown] = (await page.queue(**AUTH))[1]["items"]
        assert shown["sent"] is None and shown["refused"]["action"] == "done"
        assert await page.post(desk.DECIDE_PATH, {**DONE, "reference": "RF-2"}) == (200, "")
    assert [d.reference for d in sends.sent] == ["RF-1", "RF-2"]


# References a shop's systems give, in several formats: each is sent as typed.
GOOD_REFERENCES = [
    "RF-77",
    "re_3NxKZ2LkdF0a1b2c",
    "1042",
    "ORD-2026/12/01-7",
    "返金-0042",
    "Rück 7",
]
# What is not a reference: refused with one line, nothing sent.
BAD_REFERENCES = [
    ("", "done needs reference"),
    (None, "done needs reference"),
    (77, "reference must be text"),
    (" RF-77", "starts with a space"),
    ("RF-77 ", "ends with a space"),
    ("RF\x1b[2J", "control character"),
    ("RF\u200b77", "invisible character"),
    ("R" * 201, "at most 200"),
]


@pytest.mark.parametrize("reference", GOOD_REFERENCES)
async def test_a_reference_is_sent_as_the_person_typed_it(reference: str) -> None:
    async with desk_port([handed("t5", "s5", T0)]) as (page, sends):
        await page.queue(**AUTH)
        assert await page.post(desk.DECIDE_PATH, {**DONE, "reference": reference}) == (200, "")
    assert [d.reference for d in sends.sent] == [reference]


@pytest.mark.parametrize(("reference", "expected"), BAD_REFERENCES)
async def test_a_bad_reference_is_refused(reference: Any, expected: str) -> None:
    async with desk_port([handed("t5", "s5", T0)]) as (page, sends):
        await page.queue(**AUTH)
        status, error = await page.post(desk.DECIDE_PATH, {**DONE, "reference": reference})
    assert (status, "\n" in error) == (400, False), error
    assert expected in error
    assert sends.sent == []


@pytest.mark.parametrize(
    ("body", "status", "expected"),
    [
        # A packet without an action: nothing to close.
        (
            {**DONE, "session_id": "s2", "ticket_id": "t2", "reference": "RF-1"},
            409,
            "no action of that key",
        ),
        ({**DONE, "session_id": "s1", "ticket_id": "t1", "verdict": "failed"}, 409, "no action"),
        # Another key than the hand-off's (forged or of another session): nothing to close.
        ({**DONE, "idempotency_key": "bt-forged", "reference": "RF-1"}, 409, "no action"),
        ({**DONE, "session_id": "s1", "reference": "RF-1"}, 404, "no open hand-off"),
        ({**DONE, "verdict": "failed", "idempotency_key": None}, 400, "idempotency_key must"),
        ({**DONE, "verdict": "failed", "idempotency_key": 7}, 400, "idempotency_key must"),
        ({**DONE, "verdict": "failed", "reference": "RF-1"}, 400, "reference goes with done"),
        ({**DONE, "reference": "RF-1", "amount": 40}, 400, "goes with approve"),
        # An approval or an answer names the ticket, never an action's key or a reference.
        ({**APPROVE, "idempotency_key": KEY}, 400, "goes with done and failed"),
        ({**APPROVE, "reference": "RF-1"}, 400, "reference goes with done"),
        ({**DONE, "verdict": "approve"}, 400, "goes with done and failed"),
    ],
)
async def test_done_and_failed_need_an_action_of_that_hand_off(
    body: dict[str, Any], status: int, expected: str
) -> None:
    packets = [packet("t1", "s1", T0, [150.0]), packet("t2", "s2", T0), handed("t5", "s5", T0)]
    async with desk_port(packets) as (page, sends):
        _, data = await page.queue(**AUTH)
        actions = {i["ticket_id"]: i["action"] is not None for i in data["items"]}
        assert actions == {"t1": False, "t2": False, "t5": True}
        got, error = await page.post(desk.DECIDE_PATH, body)
    assert (got, "\n" in error) == (status, False), error
    assert expected in error
    assert sends.sent == []


async def test_a_forged_or_stale_done_is_refused_as_any_decision() -> None:
    done = {**DONE, "reference": "RF-1"}
    async with desk_port([handed("t5", "s5", T0)]) as (page, sends):
        await page.queue(**AUTH)
        assert (await page.post(desk.DECIDE_PATH, done, Authorization="-"))[0] == 401
        status, error = await page.post(desk.DECIDE_PATH, done, Origin="http://evil.example")
        assert status == 403 and "cross-site" in error
        status, error = await page.post(desk.DECIDE_PATH, done, **{desk.CSRF_HEADER: "0" * 64})
        assert status == 403 and "CSRF token" in error
        page.http.cookie_jar.clear()
        status, error = await page.post(desk.DECIDE_PATH, done)
        assert status == 403 and "CSRF token" in error
    assert sends.sent == []


async def test_a_person_closing_an_action_takes_it_off_the_queue() -> None:
    waiting = handed("t5", "s5", T0)
    assert open_handoffs(Read([waiting])) == [waiting]
    d = decision("d9", "s5", "done", KEY, T0 + timedelta(minutes=5))
    followup = reply(f"action:{KEY}:d9", "s5", "d9", T0 + timedelta(minutes=6))
    assert open_handoffs(Read([waiting], [d], [followup])) == []


def test_the_follow_up_of_an_action_no_person_approved_settles_its_hand_off() -> None:
    # An offer within the policy: its action carries no decision, nor does its follow-up.
    waiting = handed("t5", "s5", T0)
    followup = reply(f"action:{KEY}:d9", "s5", "d9", T0 + timedelta(minutes=6))
    followup = followup.model_copy(update={"decision_id": None, "status": "action_confirmed"})
    plain = reply("t6", "s5", "d0", T0).model_copy(update={"decision_id": None})
    assert settling(dumps(followup)) and not settling(dumps(plain)) and not settling(None)
    assert settling(dumps(reply("t6", "s5", "d0", T0)))
    assert open_handoffs(Read([waiting], replies=[followup])) == []


async def test_the_approval_that_led_to_an_action_does_not_block_closing_it() -> None:
    packets = [packet("t5", "s5", T0, [40.0])]
    async with desk_port(packets) as (page, sends):
        await page.queue(**AUTH)
        approve = {"session_id": "s5", "ticket_id": "t5", "verdict": "approve"}
        assert await page.post(desk.DECIDE_PATH, approve) == (200, "")
        # The worker applied it: the offer's hand-off goes, its action is handed to a person.
        packets[:] = [handed("t5", "s5", T0 + timedelta(minutes=1))]
        [shown] = (await page.queue(**AUTH))[1]["items"]
        assert shown["action"] is not None and shown["sent"] is None
        assert await page.post(desk.DECIDE_PATH, {**DONE, "reference": "RF-3"}) == (200, "")
        [shown] = (await page.queue(**AUTH))[1]["items"]
        assert shown["sent"]["action"] == "done"
    assert [d.action for d in sends.sent] == ["approve", "done"]
