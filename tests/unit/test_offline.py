"""The rule-based model: understanding, order choice and strategy from the prompt's facts only."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

import orjson
import pytest

from agents import prompts
from agents.llm import LLM, OutputInvalid, Prompt
from agents.offline import OfflineLLM, choose_rules, strategy_rules, understand_rules
from agents.prompts import EarlierSession, Facts, parse_context
from schemas.baton import Baton, TicketMemory
from schemas.records import Order, Reply, Ticket
from schemas.stages import OrderChoice, OrderMatch, StrategyDraft, Understanding

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _order(oid: str, name: str, status: str = "delivered", **kw: object) -> Order:
    fields: dict[str, object] = {
        "order_id": oid,
        "customer_id": "C1",
        "product_name": name,
        "status": status,
        "amount": 59.99,
        "currency": "USD",
        "ordered_at": datetime(2026, 11, 10, tzinfo=UTC),
    }
    return Order.model_validate(fields | kw)


KETTLE = _order("O-1", "Midea Electric Kettle 1.7L", amount=39.99)
CONTROLLER = _order("O-2", "DualSense Wireless Controller", ordered_at=datetime(2026, 10, 8, tzinfo=UTC))
CHARGER = _order("O-3", "Anker Nano USB-C Charger", "shipped", carrier="UPS", tracking_no="1Z9")
ZH_KETTLE = _order("Z-1", "美的电热水壶 1.7L", amount=199.0, currency="CNY")
ZH_BUDS = _order("Z-2", "华为 FreeBuds Pro 3 无线耳机", amount=1199.0, currency="CNY")
ORDERS = [CHARGER, KETTLE, CONTROLLER]


def _baton(**kw: object) -> Baton:
    core = kw.pop("core", [])
    tickets = [TicketMemory(ticket_id=f"T-{i}", core_problem=c) for i, c in enumerate(core)]  # type: ignore[attr-defined]
    return Baton.model_validate({"session_id": "S1", "customer_id": "C1", **kw}) .model_copy(
        update={"tickets": tickets}
    )


def _facts(
    text: str,
    orders: list[Order] | None = None,
    baton: Baton | None = None,
    *,
    stage: str = "understand",
    understanding: Understanding | None = None,
    match: OrderMatch | None = None,
    earlier: list[EarlierSession] | None = None,
) -> Facts:
    output = {"understand": Understanding, "lookup": OrderChoice, "strategy": StrategyDraft}[stage]
    prompt = prompts.build(
        stage,  # type: ignore[arg-type]
        output,
        ticket=Ticket(ticket_id="T1", session_id="S1", customer_id="C1", text=text),
        baton=baton or _baton(),
        orders=ORDERS if orders is None else orders,
        earlier=earlier,
        understanding=understanding,
        match=match,
    )
    assert isinstance(prompt.facts, Facts)
    return prompt.facts


def _understand(text: str, orders: list[Order] | None = None, baton: Baton | None = None) -> Understanding:
    return understand_rules(_facts(text, orders, baton))


def _choose(text: str, orders: list[Order] | None = None, baton: Baton | None = None, **kw: object) -> OrderChoice:
    u = _understand(text, orders, baton)
    facts = _facts(text, orders, baton, stage="lookup", understanding=u, **kw)  # type: ignore[arg-type]
    return choose_rules(facts, now=NOW)


def _strategy(text: str, order: Order | None, orders: list[Order] | None = None, baton: Baton | None = None) -> StrategyDraft:
    u = _understand(text, orders, baton)
    match = OrderMatch(
        order_id=order.order_id if order else None,
        order=order,
        method="deterministic" if order else "none",
        confidence=0.9,
        reason="test",
    )
    facts = _facts(text, [order] if order else [], baton, stage="strategy", understanding=u, match=match)
    return strategy_rules(facts)


def _amounts(text: str) -> list[float]:
    return [float(m) for m in re.findall(r"(\d+\.\d{2}) (?:USD|CNY)", text)]
