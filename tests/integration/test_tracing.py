"""A ticket's trace survives a worker that dies in the middle of it."""

from __future__ import annotations

import asyncio
import time

import pytest

from baton_kafka.agents.testing.standin import StandIn
from baton_kafka.schemas.codec import dumps
from baton_kafka.schemas.records import Ticket
from baton_kafka.schemas.stages import StageRecord
from tests.fixtures.data import ORDERS
from tests.fixtures.deployments import Deployment

pytestmark = pytest.mark.integration

USER_TRACE = "0af7651916cd43dd8448eb211c80319c"
USER_SPAN = "b7ad6b7169203331"
# The SDK's tracer provider without an exporter: the worker makes real spans, exports none.
TRACED = {"OTEL_PYTHON_TRACER_PROVIDER": "sdk_tracer_provider"}


def traceparent(headers: list[tuple[str, bytes]]) -> tuple[str, str]:
    """(trace id, parent span id) of a record's traceparent header."""
    [value] = [v for k, v in headers if k == "traceparent"]
    _, trace_id, span_id, _ = value.decode().split("-")
    return trace_id, span_id


async def until_asked(standin: StandIn, ticket_id: str, stage: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not any(
        r["ticket_id"] == ticket_id and r["stage"] == stage for r in standin.stats()["requests"]
    ):
        assert time.monotonic() < deadline, f"{stage} of {ticket_id} was never asked"
        await asyncio.sleep(0.1)


async def test_the_trace_continues_after_a_worker_dies_mid_ticket(
    deployment: Deployment, standin: StandIn
) -> None:
    tid = f"{deployment.namespace}-t1"
    deployment.import_orders(ORDERS)
    # The strategy call hangs (once): the worker dies with the ticket past lookup.
    first = deployment.start_worker(BATON_MODEL_TIMEOUT="120", **TRACED)
    ticket = Ticket(
        ticket_id=tid,
        session_id="s-traced",
        customer_id="c-ana",
        text="My kettle is leaking, I want a refund. [[fault:hang:strategy]]",
    )
    parent = f"00-{USER_TRACE}-{USER_SPAN}-01".encode()
    await deployment.publish(
        [(ticket.session_id, dumps(ticket))], headers=[("traceparent", parent)]
    )
    await until_asked(standin, tid, "strategy")
    first.kill()

    deployment.start_worker(**TRACED)
    [(_, reply_headers)] = await deployment.read("support.replies", lambda vs: len(vs) >= 1)

    # A record whose stage ran again on the second worker (its offset was not committed yet) is
    # sent again from the baton's entry in flight: the copy carries the trace too.
    hops: list[tuple[str, str]] = []
    for topic in ("support.tickets-by-session", "support.understood", "support.order-matched"):
        records = await deployment.read(topic, lambda vs: len(vs) >= 1)
        mine = [h for v, h in records if StageRecord.model_validate_json(v).ticket.ticket_id == tid]
        assert mine, topic
        hops.extend(traceparent(h) for h in mine)
    reply = traceparent(reply_headers)
    # The reply is the second worker's: the first one's strategy call was still hanging.
    asked = [
        r for r in standin.stats()["requests"] if (r["ticket_id"], r["stage"]) == (tid, "strategy")
    ]
    assert [r["fault"] for r in asked] == ["hang", None]
    # One trace from the publisher's span to the reply, across both workers.
    assert {trace_id for trace_id, _ in [*hops, reply]} == {USER_TRACE}
    # Each hop names its own stage span as the parent: the workers made spans, not copies.
    spans = [span for _, span in [*hops, reply]]
    assert len(set(spans)) == len(spans) >= 4 and USER_SPAN not in spans
