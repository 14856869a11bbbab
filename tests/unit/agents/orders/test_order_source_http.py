"""The HTTP order source against a real local shop API: mapping, auth, faults, the cache."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from baton_kafka.agents.orders import (
    HttpMap,
    HttpOrderSource,
    OrderSource,
    OrderWriter,
    StoreUnavailable,
)
from baton_kafka.agents.orders.opening import open_source
from baton_kafka.schemas.records import Order
from baton_kafka.streams.kafka.embedded import free_port
from tests.fixtures.data import C1_ORDERS, ORDERS, order, ticket
from tests.fixtures.pipelines import in_memory
from tests.fixtures.shop_api import SHOP_MAP, TOKEN, Fault, ShopApi, shop_json

KEY = ("X-Shop-Key", TOKEN)


def source(api: ShopApi | str, **options: object) -> HttpOrderSource:
    url = api if isinstance(api, str) else api.base_url
    made = open_source(url, SHOP_MAP, auth=KEY, **options)  # type: ignore[arg-type]
    assert isinstance(made, HttpOrderSource)
    made.backoff_s = 0.01
    return made


@pytest.fixture
async def shop(shop_api: ShopApi) -> AsyncIterator[HttpOrderSource]:
    shop_api.add(ORDERS)
    s = source(shop_api)
    try:
        yield s
    finally:
        await s.close()


async def test_reads_every_mapped_field_most_recent_first(
    shop: HttpOrderSource, shop_api: ShopApi
) -> None:
    shop_api.add([order("O-1003", "c-ana", day=20, status="shipped", carrier=None)])
    orders = await shop.for_customer("c-ana")
    assert [o.order_id for o in orders] == ["O-1003", "O-1001", "O-1002"]
    assert orders[1] == Order.model_validate(ORDERS[0])
    assert orders[0].status == "shipped" and orders[0].carrier is None
    assert orders[1].ordered_at == datetime(2026, 10, 2, 10, tzinfo=UTC)
    seen = shop_api.requests[0]
    assert seen.path == "/api/customers/c-ana/orders" and seen.query == "per_page=50"
    assert seen.headers["X-Shop-Key"] == TOKEN
    assert [o.order_id for o in await shop.for_customer("c-ana", limit=1)] == ["O-1003"]


async def test_get_by_id_and_absent_things(shop: HttpOrderSource) -> None:
    assert await shop.get("O-2001") == Order.model_validate(ORDERS[2])
    assert await shop.get("O-404") is None
    assert await shop.for_customer("c-nobody") == []


async def test_it_is_a_source_and_not_a_writer(shop: HttpOrderSource) -> None:
    assert isinstance(shop, OrderSource) and not isinstance(shop, OrderWriter)


async def test_a_wrong_key_is_unavailable_with_a_hint_and_never_shown(
    shop_api: ShopApi, caplog: pytest.LogCaptureFixture
) -> None:
    wrong = "wrong-key-0123456789"
    s = HttpOrderSource(shop_api.base_url, HttpMap.parse(SHOP_MAP), auth=("X-Shop-Key", wrong))
    with pytest.raises(StoreUnavailable, match=r"HTTP 401 \(check BATON_ORDERS_AUTH\)") as raised:
        await s.for_customer("c-ana")
    await s.close()
    assert len(shop_api.requests) == 1  # not retried: another try gets the same answer
    assert wrong not in str(raised.value) and wrong not in repr(s) and "***" in repr(s)
    assert all(wrong not in r.getMessage() for r in caplog.records)


async def test_latency_under_the_timeout_is_waited_for(
    shop_api: ShopApi, shop: HttpOrderSource
) -> None:
    shop_api.delay_s = 0.3
    assert len(await shop.for_customer("c-ana")) == 2


async def test_a_timeout_is_retried_then_unavailable(
    shop_api: ShopApi, caplog: pytest.LogCaptureFixture
) -> None:
    shop_api.add(ORDERS)
    shop_api.delay_s = 1.0
    s = source(shop_api, timeout_s=0.2, retries=2)
    caplog.set_level(logging.WARNING, "baton.orders")
    with pytest.raises(StoreUnavailable, match=r"timed out.*after 3 attempt"):
        await s.for_customer("c-ana")
    await s.close()
    assert len(shop_api.requests) == 3
    retries = [r for r in caplog.records if "retrying" in r.getMessage()]
    assert len(retries) == 2 and all(TOKEN not in r.getMessage() for r in caplog.records)


async def test_5xx_is_retried_with_backoff_until_it_answers(
    shop_api: ShopApi, shop: HttpOrderSource
) -> None:
    shop_api.faults.extend([Fault(status=503), Fault(status=502)])
    assert len(await shop.for_customer("c-ana")) == 2
    assert len(shop_api.requests) == 3


async def test_a_lasting_5xx_is_unavailable_after_the_retries(
    shop_api: ShopApi, shop: HttpOrderSource
) -> None:
    shop_api.down = True
    with pytest.raises(StoreUnavailable, match=r"HTTP 503 \(after 3 attempt"):
        await shop.for_customer("c-ana")
    assert len(shop_api.requests) == 3


async def test_429_waits_for_retry_after(shop_api: ShopApi, shop: HttpOrderSource) -> None:
    shop_api.faults.append(Fault(status=429, headers={"Retry-After": "0.3"}))
    loop = asyncio.get_running_loop()
    started = loop.time()
    assert len(await shop.for_customer("c-ana")) == 2
    assert loop.time() - started >= 0.3 and len(shop_api.requests) == 2


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"<html>maintenance</html>", "the body is not JSON"),
        (b'{"orders": []}', "the body has no list at data"),
        (b'{"data": {"id": "O-1"}}', "the body has no list at data"),
    ],
)
async def test_a_malformed_body_is_unavailable_and_not_retried(
    shop_api: ShopApi, shop: HttpOrderSource, body: bytes, problem: str
) -> None:
    shop_api.faults.append(Fault(body=body))
    with pytest.raises(StoreUnavailable, match=problem):
        await shop.for_customer("c-ana")
    assert len(shop_api.requests) == 1
    # Failures are not cached: the next call asks again and gets the orders.
    assert len(await shop.for_customer("c-ana")) == 2


async def test_an_invalid_entry_is_skipped_and_logged_and_others_kept(
    shop_api: ShopApi, shop: HttpOrderSource, caplog: pytest.LogCaptureFixture
) -> None:
    shop_api.add([order("O-bad", "c-ana")], total={"amount": "-5", "currency": "USD"})
    shop_api.add([order("O-nodate", "c-ana")], created_at=None)
    caplog.set_level(logging.WARNING, "baton.orders")
    assert [o.order_id for o in await shop.for_customer("c-ana")] == ["O-1001", "O-1002"]
    skipped = [r.getMessage() for r in caplog.records]
    assert any("O-bad" in m and "amount" in m for m in skipped)
    assert any("O-nodate" in m and "ordered_at" in m for m in skipped)


async def test_another_customers_order_in_an_answer_is_never_shown(
    shop_api: ShopApi, shop: HttpOrderSource
) -> None:
    mixed = {"data": [shop_json(ORDERS[0]), shop_json(order("O-9", "c-bob")), "junk"]}
    shop_api.faults.append(Fault(body=json.dumps(mixed).encode()))
    assert [o.order_id for o in await shop.for_customer("c-ana")] == ["O-1001"]


async def test_answers_are_cached_briefly_and_shared(shop_api: ShopApi) -> None:
    shop_api.add(ORDERS)
    s = source(shop_api, cache_ttl_s=0.5)
    shop_api.delay_s = 0.2
    together = await asyncio.gather(*(s.for_customer("c-ana") for _ in range(10)))
    assert len(shop_api.requests) == 1 and all(len(o) == 2 for o in together)
    # The customer's list answers a get of one of its orders too.
    assert (await s.get("O-1001")) is not None and len(shop_api.requests) == 1
    await asyncio.sleep(0.6)
    await s.for_customer("c-ana")
    assert len(shop_api.requests) == 2
    await s.close()
    off = source(shop_api, cache_ttl_s=0)
    await off.for_customer("c-ana")
    await off.for_customer("c-ana")
    assert len(shop_api.requests) == 4
    await off.close()


async def test_a_closed_source_and_a_dead_server_are_unavailable(shop: HttpOrderSource) -> None:
    dead = source(f"http://127.0.0.1:{free_port()}/api", retries=1)
    with pytest.raises(StoreUnavailable, match=r"after 2 attempt"):
        await dead.get("O-1")
    await dead.close()
    await shop.close()
    with pytest.raises(StoreUnavailable, match="closed"):
        await shop.for_customer("c-ana")


async def test_a_shop_api_that_is_down_flags_the_ticket(shop_api: ShopApi) -> None:
    shop_api.add(C1_ORDERS)
    s = source(shop_api, retries=1)
    pipeline = in_memory(s)
    shop_api.down = True
    (reply,) = await pipeline.send(ticket("T-1", "My kettle is leaking, I want a refund."))
    assert reply.status == "degraded" and reply.order_id is None
    assert [(d.stage, d.reason) for d in pipeline.dead_letters] == [
        ("lookup", "order_store_unavailable")
    ]
    shop_api.down = False
    (again,) = await pipeline.send(ticket("T-2", "My kettle is leaking, I want a refund.", "S2"))
    assert again.status == "answered" and again.order_id == "O-1"
    await s.close()


async def test_closing_under_a_request_in_flight_is_unavailable(
    shop_api: ShopApi, shop: HttpOrderSource
) -> None:
    shop_api.delay_s = 0.5
    asking = asyncio.create_task(shop.for_customer("c-ana"))
    await asyncio.sleep(0.1)
    await shop.close()
    with pytest.raises(StoreUnavailable, match="closed"):
        await asking


async def test_a_larger_limit_than_the_fetch_in_flight_asks_again(
    shop_api: ShopApi, shop: HttpOrderSource
) -> None:
    shop_api.delay_s = 0.5
    first = asyncio.create_task(shop.for_customer("c-ana"))
    # The larger ask starts once the first fetch is on the wire: their race decides nothing.
    while not shop_api.requests:
        await asyncio.sleep(0.01)
    small, large = await asyncio.gather(first, shop.for_customer("c-ana", 80))
    assert len(small) == len(large) == 2
    assert [s.query for s in shop_api.requests] == ["per_page=50", "per_page=80"]


async def test_a_redirect_is_not_followed_so_the_key_stays_home(
    shop_api: ShopApi, shop: HttpOrderSource
) -> None:
    elsewhere = "http://127.0.0.1:9/collect"
    shop_api.faults.append(Fault(status=302, headers={"Location": elsewhere}))
    with pytest.raises(StoreUnavailable, match="HTTP 302"):
        await shop.for_customer("c-ana")
    assert len(shop_api.requests) == 1


@pytest.mark.parametrize(
    ("customer", "raw_path"),
    [
        ("..", "/api/customers/%2E%2E/orders"),
        (".", "/api/customers/%2E/orders"),
        ("../../admin", "/api/customers/..%2F..%2Fadmin/orders"),
        (
            "gid://shopify/Customer/1029384756",
            "/api/customers/gid%3A%2F%2Fshopify%2FCustomer%2F1029384756/orders",
        ),
        ("ana.silva+orders@example.org", "/api/customers/ana.silva%2Borders%40example.org/orders"),
        ("ANA SILVA?x=1#f", "/api/customers/ANA%20SILVA%3Fx%3D1%23f/orders"),
        ("票-1", "/api/customers/%E7%A5%A8-1/orders"),
    ],
)
async def test_an_id_is_one_path_segment_on_the_wire_and_never_climbs(
    shop_api: ShopApi, customer: str, raw_path: str
) -> None:
    shop_api.add([order("O-7", customer), order("O-8", "c-other")])
    s = source(shop_api)
    try:
        assert [o.order_id for o in await s.for_customer(customer)] == ["O-7"]
        assert shop_api.requests[-1].path == raw_path
        assert await s.get("..") is None
        assert shop_api.requests[-1].path == "/api/orders/%2E%2E"
    finally:
        await s.close()
