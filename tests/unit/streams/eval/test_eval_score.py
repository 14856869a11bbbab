"""Scoring of the amnesia eval on hand-made replies, and the eval file's input rules."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from baton_kafka.schemas.codec import dumps
from baton_kafka.schemas.records import Reply, Ticket
from baton_kafka.streams.cli.main import main
from baton_kafka.streams.eval.run import (
    BadInput,
    age_days,
    as_recorded,
    check,
    load_cases,
    load_orders,
    orders_path_for,
    shifted,
    week_shift,
)
from baton_kafka.streams.eval.score import (
    Case,
    World,
    found,
    found_terms,
    parse_case,
    score,
    summarize,
)
from baton_kafka.streams.settings import Settings
from tests.fixtures.data import EVAL_ORDERS
from tests.fixtures.paths import TEST_DATA


def line(**overrides: Any) -> dict[str, Any]:
    label = {
        "phase": 1,
        "product": "Midea Electric Kettle 1.7L",
        "product_terms": ["kettle", "水壶"],
        "problem": ["leak", "漏水"],
        "demand": "refund",
        "order_id": "EV-1",
        "tags": ["first"],
    }
    label.update(overrides.pop("label", {}))
    data: dict[str, Any] = {
        "ticket_id": "t1",
        "session_id": "s1",
        "customer_id": "ana",
        "text": "My kettle is leaking, I want a refund.",
        "created_at": "2026-11-29T09:00:00Z",
        "label": label,
    }
    data.update(overrides)
    return data


def case(**overrides: Any) -> Case:
    return parse_case(orjson.dumps(line(**overrides)))


def reply(text: str, order_id: str | None = "EV-1", **fields: Any) -> Reply:
    values: dict[str, Any] = {
        "ticket_id": "t1",
        "session_id": "s1",
        "customer_id": "ana",
        "status": "answered",
        "reply": text,
        "solution": "",
        "internal_note": "",
        "confidence": 0.9,
        "order_id": order_id,
    }
    values.update(fields)
    return Reply.model_validate(values)


GOOD = "Sorry your Midea kettle is leaking. Order EV-1 will get a full refund."


def world(*cases: Case) -> World:
    return World.build(EVAL_ORDERS, list(cases) or [case()])


def test_terms_match_word_starts_case_and_width_insensitively() -> None:
    assert found("It keeps LEAKING", "leak")
    assert not found("a bleak outlook", "leak")
    assert not found("the prefix is wrong", "fix")
    assert found("水壶一直漏水", "漏水")
    assert found("ＭＩＤＥＡ kettle", "midea")
    assert found("it won’t charge", "won't charge")
    assert not found("V80 engine", "V8", whole=True)
    assert found("V80 engine", "V8")
    assert found_terms("refund, then a refund", ["exchange", "refund", "refund"]) == ["refund"]


def test_a_reply_carrying_every_fact_is_not_amnesic() -> None:
    s = score(case(), reply(GOOD), world())
    assert (s.product, s.problem, s.demand, s.order, s.order_resolved) == (
        True,
        True,
        True,
        True,
        True,
    )
    assert s.missing == [] and not s.amnesia
    assert s.invented == [] and s.leaks == []


@pytest.mark.parametrize(
    ("text", "missing"),
    [
        ("Sorry it is leaking. Order EV-1 will get a full refund.", ["product"]),
        ("Sorry about your kettle. Order EV-1 will get a full refund.", ["problem"]),
        ("Sorry your kettle is leaking. I found order EV-1.", ["demand"]),
        ("Sorry your kettle is leaking; you will get a full refund.", ["order"]),
        ("Hello, how can I help?", ["product", "problem", "demand", "order"]),
    ],
)
def test_each_missing_fact_is_reported(text: str, missing: list[str]) -> None:
    s = score(case(), reply(text), world())
    assert s.missing == missing
    assert s.amnesia


def test_the_order_fact_needs_the_right_id_in_the_record_and_in_the_text() -> None:
    wrong = score(case(), reply(GOOD.replace("EV-1", "EV-2"), order_id="EV-2"), world())
    assert not wrong.order and not wrong.order_resolved
    # Resolved, but the reply never tells the customer which order.
    unnamed = score(case(), reply(GOOD.replace("Order EV-1", "Your order")), world())
    assert unnamed.order_resolved and not unnamed.order
    # "EV-10" is another order, not a mention of EV-1.
    prefixed = score(case(), reply(GOOD.replace("EV-1", "EV-10")), world())
    assert prefixed.order_resolved and not prefixed.order


def test_an_expected_null_order_needs_a_null_order_id() -> None:
    no_order = case(label={"order_id": None, "product": "blender", "product_terms": []})
    text = "Sorry your blender is leaking. Please send the order number so we can refund you."
    assert score(no_order, reply(text, order_id=None), world()).order
    assert not score(no_order, reply(text, order_id="EV-2"), world()).order


def test_unlabelled_facts_cannot_be_missed() -> None:
    bare = case(label={"product": None, "product_terms": [], "problem": [], "order_id": None})
    s = score(bare, reply("We will refund you.", order_id=None), world())
    assert (s.product, s.problem) == (None, None)
    assert s.missing == []


def test_demand_counts_in_the_solution_but_nothing_counts_in_the_internal_note() -> None:
    text = "Sorry your kettle is leaking (order EV-1)."
    in_solution = score(case(), reply(text, solution="Refund 39.90 USD."), world())
    assert in_solution.demand
    note = "Customer wants a refund for the kettle leak, order EV-1, Midea."
    in_note = score(case(), reply("Hello.", internal_note=note, order_id="EV-1"), world())
    assert in_note.missing == ["product", "problem", "demand", "order"]


def test_invented_orders_in_the_record_and_in_the_text() -> None:
    made_up = score(case(), reply(GOOD, order_id="EV-404"), world())
    assert made_up.invented == ["EV-404"]
    in_text = score(case(), reply(GOOD + " See also ORD-INVENTED-0000."), world())
    assert in_text.invented == ["ORD-INVENTED-0000"]
    noted = score(case(), reply(GOOD, internal_note="Compare with ZZ-77."), world())
    assert noted.invented == ["ZZ-77"]
    # An id-shaped token of the customer's own product is not an order id.
    toaster = score(case(), reply(GOOD + " Your Aurora Toaster K-100 is fine."), world())
    assert toaster.invented == []


def test_another_customers_order_id_is_invented_and_leaked() -> None:
    s = score(case(), reply(GOOD + " Order EV-9 is on its way."), world())
    assert s.invented == ["EV-9"]
    assert s.leaks == ["EV-9"]


def test_other_customers_distinctive_product_terms_leak() -> None:
    s = score(case(), reply(GOOD + " Your Dyson is on its way."), world())
    assert s.leaks == ["Dyson"]
    assert score(case(), reply(GOOD + " The V12 ships soon."), world()).leaks == ["V12"]
    # "Midea" belongs to both customers and "4L" is a measure: neither is distinctive.
    shared = score(case(), reply(GOOD + " Midea makes great 4L pots."), world())
    assert shared.leaks == []


def test_a_term_the_customer_wrote_themselves_is_not_a_leak() -> None:
    asked = case(text="Is the Dyson I saw in your shop compatible with my kettle?")
    s = score(asked, reply(GOOD + " The Dyson is not sold by us."), world(asked))
    assert s.leaks == []


def test_anonymous_tickets_own_no_orders() -> None:
    anon = case(customer_id=None, label={"order_id": None, "product": None, "product_terms": []})
    s = score(anon, reply("Order EV-1 is refunded.", order_id="EV-1", customer_id=None), world())
    assert s.invented == ["EV-1"]
    assert s.leaks == ["EV-1"]
    assert not s.order


def test_summary_rates_follow_the_ticket_verdicts() -> None:
    first = case()
    second = case(ticket_id="t2", label={"demand": "repair", "tags": ["follow_up"]})
    third = case(ticket_id="t3", text="这个水壶漏水", label={"tags": ["follow_up"]})
    w = world(first, second, third)
    scores = [
        score(first, reply(GOOD), w),
        score(second, reply(GOOD, order_id="EV-2"), w),
        score(third, reply("您的水壶漏水，订单 EV-1 可以退款。", ticket_id="t3"), w),
    ]
    summary = summarize(scores)
    assert summary["tickets"] == 3 and summary["amnesic"] == 1
    assert summary["amnesia_rate"] == pytest.approx(1 / 3, abs=1e-4)
    assert summary["order_accuracy"] == pytest.approx(2 / 3, abs=1e-4)
    assert summary["facts"]["demand"] == {"labelled": 3, "carried": 2, "rate": 0.6667}
    assert summary["invented_orders"] == 0
    assert summary["by_tag"]["follow_up"]["tickets"] == 2
    assert summary["by_tag"]["follow_up"]["amnesic"] == 1
    assert summary["by_language"]["zh"]["amnesia_rate"] == 0.0


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"not json", "not valid JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (orjson.dumps({k: v for k, v in line().items() if k != "label"}), "label: Field required"),
        (orjson.dumps(line(label={"demand": "teleport"})), "label.demand"),
        (orjson.dumps(line(label={"phase": 0})), "label.phase"),
        (orjson.dumps(line(label={"colour": "red"})), "label.colour"),
        (orjson.dumps(line(text="   ")), "text"),
    ],
)
def test_bad_eval_lines_say_what_is_wrong(data: bytes, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_case(data)


def test_the_published_ticket_carries_no_label() -> None:
    published = orjson.loads(dumps(case().ticket))
    assert set(published) == set(Ticket.model_fields)


def test_cross_line_rules() -> None:
    good = [case(), case(ticket_id="t2", label={"phase": 2})]
    check(good, EVAL_ORDERS, "f")
    with pytest.raises(BadInput, match="ticket_id appears twice"):
        check([case(), case()], EVAL_ORDERS, "f")
    with pytest.raises(BadInput, match="phase 1 comes after phase 2"):
        check([good[1], case(ticket_id="t3")], EVAL_ORDERS, "f")
    with pytest.raises(BadInput, match="EV-9 is not the customer's"):
        check(
            [case(label={"order_id": "EV-9", "product": "Dyson V12 Vacuum Cleaner"})],
            EVAL_ORDERS,
            "f",
        )
    with pytest.raises(BadInput, match="not in the orders file"):
        check([case(label={"order_id": "EV-77"})], EVAL_ORDERS, "f")
    with pytest.raises(BadInput, match="must be the order's"):
        check([case(label={"product": "kettle"})], EVAL_ORDERS, "f")


def test_a_run_reads_the_set_s_times_as_written() -> None:
    cases = [case(created_at="2026-11-20T09:00:00Z"), case(ticket_id="t2", created_at=None)]
    now = datetime(2026, 12, 7, 0, 30, tzinfo=UTC)
    assert age_days(cases, now) == pytest.approx(17.6458, abs=1e-3)
    assert age_days([case(created_at=None)], now) == 1.0
    bound = as_recorded(Settings(), cases).ticket_max_age_days
    assert bound == pytest.approx(age_days(cases, datetime.now(UTC)), abs=0.01)
    assert bound > Settings().ticket_max_age_days


def test_dates_move_by_whole_weeks_towards_today() -> None:
    cases = [case(created_at="2026-11-28T09:00:00Z"), case(ticket_id="t2", created_at=None)]
    assert week_shift(cases, date(2026, 11, 29)) == timedelta(0)
    shift = week_shift(cases, date(2027, 1, 20))
    assert shift == timedelta(weeks=7)
    moved_cases, moved_orders = shifted(cases, EVAL_ORDERS, shift)
    assert moved_cases[0].ticket.created_at == datetime(2027, 1, 16, 9, tzinfo=UTC)
    assert moved_cases[0].ticket.created_at.weekday() == 5
    assert moved_cases[1].ticket.created_at is None
    assert moved_orders[0].ordered_at == EVAL_ORDERS[0].ordered_at + shift
    assert week_shift([case(created_at=None)], date(2030, 1, 1)) == timedelta(0)


def test_the_orders_file_is_found_next_to_the_tickets() -> None:
    assert orders_path_for(Path("d/eval_tickets.jsonl")) == Path("d/eval_orders.jsonl")
    with pytest.raises(BadInput, match="pass --orders"):
        orders_path_for(Path("d/cases.jsonl"))


def test_the_shipped_eval_set_is_valid() -> None:
    cases = load_cases(TEST_DATA / "eval_tickets.jsonl")
    orders = load_orders(TEST_DATA / "eval_orders.jsonl")
    check(cases, orders, "eval_tickets.jsonl")
    assert len(cases) >= 40
    assert len({c.ticket.session_id for c in cases}) >= 25
    tags = {t for c in cases for t in c.label.tags}
    assert {"follow_up", "topic_switch", "cross_session", "similar_orders", "no_order"} <= tags
    assert {c.label.phase for c in cases} >= {1, 2}


def test_bad_input_is_one_line_and_nonzero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tickets = tmp_path / "eval_tickets.jsonl"
    tickets.write_bytes(orjson.dumps(line()) + b"\n" + orjson.dumps(line(label={"demand": "x"})))
    (tmp_path / "eval_orders.jsonl").write_bytes(b"\n".join(dumps(o) for o in EVAL_ORDERS))
    assert main(["eval", "--llm", "offline", str(tickets)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert f"{tickets}:2: label.demand" in err

    missing = tmp_path / "nothing_tickets.jsonl"
    assert main(["eval", "--llm", "offline", str(missing)]) == 1
    assert "cannot read" in capsys.readouterr().err

    assert main(["eval", "--llm", "anthropic", str(tickets)]) == 2
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().err


def test_the_shift_keeps_each_ticket_the_same_calendar_months_after_its_orders() -> None:
    """A ticket of 29 November about "last month" (an October order) is not moved into December
    while its order stays in October: fewer weeks are taken when more would change that."""
    order = EVAL_ORDERS[0].model_copy(
        update={"customer_id": "C-M", "ordered_at": datetime(2026, 10, 20, 9, tzinfo=UTC)}
    )
    cases = [case(created_at="2026-11-29T10:30:00Z", customer_id="C-M")]
    assert week_shift(cases, date(2026, 12, 6)) == timedelta(weeks=1)
    assert week_shift(cases, date(2026, 12, 6), [order]) == timedelta(0)
    shift = week_shift(cases, date(2027, 1, 20), [order])
    moved_ticket = cases[0].ticket.created_at + shift
    moved_order = order.ordered_at + shift
    assert shift.days % 7 == 0 and date(2027, 1, 20) - moved_ticket.date() < timedelta(weeks=6)
    assert (moved_ticket.year * 12 + moved_ticket.month) - (
        moved_order.year * 12 + moved_order.month
    ) == 1
