"""The customer index a store keeps parsed after writing it is what parsing the written bytes
gives: every later read, and every index written from it, the same as reading afresh."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from baton_kafka.schemas.baton import MemoryIndex, OrderMemory, SessionSummary
from baton_kafka.schemas.codec import dumps
from baton_kafka.schemas.records import OfferLine
from baton_kafka.streams.runtime.session.batons import BatonStore
from baton_kafka.streams.testing import MemoryState

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DEMANDS = ["refund", "exchange", "repair", "compensation", "cancel", "information", "other"]
AMOUNTS = [0.0, 5.0, 12.5, 19.99, 100.0, 0.1 + 0.2, 1e-7, 123456.789]


class PlainStore(BatonStore):
    """The plain reading: every read of an index parses the table's bytes."""

    def _keep_index(self, customer_id: str, raw: bytes, index: MemoryIndex) -> None:
        self._forget_index(customer_id)


def _at(rng: random.Random) -> datetime:
    at = NOW - timedelta(days=rng.randint(0, 60), microseconds=rng.randint(0, 10**6))
    # Times as a stage writes them and as a record read back holds them: both zones of UTC.
    return at if rng.random() < 0.5 else at.astimezone(timezone(timedelta(0)))


def _order(rng: random.Random, session: str) -> OrderMemory:
    order_id = f"O-{rng.randint(1, 6)}"
    kinds = rng.sample(["refund", "compensation", "exchange"], rng.randint(0, 2))
    agreed = {
        f"k{rng.randint(1, 9)}": OfferLine(kind=k, order_id=order_id, amount=rng.choice(AMOUNTS))
        for k in kinds
    }
    return OrderMemory(
        order_id=order_id,
        product=rng.choice([None, "Kettle", "Dyson V12 Vacuum Cleaner", "水壶"]),
        demands=rng.sample(DEMANDS, rng.randint(0, 3)),
        problems=rng.sample(["late", "broken", "wrong colour", "not delivered"], rng.randint(0, 2)),
        decision=rng.choice([None, *DEMANDS]),
        told_status=rng.choice([None, "shipped", "delivered"]),
        session_id=session,
        at=_at(rng),
        offered={k: rng.choice(AMOUNTS) for k in kinds},
        agreed=agreed,
    )


def _step(rng: random.Random, store: BatonStore, customer: str) -> None:
    roll = rng.random()
    if roll < 0.75:
        session = f"s{rng.randint(1, 8)}"
        summary = SessionSummary(
            session_id=session,
            ticket_id=f"t{rng.randint(1, 99)}",
            order_id=rng.choice([None, f"O-{rng.randint(1, 6)}"]),
            core_problem=rng.choice(["", "The kettle leaks.", "Wo ist mein Paket?"]),
            at=_at(rng),
            expired=rng.random() < 0.2,
        )
        orders = [_order(rng, session) for _ in range(rng.randint(0, 3))]
        since = rng.choice([None, NOW - timedelta(days=30)])
        store.merge_index(customer, summary, since, orders)
    elif roll < 0.9:
        store.prune_index(customer, NOW - timedelta(days=rng.randint(5, 50)))
    else:
        store.erase_index(customer, NOW - timedelta(days=rng.randint(40, 70)))


def _typed(value: Any) -> Any:
    """``value`` with each leaf's type (a time as its ISO form: either zone object of UTC)."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    if isinstance(value, datetime):
        return ("datetime", value.isoformat())
    return (type(value).__name__, value)


def _read(store: BatonStore, customer: str) -> Any:
    index = store.index(customer)
    return None if index is None else (dumps(index), _typed(index.model_dump()))


def test_an_index_kept_after_its_write_reads_as_its_bytes() -> None:
    for seed in range(60):
        rng_kept, rng_plain = random.Random(seed), random.Random(seed)
        kept, plain = BatonStore(MemoryState(), 5), PlainStore(MemoryState(), 5)
        for _ in range(40):
            customer = f"C{rng_kept.randint(1, 2)}"
            assert customer == f"C{rng_plain.randint(1, 2)}"
            _step(rng_kept, kept, customer)
            _step(rng_plain, plain, customer)
            assert kept.state.customers.data == plain.state.customers.data, seed
            for each in ("C1", "C2"):
                assert _read(kept, each) == _read(plain, each), seed
                assert kept.erased_at(each) == plain.erased_at(each)
                assert kept.earlier(each, "s1") == plain.earlier(each, "s1")


def test_a_written_index_is_read_without_a_parse() -> None:
    store = BatonStore(MemoryState())
    store.merge_index("C1", SessionSummary(session_id="s1", at=NOW), None, [])
    written = store.index("C1")
    assert written is not None and store.index("C1") is written
    # Another writer's bytes (a changelog recovery) are read afresh.
    store.state.customers.put("C1", dumps(MemoryIndex(key="C1")))
    assert store.index("C1") == MemoryIndex(key="C1")
