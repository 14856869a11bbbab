"""The pure parts of ``baton bench``: percentiles, delivery checks, /proc parsing, prompt sizes."""

from __future__ import annotations

import gc
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from baton_kafka.agents import languages
from baton_kafka.agents.orders import open_store
from baton_kafka.agents.testing.standin import StandIn, estimate_tokens
from baton_kafka.schemas.baton import Baton, TicketMemory
from baton_kafka.schemas.records import Order, UsageTotals
from baton_kafka.streams.bench.inproc import baton_growth, measure
from baton_kafka.streams.bench.load import Workload, minimal_context, prompt_sizes
from baton_kafka.streams.bench.report import describe_split, records_per_ticket, split_cpu
from baton_kafka.streams.bench.run import (
    WARM_BROKER_S,
    BenchOptions,
    BrokerRun,
    broker_line,
    notes,
)
from baton_kafka.streams.bench.stats import (
    Row,
    check_delivery,
    cpu_seconds,
    cpu_seconds_of,
    filesystem_of,
    first_and_last_tenth,
    percentile,
    processes_cpu,
    rss_drift,
    split_sessions,
    status_kib,
    steady_rate,
    table,
    tails,
)
from baton_kafka.streams.bench.workloads import soak_expiry
from baton_kafka.streams.cli.errors import UsageError
from baton_kafka.streams.cli.main import main, parser
from baton_kafka.streams.kafka.apache import KafkaUnavailable
from baton_kafka.streams.kafka.topics import TopicNames
from baton_kafka.streams.runtime import heap
from baton_kafka.streams.runtime.worker import build_llm
from baton_kafka.streams.settings import Settings, load
from tests.fixtures.data import KETTLE, order
from tests.fixtures.data import reply as make_reply
from tests.fixtures.models import standin_env


def test_percentile_interpolates_between_ranks() -> None:
    values = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert percentile(values, 0) == 1.0
    assert percentile(values, 50) == 3.0
    assert percentile(values, 100) == 5.0
    assert percentile(values, 25) == 2.0
    assert percentile([1.0, 2.0], 95) == pytest.approx(1.95)
    assert percentile([], 50) is None
    with pytest.raises(ValueError):
        percentile(values, 101)


def test_tails_are_the_interpolated_p50_p95_p99_and_the_max() -> None:
    # 11 samples 0, 10, ..., 90 and one outlier of 1000: rank (n - 1) * q / 100 = 0.1 * q.
    values = [10.0 * i for i in range(10)] + [1000.0]
    assert tails(values) == {
        "p50": 50.0,
        "p95": pytest.approx(90.0 + (1000.0 - 90.0) * 0.5),
        "p99": pytest.approx(90.0 + (1000.0 - 90.0) * 0.9),
        "max": 1000.0,
    }
    # Rounded when asked; the max is a sample, never interpolated.
    assert tails([1.0, 2.0, 4.0], 2) == {"p50": 2.0, "p95": 3.8, "p99": 3.96, "max": 4.0}
    assert tails([7.0]) == {"p50": 7.0, "p95": 7.0, "p99": 7.0, "max": 7.0}
    assert tails([]) == {"p50": None, "p95": None, "p99": None, "max": None}


def test_in_order_replies_have_no_violations() -> None:
    published = {"a": ["a1", "a2", "a3"], "b": ["b1", "b2"]}
    replies = [("a", "a1"), ("b", "b1"), ("a", "a2"), ("b", "b2"), ("a", "a3")]
    d = check_delivery(published, replies)
    assert (d.answered, d.lost, d.duplicates, d.order_violations) == (5, [], 0, 0)


def test_a_reply_after_a_later_ticket_of_its_session_is_a_violation() -> None:
    published = {"a": ["a1", "a2", "a3"], "b": ["b1", "b2"]}
    # a1 arrives after a2 and a3: one late reply, in one session; b keeps its order.
    replies = [("a", "a2"), ("a", "a3"), ("a", "a1"), ("b", "b1"), ("b", "b2")]
    d = check_delivery(published, replies)
    assert d.order_violations == 1
    assert d.sessions_out_of_order == 1
    swapped = check_delivery({"a": ["a1", "a2", "a3"]}, [("a", "a3"), ("a", "a1"), ("a", "a2")])
    assert swapped.order_violations == 2


def test_lost_duplicates_and_strangers_are_counted_separately() -> None:
    published = {"a": ["a1", "a2"], "b": ["b1"]}
    replies = [("a", "a1"), ("a", "a1"), ("x", "x9"), ("b", "b1")]
    d = check_delivery(published, replies)
    assert d.lost == ["a2"]
    assert d.duplicates == 1
    assert d.unexpected == 1
    assert d.order_violations == 0
    assert d.answered == 2


def test_a_redelivered_earlier_reply_is_a_duplicate_not_a_violation() -> None:
    d = check_delivery({"a": ["a1", "a2"]}, [("a", "a1"), ("a", "a2"), ("a", "a1")])
    assert (d.duplicates, d.order_violations) == (1, 0)


def test_sessions_on_several_partitions_are_found() -> None:
    assert split_sessions([("a", 1), ("a", 1), ("b", 2), ("b", 3), ("c", 0)]) == 1


def test_proc_stat_is_read_past_a_command_name_with_spaces() -> None:
    fields = ["S", *["0"] * 10, "250", "150", *["0"] * 30]
    stat = "4242 (python -m (x)) " + " ".join(fields)
    assert cpu_seconds_of(stat, ticks=100) == pytest.approx(4.0)


def test_this_process_reports_its_own_cpu_time() -> None:
    sum(i * i for i in range(200_000))
    used = cpu_seconds(os.getpid())
    assert used is not None and used > 0
    assert cpu_seconds(2**22 + 12345) is None


def test_status_values_are_read_in_kib() -> None:
    status = "Name:\tpython\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\n"
    assert status_kib(status, "VmRSS") == 102400
    assert status_kib(status, "VmHWM") == 204800
    assert status_kib(status, "VmSwap") is None


def test_rss_drift_compares_the_ends_after_warm_up() -> None:
    flat = [(float(t), 100.0 + (t % 3)) for t in range(0, 100)]
    drift = rss_drift(flat, warmup_s=10)
    assert drift is not None and drift.flat
    growing = [(float(t), 100.0 + t) for t in range(0, 100)]
    grown = rss_drift(growing, warmup_s=10)
    assert grown is not None and not grown.flat
    assert grown.change > 0.5
    # A start-up spike before the warm-up ends is not held against the soak.
    spiky = [(0.0, 500.0), (1.0, 400.0), *flat[10:]]
    spike = rss_drift(spiky, warmup_s=5)
    assert spike is not None and spike.flat
    assert rss_drift([(0.0, 1.0)], warmup_s=0) is None


def test_first_and_last_tenth_are_means_after_warm_up() -> None:
    backlog = [(float(t), float(t // 10)) for t in range(0, 120)]
    # Kept: t = 20..119 (100 samples); first tenth 20..29 -> 2, last tenth 110..119 -> 11.
    assert first_and_last_tenth(backlog, warmup_s=20) == (2.0, 11.0)
    assert first_and_last_tenth([(5.0, 1.0)], warmup_s=0) is None


def test_steady_rate_ignores_the_ramp_and_the_tail() -> None:
    # 100 replies one per 0.1 s, then a long tail of one more after 100 s.
    done = [i * 0.1 for i in range(100)] + [110.0]
    rate = steady_rate(done)
    assert rate is not None and rate == pytest.approx(10.0, rel=0.05)
    assert steady_rate([1.0, 2.0]) is None


def test_table_has_a_column_per_metric_and_dashes_for_unknowns() -> None:
    rows = [
        Row("latency", 3000, 20.0, rate=150.0, p50_s=1.234, lost=0, duplicates=0),
        Row("cpu", 10, 1.0),
    ]
    text = table(rows).splitlines()
    assert text[0].startswith("| workload")
    assert "150.0" in text[2] and "1.23" in text[2]
    assert text[3].count("–") >= 10
    assert len({len(line) for line in text}) == 1


def test_table_and_json_have_p99_and_max_after_p50_and_p95() -> None:
    row = Row("burst", 30, 1.0, p50_s=0.1, p95_s=0.2, p99_s=0.25, max_s=0.3)
    header, _, line = table([row]).splitlines()
    titles = [c.strip() for c in header.strip("|").split("|")]
    cells = [c.strip() for c in line.strip("|").split("|")]
    at = titles.index("p50 s")
    assert titles[at : at + 4] == ["p50 s", "p95 s", "p99 s", "max s"]
    assert cells[at : at + 4] == ["0.10", "0.20", "0.25", "0.30"]
    data = row.as_dict()
    assert (data["p99_s"], data["max_s"]) == (0.25, 0.3)


def test_workload_tickets_come_in_waves_with_private_customers() -> None:
    w = Workload("t", sessions=3, per_session=6)
    tickets = w.tickets()
    assert len(tickets) == 18
    assert [t.session_id for t in tickets[:3]] == ["t-s00000", "t-s00001", "t-s00002"]
    assert len({t.ticket_id for t in tickets}) == 18
    first = [t for t in tickets if t.session_id == "t-s00000"]
    assert [t.ticket_id for t in first] == sorted(t.ticket_id for t in first)
    customers = {o.customer_id for o in w.orders()}
    assert customers == {t.customer_id for t in tickets if t.customer_id}
    assert len({o.order_id for o in w.orders()}) == len(w.orders())


def test_a_soak_rolls_new_sessions_over_the_same_customers() -> None:
    w = Workload("t", sessions=3, per_session=2)
    stream = w.rolling()
    tickets = [next(stream) for _ in range(12)]
    sessions = [t.session_id for t in tickets]
    assert sessions[:6] == ["t-s00000", "t-s00001", "t-s00002"] * 2
    assert sessions[6:] == ["t-s00003", "t-s00004", "t-s00005"] * 2
    assert [t.customer_id for t in tickets[6:9]] == [t.customer_id for t in tickets[:3]]
    assert {t.customer_id for t in tickets} == {o.customer_id for o in w.orders()}
    assert len({t.ticket_id for t in tickets}) == 12


def test_a_soaks_sessions_expire_only_after_three_idle_waves() -> None:
    assert soak_expiry(600, 30.0) == (60.0, 10.0)
    assert soak_expiry(600, 5.0) == (360.0, 10.0)


def _order() -> Order:
    """c1's kettle, O-1: the order a minimal strategy prompt names."""
    placed = datetime(2026, 10, 2, 10, tzinfo=UTC)
    return order("O-1", "c1", product_name=KETTLE, amount=39.9, ordered_at=placed)


def test_minimal_context_carries_message_core_problems_and_order_only() -> None:
    ticket = Workload("m", 1, 1).tickets()[0]
    text = minimal_context("strategy", ticket, ["Kettle leaks; wants a refund."], _order())
    assert ticket.text in text
    assert "Kettle leaks; wants a refund." in text
    assert "O-1" in text
    assert "flags" not in text and "understanding" not in text


async def test_prompt_sizes_compare_sent_tokens_with_minimal_prompts() -> None:
    ticket = Workload("m", 1, 1).tickets()[0]
    baton = Baton(
        session_id=ticket.session_id,
        tickets=[TicketMemory(ticket_id=ticket.ticket_id, core_problem="Kettle leaks.")],
    )
    minimal = estimate_tokens(minimal_context("strategy", ticket, ["Kettle leaks."], _order()))
    usage = UsageTotals(
        calls=1, input_tokens=2 * minimal, cache_read_tokens=1000, by_stage={"strategy": 1}
    )
    reply = make_reply(ticket.ticket_id, ticket.session_id, order_id="O-1", usage=usage)
    size = await prompt_sizes(
        [ticket], {ticket.ticket_id: reply}, {ticket.session_id: baton}, {"O-1": _order()}
    )
    assert size.minimal_context == minimal
    assert size.context_ratio == pytest.approx(2.0)
    assert size.sent == 2 * minimal + 1000
    assert size.cache_share == pytest.approx(1000 / (2 * minimal + 1000))
    assert size.minimal > size.minimal_context


async def _store_with(tmp_path: Path, workload: Workload) -> Settings:
    settings = load({}).with_(data_dir=tmp_path)
    store = open_store(settings.orders_url)
    try:
        await store.upsert(workload.orders())
    finally:
        await store.close()
    return settings


async def test_in_process_run_answers_every_ticket_and_times_the_model(tmp_path: Path) -> None:
    workload = Workload("u", sessions=2, per_session=3)
    settings = await _store_with(tmp_path, workload)
    cost = await measure(settings, workload.tickets())
    assert (cost.tickets, cost.replies) == (6, 6)
    assert 0 < cost.model_s < cost.total_s


async def test_in_process_run_collects_garbage_as_a_settled_worker_then_restores(
    tmp_path: Path,
) -> None:
    workload = Workload("h", sessions=1, per_session=2)
    settings = await _store_with(tmp_path, workload)
    before = gc.get_threshold()
    seen: list[tuple[tuple[int, int, int], int]] = []
    await measure(
        settings,
        workload.tickets(),
        lambda _ticket, _state: seen.append((gc.get_threshold(), gc.get_freeze_count())),
    )
    settled = (heap.YOUNG_THRESHOLD, heap.MIDDLE_THRESHOLD, heap.OLD_THRESHOLD)
    assert len(seen) == 2
    assert all(threshold == settled and frozen > 0 for threshold, frozen in seen)
    assert (gc.get_threshold(), gc.get_freeze_count()) == (before, 0)


async def test_the_split_with_a_model_client_counts_the_client_and_names_it(
    tmp_path: Path, standin: StandIn
) -> None:
    workload = Workload("c", sessions=2, per_session=2)
    settings = await _store_with(tmp_path, workload)
    with_client = load(standin_env(standin.base_url)).with_(data_dir=tmp_path)
    llm = build_llm(with_client)
    offline, client = Row("offline", 4, 1.0), Row("client", 4, 1.0)
    offline.cpu_ms_per_ticket = client.cpu_ms_per_ticket = 100.0
    try:
        calls_before = standin.stats()["calls"]
        await split_cpu(settings, offline, workload.tickets())
        assert standin.stats()["calls"] == calls_before  # the offline rules call no server
        await split_cpu(with_client, client, workload.tickets(), model=llm)
        assert standin.stats()["calls"] > calls_before  # answers came over HTTP via the SDK
    finally:
        await llm.aclose()
    plain = offline.extra["cpu_split_ms_per_ticket"]
    sdk = client.extra["cpu_split_ms_per_ticket"]
    assert (plain["model_is"], sdk["model_is"]) == ("offline rules", "anthropic client")
    assert plain["in_process_replies"] == sdk["in_process_replies"] == 4
    assert sdk["model"] > 0 and plain["model"] > 0


async def test_a_split_whose_parts_exceed_the_worker_reports_no_rest_and_says_why(
    tmp_path: Path,
) -> None:
    workload = Workload("x", sessions=1, per_session=2)
    settings = await _store_with(tmp_path, workload)
    # The worker's whole CPU below what its parts cost in the run of their own.
    slower, faster = Row("slower", 2, 1.0), Row("faster", 2, 1.0)
    slower.cpu_ms_per_ticket, faster.cpu_ms_per_ticket = 0.001, 10_000.0
    await split_cpu(settings, slower, workload.tickets())
    await split_cpu(settings, faster, workload.tickets())
    short, long = (r.extra["cpu_split_ms_per_ticket"] for r in (slower, faster))
    parts = short["model"] + short["stages_without_model"]
    assert short["transport_and_tables"] is None
    assert short["parts_exceed_worker_ms"] == pytest.approx(parts - 0.001, abs=0.002)
    assert "not told" in describe_split("cpu", 0.001, short)
    assert long["transport_and_tables"] > 0 and "parts_exceed_worker_ms" not in long
    line = describe_split("cpu", 10_000.0, long)
    assert line.endswith(f"transport/tables/scheduling {long['transport_and_tables']}")


async def test_a_long_session_grows_its_baton(tmp_path: Path) -> None:
    workload = Workload("g", sessions=1, per_session=1)
    settings = await _store_with(tmp_path, workload)
    tickets = [workload.ticket(0, turn) for turn in range(6)]
    sizes = await baton_growth(settings, tickets, {1, 6})
    assert set(sizes) == {1, 6}
    assert 0 < sizes[1] < sizes[6]


def test_records_per_ticket_need_every_published_ticket_read_back() -> None:
    s = Settings(namespace="benchx-cpu")
    tickets = TopicNames.of(s).tickets
    written = {tickets: 10, f"{s.app_id}-batons-changelog": 40}
    figures = records_per_ticket(written, 10, s)
    assert figures == {"total": 5.0, "batons-changelog": 4.0, "support.tickets": 1.0}
    # A broker too slow to answer within the read's patience: no figure rather than a low one.
    assert records_per_ticket({tickets: 3}, 10, s) is None
    assert records_per_ticket({}, 10, s) is None


def test_broker_and_baton_broker_together_are_a_one_line_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BATON_BROKER", "kafka://127.0.0.1:1")
    assert main(["bench", "--broker", "kafka", "--workload", "cpu"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert err == [
        "baton bench: --broker starts a broker of its own; unset BATON_BROKER or drop --broker"
    ]


def test_an_unknown_broker_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--broker", "redpanda"]) == 2
    assert "invalid choice: 'redpanda'" in capsys.readouterr().err


def test_the_broker_defaults_to_tansu() -> None:
    args = parser().parse_args(["bench"])
    assert args.broker is None
    assert BenchOptions().broker == "tansu"


def test_kafka_without_java_is_the_one_line_kafka_unavailable_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import baton_kafka.streams.kafka.apache as apache

    def no_java(_: str | None = None) -> None:
        raise KafkaUnavailable("java not found; install a JRE 17+ (apt-get install default-jre)")

    monkeypatch.setattr(apache, "find_java", no_java)
    assert main(["bench", "--broker", "kafka", "--workload", "cpu", "--tickets", "4"]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert err[-1] == "baton: java not found; install a JRE 17+ (apt-get install default-jre)"
    assert not any("Traceback" in line for line in err)


def test_the_result_names_its_broker_and_the_report_shows_it() -> None:
    kafka = BrokerRun("kafka", "kafka://127.0.0.1:9092", "4.3.1", started=True)
    assert kafka.describe() == {"kind": "kafka", "version": "4.3.1", "started_by_bench": True}
    assert not kafka.embedded and BrokerRun("tansu", "kafka://x:1").embedded
    row = {"workload": "cpu", "other_cpu_ms_per_ticket": {"broker": 3.25}}
    lines = notes({"broker": kafka.describe(), "rows": [row]})
    assert "broker: Apache Kafka 4.3.1 (one node, started by the bench)" in lines
    assert "cpu: broker CPU 3.25 ms/ticket" in lines
    tansu = BrokerRun("tansu", "kafka://127.0.0.1:9092", started=True).describe()
    assert broker_line(tansu) == "Tansu (embedded) (started by the bench)"
    given = BrokerRun("kafka", "kafka://kafka:9092").describe()
    assert broker_line(given) == "Apache Kafka (BATON_BROKER)"


def test_the_three_node_cluster_replicates_three_times_with_acks_all() -> None:
    args = parser().parse_args(["bench", "--broker", "kafka-cluster"])
    assert args.broker == "kafka-cluster"
    cluster = BrokerRun(
        "kafka", "kafka://127.0.0.1:9092", "4.3.1", started=True, nodes=3, replication=3, acks="all"
    )
    assert cluster.describe() == {
        "kind": "kafka",
        "version": "4.3.1",
        "started_by_bench": True,
        "nodes": 3,
        "replication": 3,
        "acks": "all",
    }
    assert broker_line(cluster.describe()) == (
        "Apache Kafka 4.3.1 (3 nodes, replication 3, acks=all, started by the bench)"
    )
    base = load({}).with_(producer_acks="1")
    on_cluster = cluster.configure(base)
    assert (on_cluster.replication_factor, on_cluster.producer_acks) == (3, "all")
    assert on_cluster.broker_shown == "kafka://127.0.0.1:9092"
    # One node keeps the settings' own replication and acks.
    one = BrokerRun("kafka", "kafka://127.0.0.1:9093", started=True).configure(base)
    assert (one.replication_factor, one.producer_acks) == (1, "1")


def test_both_brokers_are_tansu_and_one_kafka_node_not_the_cluster() -> None:
    from baton_kafka.streams.bench.run import BROKERS

    assert BROKERS == ("tansu", "kafka")


def test_broker_cpu_sums_every_process_and_is_unknown_once_one_is_gone() -> None:
    own = cpu_seconds(os.getpid())
    assert own is not None
    both = processes_cpu([os.getpid(), os.getpid()])
    assert both is not None and both >= 2 * own
    assert processes_cpu([os.getpid(), 2**22 + 12345]) is None
    assert processes_cpu([]) is None


async def test_the_split_with_every_text_new_forgets_what_earlier_tickets_read(
    tmp_path: Path,
) -> None:
    workload = Workload("n", sessions=2, per_session=2)
    settings = await _store_with(tmp_path, workload)
    kept = await measure(settings, workload.tickets())
    assert languages._rank.cache_info().currsize > 0
    new = await measure(settings, workload.tickets(), every_text_new=True)
    assert languages._rank.cache_info().currsize == 0
    assert (kept.replies, new.replies) == (4, 4)


def test_a_kafka_the_run_started_is_warmed_first_and_the_result_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert WARM_BROKER_S > 0
    assert parser().parse_args(["bench"]).warm_broker == WARM_BROKER_S
    assert BenchOptions().warm_broker_s == WARM_BROKER_S
    assert parser().parse_args(["bench", "--warm-broker", "0"]).warm_broker == 0
    kafka = BrokerRun("kafka", "kafka://127.0.0.1:9092", "4.3.1", started=True)
    kafka.warmed = {"seconds": 20.0, "records_written": 90_000, "records_read": 89_950}
    assert kafka.describe()["warmed"] == kafka.warmed
    assert broker_line(kafka.describe()) == (
        "Apache Kafka 4.3.1 (one node, started by the bench, warmed 20 s)"
    )
    for wrong in ("-1", "inf", "nan"):
        assert main(["bench", "--broker", "kafka", "--warm-broker", wrong]) == 2
        err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert err == ["baton bench: --warm-broker must be a number of seconds, 0 or more"]


def test_a_kafka_the_run_starts_runs_the_jvms_compilers_unless_told_and_says_which() -> None:
    assert parser().parse_args(["bench"]).broker_jit == "tiered" == BenchOptions().broker_jit
    assert parser().parse_args(["bench", "--broker-jit", "c1"]).broker_jit == "c1"
    with pytest.raises(UsageError, match="--broker-jit: invalid choice: 'c2'"):
        parser().parse_args(["bench", "--broker-jit", "c2"])
    kafka = BrokerRun(
        "kafka", "kafka://127.0.0.1:9092", "4.3.1", started=True, jit="c1", storage="tmpfs"
    )
    assert (kafka.describe()["jit"], kafka.describe()["storage"]) == ("c1", "tmpfs")
    assert broker_line(kafka.describe()) == (
        "Apache Kafka 4.3.1 (one node, started by the bench, JIT c1, data on tmpfs)"
    )


MOUNTS = """\
/dev/vda / ext4 rw,relatime 0 0
tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0
/dev/vdb /srv/my\\040data xfs rw 0 0
proc /proc proc rw 0 0
"""


def test_the_filesystem_of_a_folder_is_its_deepest_mount() -> None:
    assert filesystem_of(Path("/dev/shm/baton-bench-1/kafka"), MOUNTS) == "tmpfs"
    assert filesystem_of(Path("/dev/shm"), MOUNTS) == "tmpfs"
    assert filesystem_of(Path("/dev/shmx/kafka"), MOUNTS) == "ext4"
    assert filesystem_of(Path("/srv/my data/kafka"), MOUNTS) == "xfs"
    assert filesystem_of(Path("/tmp/baton-bench-1"), MOUNTS) == "ext4"
    assert filesystem_of(Path("/tmp"), "") is None
    # This machine's own mounts: every path lies under the root's.
    assert filesystem_of(Path.cwd()) is not None
