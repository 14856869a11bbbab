"""Order sources of the shop's own, through a real worker: its REST API, and a source module
handed to a worker built in code (the shipped example)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixtures.data import ORDERS, days_ago, ticket_record
from tests.fixtures.deployments import Deployment
from tests.fixtures.paths import ROOT
from tests.fixtures.shop_api import AUTH, SHOP_MAP, TOKEN, ShopApi

pytestmark = [pytest.mark.integration, pytest.mark.one_broker]


async def test_a_worker_reads_the_shops_rest_api_and_flags_it_when_down(
    deployment: Deployment, shop_api: ShopApi
) -> None:
    shop_api.add(ORDERS)
    worker = deployment.start_worker(
        BATON_ORDERS_DSN=shop_api.base_url,
        BATON_ORDERS_MAP=json.dumps(SHOP_MAP),
        BATON_ORDERS_AUTH=AUTH,
        BATON_ORDERS_RETRIES="1",
        BATON_ORDERS_TIMEOUT="2",
    )
    p = deployment.namespace
    await deployment.publish_tickets(
        [
            ticket_record(f"{p}-en", f"{p}-s1", "c-ana", "My kettle is leaking, I want a refund."),
            ticket_record(f"{p}-zh", f"{p}-s2", "c-li", "我的水壶漏水了，想退款"),
        ]
    )
    replies = {r.ticket_id: r for r in await deployment.replies(2)}
    assert replies[f"{p}-en"].status == "answered" and replies[f"{p}-en"].order_id == "O-1001"
    assert replies[f"{p}-zh"].order_id == "O-2001" and "O-2001" in replies[f"{p}-zh"].reply
    asked = {s.path for s in shop_api.requests}
    assert {"/api/customers/c-ana/orders", "/api/customers/c-li/orders"} <= asked
    assert all(s.headers.get("X-Shop-Key") == TOKEN for s in shop_api.requests)

    shop_api.down = True
    await deployment.publish_tickets(
        [ticket_record(f"{p}-down", f"{p}-s3", "c-kim", "My kettle is leaking, I want a refund.")]
    )
    down = [r for r in await deployment.replies(3) if r.ticket_id == f"{p}-down"]
    assert down and down[0].status == "degraded" and down[0].order_id is None
    letters = [dl for dl, _ in await deployment.dead_letters(1)]
    assert [(dl.ticket_id, dl.reason) for dl in letters] == [
        (f"{p}-down", "order_store_unavailable")
    ]
    assert worker.proc.poll() is None
    log = worker.log.read_text(errors="replace")
    assert "HTTP 503" in log and TOKEN not in log


async def test_a_worker_built_in_code_with_the_example_source(
    deployment: Deployment, tmp_path: Path
) -> None:
    export = tmp_path / "orders.csv"
    placed, delivered = days_ago(20).isoformat(), days_ago(17).isoformat()
    export.write_text(
        "Order No,Customer,Item,Status,Total,Currency,Placed,Delivered,Carrier\n"
        f"K-77,c-ana,Midea Electric Kettle 1.7L,delivered,39.90,USD,{placed},{delivered},UPS\n",
        encoding="utf-8",
    )
    deployment.start_worker(str(ROOT / "examples" / "csv_orders.py"), SHOP_ORDERS_CSV=str(export))
    p = deployment.namespace
    await deployment.publish_tickets(
        [ticket_record(f"{p}-1", f"{p}-s1", "c-ana", "My kettle is leaking, I want a refund.")]
    )
    (reply,) = await deployment.replies(1)
    assert reply.status == "answered" and reply.order_id == "K-77" and "K-77" in reply.reply
