"""The HTTP order map's language: JMESPath paths, baton's money functions, the status table."""

from __future__ import annotations

from typing import Any

import pytest

from baton_kafka.agents.orders.http_map import HttpMap
from baton_kafka.agents.orders.mapping import MapError, lines_name
from baton_kafka.agents.orders.paths import PathError, compiled, read
from baton_kafka.agents.orders.statuses import StatusTable, TableError

SHOPIFY_LIKE: dict[str, Any] = {
    "id": 450789469,
    "customer": {"id": 207119551},
    "x-shop": {"total-price": "19.90", "2024": "leap", "@type": "Order", "a b": 1},
    "fulfillments": [{"tracking_number": "JD0146", "tracking_company": "DHL"}],
    "refunds": [
        {
            "transactions": [
                {"amount": "10.00", "kind": "refund"},
                {"amount": "2.50", "kind": "refund"},
            ]
        },
        {"transactions": [{"amount": "99.00", "kind": "capture"}]},
    ],
}


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("customer.id", 207119551),
        ("", SHOPIFY_LIKE),
        ("fulfillments[0].tracking_number", "JD0146"),
        ("fulfillments[1].tracking_number || 'none'", "none"),
        ("sum_of(refunds[].transactions[?kind == 'refund'][].amount)", 12.5),
        ("sum_of(refunds[].transactions[].amount)", 111.5),
        ("sum_of(nothing[].amount)", 0),
        ("minus('19.90', '4.90')", 15),
        ("times('2', '4.25')", 8.5),
        ("abs(sum_of(['-10.00', '-2.5']))", 12.5),
        # Names JMESPath would not take: a dotted path of them is read as it always was.
        ("x-shop.total-price", "19.90"),
        ("x-shop.2024", "leap"),
        ("x-shop.@type", "Order"),
        ("x-shop.a b", 1),
        ('"x-shop"."total-price"', "19.90"),
        ("missing.path", None),
        ("customer.id.deeper", None),
    ],
)
def test_paths_read_indexes_fallbacks_sums_and_plain_dotted_names(path: str, value: Any) -> None:
    assert read(SHOPIFY_LIKE, path) == value


@pytest.mark.parametrize("path", ["fulfillments[0.tracking", "sum_of(refunds[]", "a || ", "a.-b["])
def test_a_broken_expression_is_one_line_never_read_as_a_name(path: str) -> None:
    with pytest.raises(PathError, match="is not a JMESPath expression") as err:
        compiled(path)
    assert "\n" not in str(err.value)
    with pytest.raises(MapError, match="'fields' carrier"):
        HttpMap.parse({"fields": {"carrier": path}})


def test_a_sum_over_text_that_is_no_number_skips_it_and_a_type_error_reads_nothing() -> None:
    assert read({"a": ["1.5", "n/a", None, 2]}, "sum_of(a)") == 3.5
    assert read({"a": "text"}, "sum(a)") is None


TABLE = [
    {"when": "cancelled_at", "status": "cancelled"},
    {"when": "financial_status == 'refunded'", "status": "refunded"},
    {"when": "fulfillments[?shipment_status == 'delivered']", "status": "delivered"},
    {"when": "fulfillment_status == 'fulfilled'", "status": "shipped"},
    {"status": "paid"},
]


@pytest.mark.parametrize(
    ("order", "status"),
    [
        ({"financial_status": "paid", "cancelled_at": "2026-11-02T10:00:00Z"}, "cancelled"),
        ({"financial_status": "refunded", "fulfillment_status": "fulfilled"}, "refunded"),
        (
            {
                "financial_status": "paid",
                "fulfillment_status": "fulfilled",
                "fulfillments": [
                    {"shipment_status": "in_transit"},
                    {"shipment_status": "delivered"},
                ],
            },
            "delivered",
        ),
        ({"financial_status": "paid", "fulfillment_status": "fulfilled"}, "shipped"),
        ({"financial_status": "paid", "fulfillment_status": None, "cancelled_at": None}, "paid"),
    ],
)
def test_the_status_table_reads_several_fields_first_row_that_holds(
    order: dict[str, Any], status: str
) -> None:
    assert StatusTable.parse(TABLE).status(order) == status


def test_without_a_row_that_holds_the_status_field_is_read_as_before() -> None:
    m = HttpMap.parse(
        {
            "fields": {"status": "state"},
            "status_table": [{"when": "cancelled_at", "status": "cancelled"}],
            "status_values": {"SENT": "shipped"},
        }
    )
    assert m.value({"state": "SENT", "cancelled_at": None}, "status") == "SENT"
    assert m.value({"state": "SENT", "cancelled_at": "2026-11-02"}, "status") == "cancelled"


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        (
            [{"when": "a", "status": "deliverd"}],
            "row 1: status 'deliverd' .*did you mean 'delivered'",
        ),
        ([{"status": "paid"}, {"when": "a[", "status": "paid"}], "row 2: 'a\\[' is not a JMESPath"),
        ([{"if": "a", "status": "paid"}], "row 1 must be"),
        ([], "non-empty list"),
        ({"when": "a"}, "non-empty list"),
    ],
)
def test_a_status_table_mistake_is_one_line_naming_the_row(table: Any, problem: str) -> None:
    with pytest.raises(TableError, match=problem):
        StatusTable.parse(table)
    with pytest.raises(MapError, match=problem):
        HttpMap.parse({"status_table": table})


@pytest.mark.parametrize(
    ("names", "name"),
    [
        ([], None),
        (["Summit Down Jacket"], "Summit Down Jacket"),
        (["Kettle", "Blender"], "Kettle, Blender"),
        (["Kettle", "Blender", "Toaster", "Mug"], "Kettle, Blender (+2)"),
    ],
)
def test_an_order_without_a_name_is_named_after_its_lines(names: list[str], name: str) -> None:
    assert lines_name(names) == name


def test_a_derived_name_never_replaces_the_one_the_shop_gives() -> None:
    m = HttpMap.parse({"fields": {"product_name": "title || null", "items": "lines"}})
    body = {
        "order_id": "1",
        "customer_id": "c",
        "status": "paid",
        "amount": "30.00",
        "ordered_at": "2026-11-02T10:00:00Z",
        "lines": [{"product_name": "Kettle", "amount": 20}, {"product_name": "Mug", "amount": 10}],
    }
    named = m.fields.order(lambda ours: m.value(body | {"title": "Kitchen set"}, ours), "t")
    derived = m.fields.order(lambda ours: m.value(body | {"title": ""}, ours), "t")
    assert named is not None and named.product_name == "Kitchen set"
    assert derived is not None and derived.product_name == "Kettle, Mug"
