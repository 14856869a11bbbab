"""The HTTP executor and the reconciler over the wire, against a real payments server on
loopback: an action is done once whatever the connection does, looked up before any resend."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from baton_kafka.schemas.action import Action, LedgerEntry, actions_of
from baton_kafka.schemas.records import Offer, OfferLine
from baton_kafka.streams.actions.choose import open_executor
from baton_kafka.streams.actions.executor import ExecutorRefused, ExecutorUnavailable
from baton_kafka.streams.actions.http import HttpExecutor
from baton_kafka.streams.actions.http_map import ActionMap, MapProblem, fill_body, fill_url
from baton_kafka.streams.actions.reconcile import carry_out
from tests.fixtures.data import reply as data_reply
from tests.fixtures.payments import RMA_MAP, SHOPIFY_MAP, TOKEN, Payments, mapped, payments

__all__ = ["payments"]

REFUND = OfferLine(
    kind="refund", order_id="K-1002", amount=39.99, currency="USD", channel="original_payment"
)
EXCHANGE = OfferLine(kind="exchange", order_id="K-1002", item="Kettle 1.7 l")


def action(*lines: OfferLine, ticket: str = "t1") -> list[Action]:
    offer = Offer(state="approved", lines=list(lines), total=39.99, currency="USD")
    return actions_of(data_reply(ticket, session_id="S1", offer=offer))


@pytest.fixture
def token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOP_ADMIN_TOKEN", TOKEN)
    monkeypatch.setenv("SHOP_OLD_TOKEN", "shpat_revoked")


@pytest.fixture
async def shopify(payments: Payments, token: None) -> AsyncIterator[HttpExecutor]:
    ex = HttpExecutor(ActionMap.parse(mapped(SHOPIFY_MAP, payments.base(), timeout_s=1.0)))
    yield ex
    await ex.close()


@pytest.fixture
async def rma(payments: Payments) -> AsyncIterator[HttpExecutor]:
    ex = HttpExecutor(ActionMap.parse(mapped(RMA_MAP, payments.base(""), timeout_s=1.0)))
    yield ex
    await ex.close()


class Ledger:
    """The entries as saved, in order: what a durable table would hold after each write."""

    def __init__(self) -> None:
        self.saved: list[LedgerEntry] = []

    async def save(self, entry: LedgerEntry) -> None:
        self.saved.append(entry)

    def states(self) -> list[str]:
        return [e.state for e in self.saved]


async def test_a_refund_is_sent_once_with_its_key_its_amount_and_the_token(
    payments: Payments, shopify: HttpExecutor
) -> None:
    [refund] = action(REFUND)
    ledger = Ledger()
    done = await carry_out(shopify, refund, LedgerEntry.of(refund), ledger.save)
    assert (done.state, done.attempts) == ("confirmed", 1)
    [made] = payments.refunds
    assert done.remote_id == str(made["id"]) and made["key"] == refund.idempotency_key
    assert made["note"] == refund.idempotency_key and made["order_id"] == "K-1002"
    # The amount is a number on the wire, the currency and channel the line's.
    assert made["transactions"] == [
        {"kind": "refund", "amount": 39.99, "currency": "USD", "gateway": "original_payment"}
    ]
    assert ledger.states() == ["sent", "confirmed"]
    # Carried out again (a redelivered action): the ledger says it is done, nothing is sent.
    again = await carry_out(shopify, refund, done, ledger.save)
    assert again == done and payments.posts == 1


@pytest.mark.parametrize("fault", ["error", "drop", "slow"])
async def test_an_answer_lost_after_the_commit_is_looked_up_not_resent(
    payments: Payments, shopify: HttpExecutor, fault: str
) -> None:
    # A server that ignores idempotency keys: only the look-up keeps a second refund away.
    payments.honour_keys = False
    payments.slow_s = 2.0
    payments.fail_next(fault)
    [refund] = action(REFUND)
    done = await carry_out(shopify, refund, LedgerEntry.of(refund), Ledger().save, backoff_s=0)
    assert done.state == "confirmed" and done.remote_id == str(payments.refunds[0]["id"])
    assert (payments.posts, payments.executed(), payments.duplicates()) == (1, 1, 0)
    assert payments.lookups == 1 and done.attempts == 1


async def test_an_action_sent_before_a_crash_is_looked_up_first(
    payments: Payments, shopify: HttpExecutor
) -> None:
    [refund, other] = action(REFUND, REFUND.model_copy(update={"order_id": "K-1003"}))
    # The worker sent the first and died before the answer was recorded: its entry says sent.
    await shopify.execute(refund)
    sent = LedgerEntry.of(refund).model_copy(update={"state": "sent", "attempts": 1})
    done = await carry_out(shopify, refund, sent, Ledger().save)
    assert done.state == "confirmed" and payments.posts == 1
    # The second died before its request went out: the system does not know it, it is sent.
    unsent = LedgerEntry.of(other).model_copy(update={"state": "sent", "attempts": 1})
    done = await carry_out(shopify, other, unsent, Ledger().save)
    assert (done.state, done.attempts) == ("confirmed", 2)
    assert (payments.executed(), payments.duplicates(), payments.lookups) == (2, 0, 2)


async def test_a_system_that_cannot_be_asked_leaves_the_action_sent_never_dropped(
    payments: Payments, token: None
) -> None:
    gone = HttpExecutor(ActionMap.parse(mapped(SHOPIFY_MAP, "http://127.0.0.1:9", timeout_s=0.5)))
    [refund] = action(REFUND)
    ledger = Ledger()
    try:
        done = await carry_out(gone, refund, LedgerEntry.of(refund), ledger.save, backoff_s=0)
    finally:
        await gone.close()
    assert done.state == "sent" and "lookup" in done.detail
    # Saved as sent before the send: the next pass looks it up before anything else.
    assert ledger.states() == ["sent"]


async def test_a_kind_without_a_mapping_or_a_refusal_goes_to_a_person_or_fails(
    payments: Payments, shopify: HttpExecutor, rma: HttpExecutor
) -> None:
    [exchange] = action(EXCHANGE)
    done = await carry_out(shopify, exchange, LedgerEntry.of(exchange), Ledger().save)
    assert done.state == "needs_person" and "no request for a 'exchange'" in done.detail
    assert payments.posts == 0
    wrong = mapped(SHOPIFY_MAP, payments.base(), auth_env="SHOP_OLD_TOKEN")
    bad = HttpExecutor(ActionMap.parse(wrong))
    with pytest.raises(ExecutorRefused, match="HTTP 401"):
        await bad.check()
    await bad.close()


async def test_the_returns_example_opens_one_rma_through_a_dropped_connection(
    payments: Payments, rma: HttpExecutor
) -> None:
    payments.fail_next("drop")
    [exchange] = action(EXCHANGE)
    done = await carry_out(rma, exchange, LedgerEntry.of(exchange), Ledger().save, backoff_s=0)
    assert (done.state, done.remote_id) == ("confirmed", "RMA-00001")
    [made] = payments.returns
    assert made["item"] == "Kettle 1.7 l" and made["reference"] == exchange.idempotency_key
    assert payments.duplicates() == 0
    await rma.check()


async def test_the_check_probes_the_shop_system(payments: Payments, shopify: HttpExecutor) -> None:
    await shopify.check()
    gone = HttpExecutor(ActionMap.parse(mapped(SHOPIFY_MAP, "http://127.0.0.1:9")))
    with pytest.raises(ExecutorUnavailable):
        await gone.check()
    await gone.close()


def test_templates_keep_types_in_bodies_and_encode_ids_in_urls() -> None:
    known = {"order_id": "../admin/K 1", "amount": 5.5, "item": None, "idempotency_key": "bt-1"}
    assert fill_url("/orders/{order_id}/r?k={idempotency_key}", known) == (
        "/orders/..%2Fadmin%2FK%201/r?k=bt-1"
    )
    body = fill_body({"a": "{amount}", "t": "refund {amount} for {order_id}", "n": [1]}, known)
    assert body == {"a": 5.5, "t": "refund 5.50 for ../admin/K 1", "n": [1]}


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"base_url": "ftp://x"}, "'base_url' must be an http"),
        ({"kinds": {}}, "'kinds' must map"),
        ({"colour": 1}, "unknown key(s) 'colour'"),
        ({"timeout_s": 0}, "'timeout_s' must be a positive"),
        ({"kinds": {"refund": {"url": "/r/{secret}", "lookup": {"url": "/r"}}}}, "unknown field"),
        ({"kinds": {"refund": {"url": "r", "lookup": {"url": "/r"}}}}, "starting with '/'"),
        ({"kinds": {"refund": {"url": "/r", "lookup": {"url": "/r"}, "method": "GET"}}}, "POST"),
        (
            {"kinds": {"refund": {"url": "/r", "lookup": {"url": "/r"}, "states": {"ok": "yes"}}}},
            "states must map",
        ),
        ({"kinds": {"refund": {"url": "/r"}}}, "lookup must be a JSON object"),
    ],
)
def test_a_map_that_cannot_be_used_says_why_in_one_line(
    change: dict[str, Any], problem: str
) -> None:
    with pytest.raises(MapProblem) as caught:
        ActionMap.parse(mapped(SHOPIFY_MAP, "https://shop.example") | change)
    assert problem in str(caught.value) and "\n" not in str(caught.value)


def make_executor() -> HttpExecutor:
    """A factory BATON_EXECUTOR may name."""
    return HttpExecutor(ActionMap.parse(mapped(RMA_MAP, "https://returns.example")))


def test_the_setting_chooses_none_a_map_or_a_factory(tmp_path: Path) -> None:
    assert open_executor("") is None
    path = tmp_path / "map.json"
    path.write_text(json.dumps(mapped(RMA_MAP, "https://returns.example")))
    assert isinstance(open_executor(str(path)), HttpExecutor)
    made = open_executor("tests.unit.streams.actions.test_action_executor:make_executor")
    assert isinstance(made, HttpExecutor)
    for bad, why in [
        ("tests.unit.streams.actions.test_action_executor:nothing", "has no attribute"),
        (str(tmp_path / "absent.json"), "cannot read the map"),
    ]:
        with pytest.raises(ValueError, match=why) as caught:
            open_executor(bad)
        assert str(caught.value).startswith(f"BATON_EXECUTOR={bad}: ")


def test_baton_check_probes_the_executor(
    payments: Payments, token: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from baton_kafka.streams.cli.check import _executor
    from baton_kafka.streams.settings import Settings

    def line(**map_changes: Any) -> tuple[str, str, str]:
        path = tmp_path / "map.json"
        path.write_text(json.dumps(mapped(SHOPIFY_MAP, payments.base()) | map_changes))
        return _executor(Settings(executor=str(path)), 2.0)

    assert line()[2] == "answers" and line()[0] != line(auth_env="SHOP_OLD_TOKEN")[0]
    assert "HTTP 401 (check the map's auth_env)" in line(auth_env="SHOP_OLD_TOKEN")[2]
    gone = line(base_url="http://127.0.0.1:9")[2]
    assert gone.startswith("BATON_EXECUTOR=") and "\n" not in gone
    monkeypatch.delenv("SHOP_ADMIN_TOKEN")
    assert "auth_env SHOP_ADMIN_TOKEN is not set" in line()[2]
    assert "only written to their topic" in _executor(Settings(), 1.0)[2]
