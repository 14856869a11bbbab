"""Money bounded on the executor's side too: the decision that approved an action verified
again by its signature, and daily caps per shop and per customer counted from the ledger; an
action that fails either is never sent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from baton_kafka.agents.orders import OrderSource, SQLiteOrderStore
from baton_kafka.schemas import dumps
from baton_kafka.schemas.action import Action, LedgerEntry
from baton_kafka.schemas.decision import Decision
from baton_kafka.streams.actions.caps import Cap, DailyCaps, Use
from baton_kafka.streams.actions.guard import Guard
from baton_kafka.streams.actions.ledger import Ledger
from baton_kafka.streams.actions.manual import ManualExecutor
from baton_kafka.streams.config.spec import SettingsError
from baton_kafka.streams.config.values import money_caps
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.runtime.records.placement import session_partition
from baton_kafka.streams.runtime.records.signing import Signer
from baton_kafka.streams.testing import MemoryTable, TestPipeline
from tests.fixtures.data import C1_ORDERS, jacket, ticket
from tests.fixtures.paths import ROOT
from tests.fixtures.pipelines import in_memory
from tests.unit.streams.actions.test_action_manual import packets, wired

ALPINE = ROOT / "examples/shops/alpine/policy.toml"
KEYS = (("k1", "a-signing-secret-of-32-characters"),)


@pytest.fixture
async def shop(tmp_path: Path) -> AsyncIterator[SQLiteOrderStore]:
    from tests.fixtures.stores import sqlite_store

    async with sqlite_store(tmp_path / "shop.sqlite3", [*C1_ORDERS, jacket("C1")]) as s:
        yield s


def actions(p: TestPipeline) -> list[tuple[Source, bytes]]:
    topic = p.topics.actions
    return [(Source(topic, 0, n, key=k), v) for n, (k, v) in enumerate(p.sink.sent[topic])]


async def approved_by_a_person(
    p: TestPipeline, amount: float | None = None
) -> tuple[Source, bytes]:
    """The jacket's refund parked for approval, then approved with a signed decision."""
    p.people.signer = Signer(KEYS)
    [held] = await p.send(ticket("t1", "Please cancel my jacket order."))
    assert held.offer is not None and held.offer.state == "needs_approval"
    topic = p.topics.decisions
    d = Decision(decision_id="d1", session_id="S1", item="t1", action="approve", amount=amount)
    value = dumps(d)
    source = Source(topic, session_partition("S1", p.settings.partitions), 0, key="S1")
    await p.people.handle(value, source, Signer(KEYS).headers(topic, "S1", value))
    # A cancellation and its refund: the refund is the money.
    _, (src, refund) = actions(p)
    assert Action.model_validate_json(refund).decision_id == "d1"
    assert Action.model_validate_json(refund).kind == "refund"
    return src, refund


async def test_an_approved_action_passes_when_its_decision_verifies_again(
    shop: OrderSource,
) -> None:
    p = in_memory(shop, policy_file=ALPINE)
    source, value = await approved_by_a_person(p)
    runner = wired(p, ManualExecutor())
    runner.guard = Guard(Signer(KEYS), p.topics.decisions)
    entry = await runner.handle(value, source)
    # Checked and handed to the person who carries it out: not refused.
    assert entry is not None and entry.handoff == "action_manual"
    [note] = p.baton("S1").people
    assert note.signed and note.signature.startswith("k1:")


async def test_an_action_whose_decision_no_longer_verifies_is_never_sent(
    shop: OrderSource,
) -> None:
    p = in_memory(shop, policy_file=ALPINE)
    source, value = await approved_by_a_person(p)
    baton = p.baton("S1")
    [note] = baton.people
    guard = Guard(Signer(KEYS), p.topics.decisions)
    action = Action.model_validate_json(value)
    assert guard.unsigned(action, baton) is None
    # The baton's record of the decision changed by whoever can write the changelog.
    forged = note.signed.replace('"approve"', '"answer"')
    cases = {
        "does not verify": note.model_copy(update={"signed": forged}),
        "with unknown key": note.model_copy(update={"signature": "k9:" + "0" * 64}),
        "left no signed record": note.model_copy(update={"signed": "", "signature": ""}),
    }
    for why, bad in cases.items():
        tampered = baton.model_copy(update={"people": [bad]})
        problem = guard.unsigned(action, tampered)
        assert problem is not None and why in problem, (why, problem)
    # Without signing keys there is nothing to verify again (the worker refuses unsigned
    # decisions only when it has keys).
    assert Guard(Signer(), p.topics.decisions).unsigned(action, tampered) is None
    tampered = baton.model_copy(update={"people": [cases["does not verify"]]})
    await p.batons.save_durably(tampered)
    runner = wired(p, ManualExecutor())
    runner.guard = guard
    entry = await runner.handle(value, source)
    assert entry is not None and entry.state == "needs_person" and entry.dropped
    # Only the approval's own packet: none asks a person to carry a forged action out.
    assert [h.reason for h in packets(p)] == ["needs_approval"]
    assert p.dead_letters[-1].reason == "untrusted_record"


async def test_more_than_the_signed_decision_approved_is_refused(shop: OrderSource) -> None:
    p = in_memory(shop, policy_file=ALPINE)
    _, value = await approved_by_a_person(p, amount=100.0)
    action = Action.model_validate_json(value)
    assert action.amount == 100.0
    guard = Guard(Signer(KEYS), p.topics.decisions)
    baton = p.baton("S1")
    assert guard.unsigned(action, baton) is None
    more = action.model_copy(update={"amount": 150.0})
    assert "more than decision d1 approved" in (guard.unsigned(more, baton) or "")


def spent(
    session: str, amount: float, currency: str = "USD", key: str = "", **kw: object
) -> LedgerEntry:
    action = Action(
        idempotency_key=f"bt-{session}-{amount}-{currency}{key}",
        session_id=session,
        customer_id=kw.pop("customer", "C1"),  # type: ignore[arg-type]
        ticket_id="t0",
        line=0,
        kind="refund",
        order_id="O-9",
        amount=amount,
        currency=currency,
        **kw,  # type: ignore[arg-type]
    )
    return LedgerEntry(action=action, state="confirmed", attempts=1)


def used(*entries: LedgerEntry) -> list[Use]:
    return [u for e in entries if (u := Use.of(e)) is not None]


def test_a_money_cap_counts_one_currency_a_day_and_refuses_one_it_does_not_name() -> None:
    cap = Cap({"USD": 100.0})
    new = spent("S9", 30.0).action
    assert cap.over(new, used(spent("S1", 70.0))) is None
    assert "over the cap of 100.00" in (cap.over(new, used(spent("S1", 70.01))) or "")
    # Other currencies, failed ones, refused ones and another day's do not count.
    failed = spent("S2", 90.0).model_copy(update={"state": "failed"})
    dropped = spent("S3", 90.0).model_copy(update={"state": "needs_person", "attempts": 0})
    capped = spent("S6", 90.0).model_copy(
        update={"state": "needs_person", "handoff": "action_over_cap"}
    )
    old = spent("S4", 90.0, requested_at=new.requested_at - timedelta(days=1))
    others = used(spent("S1", 500.0, "EUR"), failed, dropped, capped, old)
    assert len(others) == 2 and cap.over(new, others) is None
    # A person carrying it out counts: the money may still move.
    manual = spent("S5", 90.0).model_copy(
        update={"state": "needs_person", "handoff": "action_manual"}
    )
    assert cap.over(new, used(manual)) is not None
    eur = spent("S9", 1.0, "EUR").action
    assert "no daily cap is set for the currency EUR" in (cap.over(eur, []) or "")
    assert Cap({"USD": 100.0, "*": 5.0}).over(eur, []) is None
    assert Cap(actions=2).over(new, used(spent("S1", 1.0))) is None
    assert "the cap allows 2" in (Cap(actions=2).over(new, used(spent("S1", 1.0), manual)) or "")


def test_a_day_is_the_utc_day_whatever_zone_the_time_was_written_in() -> None:
    late = datetime(2026, 12, 5, 23, 30, tzinfo=UTC)
    new = spent("S9", 30.0, requested_at=late).action
    # 00:30 on the 6th in Berlin is 23:30 on the 5th in UTC: the same day.
    berlin = spent("S1", 80.0, requested_at=late.astimezone(timezone(timedelta(hours=1))))
    assert Cap({"USD": 100.0}).over(new, used(berlin)) is not None


def test_the_shop_s_cap_is_shared_by_the_partitions_and_the_customer_s_is_not() -> None:
    caps = DailyCaps(shop=Cap({"USD": 100.0}), partitions=2)
    new = spent("S9", 40.0, customer="C9").action
    here, there = "S9-here", "S9-there"
    where = {here: 0, there: 1, "S9": 0}
    # 50 per partition: 10 spent on this one leaves room for 40, 11 would not.
    assert caps.over(new, used(spent(here, 10.0), spent(there, 45.0)), where) is None
    rows = used(spent(here, 10.0), spent(here, 1.0, key="b"))
    assert "this partition's share" in (caps.over(new, rows, where) or "")
    customer = DailyCaps(customer=Cap({"USD": 50.0}), partitions=2)
    # The customer's actions on every partition this worker holds count, another's do not.
    theirs = used(spent(there, 20.0, customer="C9"), spent(here, 45.0))
    assert customer.over(new, theirs, where) is not None
    assert customer.over(new, theirs[1:], where) is None


async def test_the_caps_read_the_ledger_as_it_changes(shop: OrderSource) -> None:
    table = MemoryTable()
    ledger = Ledger(table)
    guard = Guard(Signer(), "d", DailyCaps(customer=Cap({"USD": 50.0})))
    new = spent("S9", 30.0).action
    await ledger.save(spent("S1", 15.0))
    assert guard.over(new, ledger) is None
    # The same row, changed since it was last read: read again (a send in flight counts).
    await ledger.save(spent("S1", 15.0, key="b").model_copy(update={"state": "sent"}))
    assert guard.over(new, ledger) is not None
    await ledger.save(spent("S1", 15.0, key="b").model_copy(update={"state": "failed"}))
    assert guard.over(new, ledger) is None


def test_money_caps_are_read_from_their_setting_with_one_line_errors() -> None:
    assert money_caps("X", "eur:5000, USD:6000.5,*:10") == {"EUR": 5000, "USD": 6000.5, "*": 10}
    assert money_caps("X", "") == {}
    for bad in ("EUR", "EUR:-1", "EURO:5", "EUR:5,EUR:6", "EUR:lots"):
        with pytest.raises(SettingsError, match="CURRENCY:AMOUNT"):
            money_caps("X", bad)


async def test_an_action_over_a_customer_s_cap_is_never_sent_and_a_person_decides(
    shop: OrderSource,
) -> None:
    p = in_memory(shop)
    await p.send(ticket("t1", "My kettle is leaking, I want a refund."))
    [(source, value)] = actions(p)
    table = MemoryTable()
    # The customer's other session had 20 USD refunded today.
    await Ledger(table).save(spent("S2", 20.0))
    runner = wired(p, ManualExecutor(), table)
    runner.guard = Guard(Signer(), p.topics.decisions, DailyCaps(customer=Cap({"USD": 50.0})))
    entry = await runner.handle(value, source)
    assert entry is not None and entry.state == "needs_person" and entry.attempts == 0
    assert entry.handoff == "action_over_cap" and entry.waiting
    assert "customer C1's daily cap" in entry.detail
    [letter] = p.dead_letters
    assert (letter.stage, letter.reason) == ("act", "action_over_cap")
    [handed] = packets(p)
    assert handed.reason == "action_over_cap" and handed.action is not None
    # Read again and swept: still never sent, nothing more written.
    await runner.handle(value, source)
    await runner.sweep(lambda _: True)
    assert len(packets(p)) == 1 and len(p.dead_letters) == 1
    assert runner.ledger.get(entry.action) == entry


async def test_an_action_a_sweep_finds_over_a_cap_is_never_sent_either(
    shop: OrderSource,
) -> None:
    p = in_memory(shop)
    await p.send(ticket("t1", "My kettle is leaking, I want a refund."))
    [(_, value)] = actions(p)
    action = Action.model_validate_json(value)
    table = MemoryTable()
    # Recorded while its session was not on this worker yet; the sweep checks it now.
    await Ledger(table).save(LedgerEntry.of(action))
    runner = wired(p, ManualExecutor(), table)
    runner.guard = Guard(Signer(), p.topics.decisions, DailyCaps(shop=Cap(actions=1)))
    await Ledger(table).save(spent("S1", 1.0, key="earlier"))
    await runner.sweep(lambda _: True)
    entry = runner.ledger.get(action)
    assert entry is not None and entry.handoff == "action_over_cap" and entry.attempts == 0
    assert [d.reason for d in p.dead_letters] == ["action_over_cap"]
    assert [h.reason for h in packets(p)] == ["action_over_cap"]
