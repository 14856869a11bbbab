"""An action's idempotency key is a function of what the action is for, and never changes."""

from __future__ import annotations

import hashlib
import random

from baton_kafka.schemas.action import KEY_CHARS, idempotency_key
from baton_kafka.schemas.records import OfferLine


def _written(parts: tuple[str, ...]) -> str:
    """The key as the shop's systems have always been sent it, computed here on its own."""
    digest = hashlib.sha256(b"baton-action\0" + "\0".join(parts).encode()).hexdigest()
    return "bt-" + digest[: KEY_CHARS - 3]


def test_the_key_is_the_same_however_often_and_in_whatever_order_it_is_asked() -> None:
    rng = random.Random(3)
    kinds = ("refund", "replacement", "voucher", "discount")
    asked = []
    for n in range(3000):
        line = OfferLine(
            kind=rng.choice(kinds),
            order_id=f"O-{rng.randrange(40)}",
            amount=rng.choice((5.0, 19.99, 250.0)),
            currency="EUR",
            item=rng.choice((None, "Kettle 1500", "Forerunner 265", "水壶")),
        )
        session, ticket = f"s-{rng.randrange(30)}", f"t-{rng.randrange(60)}"
        index = rng.randrange(3)
        asked.append((session, ticket, index, line))
        if n % 7 == 0:  # asked again later, as each later ticket's history asks
            asked.append(asked[rng.randrange(len(asked))])
    for session, ticket, index, line in asked:
        parts = (session, ticket, str(index), line.kind, line.order_id, line.item or "")
        assert idempotency_key(session, ticket, index, line) == _written(parts)


def test_the_amount_is_not_part_of_the_key() -> None:
    line = OfferLine(kind="refund", order_id="O-1", amount=19.99, currency="EUR")
    rounded = line.model_copy(update={"amount": 20.0})
    assert idempotency_key("s", "t", 0, line) == idempotency_key("s", "t", 0, rounded)
    assert idempotency_key("s", "t", 0, line) != idempotency_key("s", "t", 1, line)
    assert idempotency_key("s", "t", 0, line) == _written(("s", "t", "0", "refund", "O-1", ""))
