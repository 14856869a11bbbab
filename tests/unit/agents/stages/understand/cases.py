"""Facts to hold the understand stage's cheaper readings equal to the plain ones on: every text
the project keeps (all six packs' languages), with the customer's orders named from its corpora."""

from __future__ import annotations

import functools

import orjson

from baton_kafka.agents.prompts import Facts, OrderFact, SessionFacts
from baton_kafka.streams.bench.load import Workload
from tests.fixtures.paths import TEST_DATA
from tests.unit.agents.rules.texts import every_text


@functools.cache
def product_names() -> tuple[str, ...]:
    """The product names of the corpora's orders (typos', six languages', eval's, the bench's)."""
    names: list[str] = []
    for line in (TEST_DATA / "typo_corpus.jsonl").read_bytes().splitlines():
        names += orjson.loads(line)["orders"] if line.strip() else []
    for line in (TEST_DATA / "offline_languages" / "corpus.jsonl").read_bytes().splitlines():
        names += [o["product"] for o in orjson.loads(line)["orders"]] if line.strip() else []
    for line in (TEST_DATA / "eval_orders.jsonl").read_bytes().splitlines():
        names += [orjson.loads(line)["product_name"]] if line.strip() else []
    names += [o.product_name for o in Workload("cpu", 20, 5).orders()]
    return tuple(dict.fromkeys(n for n in names if isinstance(n, str)))


def facts(text: str, names: list[str], product: str | None = None) -> Facts:
    """The understand stage's facts of ``text`` from a customer with orders of ``names``."""
    orders = [
        OrderFact(
            order_id=f"O-{i}",
            product_name=name,
            status="delivered",
            amount=10.0,
            currency="EUR",
            ordered_at="2026-11-01",
        )
        for i, name in enumerate(names)
    ]
    session = SessionFacts(product=product, core_problems=[product] if product else [])
    return Facts(
        stage="understand", ticket_id="t", message=text, session=session, orders=orders,
        today="2026-12-01",
    )  # fmt: skip


def cases(step: int) -> list[Facts]:
    """Every ``step``-th text the project keeps, each with two or three of the corpora's orders
    in turn (and every other one with a session's product); then the typos' corpus."""
    names = product_names()
    out = []
    for i, text in enumerate(every_text()[::step]):
        mine = [names[(i * 7 + k * 13) % len(names)] for k in range(2 + i % 2)]
        out.append(facts(text, mine, names[(i * 5) % len(names)] if i % 2 else None))
    for line in (TEST_DATA / "typo_corpus.jsonl").read_bytes().splitlines():
        case = orjson.loads(line) if line.strip() else {}
        if isinstance(case.get("mention"), str):  # misspelled, with the orders it misspells
            out.append(facts(case["mention"], [n for n in case["orders"] if isinstance(n, str)]))
    return out
