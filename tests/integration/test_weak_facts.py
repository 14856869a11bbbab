"""A worker on the Messages API served by the stand-in as a weak model whose every reply names a
near-miss of the order id, on every ask: the replies name the store's ids, in the customer's
language, and no ticket goes to a person for it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from baton_kafka.agents.guards.language import language_of
from baton_kafka.agents.guards.order_facts import CORRECTED
from baton_kafka.agents.testing.standin import WEAK, run_in_thread
from tests.fixtures.brokers import Broker
from tests.fixtures.data import ORDERS, ticket_record
from tests.fixtures.deployments import Deployment
from tests.fixtures.models import FAST_SERVER

pytestmark = pytest.mark.integration

TICKETS = [
    ("w1", "s-ana", "c-ana", "My kettle is leaking, I want a refund."),
    ("w2", "s-li", "c-li", "我的水壶漏水了，想退款"),
]


# What the replies say does not depend on the broker: one leg.
@pytest.mark.one_broker
async def test_near_miss_ids_on_every_ask_are_answered_from_the_store(
    broker: Broker, namespace: str, tmp_path: Path
) -> None:
    style = replace(WEAK, near_miss=1.0, stubborn=True)
    with run_in_thread(style=style) as server:
        env = {
            "BATON_LLM": "anthropic",
            "ANTHROPIC_BASE_URL": server.base_url,
            "ANTHROPIC_API_KEY": "sk-weak-stand-in",
            "BATON_MODEL_TIMEOUT": "60",
            **FAST_SERVER,
        }
        d = Deployment(broker=broker, namespace=namespace, data_dir=tmp_path, env_extra=env)
        try:
            d.import_orders(ORDERS)
            d.start_worker()
            await d.publish_tickets([ticket_record(*t) for t in TICKETS])
            replies = {r.ticket_id: r for r in await d.replies(2)}
        finally:
            d.stop()
        strategy_calls = server.stats()["by_stage"].get("strategy", 0)
    assert replies["w1"].status == replies["w2"].status == "answered"
    assert "O-1001" in replies["w1"].reply and "O-2001" in replies["w2"].reply
    # The model wrote the ids wrongly; the store's were put in, without a re-ask.
    assert all(CORRECTED in r.internal_note for r in replies.values())
    assert strategy_calls == 2
    assert language_of(replies["w2"].reply, ["美的电热水壶 1.7L"]) == "zh"
    assert language_of(replies["w1"].reply) == "en"
