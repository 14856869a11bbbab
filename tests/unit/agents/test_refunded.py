"""What the shop already refunded on an order: read from every source, shown to the model, and
never offered again."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from baton_kafka.agents.lookup import look_up
from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.agents.orders.opening import open_source
from baton_kafka.agents.prompts import OrderFact
from baton_kafka.agents.rules.offline import OfflineLLM
from baton_kafka.agents.strategy import decide
from baton_kafka.agents.testing import ScriptedLLM
from baton_kafka.agents.understand import understand
from baton_kafka.schemas import Baton, Order
from examples.csv_orders import CsvOrderSource
from tests.fixtures.data import days_ago, ticket, understanding
from tests.fixtures.shop_api import SHOP_MAP, TOKEN, ShopApi
from tests.fixtures.stores import BEFORE_REFUNDED, older_table, sqlite_store

PART = Order(
    order_id="R-1001",
    customer_id="C-UMA",
    product_name="Tefal Steam Iron FV5735",
    status="delivered",
    amount=59.0,
    currency="EUR",
    ordered_at=days_ago(12),
    delivered_at=days_ago(10),
    refunded=40.0,
)
WHOLE = PART.model_copy(
    update={
        "order_id": "R-1002",
        "product_name": "Rowenta Silence Force Vacuum",
        "ordered_at": days_ago(30),
        "refunded": 59.0,
    }
)
_OLD_ROW = (
    "INSERT INTO orders VALUES ('OLD-1', 'C-UMA', 'Kettle', 'paid', 9.5, 'EUR', "
    "'2026-10-01T00:00:00+00:00', NULL, NULL, NULL, NULL)"
)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_stores_keep_it_and_a_table_without_it_gets_the_column(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = await older_table(kind, tmp_path, request, BEFORE_REFUNDED, _OLD_ROW)
    try:
        old = await store.get("OLD-1")
        assert old is not None and old.refunded == 0.0
        assert await store.upsert([PART]) == 1
        assert await store.get(PART.order_id) == PART
        assert [o.refunded for o in await store.for_customer("C-UMA")] == [40.0, 0.0]
    finally:
        await store.close()


async def test_the_http_source_reads_it_only_from_the_field_the_map_names(
    shop_api: ShopApi,
) -> None:
    # Their API has a yes/no "refunded" flag and the amount under another name.
    shop_api.add([PART], refunded=True, refund_total={"amount": "40.00"})
    unnamed = open_source(shop_api.base_url, SHOP_MAP, auth=("X-Shop-Key", TOKEN))
    mapping = SHOP_MAP | {"fields": SHOP_MAP["fields"] | {"refunded": "refund_total.amount"}}
    named = open_source(shop_api.base_url, mapping, auth=("X-Shop-Key", TOKEN))
    try:
        plain = await unnamed.get(PART.order_id)
        assert plain is not None and plain.refunded == 0.0  # the flag is not money
        got = await named.get(PART.order_id)
        assert got is not None and got.refunded == 40.0
    finally:
        await unnamed.close()
        await named.close()


async def test_the_csv_example_reads_its_refunded_column(tmp_path: Path) -> None:
    head = "Order No,Customer,Item,Status,Total,Currency,Placed,Delivered,Refunded"
    placed = days_ago(12).isoformat()
    path = tmp_path / "orders.csv"
    path.write_text(
        f"{head}\nR-1,C1,Iron,delivered,59,EUR,{placed},,40\nR-2,C1,Kettle,paid,30,EUR,{placed},,\n",
        encoding="utf-8",
    )
    source = CsvOrderSource(path)
    assert [o.refunded for o in await source.for_customer("C1")] == [40.0, 0.0]


def test_the_prompt_shows_it_only_when_the_shop_refunded_some() -> None:
    assert OrderFact.of(PART).refunded == 40.0
    unrefunded = PART.model_copy(update={"refunded": 0.0})
    assert "refunded" not in OrderFact.of(unrefunded).model_dump(exclude_none=True)


async def test_the_rendered_facts_state_it_to_the_model() -> None:
    llm = ScriptedLLM([understanding("Tefal Steam Iron FV5735")])
    t = ticket("T-1", "the iron leaks", customer="C-UMA")
    await understand(t, Baton(session_id="S1", customer_id="C-UMA"), llm, orders=[PART])
    context = llm.calls[0].prompt.context
    facts = json.loads(context.split("<facts>\n")[1].split("\n</facts>")[0])
    assert facts["orders"][0]["refunded"] == 40.0


@pytest.fixture
async def shop(tmp_path: Path) -> AsyncIterator[SQLiteOrderStore]:
    async with sqlite_store(tmp_path / "orders.sqlite3", [PART, WHOLE]) as store:
        yield store


@pytest.mark.parametrize(
    ("text", "money"),
    [
        ("My Tefal steam iron leaks, I want a refund.", 19.0),
        ("我的 Tefal 熨斗漏水，我要退款。", 19.0),
        ("The Rowenta vacuum is broken, refund it please.", 0.0),
    ],
)
async def test_the_offline_strategy_offers_only_what_is_left(
    shop: SQLiteOrderStore, text: str, money: float
) -> None:
    t = ticket("T-1", text, customer="C-UMA")
    baton = Baton(session_id="S1", customer_id="C-UMA")
    llm = OfflineLLM()
    understood = (await understand(t, baton, llm, orders=await shop.for_customer("C-UMA"))).value
    match = (await look_up(t, understood, baton, shop, llm)).value
    out = await decide(t, baton, understood, match, shop, llm)
    assert out.failure is None
    offered = sum(line.amount or 0.0 for line in out.value.offer)
    assert offered == money, out.value.offer
    if money:
        assert f"{money:.2f}" in out.value.reply and "59.00" not in out.value.reply


def test_an_order_written_before_the_field_loads_unchanged() -> None:
    row = PART.model_dump(mode="json", exclude={"refunded"})
    assert Order.model_validate(row).refunded == 0.0
