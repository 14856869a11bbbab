"""The overhead workload's bursts: one after another, pooled for the tails, kept apart for the
spread, their pauses counted as neither CPU nor throughput."""

from __future__ import annotations

import asyncio
import time

import pytest

from baton_kafka.schemas.records import Ticket
from baton_kafka.streams.bench.breakdown import PHASES, phases
from baton_kafka.streams.bench.bursts import describe, floor, in_bursts, merged, split, spread
from baton_kafka.streams.bench.kafka import Output
from baton_kafka.streams.bench.load import Workload
from baton_kafka.streams.bench.report import Measured, delivery_row
from baton_kafka.streams.bench.run import BURSTS, BenchOptions
from baton_kafka.streams.cli.main import main, parser


def _tickets(n: int) -> list[Ticket]:
    return Workload("b", n, 1).tickets()


def _measured(start: float, end: float, cpu: float, tickets: list[Ticket]) -> Measured:
    return Measured(
        started=start,
        finished=end,
        complete=True,
        cpu_s=cpu,
        other_cpu={"broker": cpu / 2},
        sent_at={t.ticket_id: start for t in tickets},
    )


def _reply(t: Ticket, at: float) -> Output:
    return Output(t.session_id, t.ticket_id, 0, at, at, b"{}")


def test_tickets_split_into_bursts_in_publication_order() -> None:
    tickets = _tickets(7)
    bursts = split(tickets, 3)
    assert [len(b) for b in bursts] == [3, 3, 1]
    assert [t for b in bursts for t in b] == tickets
    assert split(tickets, 7) == [tickets]


async def test_each_burst_waits_for_the_one_before_and_a_pause_between() -> None:
    bursts = split(_tickets(6), 2)
    events: list[tuple[str, int, float]] = []

    async def timed(part: list[Ticket]) -> Measured:
        i = bursts.index(part)
        started = time.monotonic()
        events.append(("start", i, started))
        await asyncio.sleep(0.02)
        events.append(("end", i, time.monotonic()))
        return _measured(started, time.monotonic(), 0.5, part)

    m = await in_bursts(timed, bursts, pause_s=0.1)
    assert [(kind, i) for kind, i, _ in events] == [
        ("start", 0), ("end", 0), ("start", 1), ("end", 1), ("start", 2), ("end", 2)
    ]  # fmt: skip
    for (_, _, ended), (_, _, next_start) in zip(events[1::2], events[2::2], strict=False):
        assert next_start - ended >= 0.09
    assert m.cpu_s == pytest.approx(1.5)
    assert m.other_cpu == {"broker": pytest.approx(0.75)}
    assert set(m.sent_at) == {t.ticket_id for b in bursts for t in b}
    # The active seconds are the bursts' own; the whole run also holds two pauses.
    assert m.active_s is not None
    assert 0.05 <= m.active_s < 0.2
    assert m.finished - m.started >= m.active_s + 0.18


def test_merged_is_incomplete_when_one_burst_is() -> None:
    a = _measured(0.0, 1.0, 0.1, _tickets(1))
    b = Measured(2.0, 3.0, False, 0.1, {}, {})
    m = merged([a, b])
    assert not m.complete
    assert (m.started, m.finished, m.active_s) == (0.0, 3.0, 2.0)
    assert m.other_cpu == {"broker": 0.05}


def test_a_paused_run_counts_its_rate_over_the_bursts_alone() -> None:
    tickets = _tickets(4)
    bursts = split(tickets, 2)
    # Two bursts of one second each, ten seconds apart.
    m = merged([_measured(0.0, 1.0, 0.2, bursts[0]), _measured(11.0, 12.0, 0.2, bursts[1])])
    outputs = [_reply(t, 0.5) for t in bursts[0]] + [_reply(t, 11.5) for t in bursts[1]]
    row, first = delivery_row("burst", m, outputs, tickets, 4)
    assert row.seconds == 2.0
    assert row.rate == pytest.approx(2.0)
    # Between 10 % and 90 % answered lies a pause: no steady rate is claimed.
    assert row.steady_rate is None
    assert row.cpu_ms_per_ticket == pytest.approx(100.0)
    assert len(first) == 4 and row.lost == 0


def test_one_timed_phase_keeps_its_wall_time_and_steady_rate() -> None:
    tickets = _tickets(12)
    m = _measured(0.0, 6.0, 1.2, tickets)
    outputs = [_reply(t, 0.5 * (i + 1)) for i, t in enumerate(tickets)]
    row, _ = delivery_row("one", m, outputs, tickets, 12)
    assert row.seconds == 6.0
    assert row.steady_rate == pytest.approx(2.0)


def test_the_spread_gives_each_bursts_p50_and_p99_and_their_median() -> None:
    bursts = split(_tickets(9), 3)
    sent = {t.ticket_id: 10.0 * i for i, b in enumerate(bursts) for t in b}
    # Burst 0 answers in 100/200/300 ms, burst 1 in 400/500/600, burst 2 in 50/60/70.
    waits = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.05, 0.06, 0.07]
    tickets = [t for b in bursts for t in b]
    first = {
        t.ticket_id: _reply(t, sent[t.ticket_id] + w) for t, w in zip(tickets, waits, strict=True)
    }
    got = spread(bursts, first, sent)
    assert got["bursts"] == 3
    assert got["p50_ms"] == [200.0, 500.0, 60.0]
    assert got["p99_ms"] == [298.0, 598.0, 69.8]
    assert got["median_of_p50_ms"] == 200.0
    assert got["p50_range_ms"] == [60.0, 500.0]
    line = describe("overhead: burst of 3", got)
    assert line == (
        "overhead: burst of 3: 3 bursts, publish -> reply p50 by burst (ms): 200, 500, 60; "
        "their median 200"
    )


def test_a_burst_with_no_reply_is_left_out_of_the_spread_not_counted_as_zero() -> None:
    bursts = split(_tickets(4), 2)
    sent = {t.ticket_id: 0.0 for b in bursts for t in b}
    first = {t.ticket_id: _reply(t, 0.25) for t in bursts[0]}
    got = spread(bursts, first, sent)
    assert got["p50_ms"] == [250.0]
    assert got["bursts"] == 2


def test_bursts_default_to_five_and_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    assert BURSTS == 5
    assert parser().parse_args(["bench"]).bursts == BURSTS
    assert BenchOptions().bursts == BURSTS
    assert parser().parse_args(["bench", "--bursts", "2"]).bursts == 2
    assert main(["bench", "--workload", "overhead", "--bursts", "0"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert err == ["baton bench: --bursts must be positive"]


def test_the_machines_floor_spreads_every_process_cpu_over_the_cores() -> None:
    # 30 ms of CPU a ticket in all, two cores: the k-th reply no sooner than k x 15 ms.
    low = floor(30, {"worker": 16.0, "stand-in": 6.0, "broker": 8.0}, 2)
    assert low == {"cpu_ms_per_ticket": 30.0, "cores": 2, "p50_ms": 232.5, "last_ms": 450.0}
    # Twice the cores, half the floor.
    four = floor(30, {"worker": 16.0, "stand-in": 6.0, "broker": 8.0}, 4)
    assert four is not None and four["last_ms"] == 225.0
    # A process whose CPU is unknown leaves no floor to claim.
    assert floor(30, {"worker": 16.0, "broker": None}, 2) is None
    assert floor(0, {"worker": 16.0}, 2) is None
    figures = {"bursts": 2, "p50_ms": [460.0, 470.0], "median_of_p50_ms": 465.0, "floor": low}
    assert describe("b", figures) == (
        "b: 2 bursts, publish -> reply p50 by burst (ms): 460, 470; their median 465; "
        "this machine's floor p50 232.5, last reply 450 (30 ms CPU a ticket over 2 cores)"
    )


def test_each_bursts_phases_are_the_p50_of_its_own_tickets() -> None:
    bursts = split(_tickets(6), 3)
    a, b = bursts
    # Burst a waited before understand, burst b before lookup; one of b's tickets has no
    # intake hop (its intake record was not read back).
    parts = {
        a[0].ticket_id: {"intake_hop": 2.0, "wait_before_understand": 300.0, "own_strategy": 1.0},
        a[1].ticket_id: {"intake_hop": 4.0, "wait_before_understand": 500.0, "own_strategy": 3.0},
        a[2].ticket_id: {"intake_hop": 6.0, "wait_before_understand": 400.0, "own_strategy": 2.0},
        b[0].ticket_id: {"wait_before_lookup": 250.0, "own_strategy": 1.0},
        b[1].ticket_id: {"intake_hop": 3.0, "wait_before_lookup": 150.0, "own_strategy": 1.0},
        # A part the phases do not keep is left out.
        b[2].ticket_id: {"intake_hop": 5.0, "wait_before_lookup": 200.0, "own_lookup": 9.0},
    }
    got = phases(bursts, parts)
    assert tuple(got) == PHASES
    assert got["intake_hop"] == [4.0, 4.0]
    assert got["wait_before_understand"] == [400.0, None]
    assert got["wait_before_lookup"] == [None, 200.0]
    assert got["own_strategy"] == [2.0, 1.0]
    assert got["own_understand"] == [None, None]
    # A ticket with no parts at all (no reply) counts in no burst.
    assert phases([[*a, *Workload("z", 1, 1).tickets()]], parts)["intake_hop"] == [4.0]
    figures = {"bursts": 2, "p50_ms": [460.0, 470.0], "phases_p50_ms": got}
    first, second = describe("b", figures).split("\n")
    assert first == "b: 2 bursts, publish -> reply p50 by burst (ms): 460, 470"
    assert second.startswith("b: p50 by burst of each part (ms): intake_hop 4, 4; ")
    assert "; wait_before_understand 400, -; own_understand -, -; wait_before_lookup -, 200;" in (
        second
    )
