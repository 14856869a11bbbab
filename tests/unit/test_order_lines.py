"""Orders of several items: the record, matching, the prompt, the offer and reply audit, stores."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import pytest

from agents.guards import CustomerOrders, audit
from agents.policy import default_policy
from schemas import OfferLine, Order, StrategyDraft
from tests.fixtures.paths import TEST_DATA


def _rows(path: str) -> list[dict[str, Any]]:
    lines = (TEST_DATA / path).read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


ORDERS = {o["order_id"]: Order.model_validate(o) for o in _rows("lines_orders.jsonl")}
# Written before the audit learned order lines; the blind file after it, without reading it.
CORPUS = _rows("lines_corpus.jsonl")
BLIND = _rows("lines_blind_corpus.jsonl")


def _audit(case: dict[str, Any]) -> list[str]:
    draft = StrategyDraft(
        solution=case["solution"],
        reply=case["reply"],
        internal_note=case["internal_note"],
        confidence=0.9,
        needs_human=False,
        offer=[OfferLine.model_validate(line) for line in case["offer"]],
    )
    books = CustomerOrders(
        matched=ORDERS[case["matched"]],
        orders=[o for o in ORDERS.values() if o.customer_id == case["customer"]],
        discussed=frozenset(case["discussed"]),
        message=case["message"],
        known_ids=frozenset({case["ticket_id"], case["session_id"], case["customer"]}),
        policy=default_policy(),
        demand=case["demand"],
        today=date(2026, 11, 30),
    )
    return audit(draft, books)


def test_the_corpora_hold_both_languages_and_both_outcomes() -> None:
    for corpus in (CORPUS, BLIND):
        kinds = {(c["language"], c["expect"]) for c in corpus}
        assert kinds == {(lang, e) for lang in ("en", "zh") for e in ("pass", "reject")}
        assert all(c.get("reason") for c in corpus if c["expect"] == "reject")
    assert len({c["id"] for c in CORPUS + BLIND}) == len(CORPUS + BLIND)


@pytest.mark.parametrize("case", CORPUS + BLIND, ids=[c["id"] for c in CORPUS + BLIND])
def test_line_corpus_no_false_accepts_or_rejects(case: dict[str, Any]) -> None:
    problems = _audit(case)
    if case["expect"] == "pass":
        assert problems == [], (case["note"], problems)
    else:
        assert any(case["reason"] in p for p in problems), (case["note"], problems)
