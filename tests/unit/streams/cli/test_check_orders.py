"""``baton check`` on an HTTP order source: the credential, and what the map reads, by field."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from baton_kafka.streams.cli.main import main
from tests.fixtures.paths import ROOT
from tests.fixtures.shop_shapes import (
    SHOPIFY_AUTH,
    WOO_AUTH,
    ShopifyApi,
    WooApi,
    shopify_order,
    woo_order,
)

EXAMPLES = ROOT / "examples" / "orders"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in [n for n in list(os.environ) if n.startswith(("BATON_", "ANTHR"))]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BATON_BROKER", f"kafka://127.0.0.1:{_closed_port()}")
    monkeypatch.setenv("BATON_LLM", "offline")
    return monkeypatch


def orders_lines(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    main(["check", "--timeout", "3", *args])
    out = capsys.readouterr().out.splitlines()
    return [
        line for line in out if line.startswith(("ok   orders", "warn orders", "FAIL orders", " "))
    ]


@pytest.fixture
def shopify(shopify_api: ShopifyApi, env: pytest.MonkeyPatch) -> ShopifyApi:
    shopify_api.add_raw(
        shopify_order(
            450789469,
            207119551,
            [("Summit Down Jacket", 1, "189.00")],
            total="189.00",
            fulfillment="fulfilled",
            shipment="delivered",
            refunds=("12.50",),
        )
    )
    env.setenv("BATON_ORDERS_DSN", shopify_api.base_url)
    env.setenv("BATON_ORDERS_MAP", str(EXAMPLES / "shopify.json"))
    env.setenv("BATON_ORDERS_AUTH", SHOPIFY_AUTH)
    return shopify_api


def test_check_customer_prints_each_field_and_the_path_it_came_from(
    shopify: ShopifyApi, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = orders_lines(capsys, "--customer", "207119551")
    assert lines[0] == (
        f"ok   orders: {shopify.base_url} answers for customer 207119551: 1 order(s), 1 valid, "
        "as baton sees them:"
    ), lines
    shown = {line.split()[0]: line.split(None, 1)[1] for line in lines[2:-1]}
    assert shown["status"] == "'delivered'  <- status_table row 3"
    assert shown["refunded"].startswith("12.5  <- sum_of(refunds[]")
    assert shown["carrier"] == "'DHL Express'  <- fulfillments[0].tracking_company"
    assert shown["product_name"] == "'Summit Down Jacket'  (named after its lines)"
    assert shown["delivered_at"].startswith("2026-11-06T15:30:00-05:00  <- fulfillments[?")
    assert lines[-1] == "ok   orders map: every path read a value"


def test_check_customer_names_each_path_that_read_nothing(
    shopify: ShopifyApi,
    env: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The dotted paths a first map tries: nothing in a Shopify order is at either.
    mapping = json.loads((EXAMPLES / "shopify.json").read_text("utf-8"))
    mapping["fields"] |= {"carrier": "shipping.carrier", "delivered_at": "delivered_at"}
    (tmp_path / "map.json").write_text(json.dumps(mapping), "utf-8")
    env.setenv("BATON_ORDERS_MAP", str(tmp_path / "map.json"))
    lines = orders_lines(capsys, "--customer", "207119551")
    assert "       carrier                  —  <- shipping.carrier  (read nothing)" in lines, lines
    assert lines[-1] == (
        "warn orders map: 2 path(s) read nothing: delivered_at <- delivered_at (in 1 of 1); "
        "carrier <- shipping.carrier (in 1 of 1)"
    )


def test_without_a_customer_check_says_what_it_could_not_verify(
    shopify: ShopifyApi, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = orders_lines(capsys)
    assert lines == [
        f"ok   orders: {shopify.base_url} answers and takes the credential",
        "warn orders map: not verified: the made-up customer 'baton-check' has no orders, so no "
        "path was read; run `baton check --customer ID` with a customer who has orders",
    ]
    assert not any("answers" in line and "map" in line for line in lines[1:])


def test_a_refused_credential_names_the_setting_to_look_at(
    shopify: ShopifyApi, env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env.setenv("BATON_ORDERS_AUTH", "X-Shopify-Access-Token: shpat_wrong")
    wrong = orders_lines(capsys)
    assert wrong == [
        f"FAIL orders: {shopify.base_url} refused the credential (HTTP 401): check "
        "BATON_ORDERS_AUTH (sent as X-Shopify-Access-Token; the value is not shown)"
    ]
    assert "shpat_wrong" not in wrong[0]
    env.delenv("BATON_ORDERS_AUTH")
    assert orders_lines(capsys, "--customer", "207119551") == [
        f"FAIL orders: {shopify.base_url} refused the credential (HTTP 401): BATON_ORDERS_AUTH "
        "is not set: set it to the header the API wants ('Name: value')"
    ]


def test_an_api_that_refuses_a_made_up_customer_is_not_called_verified(
    woo_api: WooApi, env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    woo_api.add_raw(woo_order(727, 25, [("Trail Backpack 30L", 1, "89.00")], total="89.00"))
    env.setenv("BATON_ORDERS_DSN", woo_api.base_url)
    env.setenv("BATON_ORDERS_MAP", str(EXAMPLES / "woocommerce.json"))
    env.setenv("BATON_ORDERS_AUTH", WOO_AUTH)
    (line,) = orders_lines(capsys)
    assert line.startswith(f"warn orders: {woo_api.base_url} refused the made-up customer")
    assert "neither the credential nor the map is verified" in line
    lines = orders_lines(capsys, "--customer", "25")
    assert lines[0].startswith("ok   orders:") and "1 valid" in lines[0]
    assert any(line.split()[:2] == ["status", "'paid'"] for line in lines), lines
    # No tracking extension's entry, no SKU: each path the map names that read nothing is named;
    # a field the map leaves out (delivered_at) is shown but not counted.
    assert lines[-1].startswith("warn orders map: 3 path(s) read nothing: carrier <- meta_data")
    assert "tracking_no <- meta_data" in lines[-1] and "items[0].sku <- sku || null" in lines[-1]
    assert "delivered_at" not in lines[-1]
    assert (
        "       delivered_at             —  (read nothing: the map names no path, "
        "'delivered_at' is empty)" in lines
    )


def test_check_customer_on_baton_s_own_store_prints_each_order_as_stored(
    env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import asyncio

    from baton_kafka.agents.orders import SQLiteOrderStore
    from tests.fixtures.data import order

    env.setenv("BATON_DATA_DIR", str(tmp_path / "data"))
    (tmp_path / "data").mkdir()
    store = SQLiteOrderStore(tmp_path / "data" / "orders.sqlite3")
    asyncio.run(store.upsert([order("O-1", "C1", product_name="Kettle", carrier="SF")]))
    asyncio.run(store.close())
    lines = orders_lines(capsys, "--customer", "C1")
    assert lines[0].endswith("answers for customer C1: 1 order(s):"), lines
    assert "     order O-1:" in lines
    assert "       product_name             'Kettle'" in lines
    assert "       delivered_at             —" in lines
    assert orders_lines(capsys, "--customer", "C404")[0].endswith(
        "answers, but customer 'C404' has no orders"
    )
