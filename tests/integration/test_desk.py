"""The dashboard's hand-off queue in headless Chromium on a real worker: the packet of an offer
that needs approval is listed; a person approves too much (the worker refuses it, the page
says why), then a lower amount; the customer's confirmation reaches the replies topic, and
the hand-off leaves the queue. The approved action (the manual executor's) is listed next; the
person closes it as done with the system's reference, and the customer is told."""

from __future__ import annotations

import time
from pathlib import Path

import orjson
import pytest

from baton_kafka.streams.observe.handoff_queue import open_handoffs, read_desk
from tests.fixtures import delivery
from tests.fixtures.browser import Tab, chromium_tab, needs_chromium
from tests.fixtures.data import jacket, ticket_record
from tests.fixtures.deployments import Deployment, settings_of
from tests.fixtures.observability import health_until_ready
from tests.fixtures.paths import ROOT

# What the page does does not depend on the broker: the embedded leg is enough.
pytestmark = [pytest.mark.integration, pytest.mark.one_broker, pytest.mark.timeout(240)]

ALPINE = ROOT / "examples/shops/alpine/policy.toml"
KEYS = "k1:a-signing-secret-of-32-characters"
TOKEN = "desk-token-for-tests-0123456789"


async def approve(tab: Tab, row: str, amount: str) -> None:
    """Type ``amount`` into the row's amount field and press its Approve button."""
    await tab.until(f"!{row}.querySelector('button[data-action=approve]').disabled", "Approve")
    await tab.evaluate(
        f"(() => {{ const tr = {row}; tr.querySelector('input.amount').value = '{amount}';"
        "tr.querySelector('button[data-action=approve]').click(); })()"
    )


@needs_chromium
async def test_a_person_approves_an_offer_in_the_dashboard(
    deployment: Deployment, tmp_path: Path
) -> None:
    d = deployment
    # Signing on: the worker takes only decisions signed with its keys, as the page's are.
    d.env_extra.update(
        BATON_POLICY=str(ALPINE),
        BATON_SIGNING_KEYS=KEYS,
        BATON_WEB_TOKEN="metrics-token-for-tests-0123456",
        BATON_DESK_TOKEN=TOKEN,
        BATON_EXECUTOR="manual",
    )
    d.import_orders([jacket("c-ana")])
    worker = d.start_worker()
    await health_until_ready(worker, TOKEN)
    ticket = f"t1-{d.namespace}"
    await d.publish_tickets(
        [ticket_record(ticket, "s-desk", "c-ana", "Please cancel my jacket order.")],
    )
    [held] = await delivery.replies(d, 1)
    assert held.status == "handoff" and held.offer is not None
    assert held.offer.state == "needs_approval" and held.offer.total == 150

    row = f"document.querySelector('#queue tr[data-handoff=\"{ticket}\"]:not([data-action])')"
    url = f"http://127.0.0.1:{worker.web_port}/dashboard"
    async with chromium_tab(url, tmp_path / "profile") as tab:
        started = time.monotonic()
        # The person signs in once with the desk's token: never in the URL.
        await tab.until("document.getElementById('signin')?.hidden === false", "the sign-in")
        await tab.evaluate(
            f"document.getElementById('signin_token').value = {orjson.dumps(TOKEN).decode()};"
            "document.getElementById('signin_button').click(); true"
        )
        await tab.until(f"!!{row}", "the hand-off in the page's queue")
        listed = await tab.evaluate(
            f"(() => {{ const tr = {row}; return {{"
            "cells: [...tr.children].slice(0, 6).map((td) => td.textContent),"
            "amount: tr.querySelector('input.amount').value,"
            "editable: !tr.querySelector('input.amount').disabled,"
            "open: document.getElementById('queue_open').textContent}; })()"
        )
        assert listed["open"] == "1"
        _, due, reason, ids, _, offer = listed["cells"]
        assert "needs approval" in reason and "s-desk" in ids and ticket in ids
        assert due.endswith(" UTC") and "total 150.00 EUR" in offer
        assert listed["amount"] == "150" and listed["editable"] is True
        status = f"{row}.querySelector('.desk-status').textContent"
        # More than the order's price: the page sends it, the worker's policy refuses it, and
        # the page says why and lets the person decide again.
        await approve(tab, row, "400")
        refusal = await tab.until(
            f"{status}.includes('refused by the worker') && {status}", "the worker's refusal"
        )
        assert refusal.startswith("approve refused by the worker (decision_invalid): "), refusal
        assert "breaks the policy" in refusal
        # A lower amount than proposed, then the button, as a person does.
        await approve(tab, row, "120")
        sent = await tab.until(f"{status}.startsWith('approve sent') && {status}", "the send")
        assert sent.startswith("approve sent (decision "), sent
        after = await delivery.replies(d, 2)
        # Once the worker confirmed it, the next refresh of the queue drops it; the approved
        # offer's actions (one a line), handed to a person, are listed with Done and Failed.
        [approved] = [r for r in after if r.decision_id is not None]
        assert approved.offer is not None
        lines = len(approved.offer.lines)
        await tab.until(f"!{row}", "the hand-off to leave the queue")
        handed = "[...document.querySelectorAll('#queue tr[data-action]')]"
        await tab.until(f"{handed}.length === {lines}", "the actions handed to a person")
        listed = await tab.evaluate(
            f"{handed}.map((tr) => ({{ key: tr.dataset.action,"
            "cells: [...tr.children].slice(0, 6).map((td) => td.textContent),"
            "buttons: [...tr.querySelectorAll('button.act')].map((b) => b.dataset.action)}))"
        )
        for shown in listed:
            assert "action manual" in shown["cells"][2] and "· order " in shown["cells"][5]
            assert shown["buttons"] == ["done", "failed", "answer"]
        # The first is done (the system's reference typed in), any other failed.
        for n, shown in enumerate(listed):
            one = f"document.querySelector('#queue tr[data-action=\"{shown['key']}\"]')"
            verdict = "done" if n == 0 else "failed"
            await tab.evaluate(
                f"(() => {{ const tr = {one}; tr.querySelector('input.reference').value = 'RF-77';"
                f"tr.querySelector('button[data-action={verdict}]').click(); }})()"
            )
            status = f"{one}.querySelector('.desk-status').textContent"
            sent = await tab.until(f"{status}.startsWith('{verdict} sent') && {status}", verdict)
            assert sent.startswith(f"{verdict} sent (decision "), sent
        follow_ups = [r for r in await delivery.replies(d, 2 + lines) if r.ticket_id != ticket]
        assert sorted(r.status for r in follow_ups) == ["action_confirmed"] + ["action_failed"] * (
            lines - 1
        )
        [told] = [r for r in follow_ups if r.status == "action_confirmed"]
        assert "RF-77" in told.reply and told.ticket_ids == [ticket]
        await tab.until(f"{handed}.length === 0", "the actions to leave the queue")
        assert await tab.evaluate("document.getElementById('queue_open').textContent") == "0"
        in_page = time.monotonic() - started

    confirmed = [r for r in after if r.decision_id is not None]
    assert len(confirmed) == 1, after
    [reply] = confirmed
    assert reply.ticket_id == ticket and reply.session_id == "s-desk"
    assert reply.status == "answered" and reply.llm == "person"
    assert reply.offer is not None and reply.offer.state == "approved"
    assert reply.offer.total == 120
    # What the page sent is the commands' record: signed, by the dashboard.
    found = await d.read("support.decisions", lambda vs: len(vs) >= 2 + lines)
    [_, (value, headers), *closing] = found
    sent = orjson.loads(value)
    assert (sent["action"], sent["item"], sent["amount"], sent["by"]) == (
        "approve",
        ticket,
        120.0,
        "dashboard",
    )
    assert sent["decision_id"] == reply.decision_id
    assert any(k == "baton-signature" and v.startswith(b"k1:") for k, v in headers)
    closed = [orjson.loads(v) for v, _ in closing]
    assert [(c["action"], c["reference"], c["by"]) for c in closed] == [
        ("done", "RF-77", "dashboard")
    ] + [("failed", None, "dashboard")] * (lines - 1)
    assert told.ticket_id == f"action:{closed[0]['item']}:{closed[0]['decision_id']}"
    assert all(
        any(k == "baton-signature" and v.startswith(b"k1:") for k, v in h) for _, h in closing
    )
    # What one refresh of the queue costs here: the topics read once, the replies since.
    settings = settings_of(d)
    began = time.monotonic()
    read = await read_desk(settings)
    refresh_ms = round((time.monotonic() - began) * 1000)
    assert open_handoffs(read) == [] and len(read.packets) == 1 + lines
    delivery.figures(
        "dashboard desk approval", seconds_in_page=round(in_page, 1), refresh_ms=refresh_ms
    )
