"""Baton state transitions: each stage's decision folded into the session's context."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from baton_kafka.agents.memory import (
    ANSWERED_KEEP,
    CHAIN_KEEP,
    INDEX_KEEP,
    MAX_FLAGS,
    SUMMARY_CHARS,
    TICKETS_KEEP,
    apply_match,
    apply_reply,
    apply_understanding,
    earlier_sessions,
    from_snapshot,
    index_since,
    index_with,
    new_baton,
    snapshot,
    summarize,
)
from baton_kafka.schemas.baton import (
    Baton,
    ChainEntry,
    InFlight,
    MemoryIndex,
    SessionSummary,
    TicketMemory,
)
from baton_kafka.schemas.records import UsageTotals
from baton_kafka.schemas.stages import OrderMatch, Snapshot
from tests.fixtures.data import KETTLE, reply, ticket, understanding

HEADPHONES = "Sony WH-1000XM5 Headphones"
T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def match(order_id: str | None, method: str = "deterministic") -> OrderMatch:
    return OrderMatch.model_validate(
        {"order_id": order_id, "method": method, "confidence": 0.9, "reason": "only candidate"}
    )


def understood(*products: str | None) -> Baton:
    """A session with one understood ticket (T1, T2, ...) per product, in order."""
    baton = new_baton(ticket("T1", "hi", session="S1", customer="C1"))
    for i, product in enumerate(products, start=1):
        baton = apply_understanding(baton, ticket(f"T{i}", "hi"), understanding(product))
    return baton


def summary(session: str, minutes: int, **fields: object) -> SessionSummary:
    return SessionSummary(session_id=session, at=T0 + timedelta(minutes=minutes), **fields)


# --- new_baton --------------------------------------------------------------------------------


def test_a_new_baton_is_the_tickets_session_and_customer_and_nothing_else() -> None:
    baton = new_baton(ticket("T1", "My kettle leaks.", session="S9", customer="C7"))
    assert (baton.session_id, baton.customer_id, baton.version) == ("S9", "C7", 0)
    assert baton.tickets == [] and baton.chain == [] and baton.chain_summary == ""
    assert (baton.product, baton.order_id, baton.in_flight) == (None, None, None)
    assert new_baton(ticket("T1", "hi", customer=None)).customer_id is None


# --- apply_understanding ----------------------------------------------------------------------


def test_understanding_records_the_tickets_memory_and_the_current_topic() -> None:
    before = new_baton(ticket("T1", "hi"))
    baton = apply_understanding(before, ticket("T1", "hi"), understanding(KETTLE))
    assert baton.version == before.version + 1
    assert baton.updated_at >= before.updated_at
    assert (baton.product, baton.problem, baton.demand) == (KETTLE, "leaking", "refund")
    [memory] = baton.tickets
    assert (memory.ticket_id, memory.product, memory.demand) == ("T1", KETTLE, "refund")
    assert memory.core_problem == f"The customer's {KETTLE} is leaking."
    [entry] = baton.chain
    assert (entry.ticket_id, entry.stage) == ("T1", "understand")
    assert entry.decision == f"refund: leaking ({KETTLE})"
    assert entry.reason == memory.core_problem
    assert baton.products_mentioned == [KETTLE]
    assert baton.flags == []


def test_a_ticket_without_a_product_keeps_the_sessions_product() -> None:
    baton = understood(KETTLE, None)
    assert baton.product == KETTLE
    assert baton.chain[-1].decision == "refund: leaking (no product)"
    assert baton.products_mentioned == [KETTLE]
    assert baton.flags == []


def test_the_customer_comes_from_the_ticket_only_when_the_baton_has_none() -> None:
    anonymous = Baton(session_id="S1")
    baton = apply_understanding(anonymous, ticket("T1", "hi", customer="C5"), understanding(None))
    assert baton.customer_id == "C5"
    known = Baton(session_id="S1", customer_id="C1")
    baton = apply_understanding(known, ticket("T1", "hi", customer="C5"), understanding(None))
    assert baton.customer_id == "C1"


def test_another_product_is_flagged_as_a_topic_switch() -> None:
    baton = understood(KETTLE, KETTLE, HEADPHONES)
    assert baton.flags == [f"topic switch at T3: {KETTLE} -> {HEADPHONES}"]
    assert baton.product == HEADPHONES
    assert baton.products_mentioned == [KETTLE, HEADPHONES]


def test_flags_keep_only_the_newest() -> None:
    products = [KETTLE, HEADPHONES] * 8  # fifteen switches
    baton = understood(*products)
    assert len(baton.flags) == MAX_FLAGS
    assert baton.flags[-1] == f"topic switch at T16: {KETTLE} -> {HEADPHONES}"
    assert baton.flags[0] == f"topic switch at T7: {HEADPHONES} -> {KETTLE}"


def test_products_mentioned_are_distinct_and_keep_the_newest_twenty() -> None:
    products = [f"Product {i}" for i in range(25)]
    baton = understood(*products, "Product 24")
    assert baton.products_mentioned == products[5:]


def test_understanding_a_ticket_again_replaces_its_memory() -> None:
    baton = understood(KETTLE, HEADPHONES)
    again = understanding(None, core_problem="The kettle again.", demand="repair")
    baton = apply_understanding(baton, ticket("T1", "hi"), again)
    assert [(t.ticket_id, t.core_problem) for t in baton.tickets] == [
        ("T2", f"The customer's {HEADPHONES} is leaking."),
        ("T1", "The kettle again."),
    ]
    assert baton.demand == "repair"


# --- apply_match ------------------------------------------------------------------------------


def test_a_match_makes_the_order_current_and_notes_it_in_the_tickets_memory() -> None:
    baton = apply_match(understood(KETTLE), ticket("T1", "hi"), match("O-1"))
    assert (baton.order_id, baton.order_history) == ("O-1", [])
    assert baton.tickets[0].order_id == "O-1"
    assert baton.chain[-1].stage == "lookup"
    assert baton.chain[-1].decision == "deterministic: O-1"
    assert baton.chain[-1].reason == "only candidate"
    assert baton.version == 2


def test_a_new_order_moves_the_current_one_to_the_front_of_the_history() -> None:
    baton = understood(KETTLE)
    for oid in ("O-1", "O-2", "O-3"):
        baton = apply_match(baton, ticket("T1", "hi"), match(oid))
    assert (baton.order_id, baton.order_history) == ("O-3", ["O-2", "O-1"])
    # Back to an earlier order: it leaves the history, the current one heads it.
    baton = apply_match(baton, ticket("T1", "hi"), match("O-1"))
    assert (baton.order_id, baton.order_history) == ("O-1", ["O-3", "O-2"])


def test_the_same_order_or_none_leaves_current_and_history_alone() -> None:
    baton = understood(KETTLE)
    for oid in ("O-1", "O-2"):
        baton = apply_match(baton, ticket("T1", "hi"), match(oid))
    same = apply_match(baton, ticket("T1", "hi"), match("O-2"))
    assert (same.order_id, same.order_history) == ("O-2", ["O-1"])
    none = apply_match(baton, ticket("T1", "hi"), match(None, method="none"))
    assert (none.order_id, none.order_history) == ("O-2", ["O-1"])
    assert none.chain[-1].decision == "none: no order"
    assert none.tickets[0].order_id is None


def test_the_order_history_keeps_the_twenty_most_recent() -> None:
    baton = understood(KETTLE)
    for i in range(25):
        baton = apply_match(baton, ticket("T1", "hi"), match(f"O-{i}"))
    assert baton.order_id == "O-24"
    assert baton.order_history == [f"O-{i}" for i in range(23, 3, -1)]


def test_a_match_for_a_ticket_not_understood_changes_no_memory() -> None:
    before = understood(KETTLE)
    baton = apply_match(before, ticket("T9", "hi"), match("O-1"))
    assert baton.tickets == before.tickets
    assert baton.order_id == "O-1"


def test_an_unavailable_order_store_is_flagged() -> None:
    baton = apply_match(understood(KETTLE), ticket("T1", "hi"), match(None, "unavailable"))
    assert baton.flags == ["order store unavailable at T1"]
    assert baton.chain[-1].decision == "unavailable: no order"


# --- apply_reply ------------------------------------------------------------------------------


def test_a_reply_records_the_status_usage_and_answer_and_leaves_flight() -> None:
    before = understood(KETTLE).model_copy(
        update={
            "in_flight": InFlight(ticket_id="T1", stage="strategy", output="{}"),
            "usage": UsageTotals(calls=2, input_tokens=100, by_stage={"understand": 2}),
        }
    )
    used = UsageTotals(calls=1, input_tokens=40, output_tokens=9, by_stage={"strategy": 1})
    answer = reply("T1", "S1", "degraded", confidence=0.25, solution="Refund " * 50, usage=used)
    baton = apply_reply(before, answer)
    assert baton.in_flight is None
    assert baton.answered == ["T1"]
    assert baton.tickets[0].status == "degraded"
    assert baton.usage == UsageTotals(
        calls=3,
        input_tokens=140,
        output_tokens=9,
        by_stage={"understand": 2, "strategy": 1},
    )
    entry = baton.chain[-1]
    assert (entry.stage, entry.decision) == ("strategy", "degraded (confidence 0.25)")
    assert entry.reason == ("Refund " * 50)[:200]
    assert baton.version == before.version + 1


def test_answered_keeps_only_the_newest_ticket_ids() -> None:
    before = Baton(session_id="S1", answered=[f"T{i}" for i in range(ANSWERED_KEEP)])
    baton = apply_reply(before, reply("T-new", "S1"))
    assert len(baton.answered) == ANSWERED_KEEP
    assert baton.answered[0] == "T1" and baton.answered[-1] == "T-new"


# --- folding ----------------------------------------------------------------------------------


def _chain(n: int) -> list[ChainEntry]:
    return [ChainEntry(ticket_id=f"T{i}", stage="understand", decision=f"d{i}") for i in range(n)]


def test_the_chain_keeps_the_newest_entries_and_summarizes_the_oldest() -> None:
    before = Baton(session_id="S1", chain=_chain(CHAIN_KEEP + 1), chain_summary="earlier")
    baton = apply_match(before, ticket("T-new", "hi"), match("O-1"))
    assert len(baton.chain) == CHAIN_KEEP
    assert baton.chain[0].ticket_id == "T2" and baton.chain[-1].ticket_id == "T-new"
    assert baton.chain_summary == "earlier; T0/understand: d0; T1/understand: d1"


def test_a_chain_within_bounds_is_not_folded() -> None:
    before = Baton(session_id="S1", chain=_chain(CHAIN_KEEP - 1))
    baton = apply_match(before, ticket("T-new", "hi"), match("O-1"))
    assert len(baton.chain) == CHAIN_KEEP and baton.chain_summary == ""


def test_the_summary_keeps_its_newest_characters() -> None:
    before = Baton(session_id="S1", chain=_chain(CHAIN_KEEP), chain_summary="x" * SUMMARY_CHARS)
    baton = apply_match(before, ticket("T-new", "hi"), match("O-1"))
    assert len(baton.chain_summary) == SUMMARY_CHARS
    assert baton.chain_summary.startswith("…x")
    assert baton.chain_summary.endswith("x; T0/understand: d0")


def test_the_oldest_ticket_memories_fold_into_the_summary() -> None:
    memories = [TicketMemory(ticket_id=f"T{i}", core_problem=f"p{i}") for i in range(TICKETS_KEEP)]
    before = Baton(session_id="S1", tickets=memories, chain_summary="earlier")
    baton = apply_understanding(before, ticket("T-new", "hi"), understanding(KETTLE))
    assert len(baton.tickets) == TICKETS_KEEP
    assert baton.tickets[0].ticket_id == "T1" and baton.tickets[-1].ticket_id == "T-new"
    assert baton.chain_summary == "earlier; earlier: p0"


def test_folded_ticket_memories_keep_the_newest_characters_of_the_summary() -> None:
    memories = [TicketMemory(ticket_id=f"T{i}", core_problem=f"p{i}") for i in range(TICKETS_KEEP)]
    before = Baton(session_id="S1", tickets=memories, chain_summary="y" * SUMMARY_CHARS)
    baton = apply_understanding(before, ticket("T-new", "hi"), understanding(KETTLE))
    assert len(baton.chain_summary) == SUMMARY_CHARS
    assert baton.chain_summary.startswith("y")
    assert baton.chain_summary.endswith("y; earlier: p0")


# --- snapshot ---------------------------------------------------------------------------------


def test_a_snapshot_carries_the_newest_core_problems_and_the_current_topic() -> None:
    baton = apply_match(
        understood(*[f"Product {i}" for i in range(25)]), ticket("T25", "hi"), match("O-7")
    )
    snap = snapshot(baton)
    assert snap.core_problems == [f"The customer's Product {i} is leaking." for i in range(5, 25)]
    assert (snap.product, snap.problem, snap.order_id) == ("Product 24", "leaking", "O-7")


def test_a_baton_rebuilt_from_a_snapshot_says_so() -> None:
    snap = Snapshot(core_problems=["a", "b"], product=KETTLE, problem="leaking", order_id="O-1")
    baton = from_snapshot(ticket("T5", "hi", session="S3", customer="C3"), snap, version=7)
    assert (baton.session_id, baton.customer_id, baton.version) == ("S3", "C3", 7)
    assert [(t.ticket_id, t.core_problem) for t in baton.tickets] == [("T5~0", "a"), ("T5~1", "b")]
    assert (baton.product, baton.problem, baton.order_id) == (KETTLE, "leaking", "O-1")
    assert baton.flags == ["context rebuilt from the record's snapshot"]
    assert snapshot(baton) == snap


# --- summaries and the customer's index -------------------------------------------------------


def test_the_summary_is_of_the_named_ticket_or_else_the_latest() -> None:
    baton = apply_match(understood(KETTLE), ticket("T1", "hi"), match("O-1"))
    baton = apply_understanding(baton, ticket("T2", "hi"), understanding(HEADPHONES))
    named = summarize(baton, "T1")
    assert (named.session_id, named.ticket_id, named.order_id) == ("S1", "T1", "O-1")
    assert (named.product, named.core_problem) == (KETTLE, f"The customer's {KETTLE} is leaking.")
    assert named.at == baton.updated_at and named.expired is False
    latest = summarize(baton, expired=True)
    assert (latest.ticket_id, latest.product, latest.expired) == ("T2", HEADPHONES, True)
    # T2 matched no order of its own: the session's current order stands in.
    assert latest.order_id == "O-1"
    assert summarize(baton, "T-unknown").ticket_id == "T2"


def test_the_summary_of_a_baton_without_tickets_is_its_current_topic() -> None:
    baton = Baton(session_id="S1", product=KETTLE, order_id="O-1")
    s = summarize(baton)
    assert (s.ticket_id, s.order_id, s.product, s.core_problem) == (None, "O-1", KETTLE, "")


def test_the_index_puts_the_newest_first_and_replaces_a_sessions_entry() -> None:
    index = index_with(None, "C1", summary("S1", 0))
    assert index.key == "C1" and [s.session_id for s in index.sessions] == ["S1"]
    index = index_with(index, "C1", summary("S2", 5))
    index = index_with(index, "C1", summary("S3", 2))
    assert [s.session_id for s in index.sessions] == ["S2", "S3", "S1"]
    index = index_with(index, "C1", summary("S1", 9, order_id="O-4"))
    assert [(s.session_id, s.order_id) for s in index.sessions] == [
        ("S1", "O-4"),
        ("S2", None),
        ("S3", None),
    ]


def test_the_index_keeps_the_most_recent_sessions() -> None:
    index = None
    for i in range(INDEX_KEEP + 5):
        index = index_with(index, "C1", summary(f"S{i}", i))
    assert index is not None and len(index.sessions) == INDEX_KEEP
    assert index.sessions[0].session_id == f"S{INDEX_KEEP + 4}"
    assert index.sessions[-1].session_id == "S5"


def test_the_index_keeps_what_it_is_told_and_nothing_older_than_its_retention() -> None:
    index = None
    for i in range(6):
        index = index_with(
            index, "C1", summary(f"S{i}", i), keep=4, since=T0 + timedelta(minutes=3)
        )
    assert index is not None
    assert [s.session_id for s in index.sessions] == ["S5", "S4", "S3"]
    capped = index_with(index, "C1", summary("S9", 9), keep=2)
    assert [s.session_id for s in capped.sessions] == ["S9", "S5"]
    pruned = index_since(index, T0 + timedelta(minutes=4))
    assert [s.session_id for s in pruned.sessions] == ["S5", "S4"] and pruned.key == "C1"
    assert index_since(index, T0 + timedelta(minutes=6)).sessions == []


def test_earlier_sessions_are_the_others_most_recent_first() -> None:
    assert earlier_sessions(None, "S1") == []
    index = MemoryIndex(key="C1", sessions=[summary(f"S{i}", -i) for i in range(6)])
    assert [s.session_id for s in earlier_sessions(index, "S1")] == ["S0", "S2", "S3"]
    assert [s.session_id for s in earlier_sessions(index, "S9", limit=5)] == [
        "S0",
        "S1",
        "S2",
        "S3",
        "S4",
    ]
    assert earlier_sessions(MemoryIndex(key="C1", sessions=[summary("S1", 0)]), "S1") == []
