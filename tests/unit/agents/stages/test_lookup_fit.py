"""The look-up's fit of the product as written, taken from its corrected scores when no word of
it was corrected: what scoring it anew gives, on the typo corpus and the eval's products."""

from __future__ import annotations

import json

from baton_kafka.agents.rules.matching import order_score
from baton_kafka.agents.stages.lookup.agent import _mention, mention_scores, product_fit
from baton_kafka.schemas.records import Order
from baton_kafka.schemas.stages import Understanding
from tests.fixtures.paths import ROOT


def _rows(name: str) -> list[dict[str, object]]:
    lines = (ROOT / "tests/data" / name).read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _orders() -> list[list[Order]]:
    """Each eval customer's orders, and each typo case's as orders of one customer."""
    by_customer: dict[str, list[Order]] = {}
    for row in _rows("eval_orders.jsonl"):
        order = Order.model_validate(row)
        by_customer.setdefault(str(order.customer_id), []).append(order)
    template = next(iter(by_customer.values()))[0]
    made = [
        [
            template.model_copy(update={"order_id": f"T-{i}-{j}", "product_name": name})
            for j, name in enumerate(row["orders"])  # type: ignore[attr-defined]
        ]
        for i, row in enumerate(_rows("typo_corpus.jsonl"))
    ]
    return [*by_customer.values(), *made]


def _products(orders: list[Order]) -> list[str | None]:
    said = [str(row["mention"]) for row in _rows("typo_corpus.jsonl")]
    return [None, "", *said, *(name for o in orders for name in o.products())]


def test_the_fit_is_the_product_scored_anew() -> None:
    corrected = 0
    for orders in _orders():
        for product in _products(orders):
            u = Understanding.model_construct(product=product)
            mention = _mention(u, orders)
            scores = mention_scores(u, orders)
            plain = {
                o.order_id: order_score(product, o.products()) if product else 0.0 for o in orders
            }
            assert product_fit(product, mention, scores, orders) == plain, product
            corrected += mention != product and plain != scores
    # Misspelled products whose scores differ once corrected put the shortcut to the test.
    assert corrected > 50
