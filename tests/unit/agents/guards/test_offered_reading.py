"""The offer check reads a text's multiplied and repeated money as the plain reading did: the
same problems in the same order on the corpora and on generated texts in every shipped
language, money, promises, multipliers and repeats spliced in."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence

from baton_kafka.agents.guards import offered
from baton_kafka.agents.guards.money import PROMISE, money, sentences
from baton_kafka.agents.policy.offer import cents
from baton_kafka.schemas.records import OfferLine, Order
from tests.fixtures.data import order
from tests.unit.agents.rules.texts import every_text

PIECES = [
    "We will refund you 39.90 USD",
    "you get 20 EUR back",
    "we refund 120",
    "我们将退款80元",
    "返金します 500円",
    "Wir erstatten 25 €",
    "Le remboursement de 30 €",
    "Le reembolsaremos 15 €",
    "double",
    "twice the amount",
    "every month",
    "monthly",
    "2x",
    "x 3",
    "两倍",
    "每月",
    "毎月",
    "倍額",
    "monatlich",
    "das doppelte",
    "cada mes",
    "el doble",
    "chaque mois",
    "le double",
    "a grand",
    "a further 10 USD",
    "store credit",
]


def _plain(
    text: str,
    lines: Sequence[OfferLine],
    matched: Order | None,
    prices: Sequence[float],
    skip: list[tuple[int, int]],
) -> Iterator[str]:
    """``offered.problems`` as it read before: each sentence searched for a promise."""
    w = offered._w()
    yield from offered._channels(text, lines)
    if hit := w.FREE_ORDER.search(text):
        yield f"gives away a future order ({hit.group()}): never a free or discounted next order"
    amounts = [cents(line.amount) for line in lines if line.amount]
    paid = [matched.amount, *(i.total for i in matched.items)] if matched else None
    found = money(text, skip, (), carry=True)
    spans = sentences(text)
    for m in found:
        around = next((text[a:b] for a, b in spans if a <= m.at <= b), text)
        yield from offered._one(
            m, around, amounts, paid, prices, matched, offered._clause(text, m.at)
        )
    for start, end in spans:
        sentence = text[start:end]
        if hit := w.A_GRAND.search(sentence):
            yield f"mentions money ({hit.group()}) that is not a line of the offer"
        with_money = any(start <= m.at <= end for m in found)
        if not (with_money or PROMISE.search(sentence)):
            continue
        if hit := w.MULTIPLIER.search(sentence):
            yield f"multiplies money ({hit.group()}): state each amount as the offer's lines"
        if hit := w.RECURRING.search(sentence):
            yield f"promises money repeatedly ({hit.group()}): an offer line is paid once"
    yield from offered._on_top(text, found)
    yield from offered._twice(text, found, spans, amounts)


def _texts() -> list[str]:
    rng = random.Random(5)
    texts = list(every_text())
    spliced = []
    for text in texts[:8000]:
        parts = [text, *rng.sample(PIECES, rng.randint(1, 4))]
        rng.shuffle(parts)
        spliced.append(rng.choice([" ", ". ", "。", "\n", ", ", "! "]).join(parts))
    return [*texts, *spliced]


def test_the_offer_problems_are_the_plain_readings_in_every_language() -> None:
    line = OfferLine(kind="refund", order_id="O-7", amount=39.9, currency="USD", conditions=[])
    cases = [([line], order("O-7", amount=39.9), [39.9]), ([], None, [])]
    scaled = 0
    for i, text in enumerate(_texts()):
        lines, matched, prices = cases[i % 2]
        got = list(offered.problems(text, lines, matched, prices, []))
        assert got == list(_plain(text, lines, matched, prices, [])), text
        scaled += any(p.startswith(("multiplies", "promises money repeatedly")) for p in got)
    assert scaled > 500
