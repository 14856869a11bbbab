"""Records between stages are signed: write access to an internal topic cannot steer a reply."""

from __future__ import annotations

import pytest

from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.schemas import DeadLetter, MemoryIndex, Reply, StageRecord, dumps
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.runtime.records.placement import session_partition
from baton_kafka.streams.runtime.records.signing import HEADER, Signer
from baton_kafka.streams.runtime.worker import check_signing
from baton_kafka.streams.settings import SettingsError, load
from baton_kafka.streams.testing import MemorySink, TestPipeline
from tests.fixtures.data import ticket
from tests.fixtures.pipelines import in_memory

OLD = ("k1", "an-old-secret-of-32-characters!!")
NEW = ("k2", "a-new-secret-of-32-characters!!!")


def test_a_signature_binds_key_topic_and_bytes() -> None:
    signer = Signer((NEW,))
    headers = signer.headers("t.understood", "s1", b"{}")
    assert [k for k, _ in headers] == [HEADER] and headers[0][1].startswith(b"k2:")
    assert signer.problem("t.understood", "s1", b"{}", headers) is None
    assert signer.problem("t.understood", "s1", b"{}", dict(headers)) is None
    assert "does not match" in (signer.problem("t.understood", "s1", b"{ }", headers) or "")
    assert "does not match" in (signer.problem("t.order-matched", "s1", b"{}", headers) or "")
    # The same bytes under another key (or none) are another record.
    for key in ("s2", "", None, "s1\x00"):
        assert "does not match" in (signer.problem("t.understood", key, b"{}", headers) or "")
    # The key's length is signed: no split of key and value reads as another record.
    assert Signer((NEW,)).headers("t", "ab", b"c") != Signer((NEW,)).headers("t", "a", b"bc")
    assert "no baton-signature" in (signer.problem("t.understood", "s1", b"{}", []) or "")
    assert "no baton-signature" in (signer.problem("t.understood", "s1", b"{}", None) or "")
    unknown = Signer((("k9", "x" * 16),)).headers("t.understood", "s1", b"{}")
    assert "unknown key 'k9'" in (signer.problem("t.understood", "s1", b"{}", unknown) or "")
    garbled = [(HEADER, "k2:é".encode())]
    assert "not ASCII" in (signer.problem("t.understood", "s1", b"{}", garbled) or "")


def test_keys_rotate_without_downtime() -> None:
    signed_before = Signer((OLD,)).headers("t", "k", b"v")
    # Step 1: every worker accepts the new key; step 2: the new key signs; step 3: old dropped.
    new_signed = Signer((NEW,)).headers("t", "k", b"v")
    assert Signer((OLD, NEW)).problem("t", "k", b"v", new_signed) is None
    assert Signer((NEW, OLD)).problem("t", "k", b"v", signed_before) is None
    assert Signer((NEW,)).problem("t", "k", b"v", signed_before) is not None


def test_without_keys_nothing_is_signed_or_checked() -> None:
    signer = Signer()
    assert signer.headers("t", "k", b"v") == [] and signer.problem("t", "k", b"v", None) is None


def test_signing_keys_setting() -> None:
    s = load({"BATON_SIGNING_KEYS": f"{NEW[0]}:{NEW[1]}, {OLD[0]}:{OLD[1]}"})
    assert s.signing_keys == (NEW, OLD)
    assert NEW[1] not in repr(s) and "k2" in repr(s)
    assert load(s.to_env()) == s
    for bad in ("k1", "k 1:" + "x" * 16, "k1:short", f"k1:{'x' * 16},k1:{'y' * 16}"):
        with pytest.raises(SettingsError, match="BATON_SIGNING_KEYS"):
            load({"BATON_SIGNING_KEYS": bad})


@pytest.fixture
def signed(store: SQLiteOrderStore) -> TestPipeline:
    return in_memory(store, signing_keys=(NEW, OLD))


def out(p: TestPipeline) -> MemorySink:
    assert isinstance(p.sink, MemorySink)
    return p.sink


def read_at(p: TestPipeline, topic: str, key: str | None, offset: int = 0) -> Source:
    """Where a broker would have read a record of ``topic`` under ``key``: its own partition."""
    partition = session_partition(key, p.settings.partitions) if key else 0
    return Source(topic, partition, offset, key)


async def feed(p: TestPipeline, stage: str, topic: str, i: int = -1, **changes: object) -> None:
    """Feed record ``i`` of ``topic`` to ``stage`` with its own key, headers and ``changes``."""
    key, value = out(p).sent[topic][i]
    headers = out(p).headers[topic][i]
    if changes:
        value = dumps(StageRecord.model_validate_json(value).model_copy(update=changes))
    await p.run_stage(stage, value, read_at(p, topic, key), headers)  # type: ignore[arg-type]


async def through_lookup(p: TestPipeline) -> None:
    n = p.topics
    await p.intake(dumps(ticket("t1", "My kettle is leaking, I want a refund.")), Source())
    await feed(p, "understand", n.sessions)
    await feed(p, "lookup", n.understood)


def replies(p: TestPipeline) -> list[Reply]:
    return [Reply.model_validate_json(v) for _, v in out(p).sent[p.topics.replies]]


def letters(p: TestPipeline) -> list[DeadLetter]:
    return [DeadLetter.model_validate_json(v) for _, v in out(p).sent[p.topics.dead_letters]]


async def test_signed_records_flow_through_every_stage(signed: TestPipeline) -> None:
    await through_lookup(signed)
    await feed(signed, "strategy", signed.topics.matched)
    assert [r.ticket_id for r in replies(signed)] == ["t1"] and letters(signed) == []
    for topic in (signed.topics.sessions, signed.topics.understood, signed.topics.matched):
        assert all(h and h[0][0] == HEADER for h in out(signed).headers[topic])
    assert out(signed).headers[signed.topics.replies] == [[]]


async def test_a_forged_order_in_a_stage_record_is_dead_lettered(signed: TestPipeline) -> None:
    await through_lookup(signed)
    matched = StageRecord.model_validate_json(out(signed).sent[signed.topics.matched][-1][1])
    assert matched.match is not None and matched.match.order is not None
    order = matched.match.order.model_copy(update={"amount": 9999.0})
    forged = matched.match.model_copy(update={"order": order})
    await feed(signed, "strategy", signed.topics.matched, match=forged)
    assert replies(signed) == []
    [dl] = letters(signed)
    assert dl.reason == "untrusted_record" and dl.stage == "strategy"
    assert "does not match" in dl.error and dl.ticket is not None and dl.ticket.ticket_id == "t1"
    assert "9999" in dl.payload


async def test_unsigned_or_misrouted_records_are_dead_lettered(signed: TestPipeline) -> None:
    await through_lookup(signed)
    n = signed.topics
    value = out(signed).sent[n.matched][-1][1]
    await signed.run_stage("strategy", value, Source(n.matched, 0, 0))
    # A genuine record of another topic, written into the strategy's input.
    understood = out(signed).sent[n.understood][-1][1]
    await signed.run_stage(
        "strategy", understood, Source(n.matched, 0, 1), out(signed).headers[n.understood][-1]
    )
    assert replies(signed) == []
    assert [(dl.reason, dl.stage) for dl in letters(signed)] == [
        ("untrusted_record", "strategy"),
        ("untrusted_record", "strategy"),
    ]


async def test_an_unsigned_index_update_is_ignored(signed: TestPipeline) -> None:
    await through_lookup(signed)
    await feed(signed, "strategy", signed.topics.matched)
    n = signed.topics
    [(_, update)] = out(signed).sent[n.memory_index]
    await signed.apply_index(update)
    assert signed.state.customers.get("C1") is None
    at = Source(n.memory_index, 0, 0, "C1")
    await signed.apply_index(update, out(signed).headers[n.memory_index][0], at)
    index = MemoryIndex.model_validate_json(signed.state.customers.get("C1") or b"")
    assert [s.session_id for s in index.sessions] == ["S1"]


async def test_a_signed_record_read_under_another_key_or_partition_is_dead_lettered(
    signed: TestPipeline,
) -> None:
    n = signed.topics
    await signed.intake(dumps(ticket("t1", "My kettle is leaking, I want a refund.")), Source())
    [(key, value)] = out(signed).sent[n.sessions]
    headers = out(signed).headers[n.sessions][0]
    assert key == "S1"
    own = session_partition(key, signed.settings.partitions)
    other = next(k for k in ("S2", "S3", "S4") if session_partition(k, 8) != own)
    rekeyed = read_at(signed, n.sessions, other)
    # Its own key, but a partition that does not hold the session's baton.
    wrong = (own + 1) % signed.settings.partitions
    moved = Source(n.sessions, wrong, 1, key)
    await signed.run_stage("understand", value, rekeyed, headers)
    await signed.shed("understand", value, moved, headers)
    await signed.run_stage("understand", value, moved, headers)
    assert [(dl.reason, dl.stage) for dl in letters(signed)] == [
        ("untrusted_record", "understand")
    ] * 3
    errors = [dl.error for dl in letters(signed)]
    assert "does not match its key" in errors[0]
    assert all(f"partition {wrong}" in e for e in errors[1:])
    assert n.understood not in out(signed).sent and signed.batons.get("S1") is None
    await signed.run_stage("understand", value, read_at(signed, n.sessions, key), headers)
    assert len(out(signed).sent[n.understood]) == 1


async def test_without_signing_a_record_off_its_sessions_key_is_still_refused(
    pipeline: TestPipeline,
) -> None:
    n = pipeline.topics
    await pipeline.intake(dumps(ticket("t1", "My kettle is leaking.")), Source())
    [(_, value)] = out(pipeline).sent[n.sessions]
    await pipeline.run_stage("understand", value, Source(n.sessions, 0, 0, "S-victim"))
    [dl] = letters(pipeline)
    assert dl.reason == "untrusted_record" and "another key" in dl.error
    assert pipeline.batons.get("S1") is None and n.understood not in out(pipeline).sent


async def test_an_index_update_under_another_customers_key_is_ignored(signed: TestPipeline) -> None:
    await through_lookup(signed)
    await feed(signed, "strategy", signed.topics.matched)
    n = signed.topics
    [(_, update)] = out(signed).sent[n.memory_index]
    forged_key = Signer(signed.settings.signing_keys).headers(n.memory_index, "C9", update)
    await signed.apply_index(update, forged_key, Source(n.memory_index, 0, 0, "C9"))
    assert signed.state.customers.get("C1") is None


def test_a_worker_on_kafka_refuses_to_run_unsigned_unless_allowed() -> None:
    with pytest.raises(SettingsError, match="BATON_SIGNING_KEYS is not set") as caught:
        check_signing(load({}))
    assert "BATON_ALLOW_UNSIGNED=1" in str(caught.value) and "\n" not in str(caught.value)
    check_signing(load({"BATON_ALLOW_UNSIGNED": "1"}))
    check_signing(load({"BATON_EMBEDDED_BROKER": "1"}))
    check_signing(load({"BATON_SIGNING_KEYS": f"{NEW[0]}:{NEW[1]}"}))
    assert load(load({"BATON_ALLOW_UNSIGNED": "1"}).to_env()).allow_unsigned
