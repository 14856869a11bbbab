"""The eval's final-state axis: the actions each reply leaves for the shop against the label."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from baton_kafka.schemas.records import Offer, OfferLine, Reply
from baton_kafka.streams.eval.run import (
    BadInput,
    age_days,
    check,
    load_cases,
    load_orders,
    render_text,
    shifted,
    week_shift,
)
from baton_kafka.streams.eval.score import Case, parse_case
from baton_kafka.streams.eval.state import final_state, render_final_state
from tests.fixtures.data import EVAL_ORDERS
from tests.fixtures.paths import ROOT, TEST_DATA
from tests.fixtures.pipelines import in_memory
from tests.fixtures.stores import sqlite_store

REFUND = {"kind": "refund", "order_id": "EV-1", "amount": 39.9, "currency": "CNY"}
EXCHANGE = {"kind": "exchange", "order_id": "EV-2"}


def case(ticket_id: str = "t1", session_id: str = "s1", **label: Any) -> Case:
    data = {
        "ticket_id": ticket_id,
        "session_id": session_id,
        "customer_id": "ana",
        "text": "My kettle is leaking, I want a refund.",
        "created_at": "2026-11-29T09:00:00Z",
        "label": {
            "phase": 1,
            "product": "Midea Electric Kettle 1.7L",
            "problem": ["leak"],
            "demand": "refund",
            "order_id": "EV-1",
            **label,
        },
    }
    return parse_case(orjson.dumps(data))


def reply(
    ticket_id: str = "t1",
    lines: list[dict[str, Any]] | None = None,
    state: str = "approved",
    status: str = "answered",
    session_id: str = "s1",
) -> Reply:
    offer = (
        Offer(state=state, lines=[OfferLine(**line) for line in lines])  # type: ignore[arg-type]
        if lines is not None
        else None
    )
    return Reply(
        ticket_id=ticket_id,
        session_id=session_id,
        customer_id="ana",
        status=status,  # type: ignore[arg-type]
        reply="We will refund order EV-1.",
        solution="",
        internal_note="",
        confidence=0.9,
        order_id="EV-1",
        offer=offer,
    )


def verdict(c: Case, r: Reply) -> dict[str, Any]:
    rows = final_state([c], {c.ticket.ticket_id: r})["per_ticket"]
    assert len(rows) == 1
    return dict(rows[0])


def test_the_label_is_read_and_an_unlabelled_ticket_has_none() -> None:
    labelled = case(final_state=[REFUND, EXCHANGE])
    assert labelled.label.final_state is not None
    assert [e.kind for e in labelled.label.final_state] == ["refund", "exchange"]
    assert case(final_state=[]).label.final_state == []
    assert case().label.final_state is None


@pytest.mark.parametrize(
    ("entry", "error"),
    [
        ({"order_id": "EV-1"}, "label.final_state.0.kind"),
        ({"kind": "refund", "order_id": "EV-1", "amount": -1}, "label.final_state.0.amount"),
        ({"kind": "refund", "order_id": "EV-1", "colour": "red"}, "label.final_state.0.colour"),
    ],
)
def test_a_bad_final_state_says_where(entry: dict[str, Any], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        case(final_state=[entry])


def test_the_approved_offer_lines_are_the_state_compared_to_the_cent() -> None:
    lines = [
        {**REFUND, "amount": 39.9000001, "channel": "original_payment"},
        {"kind": "exchange", "order_id": "EV-2"},
    ]
    v = verdict(case(final_state=[EXCHANGE, {**REFUND, "currency": "cny"}]), reply(lines=lines))
    assert v["exact"] is True
    assert v["actual"] == ["exchange EV-2", "refund EV-1 39.90 CNY"]
    assert v["missing"] == [] and v["extra"] == []


@pytest.mark.parametrize(
    ("lines", "missing", "extra"),
    [
        ([{**REFUND, "amount": 39.0}], ["refund EV-1 39.90 CNY"], ["refund EV-1 39.00 CNY"]),
        ([REFUND, REFUND], [], ["refund EV-1 39.90 CNY"]),
        ([], ["refund EV-1 39.90 CNY"], []),
        (
            [{**REFUND, "kind": "compensation"}],
            ["refund EV-1 39.90 CNY"],
            ["compensation EV-1 39.90 CNY"],
        ),
        (
            [{**REFUND, "item": "Midea Electric Kettle 1.7L"}],
            ["refund EV-1 39.90 CNY"],
            ["refund EV-1 [Midea Electric Kettle 1.7L] 39.90 CNY"],
        ),
    ],
)
def test_anything_missing_or_extra_is_not_exact(
    lines: list[dict[str, Any]], missing: list[str], extra: list[str]
) -> None:
    v = verdict(case(final_state=[REFUND]), reply(lines=lines))
    assert v["exact"] is False
    assert (v["missing"], v["extra"]) == (missing, extra)


def test_an_offer_waiting_for_approval_or_handed_off_leaves_nothing() -> None:
    nothing = case(final_state=[])
    assert verdict(nothing, reply(lines=[REFUND], state="needs_approval"))["exact"] is True
    assert verdict(nothing, reply(lines=[REFUND], status="handoff"))["exact"] is True
    assert verdict(nothing, reply(lines=None))["exact"] is True
    assert verdict(nothing, reply(lines=[REFUND]))["extra"] == ["refund EV-1 39.90 CNY"]
    assert verdict(case(final_state=[REFUND]), reply(lines=[REFUND], state="needs_approval"))[
        "missing"
    ] == ["refund EV-1 39.90 CNY"]


def test_the_summary_counts_only_labelled_tickets_per_language_and_session() -> None:
    cases = [
        case("t1", "s1", final_state=[REFUND]),
        case("t2", "s1", final_state=[]),  # a follow-up: nothing new should be done
        case("t3", "s2", final_state=[EXCHANGE]),
        case("t4", "s3"),  # not labelled
    ]
    cases[2] = cases[2].model_copy(
        update={
            "ticket": cases[2].ticket.model_copy(update={"text": "我的烤面包机坏了，能换一个吗？"})
        }
    )
    replies = {
        "t1": reply("t1", [REFUND]),
        "t2": reply("t2", [REFUND]),  # the refund restated: a second action
        "t3": reply("t3", [EXCHANGE], session_id="s2"),
        "t4": reply("t4", [REFUND], session_id="s3"),
    }
    s = final_state(cases, replies, ("en", "zh"), shop="Test shop")
    assert (s["tickets"], s["scored"], s["unlabelled"], s["exact"]) == (4, 3, 1, 2)
    assert s["exact_rate"] == 0.6667
    assert s["actions"] == 4 and s["shop"] == "Test shop"
    assert s["by_language"]["en"] == {"scored": 2, "exact": 1, "exact_rate": 0.5}
    assert s["by_language"]["zh"] == {"scored": 1, "exact": 1, "exact_rate": 1.0}
    assert s["sessions"] == {"scored": 2, "exact": 1, "exact_rate": 0.5}
    # The customer's refund, written for t1, is written again for t2 and (another session) t4.
    repeated = {r["ticket_id"]: r["repeated"] for r in s["per_ticket"]}
    assert repeated == {"t1": [], "t2": ["refund EV-1 39.90 CNY"], "t3": [], "t4": repeated["t2"]}
    assert (s["repeated"], s["tickets_with_repeats"]) == (2, 2)
    text = "\n".join(render_final_state(s, lambda r: "n/a" if r is None else f"{100 * r:.1f}%"))
    assert "final state (Test shop): 66.7% (2 of 3 labelled tickets" in text
    assert "1 not labelled" in text
    assert "t2: extra refund EV-1 39.90 CNY" in text
    assert "en 1/2 50.0%; zh 1/1 100.0%" in text
    assert "repeated actions: 2 (in 2 tickets" in text


def test_the_text_report_carries_the_final_state() -> None:
    section = final_state([case(final_state=[REFUND])], {"t1": reply(lines=[REFUND])})
    report = {
        "tickets": [],
        "summary": {
            "amnesia_rate": 0.0,
            "amnesic": 0,
            "tickets": 0,
            "sessions": 0,
            "facts": {},
            "order_accuracy": None,
            "orders_resolved": 0,
            "invented_orders": 0,
            "tickets_with_invented_orders": 0,
            "leaks": 0,
            "tickets_with_leaks": 0,
            "by_tag": {},
            "by_language": {},
            "statuses": {},
        },
        "llm": "offline",
        "date_shift_days": 0,
        "elapsed_s": 1.0,
        "final_state": section,
    }
    assert "final state: 100.0% (1 of 1 labelled tickets" in render_text(report)


def test_final_state_orders_must_be_the_customers_and_in_their_currency() -> None:
    check([case(final_state=[REFUND, EXCHANGE])], EVAL_ORDERS, "f")
    with pytest.raises(BadInput, match=r"final_state.0: order EV-9 is not the customer's"):
        check([case(final_state=[{"kind": "exchange", "order_id": "EV-9"}])], EVAL_ORDERS, "f")
    with pytest.raises(BadInput, match="order EV-77 is not in the orders file"):
        check([case(final_state=[{"kind": "exchange", "order_id": "EV-77"}])], EVAL_ORDERS, "f")
    with pytest.raises(BadInput, match="needs the order's currency CNY"):
        check([case(final_state=[{**REFUND, "currency": "USD"}])], EVAL_ORDERS, "f")


SETS = [
    TEST_DATA / "eval_tickets.jsonl",
    ROOT / "examples/shops/alpine/eval_tickets.jsonl",
    ROOT / "examples/shops/bookshop/eval_tickets.jsonl",
]


@pytest.mark.parametrize("tickets", SETS, ids=["demo", "alpine", "bookshop"])
def test_every_shipped_ticket_has_a_final_state(tickets: Path) -> None:
    cases = load_cases(tickets)
    check(cases, load_orders(tickets.with_name(tickets.name.replace("tickets", "orders"))), "f")
    assert all(c.label.final_state is not None for c in cases)
    assert any(c.label.final_state for c in cases)


async def test_the_bookshop_set_through_the_pipeline_is_scored(tmp_path: Path) -> None:
    tickets = ROOT / "examples/shops/bookshop/eval_tickets.jsonl"
    cases = load_cases(tickets)
    orders = load_orders(tickets.with_name("eval_orders.jsonl"))
    cases, orders = shifted(cases, orders, week_shift(cases, datetime.now(UTC).date(), orders))
    replies: dict[str, Reply] = {}
    async with sqlite_store(tmp_path / "orders.sqlite3", orders) as store:
        pipeline = in_memory(
            store,
            policy_file=ROOT / "examples/shops/bookshop/policy.toml",
            ticket_max_age_days=age_days(cases, datetime.now(UTC)),
        )
        for phase in sorted({c.label.phase for c in cases}):
            for c in (c for c in cases if c.label.phase == phase):
                for r in await pipeline.send(c.ticket):
                    replies[r.ticket_id] = r
    s = final_state(cases, replies, ("de", "en"))
    assert (s["scored"], s["unlabelled"]) == (len(cases), 0)
    rows = {r["ticket_id"]: r for r in s["per_ticket"]}
    # A damaged copy is replaced; a pre-order cancelled with its money back.
    assert rows["BT-01-1"]["exact"] is True and rows["BT-01-1"]["actual"] == ["exchange LL-100201"]
    assert rows["BT-05-1"]["actual"] == ["cancellation LL-100205", "refund LL-100205 22.00 EUR"]
    assert rows["BT-05-1"]["exact"] is True
    assert sum(len(r["actual"]) for r in rows.values()) == s["actions"] > 0
