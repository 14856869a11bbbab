"""The stage's per-record checks: their order (and why), each alone, and one baton read each."""

from __future__ import annotations

from typing import Any

import pytest

from baton_kafka.agents import memory
from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.schemas import StageRecord, dumps
from baton_kafka.streams.runtime import pipeline
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.runtime.records.delivery import Delivery
from baton_kafka.streams.runtime.records.placement import session_partition
from baton_kafka.streams.runtime.session.batons import BatonStore
from baton_kafka.streams.runtime.session.erasure import headers as erasure_headers
from baton_kafka.streams.runtime.trust import admission_checks as admit
from baton_kafka.streams.runtime.trust import checks
from baton_kafka.streams.runtime.trust import turn_checks as turn
from baton_kafka.streams.runtime.trust.checks import DONE, GO, RecordView
from baton_kafka.streams.testing import TestPipeline
from tests.fixtures.data import ticket
from tests.fixtures.pipelines import in_memory

KEYS = (("k1", "a-secret-of-thirty-two-characters"),)

# The order of the checks run once per record, and why each stands where it does.
ADMITTING = {
    "signature": "first: nothing of an unsigned record is believed, not even that it is an "
    "erasure request or which session it names",
    "erasure": "before decode: an erasure request is not a stage record, and it is obeyed "
    "only once its signature holds",
    "decode": "before every check that reads the ticket (its session, its customer)",
    "placement": "after decode (it needs the session id), before any read of the session's "
    "state: a record off its session's partition is refused without touching it",
    "erased": "after placement, before the session's baton is read or its turn taken: an "
    "erased customer's old record leaves nothing behind",
    "trace": "only an admitted record names its ticket and session on the span",
    "ownership": "before the turn: another sender's ticket never waits in the session's queue "
    "(first stage only; later stages check it at their turn)",
    "answered_copy": "after ownership, before the turn: a copy of a ticket the baton shows "
    "answered stops at once, since waiting for the session's next ticket would hold back that "
    "ticket's own copy queued behind it",
    "session_gate": "after the answered copy, before the burst: the clock starts before the "
    "wait (the customer is waiting), and a burst is gathered only by the session's turn holder",
    "bursts": "last: it waits out the coalescing window holding the turn, and what it "
    "gathers is the record every later check and the stage see",
}
# The order of the checks run at each attempt, holding the session's turn.
ATTEMPTING = {
    "ownership_at_turn": "first: the baton may have been created by the ticket ahead in the "
    "queue, so whose the session is is asked again before anything of it is used",
    "pending_reply": "before redelivery: a reply recorded as pending is finished (sent if the "
    "topic lacks it), never settled as a plain copy nor made again",
    "redelivery": "before the take-over and the context: a copy of a ticket this stage has "
    "seen sends its recorded output again instead of running anything",
    "taken_over": "after redelivery (a copy stays a copy), before the context: a person has "
    "the session, so no agent answers and the context is not needed",
    "context": "before restore: a record missing an earlier stage's result fails the ticket "
    "(dead letter and a degraded reply) rather than running on a guess",
    "restore": "after every refusal: the baton the stage starts from is built only for a "
    "record that will run, and its clock starts there",
    "budget": "last: the session's tokens left are counted on the restored baton",
}


def test_the_checks_run_in_this_order() -> None:
    assert [c.name for c in admit.ADMITTING] == list(ADMITTING)
    assert [c.name for c in turn.ATTEMPTING] == list(ATTEMPTING)
    assert all(len(why) > 20 for why in (*ADMITTING.values(), *ATTEMPTING.values()))


def test_a_pipeline_runs_the_list_it_is_given(store: SQLiteOrderStore) -> None:
    p = in_memory(store)
    assert p.admitting == admit.ADMITTING and p.attempting == turn.ATTEMPTING


@pytest.fixture
def p(store: SQLiteOrderStore) -> TestPipeline:
    return in_memory(store, signing_keys=KEYS)


def delivery_of(p: TestPipeline, topic: str, i: int = -1, key: str | None = None) -> Delivery:
    """Record ``i`` of ``topic`` as a broker hands it over (under ``key``: another key)."""
    k, value = p.sink.sent[topic][i]
    used = k if key is None else key
    partition = session_partition(used or "", p.settings.partitions)
    return Delivery(value, Source(topic, partition, i, key=used or ""), p.sink.headers[topic][i])


def view_of(p: TestPipeline, stage: str, delivery: Delivery) -> RecordView:
    return RecordView(p.chain[stage], delivery, delivery.source, p.batons)


async def taken_in(p: TestPipeline, tid: str = "T1", customer: str = "C1") -> Delivery:
    text = "My kettle is leaking, I want a refund."
    await p.intake(dumps(ticket(tid, text, customer=customer)), Source())
    return delivery_of(p, p.topics.sessions)


async def test_signature_passes_a_signed_record_and_letters_one_read_elsewhere(
    p: TestPipeline,
) -> None:
    d = await taken_in(p)
    assert await admit.Signature()(p, view_of(p, "understand", d)) is GO
    assert p.dead_letters == []
    moved = delivery_of(p, p.topics.sessions, key="S2")
    assert await admit.Signature()(p, view_of(p, "understand", moved)) is DONE
    [dl] = p.dead_letters
    assert dl.reason == "untrusted_record" and dl.stage == "understand"


async def test_decode_keeps_the_record_on_the_view_and_letters_bytes_that_hold_none(
    p: TestPipeline,
) -> None:
    d = await taken_in(p)
    view = view_of(p, "understand", d)
    assert await admit.Decode()(p, view) is GO and view.ticket.ticket_id == "T1"
    broken = view_of(p, "understand", Delivery(b"{not json", d.source, d.headers))
    assert await admit.Decode()(p, broken) is DONE and broken.record is None
    [dl] = p.dead_letters
    assert dl.reason == "invalid_input" and p.counts.counts["done.understand.invalid"] == 1


async def test_placement_refuses_a_record_off_its_sessions_partition(p: TestPipeline) -> None:
    d = await taken_in(p)
    view = view_of(p, "understand", d)
    await admit.Decode()(p, view)
    assert await admit.Placement()(p, view) is GO
    assert d.source.partition is not None
    wrong = (d.source.partition + 1) % p.settings.partitions
    off = Source(d.source.topic, wrong, 0, key=d.source.key)
    moved = view_of(p, "understand", Delivery(d.value, off, d.headers))
    await admit.Decode()(p, moved)
    assert await admit.Placement()(p, moved) is DONE
    assert [dl.reason for dl in p.dead_letters] == ["untrusted_record"]


async def test_an_erasure_request_is_obeyed_only_at_the_first_stage(p: TestPipeline) -> None:
    d = await taken_in(p)
    asking = Delivery(d.value, d.source, [*(d.headers or []), *erasure_headers()])
    assert await admit.ErasureRequest()(p, view_of(p, "lookup", asking)) is GO
    assert await admit.ErasureRequest()(p, view_of(p, "understand", asking)) is DONE
    assert await admit.ErasureRequest()(p, view_of(p, "understand", d)) is GO


async def owned_by_c1(p: TestPipeline, d: Delivery) -> None:
    p.batons.save(memory.new_baton(StageRecord.model_validate_json(d.value or b"").ticket))


async def test_ownership_refuses_another_senders_ticket_and_its_first_stage_form_only_there(
    p: TestPipeline,
) -> None:
    await owned_by_c1(p, await taken_in(p))
    intruder = await taken_in(p, "T2", customer="C2")
    at_first, at_lookup = view_of(p, "understand", intruder), view_of(p, "lookup", intruder)
    for view in (at_first, at_lookup):
        await admit.Decode()(p, view)
    assert await admit.Ownership(opening_only=True)(p, at_lookup) is GO
    assert p.dead_letters == []
    assert await admit.Ownership(opening_only=True)(p, at_first) is DONE
    assert await admit.Ownership()(p, at_lookup) is DONE
    assert [dl.reason for dl in p.dead_letters] == ["session_conflict"] * 2


async def test_context_fails_a_ticket_that_reached_a_stage_without_an_earlier_result(
    p: TestPipeline,
) -> None:
    d = await taken_in(p)
    view = view_of(p, "lookup", d)  # the sessions record: no understanding in it
    await admit.Decode()(p, view)
    assert await turn.ContextComplete()(p, view) is DONE
    assert [dl.reason for dl in p.dead_letters] == ["context_broken"]
    assert p.counts.counts["context.broken"] == 1
    first = view_of(p, "understand", d)
    await admit.Decode()(p, first)
    assert await turn.ContextComplete()(p, first) is GO


async def test_restore_and_budget_leave_the_baton_and_the_allowance_for_the_stage(
    p: TestPipeline,
) -> None:
    view = view_of(p, "understand", await taken_in(p))
    await admit.Decode()(p, view)
    assert await turn.Restore()(p, view) is GO
    assert view.baton is not None and view.baton.session_id == "S1" and view.started > 0
    assert await turn.Budget()(p, view) is GO
    assert view.allowance is not None
    assert view.allowance.tokens == p.settings.session_token_budget


async def test_a_taken_over_session_gets_a_silent_reply_and_no_stage(p: TestPipeline) -> None:
    d = await taken_in(p)
    record = StageRecord.model_validate_json(d.value or b"")
    p.batons.save(memory.new_baton(record.ticket).model_copy(update={"taken_over": True}))
    view = view_of(p, "understand", d)
    await admit.Decode()(p, view)
    assert await turn.TakenOver()(p, view) is DONE
    [(_, raw)] = p.sink.sent[p.topics.replies]
    assert b'"T1"' in raw and p.counts.counts["done.understand.taken_over"] == 1
    assert await turn.TakenOver()(p, view_of(p, "lookup", d)) is GO


async def test_an_answered_tickets_copy_stops_at_the_first_stage_only(p: TestPipeline) -> None:
    d = await taken_in(p)
    fresh = view_of(p, "understand", d)
    await admit.Decode()(p, fresh)
    assert await admit.AnsweredCopy()(p, fresh) is GO  # the baton has not seen the ticket
    for stage in p.chain:
        await p.deliver(stage.name, delivery_of(p, p.source_topic(stage)))
    assert len(p.sink.sent[p.topics.replies]) == 1
    copy = view_of(p, "understand", d)
    await admit.Decode()(p, copy)
    assert await admit.AnsweredCopy()(p, copy) is DONE
    assert p.counts.counts["done.understand.reused"] == 1 and p.dead_letters == []
    later = view_of(p, "lookup", d)
    await admit.Decode()(p, later)
    assert await admit.AnsweredCopy()(p, later) is GO  # later stages settle at their turn


async def test_the_view_reads_the_baton_once_until_it_is_refreshed(p: TestPipeline) -> None:
    view = view_of(p, "understand", await taken_in(p))
    await admit.Decode()(p, view)
    reads = count_reads(p.batons)
    assert view.held() is None and view.held() is None and view.entry() is None
    assert reads == ["get"]
    view.refresh()
    view.held()
    assert reads == ["get", "get"]


def count_reads(batons: BatonStore) -> list[str]:
    """The store reads of ``batons`` from now on, by kind (a baton, a customer's index)."""
    reads: list[str] = []
    get, index = batons.get, batons.index

    def counted_get(session_id: str) -> Any:
        reads.append("get")
        return get(session_id)

    def counted_index(customer_id: str) -> Any:
        reads.append("index")
        return index(customer_id)

    batons.get = counted_get  # type: ignore[method-assign]
    batons.index = counted_index  # type: ignore[method-assign]
    return reads


async def test_a_records_checks_read_the_session_store_a_few_times_on_the_normal_path(
    p: TestPipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first stage reads the baton before its turn, its clock and the gate read it, and
    it is read again at the turn; the customer's erasure mark is read once. A later stage
    reads each once. (Each check read on its own before: 7 reads at the first stage, 3 at
    each of the others.)"""
    await taken_in(p)
    reads = count_reads(p.batons)
    at_inputs: list[list[str]] = []
    built = pipeline.Inputs

    def inputs(**kwargs: Any) -> Any:
        at_inputs.append(sorted(reads))  # what the checks read before the stage's inputs
        return built(**kwargs)

    monkeypatch.setattr(pipeline, "Inputs", inputs)
    for stage in p.chain:
        reads.clear()
        await p.deliver(stage.name, delivery_of(p, p.source_topic(stage)))
    assert len(p.sink.sent[p.topics.replies]) == 1 and p.dead_letters == []
    first, *later = at_inputs
    assert first == ["get", "get", "get", "get", "index"]
    assert later == [["get", "index"]] * (len(p.chain.names) - 1)


async def test_redelivery_settles_a_copy_of_a_ticket_the_stage_forwarded(p: TestPipeline) -> None:
    d = await taken_in(p)
    fresh = view_of(p, "understand", d)
    await admit.Decode()(p, fresh)
    assert await turn.Redelivered()(p, fresh) is GO  # the baton has not seen the ticket
    await p.deliver("understand", d)
    [first] = p.sink.sent[p.topics.understood]
    copy = view_of(p, "understand", d)
    await admit.Decode()(p, copy)
    assert await turn.Redelivered()(p, copy) is DONE
    assert p.sink.sent[p.topics.understood] == [first, first]  # its output sent again
    assert p.counts.counts["done.understand.reused"] == 1


async def test_a_list_stops_at_the_first_check_that_settles_the_record(p: TestPipeline) -> None:
    ran: list[str] = []

    class Seen:
        def __init__(self, name: str, verdict: checks.Verdict) -> None:
            self.name, self.verdict = name, verdict

        async def __call__(self, host: checks.Host, view: RecordView) -> checks.Verdict:
            ran.append(self.name)
            return self.verdict

    view = view_of(p, "understand", await taken_in(p))
    assert await checks.passed([Seen("a", GO), Seen("b", GO)], p, view)
    assert not await checks.passed([Seen("c", GO), Seen("d", DONE), Seen("e", GO)], p, view)
    assert ran == ["a", "b", "c", "d"]
