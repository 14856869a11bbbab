"""A local server shaped like Shopify's Admin REST orders API, holding a few bookshop orders.

Try ``examples/orders/shopify.json`` against it before pointing baton at a real shop:

    python examples/orders/shopify_server.py --port 8089 &
    export BATON_ORDERS_DSN=http://127.0.0.1:8089/admin/api/2024-10
    export BATON_ORDERS_MAP=examples/orders/shopify.json
    export BATON_ORDERS_AUTH="X-Shopify-Access-Token: shpat_example"
    baton check --customer 207119551

It answers ``GET /orders.json?customer_id=…`` (``{"orders": [...]}``, empty for an unknown
customer), ``GET /orders.json?name=…`` (the order a customer sees as ``#1001``) and
``GET /orders/{id}.json`` (``{"order": {...}}``), and wants ``X-Shopify-Access-Token``. Its orders
are JSON as Shopify writes them: amounts as text, no product name of their own, the carrier and
tracking inside ``fulfillments``, refunds as transactions. Standard library only.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

PREFIX = "/admin/api/2024-10"
TOKEN = "shpat_example"


def shopify_order(
    oid: int,
    customer: int,
    lines: list[tuple[str, int, str]],
    *,
    total: str,
    number: int | None = None,
    prefix: str = "#",
    financial: str = "paid",
    fulfillment: str | None = None,
    shipment: str | None = None,
    cancelled_at: str | None = None,
    refunds: tuple[str, ...] = (),
    created_at: str = "2026-11-02T10:00:00-05:00",
    delivered_at: str = "2026-11-06T15:30:00-05:00",
) -> dict[str, Any]:
    """An order as Shopify's ``GET /orders/{id}.json`` writes it: ``name``, the one the customer
    sees, is ``prefix`` and ``number`` (``#1001``; the last four digits of ``oid`` by default)."""
    shown = oid % 10000 if number is None else number
    fulfillments = []
    if fulfillment or shipment:
        fulfillments.append(
            {
                "id": oid * 10,
                "status": "success",
                "shipment_status": shipment,
                "tracking_company": "DHL Express",
                "tracking_number": f"JD01460000{oid}",
                "created_at": "2026-11-03T09:00:00-05:00",
                "updated_at": delivered_at if shipment == "delivered" else created_at,
            }
        )
    return {
        "id": oid,
        "name": f"{prefix}{shown}",
        "order_number": shown,
        "email": f"customer{customer}@example.org",
        "customer": {"id": customer, "email": f"customer{customer}@example.org"},
        "created_at": created_at,
        "currency": "EUR",
        "total_price": total,
        "financial_status": financial,
        "fulfillment_status": fulfillment,
        "cancelled_at": cancelled_at,
        "line_items": [
            {
                "id": oid * 100 + n,
                "title": title,
                "quantity": qty,
                "price": price,
                "sku": f"SKU-{n}",
                "discount_allocations": [],
            }
            for n, (title, qty, price) in enumerate(lines)
        ],
        "fulfillments": fulfillments,
        "refunds": [
            {
                "id": oid * 1000 + n,
                "transactions": [
                    {"amount": amount, "kind": "refund", "status": "success"},
                    {"amount": "99.00", "kind": "refund", "status": "failure"},
                ],
            }
            for n, amount in enumerate(refunds)
        ],
    }


# The bookshop's orders of docs/shop.md as Shopify holds them: the shop's order names start with
# "LL-" (Shopify's order number prefix); Maria Keller is customer 207119551, Tom Harris
# 207119552, Jonas Weber 207119553.
BOOKSHOP = [
    shopify_order(
        5610000001,
        207119551,
        [("Der Zauberberg (Taschenbuch)", 1, "16.00")],
        total="16.00",
        number=100301,
        prefix="LL-",
        fulfillment="fulfilled",
        shipment="delivered",
        created_at="2026-11-20T10:00:00+01:00",
        delivered_at="2026-11-23T12:00:00+01:00",
    ),
    shopify_order(
        5610000002,
        207119552,
        [("Remains of the Day (Hardcover)", 1, "24.00")],
        total="24.00",
        number=100302,
        prefix="LL-",
        fulfillment="fulfilled",
        shipment="in_transit",
        created_at="2026-11-27T09:00:00+01:00",
    ),
    shopify_order(
        5610000003,
        207119553,
        [("Die Vermessung der Welt (Vorbestellung)", 1, "22.00")],
        total="22.00",
        number=100303,
        prefix="LL-",
        created_at="2026-11-29T08:00:00+01:00",
    ),
]


def answer(orders: Mapping[str, dict[str, Any]], path: str, query: str = "") -> tuple[int, Any]:
    """The status and JSON body Shopify gives for ``path`` (under ``PREFIX``) and ``query``."""
    rest = unquote(path.removeprefix(PREFIX))
    args = parse_qs(query)
    if rest == "/orders.json":
        if "name" in args:
            # Shopify matches the name with or without its "#".
            wanted = args["name"][0].lstrip("#")
            found = [o for o in orders.values() if str(o["name"]).lstrip("#") == wanted]
            return 200, {"orders": found}
        customer = args.get("customer_id", [""])[0]
        mine = [o for o in orders.values() if str(o["customer"]["id"]) == customer]
        return 200, {"orders": mine[: int(args.get("limit", ["50"])[0])]}
    if rest.startswith("/orders/") and rest.endswith(".json"):
        one = orders.get(rest.removeprefix("/orders/").removesuffix(".json"))
        return (200, {"order": one}) if one else (404, {"errors": "Not Found"})
    return 404, {"errors": "Not Found"}


def server(
    host: str, port: int, orders: list[dict[str, Any]], token: str = TOKEN
) -> ThreadingHTTPServer:
    """An HTTP server (not started) answering for ``orders`` to requests carrying ``token``."""
    held = {str(o["id"]): o for o in orders}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            if self.headers.get("X-Shopify-Access-Token") != token:
                status, body = 401, {"errors": "[API] Invalid API key or access token"}
            else:
                status, body = answer(held, url.path, url.query)
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    made = ThreadingHTTPServer((host, port), Handler)
    made.daemon_threads = True
    return made


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument("--token", default=TOKEN, help="the access token it wants")
    args = parser.parse_args(argv)
    made = server(args.host, args.port, BOOKSHOP, args.token)
    port = made.server_address[1]
    print(f"listening on http://{args.host}:{port}{PREFIX}", flush=True)
    try:
        made.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        made.server_close()


if __name__ == "__main__":
    main()
