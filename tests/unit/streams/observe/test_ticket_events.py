"""The log lines and metrics one ticket makes on its way through the chain: none goes missing."""

from __future__ import annotations

import io
import logging
from collections import Counter
from collections.abc import Iterator

import orjson
import pytest
from prometheus_client import CollectorRegistry

from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.streams.observe.logs import JsonFormatter, LoggingObserver
from baton_kafka.streams.observe.metrics import PrometheusObserver
from baton_kafka.streams.observe.observer import Fanout
from tests.fixtures.data import ticket
from tests.fixtures.pipelines import in_memory

STAGES = ("understand", "lookup", "strategy")


@pytest.fixture
def logged() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    """A logger writing JSON lines into a buffer at the worker's default level."""
    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("baton.test-ticket-events")
    logger.handlers[:] = [handler]
    logger.propagate = False
    logger.setLevel(logging.INFO)
    yield logger, buf
    logger.handlers.clear()
    logger.propagate = True


async def test_an_answered_ticket_logs_and_counts_every_hop(
    store: SQLiteOrderStore, logged: tuple[logging.Logger, io.StringIO]
) -> None:
    logger, buf = logged
    metrics = PrometheusObserver(CollectorRegistry())
    # The first-reply clock runs (and is stopped by the answer) as in a worker.
    p = in_memory(
        store, observer=Fanout(LoggingObserver(logger), metrics), first_reply_deadline_s=60
    )
    (reply,) = await p.send(ticket("t1", "Where is my order?"))
    assert reply.status == "answered"

    lines = [orjson.loads(line) for line in buf.getvalue().splitlines()]
    events = Counter((g["level"], g["stage"], g["outcome"], g["msg"]) for g in lines)
    calls = sum(n for (_, _, outcome, _), n in events.items() if outcome == "model_call")
    hops = {k: n for k, n in events.items() if k[2] != "model_call"}
    assert hops == {
        ("info", "intake", "ok", "intake ok"): 1,
        **{("info", s, "ok", f"{s} ok"): 1 for s in STAGES},
        ("info", "reply", "answered", "reply answered"): 1,
    }
    (answered,) = [g for g in lines if g["stage"] == "reply"]
    assert (answered["ticket_id"], answered["session_id"]) == ("t1", reply.session_id)
    assert all(g["duration_ms"] > 0 for g in lines if g["stage"] in STAGES and g["outcome"] == "ok")

    values = metrics.values()
    assert values["baton_records_in_total"] == {(s,): 1.0 for s in ("intake", *STAGES)}
    assert values["baton_stage_outputs_total"] == {(s, "ok"): 1.0 for s in ("intake", *STAGES)}
    assert values["baton_stage_latency_seconds_count"] == {(s,): 1.0 for s in STAGES}
    assert values["baton_context_recoveries_total"] == {(s, "full"): 1.0 for s in STAGES}
    assert values["baton_replies_total"] == {("answered",): 1.0}
    assert values["baton_end_to_end_latency_seconds_count"] == {(): 1.0}
    assert calls >= 1
    assert sum(values["baton_model_calls_total"].values()) == calls
    # The clock was stopped by the answer: no holding reply, nothing left open.
    assert p.pipeline.clocks.open == {}
