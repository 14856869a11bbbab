"""The examples around actions a person carries out, as they run: an executor of a shop's own
that hands large refunds to a person (shown in docs/extending.md), and the helpdesk bridge
carrying a desk's done decision."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from baton_kafka.agents.orders import OrderSource
from baton_kafka.schemas.action import Action, LedgerEntry
from baton_kafka.streams.actions.choose import open_executor
from baton_kafka.streams.actions.reconcile import carry_out
from tests.fixtures.payments import SHOPIFY_MAP, TOKEN, Payments, mapped, payments
from tests.fixtures.pipelines import in_memory
from tests.unit.streams.actions.test_action_manual import approved_refund, shop, wired

__all__ = ["payments", "shop"]


async def test_the_extending_example_hands_large_refunds_to_a_person_and_sends_the_rest(
    shop: OrderSource, payments: Payments, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "map.json"
    path.write_bytes(orjson.dumps(mapped(SHOPIFY_MAP, payments.base(), timeout_s=1.0)))
    monkeypatch.setenv("SHOP_EXECUTOR_MAP", str(path))
    monkeypatch.setenv("SHOP_ADMIN_TOKEN", TOKEN)
    executor = open_executor("examples.executors.large_refunds_by_hand:make")
    assert executor is not None and executor.name == "large-refunds-by-hand"
    try:
        p = in_memory(shop)
        source, value = await approved_refund(p)
        runner = wired(p, executor)
        sent = await runner.handle(value, source)
        assert sent is not None and sent.state == "confirmed" and payments.executed() == 1
        # A refund above 200 (as a policy with a higher limit would approve it): a person's.
        large = Action.model_validate_json(value).model_copy(
            update={"amount": 250.0, "idempotency_key": "bt-large"}
        )
        assert await executor.lookup(large, None) is None
        entry = await carry_out(executor, large, LedgerEntry.of(large), runner.ledger.save)
        assert entry.state == "needs_person" and entry.handoff == "action_manual"
        assert payments.posts == 1
    finally:
        await executor.close()


def test_the_extending_page_shows_the_example_as_it_runs() -> None:
    from tests.fixtures.paths import ROOT

    page = (ROOT / "docs/extending.md").read_text("utf-8")
    shown = page.split("class LargeRefundsByHand:", 1)[1].split("```", 1)[0]
    code = (ROOT / "examples/executors/large_refunds_by_hand.py").read_text("utf-8")
    assert "class LargeRefundsByHand:" + shown in code


def test_a_helpdesk_closes_an_action_through_the_bridge() -> None:
    from examples.helpdesk_bridge import decision_of

    event = {"event_id": "e1", "session_id": "S1", "action": "done", "item": "bt-1"}
    made = decision_of({**event, "reference": "RF-5"}, 1_780_000_000)
    assert (made.decision_id, made.action, made.item, made.reference) == (
        "desk-e1",
        "done",
        "bt-1",
        "RF-5",
    )
