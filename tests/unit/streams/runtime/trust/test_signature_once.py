"""A record's signature is checked once per delivery, and the verdict kept is always the one the
signer gives for the delivery as it is now."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from typing import Any

import pytest

from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.schemas import dumps
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.runtime.records.delivery import Delivery
from baton_kafka.streams.runtime.records.placement import session_partition
from baton_kafka.streams.runtime.records.signing import Signer
from tests.fixtures.data import ticket
from tests.fixtures.pipelines import in_memory

KEYS = (("k1", "a-secret-of-thirty-two-characters"),)
OTHER_KEYS = (("k2", "another-secret-of-thirty-two-chars"),)


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many times a signer checked a record, in one counter."""
    calls = [0]
    problem = Signer.problem

    def counted(self: Signer, *args: Any, **kwargs: Any) -> str | None:
        calls[0] += 1
        return problem(self, *args, **kwargs)

    monkeypatch.setattr(Signer, "problem", counted)
    yield calls


def test_the_verdict_kept_is_the_signers_for_the_delivery_as_it_is_now() -> None:
    signers = [Signer(KEYS), Signer(OTHER_KEYS), Signer(KEYS + OTHER_KEYS), Signer()]
    topics = ["u.support.sessions", "u.support.understood"]
    value = b'{"a": 1}'
    signed = {
        (s, t, k): s.headers(t, k, value)
        for s, t, k in itertools.product(signers[:3], topics, ["S1", "S2", None])
    }
    header_sets: list[Any] = [
        None,
        [],
        *signed.values(),
        [("x", b"y")],
        dict(signed[next(iter(signed))]),
    ]
    values: list[Any] = [value, b'{"a": 2}', None, b""]
    pools: list[list[Any]] = [signers, topics, ["S1", "S2", ""], header_sets, values]
    # One delivery asked again and again, one of what the verdict is made of changed before
    # each ask (the others left as they were): each answer must be the signer's own.
    state: list[Any] = [signers[0], topics[0], "S1", signed[(signers[0], topics[0], "S1")], value]
    delivery = Delivery(value, Source(key="S1"))
    rng = random.Random(7)
    trusted = 0
    for _ in range(4000):
        which = rng.randrange(len(pools))
        state[which] = rng.choice(pools[which])
        signer, topic, key, headers, v = state
        delivery.source, delivery.headers, delivery.value = Source(key=key), headers, v
        for _ in range(2):
            got = delivery.problem(signer, topic)
            assert got == signer.problem(topic, key, v, headers)
        trusted += got is None
    assert 0 < trusted < 4000
    # Headers changed in place under the same list object are read again too.
    headers = list(signed[(signers[0], topics[0], "S1")])
    delivery = Delivery(value, Source(key="S1"), headers)
    assert delivery.problem(signers[0], topics[0]) is None
    headers[0] = ("baton-signature", b"k1:0000")
    assert delivery.problem(signers[0], topics[0]) is not None
    # A bytearray's verdict is never reused: it may change under the same object.
    mutable = bytearray(value)
    delivery = Delivery(mutable, Source(key="S1"), signed[(signers[0], topics[0], "S1")])  # type: ignore[arg-type]
    assert delivery.problem(signers[0], topics[0]) is None
    mutable[0:1] = b"["
    assert delivery.problem(signers[0], topics[0]) is not None


async def test_the_admission_check_and_the_stage_check_a_signature_once(
    store: SQLiteOrderStore, checks: list[int]
) -> None:
    p = in_memory(store, signing_keys=KEYS)
    await p.intake(dumps(ticket("T1", "My kettle is leaking, I want a refund.")), Source())
    for stage in p.chain:
        topic = p.source_topic(stage)
        [(key, value)] = p.sink.sent.pop(topic)
        [headers] = p.sink.headers.pop(topic)
        partition = session_partition(key or "", p.settings.partitions)
        delivery = Delivery(value, Source(topic, partition, 0, key=key or ""), headers)
        before = checks[0]
        assert not p.refuses_delivery(stage.name, delivery)  # type: ignore[arg-type]
        await p.deliver(stage.name, delivery)  # type: ignore[arg-type]
        assert checks[0] - before == 1, stage.name
    assert len(p.sink.sent[p.topics.replies]) == 1 and not p.dead_letters


async def test_a_tampered_record_is_still_refused_after_a_trusted_one(
    store: SQLiteOrderStore,
) -> None:
    p = in_memory(store, signing_keys=KEYS)
    await p.intake(dumps(ticket("T1", "My kettle is leaking.")), Source())
    first = p.chain.first
    topic = p.source_topic(first)
    [(key, value)] = p.sink.sent[topic]
    [headers] = p.sink.headers[topic]
    partition = session_partition(key or "", p.settings.partitions)
    delivery = Delivery(value, Source(topic, partition, 0, key=key or ""), headers)
    assert not p.refuses_delivery(first.name, delivery)  # type: ignore[arg-type]
    delivery.value = value.replace(b"leaking", b"leaked!")
    assert p.refuses_delivery(first.name, delivery)  # type: ignore[arg-type]
