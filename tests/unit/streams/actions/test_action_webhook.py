"""The actions' webhook: only a report signed with the shop's secret, fresh, well formed and
naming an action the ledger sent is applied, once; it never confirms an action never sent nor
moves a final one back."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson
import pytest

from baton_kafka.schemas.action import Action, LedgerEntry, idempotency_key
from baton_kafka.schemas.records import OfferLine
from baton_kafka.streams.actions.ledger import Ledger
from baton_kafka.streams.actions.runner import Runner
from baton_kafka.streams.actions.webhook import (
    HEADER,
    apply,
    receive,
    report_of,
    sign,
    signed_at,
)
from baton_kafka.streams.testing import MemoryTable

SECRET = b"a-webhook-secret-of-32-characters"
NOW = 1_780_000_000
LINE = OfferLine(kind="refund", order_id="K-1", amount=39.9, currency="EUR")
KEY = idempotency_key("S1", "t1", 0, LINE)


def action(session: str = "S1", key: str = KEY) -> Action:
    return Action(
        idempotency_key=key,
        session_id=session,
        ticket_id="t1",
        line=0,
        kind="refund",
        order_id="K-1",
        amount=39.9,
        currency="EUR",
    )


# --- the signature ------------------------------------------------------------------------


def test_a_signed_fresh_body_is_accepted_at_its_time() -> None:
    body = b'{"idempotency_key":"x"}'
    assert signed_at(SECRET, body, sign(SECRET, body, NOW), NOW + 5) == NOW


@pytest.mark.parametrize(
    "header",
    [
        None,  # unsigned
        "",
        f"t={NOW},v1=" + "0" * 64,  # forged
        sign(b"another-secret-of-32-characters!", b"{}", NOW),  # another secret
        sign(SECRET, b'{"state":"failed"}', NOW),  # signed another body
        f"t={NOW},t={NOW}," + sign(SECRET, b"{}", NOW).partition(",")[2],  # two times
        "v1=" + sign(SECRET, b"{}", NOW).partition("v1=")[2],  # no time
        "t=abc,v1=00",
        f"t={NOW}0000000000,v1=00",
        "t=１７８０,v1=00",  # full-width digits
        sign(SECRET, b"{}", NOW) + "\n",
        "garbage",
    ],
)
def test_unsigned_forged_or_malformed_signatures_are_refused(header: str | None) -> None:
    assert signed_at(SECRET, b"{}", header, NOW) is None


@pytest.mark.parametrize("age", [-301, 301, 3600, -86400])
def test_a_signature_older_or_newer_than_five_minutes_is_stale(age: int) -> None:
    assert signed_at(SECRET, b"{}", sign(SECRET, b"{}", NOW - age), NOW) is None


def test_no_secret_accepts_nothing() -> None:
    assert signed_at(b"", b"{}", sign(b"", b"{}", NOW), NOW) is None


def test_one_right_signature_among_several_is_enough_for_a_rotation() -> None:
    right = sign(SECRET, b"{}", NOW).partition(",v1=")[2]
    assert signed_at(SECRET, b"{}", f"t={NOW},v1={'f' * 64},v1={right}", NOW) == NOW


# --- the report: natural ones pass ---------------------------------------------------------

DETAILS = {
    "en": "Refund of 39.90 EUR to the original card, settled on 2026-12-05",
    "zh": "退款 39.90 欧元已退回原支付方式（订单 K-1）",
    "de": "Erstattung über 39,90 € auf die ursprüngliche Karte ausgeführt",
    "ja": "返金 39.90 ユーロを元のお支払い方法に処理しました",
    "es": "Reembolso de 39,90 € realizado a la tarjeta original",
    "fr": "Remboursement de 39,90 € effectué sur la carte d'origine",
}


@pytest.mark.parametrize("language", sorted(DETAILS))
def test_a_report_in_the_systems_own_words_passes_in_every_language(language: str) -> None:
    body = {"idempotency_key": KEY, "state": "confirmed", "detail": DETAILS[language]}
    report = report_of(orjson.dumps(body))
    assert report.state == "confirmed" and report.detail == DETAILS[language]


@pytest.mark.parametrize(
    "remote_id",
    [
        900001,
        "900001",
        "re_3NkQ2aLkdIwHu7ix0Xz1Abcd",
        "RMA-00001",
        "gid://shopify/Refund/9001",
        "7c9e6679-7425-40de-944b-e07fc1f90ae7",
        "R#12/2026",
    ],
)
def test_system_references_of_every_shape_pass(remote_id: object) -> None:
    report = report_of(orjson.dumps({"remote_id": remote_id, "state": "failed"}))
    assert report.remote_id == str(remote_id) and report.idempotency_key is None


def test_fields_a_system_adds_are_ignored() -> None:
    body = {"idempotency_key": KEY, "state": "pending", "id": 1, "topic": "refunds/create"}
    assert report_of(orjson.dumps(body)).state == "pending"


# --- the report: hostile ones are refused --------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[]",
        b'"confirmed"',
        b"{}",
        orjson.dumps({"state": "confirmed"}),  # names no action
        orjson.dumps({"idempotency_key": KEY}),  # no state
        orjson.dumps({"idempotency_key": KEY, "state": "success"}),  # the system's word
        orjson.dumps({"idempotency_key": KEY, "state": "CONFIRMED"}),
        orjson.dumps({"idempotency_key": KEY, "state": "refunded"}),
        orjson.dumps({"idempotency_key": KEY.upper(), "state": "confirmed"}),
        orjson.dumps({"idempotency_key": KEY[:-1], "state": "confirmed"}),
        orjson.dumps({"idempotency_key": KEY + "\n", "state": "confirmed"}),
        orjson.dumps({"idempotency_key": "bt-" + "g" * 37, "state": "confirmed"}),
        orjson.dumps({"idempotency_key": 1, "state": "confirmed"}),
        orjson.dumps({"remote_id": "9000 01", "state": "confirmed"}),
        orjson.dumps({"remote_id": '9000"01', "state": "confirmed"}),
        orjson.dumps({"remote_id": "9000\\01", "state": "confirmed"}),
        orjson.dumps({"remote_id": "９００００１", "state": "confirmed"}),
        orjson.dumps({"remote_id": "x" * 101, "state": "confirmed"}),
        orjson.dumps({"remote_id": "", "state": "confirmed"}),
        orjson.dumps({"remote_id": ["900001"], "state": "confirmed"}),
        orjson.dumps({"idempotency_key": KEY, "state": "confirmed", "detail": "ok\x00"}),
        orjson.dumps({"idempotency_key": KEY, "state": "confirmed", "detail": "\x1b[31mok"}),
        orjson.dumps({"idempotency_key": KEY, "state": "confirmed", "detail": "ok\u202eok"}),
        orjson.dumps({"idempotency_key": KEY, "state": "confirmed", "detail": "x" * 301}),
    ],
)
def test_bodies_that_are_not_a_report_are_refused_with_one_line(body: bytes) -> None:
    with pytest.raises(ValueError) as exc:
        report_of(body)
    assert "\n" not in str(exc.value)


# A second corpus, written after the validator as a blind check (it found line breaks and
# tabs refused: they are folded to spaces now).
BLIND_NATURAL = {
    "en": [
        "Refund processed — card ending 4242, 2–5 business days.",
        "Partial refund: $12.50 (item SKU-88X, size 10½)",
        "Return label RMA-2026/0042 issued; ship by Dec 19",
        "Refund failed:\nthe card has expired",
    ],
    "zh": [
        "退款已处理，预计3-5个工作日到账。",
        "部分退款：¥88.00（商品编号 A12，尺码 XL）",
        "退款失败：\t银行卡已过期",
    ],
    "de": [
        "Rückerstattung über 12,50 € veranlasst (Größe 42, Artikel „Lux 400“)",
        "Teilerstattung – 3 von 5 Artikeln",
        "Rücksendeetikett erstellt 📦",
    ],
    "ja": [
        "返金処理が完了しました（3〜5営業日）。",
        "一部返金：¥1,280（サイズ M）",
        "返品ラベル RMA-00042 を発行しました",
    ],
    "es": [
        "Reembolso procesado: 12,50 € a la tarjeta terminada en 4242",
        "Reembolso parcial – talla 38½",
    ],
    "fr": [
        "Remboursement partiel — taille 40, « Lux 400 »",
        "Échec du remboursement : carte expirée",
    ],
}
BLIND_HOSTILE = {
    "en": [
        "ok\x1b]8;;http://evil.example\x07click\x1b]8;;\x07",
        "done\u2066hidden\u2069",
        "x" * 301,
    ],
    "zh": ["退款\x1b[2J完成", "退款\u202e成功", "退款\u200f成功", "退" * 301],
    "de": ["Erstattung\x08\x08\x08", "Erstattung\u202d ok", "ok\u061c", "ä" * 301],
    "ja": ["返金\x1b[0m完了", "返金\u202b完了", "返金\x7f", "返" * 301],
    "es": ["Reembolso\x0b", "Reembolso\u202a ok", "ok\u200e", "ñ" * 301],
    "fr": ["Remboursé\x0c", "Remboursé\u202c", "ok\u2068", "é" * 301],
}


def _detail(detail: str) -> bytes:
    return orjson.dumps({"idempotency_key": KEY, "state": "failed", "detail": detail})


@pytest.mark.parametrize("language", sorted(BLIND_NATURAL))
def test_blind_natural_details_pass_with_their_layout_folded(language: str) -> None:
    for detail in BLIND_NATURAL[language]:
        folded = report_of(_detail(detail)).detail
        assert "\n" not in folded and "\t" not in folded and folded.split() == detail.split()


@pytest.mark.parametrize("language", sorted(BLIND_HOSTILE))
def test_blind_hostile_details_are_refused(language: str) -> None:
    for detail in BLIND_HOSTILE[language]:
        with pytest.raises(ValueError):
            report_of(_detail(detail))


# --- applied to the ledger ------------------------------------------------------------------


def runner(table: MemoryTable, told: list[LedgerEntry]) -> Runner:
    async def tell(entry: LedgerEntry) -> None:
        await asyncio.sleep(0.01)  # as a send to the broker yields
        told.append(entry)

    none: Any = None
    return Runner(none, Ledger(table), none, none, tell=tell)


async def sent(table: MemoryTable, session: str = "S1", key: str = KEY, **changes: Any) -> None:
    fields = {"state": "sent", "attempts": 1, "remote_id": "900001", **changes}
    await Ledger(table).save(LedgerEntry.of(action(session, key)).model_copy(update=fields))


def confirmed(**changes: Any) -> Any:
    return report_of(orjson.dumps({"idempotency_key": KEY, "state": "confirmed", **changes}))


async def test_a_webhook_delivered_twice_confirms_once_and_tells_once() -> None:
    table, told = MemoryTable(), []
    await sent(table)
    r = runner(table, told)
    first, again = await asyncio.gather(apply(r, confirmed(), mine), apply(r, confirmed(), mine))
    [entry] = Ledger(table).row("S1").values()
    assert (first.status, again.status) == (200, 200)
    assert sorted(a.body["applied"] for a in (first, again)) == [False, True]
    assert entry.state == "confirmed" and entry.told and entry.remote_id == "900001"
    assert [e.state for e in told] == ["confirmed"]
    late = await apply(r, confirmed(), mine)
    assert late.status == 200 and late.body["applied"] is False and len(told) == 1


def mine(session: str) -> bool:
    return session == "S1"


async def test_a_late_pending_or_contrary_report_never_moves_a_confirmed_action_back() -> None:
    table, told = MemoryTable(), []
    await sent(table)
    r = runner(table, told)
    assert (await apply(r, confirmed(), mine)).status == 200
    pending = await apply(r, confirmed(state="pending"), mine)
    failed = await apply(r, confirmed(state="failed"), mine)
    [entry] = Ledger(table).row("S1").values()
    assert pending.status == 200 and pending.body["applied"] is False
    assert failed.status == 409 and entry.state == "confirmed" and len(told) == 1


async def test_a_pending_report_first_changes_nothing_and_the_confirmation_after_it_applies() -> (
    None
):
    table, told = MemoryTable(), []
    await sent(table)
    r = runner(table, told)
    assert (await apply(r, confirmed(state="pending"), mine)).body["applied"] is False
    assert Ledger(table).row("S1")[KEY].state == "sent" and told == []
    assert (await apply(r, confirmed(), mine)).body["applied"] is True


async def test_an_action_the_ledger_never_sent_cannot_be_confirmed() -> None:
    table, told = MemoryTable(), []
    await Ledger(table).save(LedgerEntry.of(action()))
    answer = await apply(runner(table, told), confirmed(), mine)
    assert answer.status == 409 and Ledger(table).row("S1")[KEY].state == "requested"
    assert told == []


async def test_an_unknown_action_is_404_alone_and_503_beside_other_workers() -> None:
    table, told = MemoryTable(), []
    other = idempotency_key("S2", "t9", 0, LINE)
    await sent(table, "S2", other)
    r = runner(table, told)
    assert (await apply(r, confirmed(), mine)).status == 404
    elsewhere = report_of(orjson.dumps({"idempotency_key": other, "state": "confirmed"}))
    assert (await apply(r, elsewhere, mine)).status == 503
    assert Ledger(table).row("S2")[other].state == "sent" and told == []
    # Not found, but another worker owns some sessions: it may be there.
    assert (await apply(r, confirmed(), mine, alone=lambda: False)).status == 503


async def test_a_report_by_remote_id_finds_the_action_and_a_wrong_one_is_refused() -> None:
    table, told = MemoryTable(), []
    await sent(table)
    r = runner(table, told)
    wrong = await apply(r, confirmed(remote_id="900002"), mine)
    assert wrong.status == 409 and told == []
    by_id = report_of(orjson.dumps({"remote_id": 900001, "state": "failed", "detail": "declined"}))
    assert (await apply(r, by_id, mine)).status == 200
    [entry] = Ledger(table).row("S1").values()
    assert entry.state == "failed" and entry.detail == "webhook: declined" and len(told) == 1


async def test_the_request_is_refused_unsigned_stale_or_malformed_before_the_ledger() -> None:
    table, told = MemoryTable(), []
    await sent(table)
    r = runner(table, told)
    body = orjson.dumps({"idempotency_key": KEY, "state": "confirmed"})
    now = int(time.time())
    unsigned = await receive(r, SECRET, mine, {}, body)
    stale = await receive(r, SECRET, mine, {HEADER: sign(SECRET, body, now - 600)}, body)
    bad = b'{"idempotency_key":"bt-1","state":"confirmed"}'
    malformed = await receive(r, SECRET, mine, {HEADER: sign(SECRET, bad, now)}, bad)
    assert (unsigned.status, stale.status, malformed.status) == (401, 401, 422)
    assert Ledger(table).row("S1")[KEY].state == "sent" and told == []
    ok = await receive(r, SECRET, mine, {HEADER: sign(SECRET, body, now)}, body)
    assert ok.status == 200 and Ledger(table).row("S1")[KEY].state == "confirmed"


async def test_the_ledger_keeps_a_final_state_and_its_telling_against_a_late_write() -> None:
    table = MemoryTable()
    ledger = Ledger(table)
    entry = LedgerEntry.of(action()).model_copy(update={"attempts": 1})
    await ledger.save(entry.model_copy(update={"state": "confirmed", "told": True}))
    await ledger.save(entry.model_copy(update={"state": "sent"}))
    await ledger.save(entry.model_copy(update={"state": "failed"}))
    await ledger.save(entry.model_copy(update={"state": "confirmed", "told": False}))
    [kept] = ledger.row("S1").values()
    assert kept.state == "confirmed" and kept.told
    # A person may still carry out an action baton gave up on.
    other = LedgerEntry.of(action(key=KEY[:-1] + "0")).model_copy(update={"attempts": 1})
    await ledger.save(other.model_copy(update={"state": "needs_person"}))
    await ledger.save(other.model_copy(update={"state": "requested"}))
    assert ledger.get(other.action).state == "needs_person"  # type: ignore[union-attr]
    await ledger.save(other.model_copy(update={"state": "confirmed"}))
    assert ledger.get(other.action).state == "confirmed"  # type: ignore[union-attr]


def test_the_path_is_served_on_the_port_and_open_to_its_token_check() -> None:
    from baton_kafka.streams.actions.webhook import PATH
    from baton_kafka.streams.observe import guard, web

    # Its signature is the check: a bearer token would 401 the shop's system first.
    assert PATH in web.PATHS and PATH in guard.OPEN_PATHS
