"""deploy/: the dashboard, alert rules and Prometheus config read only what workers export.

Every metric a PromQL expression reads is looked up in the samples of a real worker registry
(pipeline events, live state, lag, the process), so renaming a metric breaks this test.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest
from aiokafka import TopicPartition
from faust.types import TP

from baton_kafka.schemas.records import CallUsage, DeadLetterReason, ReplyStatus
from baton_kafka.streams.observe.lag import LagSampler
from baton_kafka.streams.observe.metrics import PrometheusObserver
from baton_kafka.streams.runtime.chain import BUILTIN
from baton_kafka.streams.settings import load
from tests.fixtures.data import reply
from tests.fixtures.faust_app import (
    FakeApp,
    FakeConsumer,
    FakeEvent,
    FakeRecovery,
    FakeScheduler,
    FakeTables,
)
from tests.fixtures.paths import ROOT, read_mapping

DEPLOY = ROOT / "deploy"
ALERTS = DEPLOY / "prometheus" / "alerts.yml"
PROMETHEUS = DEPLOY / "prometheus" / "prometheus.yml"
DASHBOARD = DEPLOY / "grafana" / "baton.json"
DATASOURCES = DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yml"
DASHBOARD_PROVIDERS = DEPLOY / "grafana" / "provisioning" / "dashboards" / "baton.yml"

# Series Prometheus makes itself for every scrape target, not the worker.
SCRAPE_SERIES = frozenset({"up"})
KEYWORDS = frozenset(
    {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring"}
    | {"group_left", "group_right", "inf", "nan"}
)
CLOSED_LABELS: dict[str, frozenset[str]] = {
    "reason": frozenset(get_args(DeadLetterReason)),
    # The stages the declarations name (the built-in chain) and the intake.
    "stage": frozenset({"intake", *BUILTIN.names}),
    "status": frozenset(get_args(ReplyStatus)),
}

_STRINGS = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'')
_MATCHERS = re.compile(r"\{[^}]*\}")
_RANGES = re.compile(r"\[[^\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_VARIABLES = re.compile(r"\$\{?\w+\}?")
_IDENT = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_LABEL_MATCH = re.compile(r'(\w+)\s*(=~|!~|!=|=)\s*"([^"]*)"')


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: identifiers that are no function,
    aggregation, keyword, label, duration or number."""
    text = _MATCHERS.sub(" ", _STRINGS.sub('""', expr))
    text = _GROUPING.sub(" ", _RANGES.sub(" ", _VARIABLES.sub(" ", text)))
    names = set()
    for m in _IDENT.finditer(text):
        before = text[m.start() - 1] if m.start() else " "
        if before.isalnum() or before == ".":
            continue  # the exponent of a number such as 1e3
        if text[m.end() :].lstrip().startswith("(") or m.group().lower() in KEYWORDS:
            continue
        names.add(m.group())
    return names


def label_values(expr: str) -> Iterator[tuple[str, str]]:
    """(label, value) for each alternative of each matcher on a label with a closed set."""
    for label, _, values in _LABEL_MATCH.findall(expr):
        if label in CLOSED_LABELS:
            for value in values.split("|"):
                yield label, value


def exported_names() -> set[str]:
    """Every sample name a worker's registry exposes once each kind of event happened."""
    m = PrometheusObserver()
    for stage in CLOSED_LABELS["stage"]:
        m.record_in(stage)
        m.stage_done(stage, "ok", 0.2)
        m.dead_letter(stage, "model_error")
        m.context(stage, "partial")
    m.model_calls(
        [
            CallUsage(
                stage="strategy",
                model="m",
                input_tokens=1,
                output_tokens=1,
                cache_read_tokens=1,
                cache_write_tokens=1,
                cost_usd=0.01,
            )
        ]
        * 2
    )
    m.model_retry("m", "timeout")
    m.reply(reply(status="degraded"), 1.0)
    topic = "ns.support.understood"
    recovery = FakeRecovery(completed=FakeEvent(True))
    app = FakeApp(FakeTables(recovery), FakeConsumer({TP(topic, 0)}))
    m.watch(app, {"understand": FakeScheduler(1)}, [topic], sessions_open=lambda: 1)
    lag = LagSampler(load({}), "baton-ns", list)
    lag.lag = {TopicPartition(topic, 0): 3}
    m.watch_lag(lag)
    return {s.name for metric in m.registry.collect() for s in metric.samples}


@pytest.fixture(scope="module")
def exported() -> set[str]:
    return exported_names()


@pytest.fixture(scope="module")
def alerts() -> list[dict[str, Any]]:
    return [rule for group in read_mapping(ALERTS)["groups"] for rule in group["rules"]]


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    return read_mapping(DASHBOARD)


@pytest.fixture(scope="module")
def prometheus() -> dict[str, Any]:
    return read_mapping(PROMETHEUS)


def targets(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for panel in dashboard["panels"] for t in panel.get("targets", [])]


def bind_mounts(service: dict[str, Any]) -> dict[str, Path]:
    """Container path -> repository file, for the bind mounts of ``service``."""
    out = {}
    for volume in service.get("volumes", []):
        source, _, rest = volume.partition(":")
        if source.startswith("./"):
            out[rest.split(":", 1)[0]] = (ROOT / source).resolve()
    return out


# --- the checks themselves -----------------------------------------------------------------


def test_metric_names_are_read_from_promql() -> None:
    expr = (
        'histogram_quantile(0.95, sum by (stage, le) (rate(baton_a_bucket{stage=~"x|y"}'
        "[$__rate_interval]))) / on (le) group_left baton_b > 1e3 and deriv(c:d[15m:1m]) "
        '> bool 0 or absent(up{job="baton"} == 1) offset 5m'
    )
    assert metric_names(expr) == {"baton_a_bucket", "baton_b", "c:d", "up"}


def test_a_renamed_metric_would_be_caught(exported: set[str]) -> None:
    assert "baton_records_in_total" in exported
    assert metric_names("sum(rate(baton_records_total[5m]))") - exported == {"baton_records_total"}
    # The suffixes come from the samples themselves: a histogram is read as _bucket.
    assert "baton_end_to_end_latency_seconds_bucket" in exported
    assert "baton_end_to_end_latency_seconds" not in exported
    assert "baton_model_cost_usd" not in exported


def test_the_registry_exports_what_the_dashboard_needs(exported: set[str]) -> None:
    for name in (
        "baton_consumer_lag",
        "baton_partitions_assigned",
        "process_resident_memory_bytes",
        "process_cpu_seconds_total",
        "process_open_fds",
        "process_start_time_seconds",
    ):
        assert name in exported, name


# --- alerts --------------------------------------------------------------------------------


def test_every_alert_is_complete(alerts: list[dict[str, Any]]) -> None:
    names = [rule["alert"] for rule in alerts]
    assert len(names) == len(set(names)), "alert names must be unique"
    for rule in alerts:
        name = rule["alert"]
        assert isinstance(rule["expr"], str) and rule["expr"].strip(), name
        assert re.fullmatch(r"\d+[smh]", rule["for"]), name
        assert rule["labels"]["severity"] in ("warning", "critical"), name
        assert rule["annotations"]["summary"].strip(), name


def test_alerts_read_only_exported_metrics(
    alerts: list[dict[str, Any]], exported: set[str]
) -> None:
    for rule in alerts:
        names = metric_names(rule["expr"])
        assert names, rule["alert"]
        assert names <= exported | SCRAPE_SERIES, (rule["alert"], names - exported)
        for label, value in label_values(rule["expr"]):
            assert value in CLOSED_LABELS[label], (rule["alert"], label, value)


def test_the_alerts_cover_what_operators_asked_for(alerts: list[dict[str, Any]]) -> None:
    def reading(metric: str, *words: str) -> list[str]:
        return [
            r["alert"]
            for r in alerts
            if metric in metric_names(r["expr"]) and all(w in r["expr"] for w in words)
        ]

    assert len(reading("baton_consumer_lag")) >= 2, "lag high and lag growing"
    assert reading("baton_consumer_lag", "deriv(")
    assert reading("baton_dead_letters_total", "baton_records_in_total")
    assert reading("baton_replies_total", 'status="degraded"')
    assert reading("baton_dead_letters_total", "model_error")
    assert reading("baton_model_cost_usd_total", "[1h]")
    assert reading("up", "== 0")


def test_alerts_and_scrape_config_name_the_same_job(
    alerts: list[dict[str, Any]], prometheus: dict[str, Any]
) -> None:
    jobs = {job["job_name"] for job in prometheus["scrape_configs"]}
    for rule in alerts:
        for job in re.findall(r'job="([^"]*)"', rule["expr"]):
            assert job in jobs, rule["alert"]


# --- dashboard -----------------------------------------------------------------------------


def test_dashboard_targets_read_only_exported_metrics(
    dashboard: dict[str, Any], exported: set[str]
) -> None:
    found = targets(dashboard)
    assert len(found) >= 10
    for target in found:
        names = metric_names(target["expr"])
        assert names, target["expr"]
        assert names <= exported | SCRAPE_SERIES, (target["expr"], names - exported)
        for label, value in label_values(target["expr"]):
            assert value in CLOSED_LABELS[label], (target["expr"], label, value)


def test_the_dashboard_shows_what_operators_asked_for(dashboard: dict[str, Any]) -> None:
    exprs = [t["expr"] for t in targets(dashboard)]
    used = set().union(*(metric_names(e) for e in exprs))
    assert {
        "baton_records_in_total",  # throughput per stage
        "baton_end_to_end_latency_seconds_bucket",  # reply latency quantiles
        "baton_consumer_lag",
        "baton_dead_letters_total",  # by reason, and model errors
        "baton_replies_total",  # degraded share
        "baton_model_tokens_total",
        "baton_model_cost_usd_total",
        "process_resident_memory_bytes",
        "process_cpu_seconds_total",
    } <= used
    assert any("histogram_quantile(0.99" in e for e in exprs)
    assert any("sum by (reason)" in e and "baton_dead_letters_total" in e for e in exprs)


def test_dashboard_panels_use_the_provisioned_datasource(dashboard: dict[str, Any]) -> None:
    sources = read_mapping(DATASOURCES)["datasources"]
    (source,) = sources
    assert source["type"] == "prometheus"
    assert source["url"] == "http://prometheus:9090"
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            continue
        for ds in [panel["datasource"], *(t["datasource"] for t in panel["targets"])]:
            assert ds == {"type": "prometheus", "uid": source["uid"]}, panel["title"]
    assert dashboard["uid"] == "baton"


# --- wiring into docker-compose ------------------------------------------------------------


def test_prometheus_loads_the_rules_and_config_compose_mounts(
    prometheus: dict[str, Any], services: dict[str, Any]
) -> None:
    mounts = bind_mounts(services["prometheus"])
    assert mounts["/etc/prometheus/prometheus.yml"] == PROMETHEUS
    for path in prometheus["rule_files"]:
        assert mounts[path] == ALERTS, path
    (job,) = [j for j in prometheus["scrape_configs"] if j["job_name"] == "baton"]
    credentials = job["authorization"]["credentials_file"]
    secret = credentials.removeprefix("/run/secrets/")
    assert secret in services["prometheus"]["secrets"]
    (sd,) = job["dns_sd_configs"]
    assert sd["names"] == ["worker"]
    assert [str(sd["port"])] == [str(p) for p in services["worker"]["expose"]]


def test_grafana_loads_the_dashboard_compose_mounts(services: dict[str, Any]) -> None:
    mounts = bind_mounts(services["grafana"])
    provisioning = mounts["/etc/grafana/provisioning"]
    assert provisioning == (DEPLOY / "grafana" / "provisioning").resolve()
    (provider,) = read_mapping(DASHBOARD_PROVIDERS)["providers"]
    folder = provider["options"]["path"]
    dashboards = {path: source for path, source in mounts.items() if path.startswith(folder + "/")}
    assert dashboards == {f"{folder}/baton.json": DASHBOARD}


def test_dashboard_and_alerts_name_the_declared_stages(
    dashboard: dict[str, Any], alerts: list[dict[str, Any]]
) -> None:
    """Every stage a panel or rule names is declared; a list of stages is the whole chain."""
    exprs = [t["expr"] for t in targets(dashboard)] + [r["expr"] for r in alerts]
    lists = []
    for expr in exprs:
        for label, _, values in _LABEL_MATCH.findall(expr):
            if label != "stage":
                continue
            named = values.split("|")
            assert set(named) <= {"intake", *BUILTIN.names}, (expr, named)
            if len(named) > 1:
                lists.append(named)
    assert lists, "the model stages are listed somewhere"
    for named in lists:
        assert named == list(BUILTIN.names), named


def test_a_stage_missing_from_the_dashboard_would_be_caught() -> None:
    expr = 'sum(rate(baton_records_in_total{stage=~"understand|strategy"}[5m]))'
    (named,) = [v.split("|") for label, _, v in _LABEL_MATCH.findall(expr) if label == "stage"]
    assert named != list(BUILTIN.names)
    unknown = 'sum(rate(baton_records_in_total{stage="triage"}[5m]))'
    assert not {v for _, v in label_values(unknown)} <= {"intake", *BUILTIN.names}
