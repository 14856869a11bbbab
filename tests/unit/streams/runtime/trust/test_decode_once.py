"""A record is decoded once per stage, and what is kept decoded never outlives its bytes."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.schemas import Baton, MemoryIndex, StageRecord, dumps
from baton_kafka.schemas.codec import InvalidRecord, parse
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.runtime.records.delivery import Delivery
from baton_kafka.streams.runtime.records.placement import session_partition
from baton_kafka.streams.testing import TestPipeline
from tests.fixtures.data import ticket
from tests.fixtures.pipelines import in_memory

KEYS = (("k1", "a-secret-of-thirty-two-characters"),)


@pytest.fixture
def decodings(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many times a stage record was decoded (validated from JSON), in one counter."""
    calls = [0]
    validate = StageRecord.model_validate.__func__  # type: ignore[attr-defined]
    validate_json = StageRecord.model_validate_json.__func__  # type: ignore[attr-defined]

    def counted(cls: Any, *args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return validate(cls, *args, **kwargs)

    def counted_json(cls: Any, *args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return validate_json(cls, *args, **kwargs)

    monkeypatch.setattr(StageRecord, "model_validate", classmethod(counted))
    monkeypatch.setattr(StageRecord, "model_validate_json", classmethod(counted_json))
    yield calls


def read(p: TestPipeline, topic: str, key: str | None, offset: int) -> Source:
    """Where a broker hands the record over: on its key's partition."""
    partition = session_partition(key or "", p.settings.partitions)
    return Source(topic, partition, offset, key=key or "")


async def deliver(p: TestPipeline, stage: str, topic: str, decodings: list[int]) -> list[int]:
    """Each record waiting on ``topic`` taken in by ``stage`` as the Faust agent does (the
    admission check, then the stage); how many decodings each delivery cost."""
    pending = list(zip(p.sink.sent.pop(topic, []), p.sink.headers.pop(topic, []), strict=True))
    costs = []
    for i, ((key, value), headers) in enumerate(pending):
        delivery = Delivery(value, read(p, topic, key, i), headers)
        before = decodings[0]
        assert not p.refuses_delivery(stage, delivery)  # type: ignore[arg-type]
        await p.deliver(stage, delivery)  # type: ignore[arg-type]
        costs.append(decodings[0] - before)
    return costs


async def test_each_stage_decodes_its_record_once(
    store: SQLiteOrderStore, decodings: list[int]
) -> None:
    p = in_memory(store, signing_keys=KEYS)
    n = p.topics
    await p.intake(dumps(ticket("T1", "My kettle is leaking, I want a refund.")), Source())
    per_stage = {}
    for stage in p.chain:
        per_stage[stage.name] = await deliver(p, stage.name, p.source_topic(stage), decodings)
    assert per_stage == {s.name: [1] for s in p.chain}
    assert len(p.sink.sent[n.replies]) == 1 and not p.sink.sent[n.dead_letters]


async def test_a_shed_record_and_a_copy_that_is_settled_decode_once(
    store: SQLiteOrderStore, decodings: list[int]
) -> None:
    p = in_memory(store, signing_keys=KEYS)
    first = p.chain.names[0]
    topic = p.source_topic(p.chain[first])
    await p.intake(dumps(ticket("T1", "My kettle is leaking.")), Source())
    [(key, value)] = p.sink.sent[topic]
    [headers] = p.sink.headers[topic]
    before = decodings[0]
    await p.shed_delivery(first, Delivery(value, read(p, topic, key, 0), headers))
    assert decodings[0] - before == 1
    assert [d.reason for d in p.dead_letters] == ["session_flood"]


async def test_an_invalid_record_is_dead_lettered_with_the_reason_parsing_gives(
    store: SQLiteOrderStore,
) -> None:
    p = in_memory(store)
    first = p.chain.names[0]
    bad = b'{"ticket": {"ticket_id": 3}}'
    with pytest.raises(InvalidRecord) as raised:
        parse(StageRecord, bad)
    delivery = Delivery(bad, Source(p.source_topic(p.chain[first]), 0, 7))
    assert not p.refuses_delivery(first, delivery)
    await p.deliver(first, delivery)
    [dl] = p.dead_letters
    assert (dl.reason, dl.error, dl.source_offset) == ("invalid_input", str(raised.value), 7)
    assert p.counts.counts[f"done.{first}.invalid"] == 1


def test_a_delivery_gives_the_same_reason_each_time_it_is_asked() -> None:
    delivery = Delivery(b"[1]", Source())
    reasons = []
    for _ in range(2):
        with pytest.raises(InvalidRecord) as raised:
            delivery.record()
        reasons.append(str(raised.value))
    assert reasons == ["a StageRecord must be a JSON object, got an array"] * 2
    assert delivery.ticket() is None


def test_an_erasure_mark_is_read_again_after_any_write_to_the_index(
    store: SQLiteOrderStore,
) -> None:
    p = in_memory(store)
    at = datetime(2026, 11, 20, tzinfo=UTC)
    assert p.batons.erased_at("C1") is None
    p.batons.erase_index("C1", at)
    assert p.batons.erased_at("C1") == at
    # A write that bypasses the store (a changelog recovery, another worker's replica).
    later = datetime(2026, 11, 21, tzinfo=UTC)
    p.state.customers.put("C1", dumps(MemoryIndex(key="C1", erased_at=later)))
    assert p.batons.erased_at("C1") == later
    p.state.customers.delete("C1")
    assert p.batons.erased_at("C1") is None
    p.batons.erase_index("C1", at)
    assert p.batons.erased_at("C1") == at
    p.batons.delete_index("C1")
    assert p.batons.erased_at("C1") is None and p.batons.erased_at(None) is None


async def test_a_saved_baton_is_read_back_unparsed_and_as_its_bytes_say(
    store: SQLiteOrderStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = in_memory(store)
    await p.send(ticket("T1", "My kettle is leaking, I want a refund."))
    raw = p.state.batons.get("S1")
    assert raw is not None
    # What the store hands out after its own write is what the bytes parse to.
    assert p.batons.get("S1") == Baton.model_validate_json(raw)
    parses = [0]
    validate_json = Baton.model_validate_json.__func__  # type: ignore[attr-defined]

    def counted(cls: Any, *args: Any, **kwargs: Any) -> Any:
        parses[0] += 1
        return validate_json(cls, *args, **kwargs)

    monkeypatch.setattr(Baton, "model_validate_json", classmethod(counted))
    again = p.baton("S1").model_copy(update={"version": p.baton("S1").version + 1})
    p.batons.save(again)
    assert p.batons.get("S1") is again and parses == [0]
    # A write that bypasses the store (a changelog recovery, a rebalance) is parsed afresh.
    other = again.model_copy(update={"version": again.version + 1})
    p.state.batons.put("S1", dumps(other))
    assert p.baton("S1") == other and parses == [1]
    p.batons.delete("S1")
    assert p.batons.get("S1") is None
