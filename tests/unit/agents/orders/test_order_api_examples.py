"""The shipped order maps (examples/orders) against local Shopify- and WooCommerce-shaped APIs,
over the wire, and a ticket answered from each."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from baton_kafka.agents.orders import HttpOrderSource
from baton_kafka.agents.orders.opening import open_source
from baton_kafka.schemas import Ticket
from examples.orders.shopify_server import BOOKSHOP, TOKEN
from tests.fixtures.data import ticket
from tests.fixtures.paths import ROOT
from tests.fixtures.pipelines import in_memory
from tests.fixtures.shop_shapes import (
    SHOPIFY_TOKEN,
    WOO_BASIC,
    ShopifyApi,
    WooApi,
    shopify_order,
    woo_order,
)

EXAMPLES = ROOT / "examples" / "orders"
EST = timezone(timedelta(hours=-5))


def example(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EXAMPLES / name).read_text("utf-8"))
    return loaded


@pytest.fixture
async def shopify(shopify_api: ShopifyApi) -> AsyncIterator[HttpOrderSource]:
    shopify_api.add_raw(
        shopify_order(
            450789469,
            207119551,
            [("Summit Down Jacket", 1, "189.00")],
            total="189.00",
            fulfillment="fulfilled",
            shipment="delivered",
            refunds=("12.50",),
        ),
        shopify_order(
            450789470,
            207119551,
            [("Trail Backpack 30L", 1, "89.00"), ("Wool Socks", 2, "12.00"), ("Cap", 1, "9.00")],
            total="122.00",
            fulfillment="fulfilled",
            shipment="in_transit",
            created_at="2026-11-20T10:00:00-05:00",
        ),
        shopify_order(
            450789471,
            207119551,
            [("Basecamp Tent 2P", 1, "249.00")],
            total="249.00",
            financial="pending",
            created_at="2026-11-25T10:00:00-05:00",
        ),
        shopify_order(
            450789472,
            207119551,
            [("Camp Stove", 1, "59.00")],
            total="59.00",
            cancelled_at="2026-11-27T10:00:00-05:00",
            financial="voided",
            created_at="2026-11-26T10:00:00-05:00",
        ),
        shopify_order(450789999, 999, [("Other Jacket", 1, "10.00")], total="10.00"),
    )
    made = open_source(
        shopify_api.base_url,
        example("shopify.json"),
        auth=("X-Shopify-Access-Token", SHOPIFY_TOKEN),
    )
    assert isinstance(made, HttpOrderSource)
    try:
        yield made
    finally:
        await made.close()


async def test_the_shopify_map_reads_every_field_baton_uses(
    shopify: HttpOrderSource, shopify_api: ShopifyApi
) -> None:
    orders = {o.order_id: o for o in await shopify.for_customer("207119551")}
    seen = shopify_api.requests[0]
    assert seen.path == "/admin/api/2024-10/orders.json"
    assert seen.query == "customer_id=207119551&status=any&limit=50"
    # Orders go by the number the customer sees (Shopify's "name").
    assert list(orders) == ["#9472", "#9471", "#9470", "#9469"]
    jacket = orders["#9469"]
    assert jacket.product_name == "Summit Down Jacket" and jacket.customer_id == "207119551"
    assert jacket.status == "delivered" and jacket.refunded == 12.5 and jacket.amount == 189.0
    assert jacket.carrier == "DHL Express" and jacket.tracking_no == "JD01460000450789469"
    assert jacket.delivered_at == datetime(2026, 11, 6, 15, 30, tzinfo=EST)
    assert jacket.ordered_at == datetime(2026, 11, 2, 15, tzinfo=UTC)
    bundle = orders["#9470"]
    assert bundle.product_name == "Trail Backpack 30L, Wool Socks (+1)"
    assert [(i.product_name, i.quantity, i.total) for i in bundle.items] == [
        ("Trail Backpack 30L", 1, 89.0),
        ("Wool Socks", 2, 24.0),
        ("Cap", 1, 9.0),
    ]
    assert bundle.status == "shipped" and bundle.delivered_at is None
    assert orders["#9471"].status == "pending" and orders["#9471"].carrier is None
    assert orders["#9472"].status == "cancelled"
    assert await shopify.get("#9469") == jacket
    other = await shopify.get("#9999")
    # Looked up by its name, "#" written as %23.
    assert shopify_api.requests[-1].query == "name=%239999&status=any"
    assert other is not None and other.customer_id == "999"
    assert await shopify.get("#1") is None


async def test_a_ticket_on_a_shopify_order_names_the_product_and_knows_it_was_delivered(
    shopify: HttpOrderSource,
) -> None:
    pipeline = in_memory(shopify)
    *_, cancel = await pipeline.send(
        ticket("T-1", "Please cancel my down jacket order, I changed my mind.", "S1", "207119551")
    )
    assert cancel.order_id == "#9469"
    # The product is named after the order's lines, never after its number.
    assert "Summit Down Jacket" in cancel.reply and "your #" not in cancel.reply.casefold()
    assert "cannot be cancelled" in cancel.reply and "before" not in cancel.reply
    # 189.00 paid, 12.50 already refunded by the shop: at most 176.50 is offered.
    assert "176.50" in cancel.reply and "189" not in cancel.reply


@pytest.mark.parametrize(
    "text",
    [
        "My order #9470 arrived, but the socks are the wrong size.",
        "Meine Bestellung #9470 ist da, aber die Socken haben die falsche Größe.",
        "Pedido ＃9470: los calcetines no son de mi talla.",
    ],
)
async def test_the_order_number_a_customer_sees_finds_the_shopify_order(
    shopify: HttpOrderSource, text: str
) -> None:
    # Four orders, none named by product: the written "#9470" alone picks the order.
    pipeline = in_memory(shopify)
    *_, reply = await pipeline.send(ticket("T-1", text, "S1", "207119551"))
    assert reply.order_id == "#9470", reply.reply
    # The reply names it as the store writes it, its "#" once.
    assert reply.status == "answered" and "#9470" in reply.reply and "##" not in reply.reply


async def test_the_woocommerce_map_reads_every_field_baton_uses(woo_api: WooApi) -> None:
    woo_api.add_raw(
        woo_order(
            727,
            25,
            [("Trail Backpack 30L", 1, "89.00")],
            total="94.90",
            status="completed",
            refunds=("10.00", "4.90"),
            tracking=("DHL", "JD0146000065"),
        ),
        woo_order(
            728,
            25,
            [("Wool Socks", 2, "24.00"), ("Cap", 1, "9.00")],
            total="33.00",
            status="on-hold",
            created_gmt="2026-11-10T09:00:00",
        ),
        woo_order(729, 26, [("Tent", 1, "249.00")], total="249.00"),
    )
    source = open_source(
        woo_api.base_url, example("woocommerce.json"), auth=("Authorization", f"Basic {WOO_BASIC}")
    )
    try:
        orders = await source.for_customer("25")
        assert woo_api.requests[0].path == "/wp-json/wc/v3/orders"
        assert woo_api.requests[0].query == "customer=25&per_page=50"
        assert [o.order_id for o in orders] == ["728", "727"]
        socks, pack = orders
        assert pack.product_name == "Trail Backpack 30L" and pack.status == "shipped"
        assert pack.refunded == 14.9 and pack.amount == 94.9 and pack.currency == "EUR"
        assert pack.carrier == "DHL" and pack.tracking_no == "JD0146000065"
        assert pack.ordered_at == datetime(2026, 11, 2, 9, tzinfo=UTC)
        assert pack.items[0].sku is None  # WooCommerce writes "" for no SKU
        assert socks.product_name == "Wool Socks, Cap" and socks.status == "pending"
        assert socks.carrier is None and socks.refunded == 0
        assert await source.get("727") == pack
        assert await source.get("729") is not None and await source.get("7") is None
        pipeline = in_memory(source)
        *_, reply = await pipeline.send(
            ticket("T-1", "The backpack's zip broke, I want a refund.", "S1", "25")
        )
        assert reply.order_id == "727" and "Trail Backpack 30L" in reply.reply
        assert "80.00" in reply.reply  # 94.90 paid, 14.90 refunded by the shop
    finally:
        await source.close()


# docs/shop.md, step 6: the tickets' customers as the Shopify source files them.
SHOPIFY_CUSTOMERS = {
    "maria.keller@example.org": "207119551",
    "tom.harris@example.org": "207119552",
    "jonas.weber@example.org": "207119553",
}


def guide_tickets() -> list[dict[str, Any]]:
    guide = (ROOT / "docs" / "shop.md").read_text("utf-8")
    block = re.search(r"cat > myshop/tickets.jsonl <<'EOF'\n(.*?)\nEOF", guide, re.S)
    assert block is not None, "the guide's tickets are gone"
    return [json.loads(line) for line in block[1].splitlines()]


async def test_the_guides_tickets_are_answered_from_the_example_shopify_server(
    shopify_api: ShopifyApi,
) -> None:
    guide = " ".join((ROOT / "docs" / "shop.md").read_text("utf-8").split())
    for email, number in SHOPIFY_CUSTOMERS.items():
        name = email.split("@")[0].replace(".", " ").title()
        assert f"{name} {number}" in guide or f"{name.split()[0]} as `{number}`" in guide
    shopify_api.add_raw(*BOOKSHOP)
    source = open_source(
        shopify_api.base_url, example("shopify.json"), auth=("X-Shopify-Access-Token", TOKEN)
    )
    try:
        policy = str(ROOT / "examples" / "shops" / "bookshop" / "policy.toml")
        pipeline = in_memory(source, policy_file=policy)
        tickets = [
            Ticket.model_validate(t | {"customer_id": SHOPIFY_CUSTOMERS[t["customer_id"]]})
            for t in guide_tickets()
        ]
        replies = {r.ticket_id: r for r in await pipeline.send(*tickets)}
    finally:
        await source.close()
    assert replies["M-1"].order_id == "LL-100301"
    assert replies["T-1"].order_id == "LL-100302"
    assert replies["J-1"].order_id == "LL-100303"
    assert "Zauberberg" in replies["M-1"].reply
    # The bookshop keeps no damaged copy: nothing asks Maria to send it back.
    assert "zurückschicken" not in replies["M-1"].reply and "zurück," not in replies["M-1"].reply
