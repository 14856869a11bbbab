"""The context health check: a baton rebuilt after a crash keeps what the stale one knew."""

from __future__ import annotations

from baton_kafka.agents import memory
from baton_kafka.schemas import Baton, Snapshot, StageRecord
from baton_kafka.schemas.records import UsageTotals
from baton_kafka.streams.runtime.session.context import restore
from tests.fixtures.data import ticket, understanding


def _record(tid: str, version: int) -> StageRecord:
    return StageRecord(
        ticket=ticket(tid, "And the lid is cracked too."),
        understanding=understanding("Kettle"),
        baton_version=version,
        snapshot=Snapshot(core_problems=["the kettle leaks"], product="Kettle"),
    )


def test_a_stale_baton_lends_its_answered_tickets_to_the_rebuilt_one() -> None:
    # The table lost the writes after T-0 was answered (version 4); T-1's record says 9.
    stale = Baton(
        session_id="S1",
        customer_id="C1",
        version=4,
        answered=["T-0"],
        usage=UsageTotals(calls=3, input_tokens=900),
    )
    level, baton = restore(_record("T-1", version=9), stale, previous="understand")
    assert level == "partial"
    # A redelivered copy of T-0 must still find it answered, or it would be answered twice.
    assert baton.answered == ["T-0"]
    assert baton.usage == stale.usage
    assert baton.version == 9 + 1  # the snapshot's version, then the understanding applied


def test_a_rebuilt_baton_never_moves_the_version_back() -> None:
    ahead = Baton(session_id="S1", customer_id="C1", version=12, answered=["T-0"])
    level, baton = restore(_record("T-1", version=3), ahead, previous="understand")
    assert level == "partial"
    assert baton.version == 12 + 1


def test_without_a_table_baton_the_snapshot_is_all_there_is() -> None:
    level, baton = restore(_record("T-1", version=5), None, previous="understand")
    assert level == "partial"
    assert baton.answered == []
    assert baton.product == "Kettle"
    assert memory.snapshot(baton).core_problems[0] == "the kettle leaks"
