"""The names a product goes by, each word scored once and read once for every anchor: held to
the plain reading that scores every word as said against every anchor, over the test corpora."""

from __future__ import annotations

import random

from baton_kafka.agents.guards.drift import ADDRESSED, product_names
from baton_kafka.agents.rules.matching import mentioned_products, product_score
from baton_kafka.schemas.baton import Baton
from baton_kafka.schemas.records import Order
from baton_kafka.schemas.stages import Understanding
from tests.fixtures.paths import data_rows

_ORDERS = [Order.model_validate(row) for row in data_rows("guard_orders.jsonl")]
_DRIFT = data_rows("drift_corpus.jsonl")
_TICKETS = data_rows("eval_tickets.jsonl")
_MESSAGES = [r["message"] for r in _DRIFT] + [r["text"] for r in _TICKETS]
_WORDS = sorted(
    {o.product_name for o in _ORDERS}
    | {w for r in _DRIFT for w in r["products_mentioned"]}
    | {"kettle", "headphones", "水壶", "耳机", " ", "Kettle"}
)


def _plain(order: Order | None, u: Understanding, baton: Baton, message: str) -> list[str]:
    """The definition: every word the customer said, scored against each anchor."""
    names = order.products() if order else []
    anchors = list(dict.fromkeys(n for n in (*names, u.product) if n))
    if not anchors:
        return []
    words = [*mentioned_products(message), baton.product or "", *baton.products_mentioned]
    own = [w for w in words if w and any(product_score(w, a) >= ADDRESSED for a in anchors)]
    return list(dict.fromkeys([*anchors, *own]))


def test_product_names_are_the_plain_reading_over_the_corpora() -> None:
    rng = random.Random(20261206)
    kept = 0
    for _ in range(1500):
        order = rng.choice([None, *_ORDERS])
        product = rng.choice([None, *_WORDS])
        u = Understanding.model_construct(product=product)
        said = [rng.choice(_WORDS) for _ in range(rng.randint(0, 5))]
        said += rng.sample(said, k=min(len(said), rng.randint(0, 3)))  # words said twice
        baton = Baton(
            session_id="S",
            product=rng.choice([None, "", *_WORDS]),
            products_mentioned=said,
        )
        message = rng.choice(_MESSAGES)
        got = product_names(order, u, baton, message)
        assert got == _plain(order, u, baton, message)
        kept += len(got) > len({*(order.products() if order else []), product} - {None})
    assert kept > 100  # the customer's own words were kept often enough to compare
