"""Records between stages are signed: write access to an internal topic cannot steer a reply."""

from __future__ import annotations

import pytest

from agents.orders import SQLiteOrderStore
from schemas import DeadLetter, MemoryIndex, Reply, StageRecord, dumps
from streams.runtime.dead_letters import Source
from streams.runtime.pipeline import Pipeline
from streams.runtime.signing import HEADER, Signer
from streams.settings import SettingsError, load
from streams.testing import MemorySink
from tests.fixtures.data import ticket
from tests.fixtures.pipelines import in_memory

OLD = ("k1", "an-old-secret-of-32-characters!!")
NEW = ("k2", "a-new-secret-of-32-characters!!!")


def test_a_signature_binds_key_topic_and_bytes() -> None:
    signer = Signer((NEW,))
    headers = signer.headers("t.understood", b"{}")
    assert [k for k, _ in headers] == [HEADER] and headers[0][1].startswith(b"k2:")
    assert signer.problem("t.understood", b"{}", headers) is None
    assert signer.problem("t.understood", b"{}", dict(headers)) is None
    assert "does not match" in (signer.problem("t.understood", b"{ }", headers) or "")
    assert "does not match" in (signer.problem("t.order-matched", b"{}", headers) or "")
    assert "no baton-signature" in (signer.problem("t.understood", b"{}", []) or "")
    assert "no baton-signature" in (signer.problem("t.understood", b"{}", None) or "")
    unknown = Signer((("k9", "x" * 16),)).headers("t.understood", b"{}")
    assert "unknown key 'k9'" in (signer.problem("t.understood", b"{}", unknown) or "")
    garbled = [(HEADER, "k2:é".encode())]
    assert "not ASCII" in (signer.problem("t.understood", b"{}", garbled) or "")


def test_keys_rotate_without_downtime() -> None:
    signed_before = Signer((OLD,)).headers("t", b"v")
    # Step 1: every worker accepts the new key; step 2: the new key signs; step 3: old dropped.
    assert Signer((OLD, NEW)).problem("t", b"v", Signer((NEW,)).headers("t", b"v")) is None
    assert Signer((NEW, OLD)).problem("t", b"v", signed_before) is None
    assert Signer((NEW,)).problem("t", b"v", signed_before) is not None


def test_without_keys_nothing_is_signed_or_checked() -> None:
    signer = Signer()
    assert signer.headers("t", b"v") == [] and signer.problem("t", b"v", None) is None


def test_signing_keys_setting() -> None:
    s = load({"BATON_SIGNING_KEYS": f"{NEW[0]}:{NEW[1]}, {OLD[0]}:{OLD[1]}"})
    assert s.signing_keys == (NEW, OLD)
    assert NEW[1] not in repr(s) and "k2" in repr(s)
    assert load(s.to_env()) == s
    for bad in ("k1", "k 1:" + "x" * 16, "k1:short", f"k1:{'x' * 16},k1:{'y' * 16}"):
        with pytest.raises(SettingsError, match="BATON_SIGNING_KEYS"):
            load({"BATON_SIGNING_KEYS": bad})


@pytest.fixture
def signed(store: SQLiteOrderStore) -> Pipeline:
    return in_memory(store, signing_keys=(NEW, OLD))


def out(p: Pipeline) -> MemorySink:
    assert isinstance(p.sink, MemorySink)
    return p.sink


async def feed(p: Pipeline, stage: str, topic: str, i: int = -1, **changes: object) -> None:
    """Feed record ``i`` of ``topic`` to ``stage`` with its own headers and ``changes``."""
    value = out(p).sent[topic][i][1]
    headers = out(p).headers[topic][i]
    if changes:
        value = dumps(StageRecord.model_validate_json(value).model_copy(update=changes))
    await p.run_stage(stage, value, Source(topic, 0, 0), headers)  # type: ignore[arg-type]


async def through_lookup(p: Pipeline) -> None:
    n = p.topics
    await p.intake(dumps(ticket("t1", "My kettle is leaking, I want a refund.")), Source())
    await feed(p, "understand", n.sessions)
    await feed(p, "lookup", n.understood)


def replies(p: Pipeline) -> list[Reply]:
    return [Reply.model_validate_json(v) for _, v in out(p).sent[p.topics.replies]]


def letters(p: Pipeline) -> list[DeadLetter]:
    return [DeadLetter.model_validate_json(v) for _, v in out(p).sent[p.topics.dead_letters]]


async def test_signed_records_flow_through_every_stage(signed: Pipeline) -> None:
    await through_lookup(signed)
    await feed(signed, "strategy", signed.topics.matched)
    assert [r.ticket_id for r in replies(signed)] == ["t1"] and letters(signed) == []
    for topic in (signed.topics.sessions, signed.topics.understood, signed.topics.matched):
        assert all(h and h[0][0] == HEADER for h in out(signed).headers[topic])
    assert out(signed).headers[signed.topics.replies] == [[]]


async def test_a_forged_order_in_a_stage_record_is_dead_lettered(signed: Pipeline) -> None:
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


async def test_unsigned_or_misrouted_records_are_dead_lettered(signed: Pipeline) -> None:
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


async def test_an_unsigned_index_update_is_ignored(signed: Pipeline) -> None:
    await through_lookup(signed)
    await feed(signed, "strategy", signed.topics.matched)
    n = signed.topics
    [(_, update)] = out(signed).sent[n.memory_index]
    await signed.apply_index(update)
    assert signed.state.customers.get("C1") is None
    await signed.apply_index(update, out(signed).headers[n.memory_index][0])
    index = MemoryIndex.model_validate_json(signed.state.customers.get("C1") or b"")
    assert [s.session_id for s in index.sessions] == ["S1"]
