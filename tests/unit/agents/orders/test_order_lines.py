"""Orders of several items: the record, matching, the prompt, the offer and reply audit, stores."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from baton_kafka.agents.guards import CustomerOrders, audit
from baton_kafka.agents.lookup import look_up, rank
from baton_kafka.agents.orders import HttpMap, SQLiteOrderStore
from baton_kafka.agents.orders.mapping import MapError
from baton_kafka.agents.orders.opening import open_source
from baton_kafka.agents.orders.postgres_mapped import SqlMap
from baton_kafka.agents.policy import default_policy
from baton_kafka.agents.policy import offer as offers
from baton_kafka.agents.policy.offer import OfferContext
from baton_kafka.agents.prompts import OrderFact
from baton_kafka.agents.rules.matching import order_score, product_score
from baton_kafka.agents.rules.offline import OfflineLLM
from baton_kafka.agents.strategy import decide
from baton_kafka.agents.testing import ScriptedLLM
from baton_kafka.agents.understand import understand
from baton_kafka.schemas import Baton, OfferLine, Order, OrderMatch
from tests.fixtures.data import corpus_draft, ticket, understanding
from tests.fixtures.paths import ROOT, data_rows
from tests.fixtures.shop_api import SHOP_MAP, TOKEN, ShopApi
from tests.fixtures.stores import BEFORE_LINES, older_table, sqlite_store

ORDERS = {o["order_id"]: Order.model_validate(o) for o in data_rows("lines_orders.jsonl")}
# Written before their first run against the audit; the blind file after its fixes.
CORPUS = data_rows("lines_corpus.jsonl")
BLIND = data_rows("lines_blind_corpus.jsonl")


def _audit(case: dict[str, Any]) -> list[str]:
    draft = corpus_draft(case)
    books = CustomerOrders(
        matched=ORDERS[case["matched"]],
        orders=[o for o in ORDERS.values() if o.customer_id == case["customer"]],
        discussed=frozenset(case["discussed"]),
        message=case["message"],
        known_ids=frozenset({case["ticket_id"], case["session_id"], case["customer"]}),
        policy=default_policy(),
        demand=case["demand"],
        today=date(2026, 11, 30),
    )
    return audit(draft, books)


def test_the_corpora_hold_both_languages_and_both_outcomes() -> None:
    for corpus in (CORPUS, BLIND):
        kinds = {(c["language"], c["expect"]) for c in corpus}
        assert kinds == {(lang, e) for lang in ("en", "zh") for e in ("pass", "reject")}
        assert all(c.get("reason") for c in corpus if c["expect"] == "reject")
    assert len({c["id"] for c in CORPUS + BLIND}) == len(CORPUS + BLIND)


@pytest.mark.parametrize("case", CORPUS + BLIND, ids=[c["id"] for c in CORPUS + BLIND])
def test_line_corpus_no_false_accepts_or_rejects(case: dict[str, Any]) -> None:
    problems = _audit(case)
    if case["expect"] == "pass":
        assert problems == [], (case["note"], problems)
    else:
        assert any(case["reason"] in p for p in problems), (case["note"], problems)


MULTI = ORDERS["2024-118830"]
BLENDER = "Oster OL-3303 Blender"


def _order(**changes: Any) -> Order:
    return Order.model_validate(MULTI.model_dump() | changes)


def test_a_line_needs_a_price_and_the_lines_fit_the_amount() -> None:
    assert [i.total for i in MULTI.items] == [39.99, 89.5, 130.0]
    knife = "Zwilling Pro 8-inch Chef's Knife"
    assert MULTI.products() == [
        "Kitchen set (3 items)",
        "Midea Electric Kettle 1.7L",
        BLENDER,
        knife,
    ]
    assert MULTI.line("oster  ol-3303 BLENDER") == MULTI.items[1]
    assert MULTI.line("MK-17") == MULTI.items[0] and MULTI.line("Vitamix") is None
    with pytest.raises(ValueError, match="needs its unit_price or its amount"):
        _order(items=[{"product_name": "Kettle"}])
    with pytest.raises(ValueError, match="quantity"):
        _order(items=[{"product_name": "Kettle", "quantity": 0, "unit_price": 1}])
    with pytest.raises(
        ValueError, match=r"add up to 300\.00, more than the order.s amount 259\.49"
    ):
        _order(items=[{"product_name": "Kettle", "quantity": 3, "unit_price": 100}])
    # Half a cent a line is rounding, not an overcharge; shipping makes the amount larger.
    assert _order(amount=259.48).items == MULTI.items
    assert _order(amount=265.0).items == MULTI.items


def test_a_one_item_order_is_as_simple_as_before() -> None:
    single = ORDERS["2024-118907"]
    assert single.items == () and single.products() == ["Logitech MX Keys S"]
    assert "items" not in single.model_dump(exclude_defaults=True)
    # Its only line is the order itself: an offer line naming it is for that line.
    own = single.line("logitech  mx keys s")
    assert own is not None and own.total == single.amount
    assert single.line("Logitech MX Master") is None


@pytest.fixture
async def shop(tmp_path: Path) -> AsyncIterator[SQLiteOrderStore]:
    async with sqlite_store(tmp_path / "orders.sqlite3", ORDERS.values()) as store:
        yield store


async def _found(store: SQLiteOrderStore, text: str, customer: str = "L-MEI") -> OrderMatch:
    t = ticket("T-1", text, customer=customer)
    baton = Baton(session_id="S1", customer_id=customer)
    orders = await store.for_customer(customer)
    llm = OfflineLLM()
    understood = await understand(t, baton, llm, orders=orders)
    return (await look_up(t, understood.value, baton, store, llm)).value


@pytest.mark.parametrize(
    ("text", "customer", "expected"),
    [
        ("The blender in order 2024-118830 stopped working", "L-MEI", "2024-118830"),
        ("my blender stopped working after a week", "L-MEI", "2024-118830"),
        ("one of the chef's knives is chipped", "L-MEI", "2024-118830"),
        ("where are my power banks?", "L-MEI", "2024-119002"),
        ("my MX Keys S has a sticky spacebar", "L-MEI", "2024-118907"),
        ("炒锅的涂层掉了", "L-WANG", "2024-220118"),
    ],
)
async def test_every_line_is_matched_and_a_one_item_order_as_before(
    shop: SQLiteOrderStore, text: str, customer: str, expected: str
) -> None:
    found = await _found(shop, text, customer)
    assert found.order_id == expected, found.reason


def test_rank_scores_an_order_by_its_best_line() -> None:
    u = understanding("Oster blender")
    ranked = rank(u, list(ORDERS.values())[:3], datetime(2026, 11, 30, tzinfo=UTC))
    assert ranked[0].order_id == "2024-118830"
    assert order_score("Oster blender", MULTI.products()) == product_score("Oster blender", BLENDER)
    assert order_score("blender", []) == 0.0


def test_the_prompt_shows_lines_compactly_only_for_several() -> None:
    facts = [OrderFact.of(o) for o in ORDERS.values()]
    single = facts[1].model_dump(mode="json")
    assert single["items"] == [] and facts[1].products() == ["Logitech MX Keys S"]
    assert [i.model_dump(exclude_none=True) for i in facts[0].items] == [
        {
            "product_name": "Midea Electric Kettle 1.7L",
            "quantity": 1,
            "amount": 39.99,
            "sku": "MK-17",
        },
        {"product_name": BLENDER, "quantity": 1, "amount": 89.5},
        {"product_name": "Zwilling Pro 8-inch Chef's Knife", "quantity": 2, "amount": 130.0},
    ]
    one_line = _order(items=[{"product_name": "Kettle", "unit_price": 39.99}])
    assert OrderFact.of(one_line).items == []


async def test_the_rendered_facts_hold_the_lines_and_a_one_item_order_has_no_items_key() -> None:
    llm = ScriptedLLM([understanding(BLENDER)])
    t = ticket("T-1", "the blender broke", customer="L-MEI")
    await understand(
        t, Baton(session_id="S1", customer_id="L-MEI"), llm, orders=list(ORDERS.values())[:2]
    )
    context = llm.calls[0].prompt.context
    facts = json.loads(context.split("<facts>\n")[1].split("\n</facts>")[0])
    multi, single = facts["orders"]
    assert [i["product_name"] for i in multi["items"]][1] == BLENDER
    assert multi["items"][2] == {
        "product_name": "Zwilling Pro 8-inch Chef's Knife",
        "quantity": 2,
        "amount": 130.0,
    }
    assert "items" not in single and single["product_name"] == "Logitech MX Keys S"


def _check(*lines: OfferLine, order: Order = MULTI) -> list[str]:
    ctx = OfferContext(order, "refund", date(2026, 11, 30))
    return offers.problems(list(lines), default_policy(), ctx)


def _refund(amount: float, item: str | None = None) -> OfferLine:
    return OfferLine(
        kind="refund",
        order_id=MULTI.order_id,
        item=item,
        amount=amount,
        currency="USD",
        channel="original_payment",
    )


def test_an_offer_for_one_line_is_capped_by_that_line() -> None:
    assert _check(_refund(89.5, BLENDER)) == []
    assert _check(_refund(259.49)) == []  # no item: the whole order
    [over] = _check(_refund(90.0, BLENDER))
    assert "more than the 89.50 paid for that line" in over
    [twice] = _check(_refund(60.0, "oster ol-3303 blender"), _refund(60.0, BLENDER))
    assert "bring it to 120.00 USD, more than the 89.50 paid" in twice
    [absent] = _check(_refund(10.0, "Vitamix E310"))
    assert "'Vitamix E310', which is not a line of order 2024-118830" in absent
    compensation = OfferLine.model_validate(
        _refund(4.01, "MK-17").model_dump() | {"kind": "compensation"}
    )
    ctx = OfferContext(MULTI, "complaint", date(2026, 11, 30))
    [share] = offers.problems([compensation], default_policy(), ctx)
    assert "above the policy's limit of 4.00" in share
    # A one-item order's only line is the order itself: an offer line may name it.
    single = ORDERS["2024-118907"]
    own = _refund(1.0, "logitech mx keys s").model_copy(update={"order_id": "2024-118907"})
    assert _check(own, order=single) == []
    [other] = _check(
        _refund(1.0, "Logitech MX Master").model_copy(update={"order_id": "2024-118907"}),
        order=single,
    )
    assert "not a line of order 2024-118907 (its lines: Logitech MX Keys S)" in other


_OLD_ROW = (
    "INSERT INTO orders VALUES ('OLD-1', 'L-MEI', 'Kettle', 'paid', 9.5, 'USD', "
    "'2026-10-01T00:00:00+00:00', NULL, NULL, NULL)"
)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_stores_keep_the_lines_and_an_older_table_gets_the_column(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    single = ORDERS["2024-118907"]
    store = await older_table(kind, tmp_path, request, BEFORE_LINES, _OLD_ROW)
    try:
        old = await store.get("OLD-1")
        assert old is not None and old.items == () and old.product_name == "Kettle"
        assert await store.upsert([MULTI, single]) == 2
        assert await store.get(MULTI.order_id) == MULTI
        assert await store.get(single.order_id) == single
        listed = await store.for_customer("L-MEI")
        assert [o.order_id for o in listed] == ["2024-118830", "2024-118907", "OLD-1"]
        assert listed[0].items == MULTI.items
    finally:
        await store.close()


async def test_the_http_source_maps_their_lines_through_the_items_paths(shop_api: ShopApi) -> None:
    mapping = SHOP_MAP | {
        "fields": SHOP_MAP["fields"]
        | {
            "items": "lines",
            "items.product_name": "title",
            "items.quantity": "qty",
            "items.unit_price": "price.amount",
            "items.sku": "article",
        }
    }
    lines = [
        {"title": i.product_name, "qty": i.quantity, "price": {"amount": str(i.total / i.quantity)}}
        | ({"article": i.sku} if i.sku else {})
        for i in MULTI.items
    ]
    shop_api.add([MULTI], lines=lines)
    shop_api.add([ORDERS["2024-118907"]])
    source = open_source(shop_api.base_url, mapping, auth=("X-Shop-Key", TOKEN))
    try:
        got = await source.get(MULTI.order_id)
        assert got is not None and [i.product_name for i in got.items] == [
            i.product_name for i in MULTI.items
        ]
        assert [i.total for i in got.items] == [39.99, 89.5, 130.0]
        assert got.line("MK-17") is not None
        single = await source.get("2024-118907")
        assert single is not None and single.items == ()
    finally:
        await source.close()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"items.colour": "c"}, "not fields of an order"),
        ({"items": "lines"}, None),
    ],
)
def test_the_items_paths_are_checked_and_the_sql_mode_refuses_them(
    fields: dict[str, str], message: str | None
) -> None:
    if message:
        with pytest.raises(MapError, match=message):
            HttpMap.parse({"fields": fields})
    else:
        assert HttpMap.parse({"fields": fields}).fields.name("items") == "lines"
    with pytest.raises(MapError, match="the SQL mode reads no order lines"):
        SqlMap.parse({"table": "shop.orders", "fields": fields})


def test_orders_import_accepts_lines(tmp_path: Path) -> None:
    rows = "".join(
        json.dumps(o.model_dump(mode="json", exclude_defaults=True), ensure_ascii=False) + "\n"
        for o in ORDERS.values()
    )
    bad = MULTI.model_dump(mode="json") | {"items": [{"product_name": "X", "amount": 999}]}
    done = subprocess.run(
        [sys.executable, "-m", "baton_kafka.streams", "orders", "import", "-"],
        input=rows + json.dumps(bad) + "\n",
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "BATON_DATA_DIR": str(tmp_path)},
        cwd=ROOT,
        timeout=60,
    )
    assert (
        done.returncode == 1
        and ":5: " in done.stderr
        and "more than the order's amount" in (done.stderr)
    )
    assert "Traceback" not in done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "baton_kafka.streams", "orders", "import", "-"],
        input=rows,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "BATON_DATA_DIR": str(tmp_path)},
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 0 and "imported 4 order(s)" in done.stdout, done.stderr

    async def read() -> Order | None:
        store = SQLiteOrderStore(tmp_path / "orders.sqlite3")
        try:
            return await store.get(MULTI.order_id)
        finally:
            await store.close()

    assert asyncio.run(read()) == MULTI


@pytest.mark.parametrize(
    ("text", "customer", "item", "amount"),
    [
        (
            "The blender in order 2024-118830 stopped working, I want a refund.",
            "L-MEI",
            BLENDER,
            89.5,
        ),
        ("炒锅的涂层掉了，我要退款", "L-WANG", "苏泊尔炒锅 32cm", 259.0),
        ("Everything in my kitchen set is broken, refund the whole order", "L-MEI", None, 259.49),
    ],
)
async def test_the_offline_strategy_refunds_the_named_line_and_passes_the_audit(
    shop: SQLiteOrderStore, text: str, customer: str, item: str | None, amount: float
) -> None:
    t = ticket("T-1", text, customer=customer)
    baton = Baton(session_id="S1", customer_id=customer)
    llm = OfflineLLM()
    understood = (await understand(t, baton, llm, orders=await shop.for_customer(customer))).value
    match = (await look_up(t, understood, baton, shop, llm)).value
    out = await decide(t, baton, understood, match, shop, llm)
    assert not out.degraded and out.failure is None
    [refund] = out.value.offer
    assert (refund.kind, refund.item, refund.amount) == ("refund", item, amount)
    assert f"{amount:.2f}" in out.value.reply
