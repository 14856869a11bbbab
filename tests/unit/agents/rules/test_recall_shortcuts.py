"""What the prompt and the understanding read back from the history, by their short ways, is what
the full resolve gives: no history shows nothing, no clue recalls nothing."""

from __future__ import annotations

import random
from datetime import date, datetime

from baton_kafka.agents.prompts import Facts, HistoryFact, OrderFact, SessionFacts
from baton_kafka.agents.rules.matching import find_product
from baton_kafka.agents.rules.recall import Known, relevant, resolve, resolved
from baton_kafka.agents.rules.time_hints import day_of
from baton_kafka.agents.stages.understand.rule import _recall
from baton_kafka.schemas.baton import OrderMemory
from baton_kafka.schemas.stages import Recall
from tests.unit.agents.rules.test_recall import HISTORY, NOW, ORDERS, _corpus
from tests.unit.agents.rules.texts import every_text


def _plain_relevant(
    message: str, history: list[OrderMemory], orders: list[Known], current: str | None
) -> list[OrderMemory]:
    """The definition: resolve, else the product discussed before that the message names."""
    pointed = resolved(message, history, orders, current=current, now=NOW)
    if pointed is not None:
        return pointed
    by_id = {e.order_id: e for e in history}
    others = [o for o in orders if o.order_id in by_id and o.order_id != current]
    named = find_product(message, [o.product_name for o in others])
    return [by_id[o.order_id] for o in others if o.product_name == named][:1]


def _texts() -> list[str]:
    texts = [case["text"] for case in _corpus()]
    more = list(every_text())
    random.Random(1206).shuffle(more)
    return texts + more[:3000]


def test_the_relevant_history_is_the_plain_reading_with_and_without_history() -> None:
    rng = random.Random(61206)
    shown = 0
    for text in _texts():
        who = rng.choice(list(ORDERS))
        orders, history = ORDERS[who], HISTORY[who]
        some = rng.sample(history, rng.randint(0, len(history)))
        for entries in ([], some, history):
            current = rng.choice([None, *(o.order_id for o in orders)])
            got = relevant(text, entries, orders, current=current, now=NOW)
            assert got == _plain_relevant(text, entries, orders, current), (text, entries)
            shown += bool(got)
    assert shown > 100  # the texts do point back at orders


def _facts(text: str, who: str, rng: random.Random) -> Facts:
    orders = [
        OrderFact(
            order_id=o.order_id,
            product_name=o.product_name,
            status=o.status,
            amount=10.0,
            currency="EUR",
            ordered_at=o.ordered_at.date().isoformat(),
        )
        for o in ORDERS[who]
    ]
    # Often no history at all: the orders alone may then still be recalled by a clue.
    kept = rng.choice([0.0, 0.5, 1.0])
    history = [HistoryFact.of(e) for e in HISTORY[who] if rng.random() < kept]
    return Facts(
        stage="understand",
        ticket_id="t",
        today=NOW.date().isoformat(),
        message=text,
        session=SessionFacts(order_id=rng.choice([None, orders[0].order_id])),
        orders=orders if rng.random() < 0.9 else [],
        history=history,
    )


def _plain_recall(facts: Facts) -> Recall | None:
    """The definition: the history and the orders as the resolver reads them, resolved."""
    history = [
        OrderMemory(
            order_id=h.order_id,
            product=h.product,
            demands=list(h.asked),
            decision=h.decided,
            problems=h.problems,
            session_id="",
            at=datetime.combine(date.fromisoformat(h.at), datetime.min.time(), NOW.tzinfo),
        )
        for h in facts.history
    ]
    orders = [
        Known(
            o.order_id,
            o.product_name,
            o.status,
            datetime.fromisoformat(o.ordered_at + "T00:00:00+00:00"),
        )
        for o in facts.orders
    ]
    now = day_of(facts.today)
    return resolve(facts.message, None, history, orders, current=facts.session.order_id, now=now)


def test_the_understandings_recall_is_the_full_resolve() -> None:
    rng = random.Random(20261206)
    recalled = 0
    for text in _texts():
        facts = _facts(text, rng.choice(list(ORDERS)), rng)
        got = _recall(facts)
        assert got == _plain_recall(facts), text
        recalled += got is not None
    assert recalled > 100  # the texts do hold clues
