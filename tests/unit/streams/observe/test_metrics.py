"""PrometheusObserver and the dashboard window: pipeline events in, exposition values out."""

from __future__ import annotations

import shlex
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from faust.types import TP
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from baton_kafka.schemas.records import CallUsage
from baton_kafka.streams.cli.main import parser
from baton_kafka.streams.observe.dashboard import Recent, percentile, summary
from baton_kafka.streams.observe.metrics import PrometheusObserver, add_process_metrics
from tests.fixtures.data import reply
from tests.fixtures.faust_app import (
    FakeApp,
    FakeConsumer,
    FakeRecovery,
    FakeScheduler,
    FakeTable,
    FakeTables,
)


def exposition(observer: PrometheusObserver) -> dict[str, dict[frozenset[tuple[str, str]], float]]:
    """The /metrics text parsed back: sample name -> labels -> value."""
    text = generate_latest(observer.registry).decode()
    out: dict[str, dict[frozenset[tuple[str, str]], float]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, {})[frozenset(s.labels.items())] = s.value
    return out


def value(samples: dict[str, Any], name: str, **labels: str) -> float | None:
    return samples.get(name, {}).get(frozenset(labels.items()))


def test_stage_events_become_counters_and_histograms() -> None:
    m = PrometheusObserver()
    for _ in range(3):
        m.record_in("understand")
    m.stage_done("understand", "ok", 0.3)
    m.stage_done("understand", "degraded", 2.0)
    m.stage_done("understand", "reused", 0.0)
    m.stage_done("intake", "ok", 0.0)
    m.dead_letter("understand", "model_error")
    m.dead_letter("intake", "invalid_input")
    m.dead_letter("intake", "invalid_input")
    m.context("lookup", "partial")
    m.reply(reply(status="answered"), 1.5)
    m.reply(reply(status="degraded"), None)

    s = exposition(m)
    assert value(s, "baton_records_in_total", stage="understand") == 3
    assert value(s, "baton_stage_outputs_total", stage="understand", outcome="ok") == 1
    assert value(s, "baton_stage_outputs_total", stage="understand", outcome="degraded") == 1
    assert value(s, "baton_stage_outputs_total", stage="understand", outcome="reused") == 1
    assert value(s, "baton_dead_letters_total", stage="intake", reason="invalid_input") == 2
    assert value(s, "baton_dead_letters_total", stage="understand", reason="model_error") == 1
    assert value(s, "baton_context_recoveries_total", stage="lookup", level="partial") == 1
    assert value(s, "baton_replies_total", status="answered") == 1
    assert value(s, "baton_replies_total", status="degraded") == 1
    # Only measured durations enter the latency histogram: ok 0.3 s and degraded 2.0 s.
    assert value(s, "baton_stage_latency_seconds_count", stage="understand") == 2
    assert value(s, "baton_stage_latency_seconds_sum", stage="understand") == pytest.approx(2.3)
    assert value(s, "baton_stage_latency_seconds_bucket", stage="understand", le="0.25") == 0
    assert value(s, "baton_stage_latency_seconds_bucket", stage="understand", le="0.5") == 1
    assert value(s, "baton_stage_latency_seconds_bucket", stage="understand", le="2.5") == 2
    assert value(s, "baton_stage_latency_seconds_count", stage="intake") is None
    # A reply without a known age is counted but not timed.
    assert value(s, "baton_end_to_end_latency_seconds_count") == 1
    assert value(s, "baton_end_to_end_latency_seconds_bucket", le="2.5") == 1
    assert value(s, "baton_end_to_end_latency_seconds_bucket", le="1.0") == 0


def test_model_calls_count_tokens_cost_and_reasks() -> None:
    m = PrometheusObserver()
    first = CallUsage(
        stage="strategy",
        model="claude-sonnet-4-5",
        input_tokens=1000,
        output_tokens=200,
        cache_read_tokens=800,
        cache_write_tokens=0,
        cost_usd=0.006,
    )
    reask = first.model_copy(update={"input_tokens": 1100, "cache_read_tokens": 0})
    m.model_calls([first, reask])
    m.model_calls([CallUsage(stage="understand", model="claude-haiku-4-5", output_tokens=50)])
    m.model_calls([])

    s = exposition(m)
    sonnet = {"stage": "strategy", "model": "claude-sonnet-4-5"}
    assert value(s, "baton_model_calls_total", **sonnet) == 2
    assert value(s, "baton_model_tokens_total", **sonnet, kind="input") == 2100
    assert value(s, "baton_model_tokens_total", **sonnet, kind="output") == 400
    assert value(s, "baton_model_tokens_total", **sonnet, kind="cache_read") == 800
    assert value(s, "baton_model_tokens_total", **sonnet, kind="cache_write") is None
    assert value(s, "baton_model_cost_usd_total", **sonnet) == pytest.approx(0.012)
    assert value(s, "baton_model_reasks_total", stage="strategy") == 1
    assert value(s, "baton_model_reasks_total", stage="understand") is None
    assert value(s, "baton_model_calls_total", stage="understand", model="claude-haiku-4-5") == 1


def test_retries_arrive_through_the_llm_hook() -> None:
    from baton_kafka.agents.models.claude import AnthropicLLM

    m = PrometheusObserver()
    llm = AnthropicLLM(api_key="sk-test-unused", base_url="http://127.0.0.1:9")
    m.watch_llm(llm)
    assert llm.on_retry is not None
    llm.on_retry("claude-haiku-4-5", "overloaded")
    llm.on_retry("claude-haiku-4-5", "overloaded")
    llm.on_retry("claude-haiku-4-5", "timeout")

    class NoHook:
        name = "offline"

    plain = NoHook()
    m.watch_llm(plain)
    assert not hasattr(plain, "on_retry")
    s = exposition(m)
    haiku = {"model": "claude-haiku-4-5"}
    assert value(s, "baton_model_retries_total", **haiku, cause="overloaded") == 2
    assert value(s, "baton_model_retries_total", **haiku, cause="timeout") == 1


def test_every_observer_has_its_own_registry() -> None:
    a, b = PrometheusObserver(), PrometheusObserver()
    a.record_in("intake")
    assert value(exposition(a), "baton_records_in_total", stage="intake") == 1
    assert value(exposition(b), "baton_records_in_total", stage="intake") is None


def fake_app() -> FakeApp:
    t0, t1 = TP("ns.support.understood", 0), TP("ns.support.understood", 1)
    changelog = TP("baton-ns-batons-changelog", 0)
    consumer = FakeConsumer(assigned={t0, t1, changelog})
    recovery = FakeRecovery(
        active=Counter({changelog: 7}), tp_to_table={changelog: FakeTable("batons")}
    )
    return FakeApp(FakeTables(recovery), consumer, rebalancing=True, rebalancing_count=2)


def test_live_state_is_read_at_scrape_time() -> None:
    app = fake_app()
    schedulers = {"understand": FakeScheduler(3), "lookup": FakeScheduler(0)}
    m = PrometheusObserver()
    m.watch(app, schedulers, ["ns.support.understood"], sessions_open=lambda: 5)

    s = exposition(m)
    assert value(s, "baton_stage_in_flight", stage="understand") == 3
    assert value(s, "baton_sessions_in_pipeline") == 5
    # Before the first assignment completed there are no partitions to report, nothing recovered.
    assert "baton_partitions_assigned" not in s
    assert value(s, "baton_tables_recovered") == 0
    assert value(s, "baton_table_recovery_remaining", table="batons", role="active") == 7
    assert value(s, "baton_rebalancing") == 1
    assert value(s, "baton_rebalances_total") == 2

    schedulers["understand"].in_flight = 1
    app.tables.recovery.completed.flag = True
    app.tables.recovery.active.clear()
    app.rebalancing = False
    s = exposition(m)
    assert value(s, "baton_stage_in_flight", stage="understand") == 1
    assert value(s, "baton_tables_recovered") == 1
    assert value(s, "baton_rebalancing") == 0
    topic = "ns.support.understood"
    # The changelog partition is assigned too, but it is no input of a stage.
    assert value(s, "baton_partitions_assigned", topic=topic) == 2
    assert set(s["baton_partitions_assigned"]) == {frozenset({("topic", topic)})}


PROCESS_METRICS = (
    "process_resident_memory_bytes",
    "process_cpu_seconds_total",
    "process_open_fds",
    "process_start_time_seconds",
    "python_info",
)


def test_the_process_is_measured_in_the_workers_registry() -> None:
    s = exposition(PrometheusObserver())
    for name in PROCESS_METRICS:
        assert name in s, name
    assert value(s, "process_resident_memory_bytes") > 0
    assert value(s, "process_open_fds") >= 1


def test_process_metrics_are_registered_once_per_registry() -> None:
    shared = CollectorRegistry()
    # Several observers on one registry, and observers on the global one that
    # prometheus_client already filled with its own process collector.
    PrometheusObserver(shared)
    add_process_metrics(shared)
    add_process_metrics(REGISTRY)
    add_process_metrics(REGISTRY)
    families = [m.name for m in shared.collect()]
    assert families.count("process_resident_memory_bytes") == 1
    assert families.count("python_info") == 1
    global_families = [m.name for m in REGISTRY.collect()]
    assert global_families.count("process_resident_memory_bytes") == 1
    # And each new worker app in this process gets them in its own registry.
    assert "process_start_time_seconds" in exposition(PrometheusObserver())


def test_percentile_is_nearest_rank() -> None:
    data = [float(i) for i in range(1, 101)]
    assert percentile(data, 50) == 50.0
    assert percentile(data, 95) == 95.0
    assert percentile([7.0], 95) == 7.0
    assert percentile([], 50) is None


def test_recent_window_is_bounded_and_forgets_old_buckets() -> None:
    now = [1000.0]
    recent = Recent(window_s=60, bucket_s=5, samples=10, tickets=3, clock=lambda: now[0])
    for i in range(40):
        recent.stage_done("strategy", "ok", 0.1 * (i + 1))
    recent.stage_done("strategy", "degraded", 9.0)
    recent.stage_done("strategy", "reused", 0.0)
    w = recent.stage_window("strategy")
    assert w["done"] == 42
    assert w["outcomes"] == {"ok": 40, "degraded": 1, "reused": 1}
    assert w["success_rate"] == pytest.approx(40 / 41)
    # The reservoir keeps 10 of the 41 timed results, each one of the values observed.
    bucket = recent.stages["strategy"][-1]
    assert len(bucket.latencies) == 10
    assert bucket.timed == 41
    assert w["p50_ms"] is not None and 100 <= w["p50_ms"] <= 9000

    for _ in range(30):
        now[0] += 5
        recent.stage_done("strategy", "ok", 0.2)
    assert len(recent.stages["strategy"]) <= 12
    w = recent.stage_window("strategy")
    assert w["done"] == 12
    assert w["outcomes"] == {"ok": 12}
    assert w["p95_ms"] == 200.0
    assert w["series"] == [1] * 12

    now[0] += 120
    assert recent.stage_window("strategy")["done"] == 0
    assert recent.stage_window("strategy")["success_rate"] is None


def test_recent_keeps_the_newest_tickets() -> None:
    recent = Recent(tickets=3)
    for i in range(5):
        recent.reply(reply(f"T-{i}", status="answered" if i % 2 else "handoff"), 1.0 + i)
    assert [t["ticket_id"] for t in recent.tickets] == ["T-4", "T-3", "T-2"]
    assert recent.tickets[0]["status"] == "handoff"
    assert recent.tickets[0]["end_to_end_ms"] == 5000
    assert recent.tickets[0]["trace"] == "baton trace S-1"


# Payloads that only ever name harmless commands: the shell below finds no program at all.
@pytest.mark.parametrize(
    "session",
    [
        "S-1",
        "s1; touch injected",
        "$(touch injected)",
        "`touch injected`",
        "s1 && echo x > injected",
        'it\'s "quoted"',
        "a b\tc\nd",
        "x | true",
        "*",
        "-rf",
        "--json",
        "",
    ],
)
def test_the_copy_button_command_is_quoted_for_a_posix_shell(session: str, tmp_path: Path) -> None:
    recent = Recent()
    recent.reply(reply("T-1", session=session), 1.0)
    command = recent.tickets[0]["trace"]
    # A shell runs it with a stand-in `baton` that prints its arguments, NUL separated, and
    # a PATH with no programs in it, so an unquoted id could run nothing but shell builtins.
    empty, cwd = tmp_path / "bin", tmp_path / "cwd"
    empty.mkdir()
    cwd.mkdir()
    done = subprocess.run(
        ["/bin/sh", "-c", f"baton() {{ printf '%s\\0' \"$@\"; }}; {command}"],
        capture_output=True,
        cwd=cwd,
        env={"PATH": str(empty)},
        timeout=10,
    )
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    args = [a.decode() for a in done.stdout.split(b"\0")[:-1]]
    assert args in (["trace", session], ["trace", "--", session]), args
    assert not list(cwd.iterdir()), "the shell ran something from the id"
    # And `baton trace` reads the id as the session, never as an option.
    parsed = parser().parse_args(shlex.split(command)[1:])
    assert parsed.command == "trace" and parsed.session_id == session and not parsed.json


def test_dashboard_totals_are_the_registry_values() -> None:
    m, recent = PrometheusObserver(), Recent()
    for _ in range(4):
        m.record_in("intake")
    m.dead_letter("intake", "invalid_input")
    m.dead_letter("strategy", "model_error")
    m.dead_letter("lookup", "model_error")
    m.reply(reply(status="answered"), 1.0)
    m.model_calls([CallUsage(stage="lookup", model="m", input_tokens=30, cost_usd=0.5)])
    m.model_retry("m", "overloaded")
    data = summary(m.values(), recent)
    totals = data["totals"]
    assert totals["records_in"] == {"intake": 4}
    assert totals["dead_letters"] == {"invalid_input": 1, "model_error": 2}
    assert totals["replies"] == {"answered": 1}
    assert totals["model_calls"] == 1
    assert totals["tokens"] == {"input": 30}
    assert totals["cost_usd"] == 0.5
    assert totals["retries"] == {"overloaded": 1}
    assert [s["stage"] for s in data["stages"]] == ["intake", "understand", "lookup", "strategy"]


def test_without_a_web_token_the_dashboard_data_names_no_ticket_or_session() -> None:
    recent = Recent()
    recent.reply(reply("T-1", session="guest-session-secret"), 1.0)
    open_data = summary(PrometheusObserver().values(), recent, ids=False)
    [row] = open_data["tickets"]
    assert row["status"] and "end_to_end_ms" in row and open_data["ids_shown"] is False
    assert (
        "guest-session-secret" not in orjson.dumps(open_data).decode() and "T-1" not in row.values()
    )
    [full] = summary(PrometheusObserver().values(), recent, ids=True)["tickets"]
    assert full["session_id"] == "guest-session-secret" and full["ticket_id"] == "T-1"
