"""The arithmetic of the bench's per-ticket breakdown and cost per ticket, and its report lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton_kafka.streams.bench.breakdown import (
    Timeline,
    cost_per_ticket,
    describe_breakdown,
    describe_costs,
    spread,
    stage_costs,
    ticket_breakdown,
)
from baton_kafka.streams.bench.inproc import measure
from baton_kafka.streams.bench.load import Workload
from baton_kafka.streams.bench.report import check_figures
from baton_kafka.streams.bench.run import notes
from tests.unit.streams.bench.test_bench import _store_with


def _usage(calls: int, tokens: int, cost: float, **by_stage: int) -> dict[str, object]:
    return {
        "calls": calls,
        "input_tokens": tokens,
        "output_tokens": 10 * calls,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "cost_usd": cost,
        "by_stage": by_stage,
    }


def _timeline() -> Timeline:
    # Published at 100.000 s; intake out at +20 ms; understand out at +150 ms after 40 ms of
    # work; lookup out at +200 ms after 10 ms; the pending baton written at +450 ms and the
    # reply out at +455 ms after 60 ms of strategy work; 440 ms from intake to reply.
    return Timeline(
        published=100.0,
        intake_out=100.020,
        outputs={
            "understand": (100.150, _usage(1, 1000, 0.001, understand=1)),
            "lookup": (100.200, _usage(1, 1000, 0.001, understand=1)),
            "strategy": (100.455, _usage(2, 3000, 0.004, understand=1, strategy=1)),
        },
        work_ms={"understand": 40.0, "lookup": 10.0, "strategy": 60.0},
        pending_written=100.450,
        end_to_end_ms=440.0,
    )


def test_a_ticket_splits_into_hops_waits_work_and_the_changelog_wait() -> None:
    parts = ticket_breakdown(_timeline(), model_ms_per_call=25.0)
    expected = {
        "intake_hop": 20.0,
        "wait_before_understand": 130.0 - 40.0,
        "work_understand": 40.0,
        "model_understand": 25.0,
        "own_understand": 15.0,
        "wait_before_lookup": 50.0 - 10.0,
        "work_lookup": 10.0,
        "model_lookup": 0.0,
        "own_lookup": 10.0,
        "changelog_wait_strategy": 5.0,
        "wait_before_strategy": 255.0 - 60.0 - 5.0,
        "work_strategy": 60.0,
        "model_strategy": 25.0,
        "own_strategy": 35.0,
        "publish_to_reply": 455.0,
        "end_to_end": 440.0,
    }
    assert parts == pytest.approx(expected, abs=1e-6)
    # The parts add up to what the customer waited for.
    path = ["intake_hop", "changelog_wait_strategy"] + [
        f"{p}_{s}" for s in ("understand", "lookup", "strategy") for p in ("wait_before", "work")
    ]
    assert sum(parts[p] for p in path) == pytest.approx(parts["publish_to_reply"])


def test_model_time_never_exceeds_the_stage_work() -> None:
    parts = ticket_breakdown(_timeline(), model_ms_per_call=1000.0)
    assert parts["model_understand"] == 40.0
    assert parts["own_understand"] == 0.0


def test_a_ticket_with_a_missing_record_keeps_only_what_its_records_show() -> None:
    t = _timeline()
    del t.outputs["lookup"]
    t.intake_out = None
    parts = ticket_breakdown(t)
    assert "intake_hop" not in parts
    assert "wait_before_understand" not in parts
    assert "work_lookup" not in parts
    # Strategy's wait needs lookup's output time: unknown, so left out, but its work is known.
    assert "wait_before_strategy" not in parts
    assert parts["work_strategy"] == 60.0


def test_spread_gives_p50_p95_p99_and_max_per_part_over_the_tickets_that_have_it() -> None:
    rows = [{"a": float(i), "b": 1.0} for i in range(1, 101)] + [{"a": 1000.0}]
    out = spread(rows)
    # 101 samples: rank (n - 1) * q / 100 is q itself, so each percentile is a sample.
    assert out["a"] == {"p50": 51.0, "p95": 96.0, "p99": 100.0, "max": 1000.0}
    assert out["b"] == {"p50": 1.0, "p95": 1.0, "p99": 1.0, "max": 1.0}
    # 100 samples: p99 interpolates between the 99th and the 100th (rank 98.01).
    assert spread([{"c": float(i)} for i in range(1, 101)])["c"]["p99"] == 99.0
    assert spread([{"c": float(i) * 10} for i in range(1, 101)])["c"]["p99"] == 990.1
    assert spread([]) == {}


def test_stage_costs_are_the_differences_of_the_usage_totals() -> None:
    t = _timeline()
    costs = stage_costs([(s, t.outputs[s][1]) for s in ("understand", "lookup", "strategy")])
    assert costs["understand"]["calls"] == 1
    assert costs["understand"]["input_tokens"] == 1000
    assert costs["lookup"] == pytest.approx(
        {
            "calls": 0,
            "input_tokens": 0,
            "output_tokens": 0,
            "cache_read_tokens": 0,
            "cache_write_tokens": 0,
            "cost_usd": 0.0,
        }
    )
    assert costs["strategy"]["calls"] == 1
    assert costs["strategy"]["input_tokens"] == 2000
    assert costs["strategy"]["output_tokens"] == 10
    assert costs["strategy"]["cost_usd"] == pytest.approx(0.003)


def test_cost_per_ticket_averages_each_stage_and_sums_the_total() -> None:
    one = {"understand": {"calls": 1.0, "input_tokens": 100.0, "cost_usd": 0.002}}
    two = {
        "understand": {"calls": 1.0, "input_tokens": 300.0, "cost_usd": 0.004},
        "lookup": {"calls": 1.0, "input_tokens": 50.0, "output_tokens": 10.0, "cost_usd": 0.001},
    }
    cost = cost_per_ticket([one, two])
    assert cost["tickets"] == 2
    assert cost["by_stage"]["understand"] == {
        "calls": 1.0,
        "tokens": 200.0,
        "output_tokens": 0.0,
        "cost_usd": 0.003,
    }
    assert cost["by_stage"]["lookup"]["calls"] == 0.5
    assert cost["by_stage"]["lookup"]["tokens"] == 30.0
    assert cost["total"] == {
        "calls": 1.5,
        "tokens": 230.0,
        "output_tokens": 5.0,
        "cost_usd": 0.0035,
    }
    assert cost_per_ticket([]) == {}
    line = describe_costs(cost)
    assert line.startswith("cost per ticket: $0.00350, 1.50 calls, 230 tokens")
    assert "lookup 0.50 calls 30 tokens $0.00050" in line


def test_the_notes_print_the_breakdown_in_chain_order_and_the_costs() -> None:
    parts = spread([ticket_breakdown(_timeline())])
    lines = describe_breakdown(parts)
    names = [line.split()[0] for line in lines]
    assert names.index("intake_hop") < names.index("wait_before_understand")
    hop = lines[names.index("intake_hop")].split()
    assert hop[1:] == ["p50", "20.0", "p95", "20.0", "p99", "20.0", "max", "20.0", "ms"]
    assert names.index("work_strategy") < names.index("end_to_end")
    row = {
        "workload": "overhead: one at a time",
        "overhead_ms": parts,
        "cost_per_ticket": cost_per_ticket([{"strategy": {"calls": 1.0, "cost_usd": 0.01}}]),
        "audit_and_policy_ms_per_draft": 0.42,
        "audit_and_policy_us_per_draft": {
            "p50": 390.5,
            "p95": 500.0,
            "p99": 610.2,
            "max": 700.0,
            "mean": 420.0,
            "drafts": 30,
        },
    }
    scale = {"partitions": 12, "tickets_per_s": {"1": 40.0, "2": 70.0}}
    scale["vs_one_worker"] = {"1": 1.0, "2": 1.75}
    text = "\n".join(notes({"broker": None, "rows": [row], "scale_out": scale}))
    assert "overhead: one at a time: cost per ticket: $0.01000" in text
    assert (
        "reply audit + policy check 0.42 ms CPU per draft "
        "(p50 390.5 us, p99 610.2 us, max 700.0 us, mean 420.0 us)"
    ) in text
    assert "  publish_to_reply" in text
    assert "2 worker(s) 70.0/s (1.75x)" in text


async def test_the_in_process_run_times_the_audit_and_policy_check_of_each_draft(
    tmp_path: Path,
) -> None:
    import baton_kafka.agents.strategy as strategy

    audit, settle = strategy.audit, strategy.settle
    workload = Workload("c", sessions=2, per_session=2)
    cost = await measure(await _store_with(tmp_path, workload), workload.tickets())
    assert cost.drafts >= cost.replies == 4
    assert 0 < cost.checks_s < cost.total_s
    # Each draft's audit, with the policy checks after it, adds up to the whole.
    assert len(cost.per_draft_s) == cost.drafts
    assert sum(cost.per_draft_s) == pytest.approx(cost.checks_s)
    figures = check_figures(cost)
    spread = figures["audit_and_policy_us_per_draft"]
    assert spread["drafts"] == cost.drafts
    assert spread["mean"] == pytest.approx(1e6 * cost.checks_s / cost.drafts, abs=0.1)
    assert figures["audit_and_policy_ms_per_draft"] == round(1000 * cost.checks_s / cost.drafts, 3)
    # The stage's own functions are back in place after the run.
    assert (strategy.audit, strategy.settle) == (audit, settle)


async def test_the_in_process_run_times_the_promise_checks_once_each(tmp_path: Path) -> None:
    import baton_kafka.agents.guards.commitments as commitments
    import baton_kafka.agents.guards.shop_terms as shop_terms

    checks = (commitments.problems, shop_terms.masked)
    workload = Workload("c", sessions=2, per_session=2)
    cost = await measure(await _store_with(tmp_path, workload), workload.tickets())
    # Inside the stages' time, and not counted twice where one check calls another.
    assert 0 < cost.promises_s < cost.total_s - cost.model_s
    figures = check_figures(cost)
    assert figures["promise_checks_ms_per_reply"] == round(1000 * cost.promises_s / 4, 3)
    assert (commitments.problems, shop_terms.masked) == checks
