"""The session's topics a prompt shows, made as models only for those shown: held to the plain
reading that makes one for every ticket about an order."""

from __future__ import annotations

import random

from baton_kafka.agents.prompts import SessionTopic, _topics
from baton_kafka.schemas.baton import Baton, TicketMemory

_DEMANDS = [None, "information", "refund", "exchange", "cancel"]


def _plain(baton: Baton, ticket_id: str) -> list[SessionTopic]:
    """The definition: the latest topic per order, most recently discussed first (at most 5)."""
    latest: dict[str, SessionTopic] = {}
    for t in baton.tickets:
        if t.order_id and t.ticket_id != ticket_id:
            known = latest.pop(t.order_id, None)
            asked = t.demand if t.demand != "information" or known is None else known.demand
            latest[t.order_id] = SessionTopic(
                order_id=t.order_id,
                product=t.product,
                demand=asked,
                problem=t.problem or (known.problem if known else None),
            )
    return list(reversed(latest.values()))[:5]


def _baton(rng: random.Random) -> Baton:
    tickets = [
        TicketMemory(
            ticket_id=f"T{i}",
            core_problem="",
            order_id=rng.choice([None, *(f"O-{k}" for k in range(8))]),
            product=rng.choice([None, "Kettle", "水壶", "Lamp"]),
            problem=rng.choice([None, "", "leaking", "late"]),
            demand=rng.choice(_DEMANDS),  # type: ignore[arg-type]
        )
        for i in range(rng.randint(0, 14))
    ]
    return Baton(session_id="S", customer_id="C", tickets=tickets)


def test_topics_are_the_plain_reading_on_generated_sessions() -> None:
    rng = random.Random(20261206)
    for _ in range(3000):
        baton = _baton(rng)
        ticket_id = rng.choice(["T0", "T3", "T9", "none"])
        got, want = _topics(baton, ticket_id), _plain(baton, ticket_id)
        assert [t.model_dump() for t in got] == [t.model_dump() for t in want]
        assert got == want
