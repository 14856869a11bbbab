"""Every reply, whichever path builds it, names the shop's policy version; an offer above the
approval threshold is never promised, whichever path wrote the draft."""

from __future__ import annotations

import ast
from datetime import UTC, datetime

from baton_kafka.agents import people
from baton_kafka.agents.fixed_texts import fixed
from baton_kafka.agents.policy import load
from baton_kafka.schemas import (
    Baton,
    OfferLine,
    OrderMatch,
    Reply,
    StageRecord,
    Ticket,
    Understanding,
)
from baton_kafka.schemas.records import UsageTotals
from baton_kafka.schemas.stages import StrategyDraft
from baton_kafka.streams.runtime.answers import clocks, replies
from tests.fixtures.data import jacket
from tests.fixtures.paths import ROOT

ALPINE = load(ROOT / "examples/shops/alpine/policy.toml")
JACKET = jacket("C7", datetime(2026, 11, 28, tzinfo=UTC))
TICKET = Ticket(
    ticket_id="T-4", session_id="S-4", customer_id="C7", text="Please cancel my jacket order."
)
UNDERSTOOD = Understanding(
    product="Summit Down Jacket", problem="cancel", demand="cancel", time_hint=None,
    keywords=["cancel"], language="en", core_problem="The customer wants to cancel.",
    refers_to_earlier=False,
)  # fmt: skip
MATCH = OrderMatch(
    order_id=JACKET.order_id, order=JACKET, method="deterministic", confidence=0.9, reason="x"
)
RECORD = StageRecord(ticket=TICKET, understanding=UNDERSTOOD, match=MATCH)


def _promising() -> StrategyDraft:
    """A draft that promises the full 150 EUR outright, as no path may send it."""
    line = OfferLine(
        kind="refund",
        order_id=JACKET.order_id,
        amount=150.0,
        currency="EUR",
        channel="original_payment",
    )
    return StrategyDraft(
        solution="Cancel and refund 150.00 EUR.",
        reply="I will cancel order 400918275 and refund the full 150.00 EUR.",
        internal_note="",
        confidence=0.9,
        needs_human=False,
        offer=[line],
    )


def _answer(draft: StrategyDraft) -> Reply:
    return replies.answer(
        RECORD,
        Baton(session_id="S-4", customer_id="C7"),
        draft,
        usage=UsageTotals(),
        degraded=["dl-1"],
        handoff=False,
        llm="t",
        timings={},
        policy=ALPINE,
    )


def test_an_offer_above_the_threshold_is_not_promised_by_the_reply_whoever_drafted_it() -> None:
    sent = _answer(_promising())
    assert sent.status == "handoff" and sent.offer is not None
    assert sent.offer.state == "needs_approval" and sent.offer.total == 150.0
    assert sent.reply == fixed("awaiting_approval", "en")
    assert "150" not in sent.reply and "150" not in sent.solution
    small = _promising().model_copy(
        update={
            "offer": [_promising().offer[0].model_copy(update={"amount": 90.0})],
            "reply": "I will cancel order 400918275 and refund 90.00 EUR.",
        }
    )
    kept = _answer(small)
    assert kept.status == "degraded" and kept.reply == small.reply


def test_every_reply_path_names_the_policy_version() -> None:
    baton = Baton(session_id="S-4", customer_id="C7", taken_over=True)
    built = {
        "answer": _answer(_promising()),
        "fallback": replies.fallback(RECORD, baton, "strategy", "x", llm="t", policy=ALPINE),
        "holding": clocks.holding_reply(RECORD, baton, ("en",), ALPINE.version),
        "taken_over": people.silent(TICKET, baton, llm="t", policy=ALPINE)[0],
    }
    assert {k: r.policy_version for k, r in built.items()} == dict.fromkeys(built, ALPINE.version)


def _builds_a_reply(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
    return name == "Reply"


def test_every_reply_constructor_in_the_code_sets_the_policy_version() -> None:
    """A new place that builds a ``Reply`` states the policy it was written under too."""
    sources = [p for d in ("agents", "streams") for p in (ROOT / d).rglob("*.py")]
    found: dict[str, list[str]] = {}
    for path in sources:
        tree = ast.parse(path.read_text("utf-8"))
        for node in ast.walk(tree):
            if _builds_a_reply(node):
                assert isinstance(node, ast.Call)
                keywords = {k.arg for k in node.keywords}
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                found.setdefault("with" if "policy_version" in keywords else "without", []).append(
                    where
                )
    assert found.get("without", []) == []
    assert len(found["with"]) >= 5, found
