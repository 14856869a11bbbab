"""The order-facts check reads a reply's status claims as the plain reading did: the same
problems in the same order on the corpora and on generated replies in every shipped language."""

from __future__ import annotations

import random
import typing

from baton_kafka.agents.guards import CustomerOrders, reading
from baton_kafka.agents.guards import order_facts as of
from baton_kafka.agents.guards.order_facts import fact_problems
from baton_kafka.schemas import Order, StrategyDraft
from tests.fixtures.data import order
from tests.unit.agents.rules.texts import every_text

STATUSES = (
    *typing.get_args(typing.get_args(Order.model_fields["status"].annotation)[0]),
    "in_transit",
)
# Claims, conditions and the order's own names, spliced into the texts so each branch is met.
PIECES = [
    "has been delivered",
    "was delivered",
    "is delivered",
    "is still in transit",
    "is on its way",
    "has shipped",
    "has been shipped",
    "已签收",
    "运输中",
    "已发货",
    "once it is delivered",
    "签收后",
    "if it has been shipped",
    "wurde zugestellt",
    "O-7",
    "Product O-7",
    "DHL",
    "顺丰",
]


def _plain(draft: StrategyDraft, books: CustomerOrders) -> list[str]:
    """``fact_problems`` as it read before: every sentence's condition words searched first."""
    order = books.matched
    if order is None:
        return []
    text = reading.normalise(draft.reply)
    problems = of.carrier_problems(order, text)  # unchanged: only the status claims are
    status = str(order.status)
    for sentence in of._SENTENCE_END.split(text):
        if of._CONDITIONAL.search(sentence):
            continue
        about = order.order_id in sentence or any(n in sentence for n in order.products())
        if not about:
            continue
        if status in of._NOT_ARRIVED and of._DELIVERED.search(sentence):
            claim = "delivered"
        elif status in of._NOT_TRAVELLING and of._IN_TRANSIT.search(sentence):
            claim = "on its way"
        else:
            continue
        problems.append(of.wrong_status(order, claim))
    return list(dict.fromkeys(problems))


def _draft(reply: str) -> StrategyDraft:
    return StrategyDraft(
        solution="-", reply=reply, internal_note="-", confidence=0.9, needs_human=False
    )


def _replies() -> list[str]:
    rng = random.Random(11)
    texts = list(every_text())
    spliced = []
    for text in texts[:8000]:
        parts = [text, *rng.sample(PIECES, rng.randint(1, 4))]
        rng.shuffle(parts)
        spliced.append(rng.choice([" ", ". ", "。", "\n", ", "]).join(parts))
    return [t for t in (*texts, *spliced) if t.strip()]


def test_the_status_claims_are_the_plain_readings_in_every_language() -> None:
    replies = _replies()
    orders = [order("O-7", status=s, carrier=c) for s in STATUSES for c in (None, "DHL")]
    found = 0
    for i, reply in enumerate(replies):
        matched = orders[i % len(orders)]
        books = CustomerOrders(matched=matched, orders=[matched], known_ids=frozenset())
        draft = _draft(reply)
        got = fact_problems(draft, books)
        assert got == _plain(draft, books), (reply, matched.status)
        found += any("reply says order" in p for p in got)
    assert found > 200


def _searched(text: str) -> list[tuple[str, str, int, int]]:
    """The example ids of ``text`` as the pattern alone finds them, with no digit check first."""
    return [
        (of._EXAMPLE_IDS[m.group().casefold()], m.group(), m.start(), m.end())
        for m in of._EXAMPLE.finditer(text)
    ]


def test_the_example_ids_are_found_as_the_pattern_alone_finds_them() -> None:
    rng = random.Random(7)
    ids = list(of._EXAMPLE_IDS)
    # Each id as written, in capitals, with a long s, glued to a word, with wide digits.
    variants = [
        v
        for i in ids
        for v in (i, i.upper(), i.replace("s", "ſ"), f"x{i}", f"{i}9", i.translate(_WIDE))
    ]
    texts = list(every_text())
    spliced = []
    for text in texts[:3000]:
        at = rng.randrange(len(text) + 1)
        spliced.append(f"{text[:at]} {rng.choice(variants)} {text[at:]}")
    found = 0
    for text in [*texts, *spliced, *variants]:
        got = [(c.kind, c.value, c.start, c.end) for c in of._example_copies(text)]
        assert got == _searched(text), text
        found += bool(got)
    assert found > 1000


_WIDE = str.maketrans("0123456789", "０１２３４５６７８９")
