"""The reply checks of the policy's own terms in every shipped language: a reply states each
condition of its offer's lines, promises no remedy the shop never gives, states a return
shipping cost only as the policy does and names the shop's own channel only when a line pays
into it. Natural replies pass, hostile ones are rejected for that reason."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import pytest

from baton_kafka.agents.guards import CustomerOrders, audit, commitments
from baton_kafka.agents.packs import LANGUAGES
from baton_kafka.agents.policy import load
from baton_kafka.schemas.records import OfferLine
from baton_kafka.schemas.stages import StrategyDraft
from tests.fixtures.data import order
from tests.fixtures.paths import ROOT, data_rows

SHOP = ROOT / "tests" / "data" / "shape_shop" / "policy.toml"
BOOK = order(
    "LL-100300",
    product_name="Der Zauberberg",
    amount=40.0,
    currency="EUR",
    delivered_at=datetime(2026, 11, 20, 12, tzinfo=UTC),
)
_LINE = {"order_id": BOOK.order_id}
OFFERS: dict[str, list[dict[str, Any]]] = {
    "exchange": [{"kind": "exchange", "reason": "defect", **_LINE}],
    "return": [
        {
            "kind": "refund",
            "amount": 40.0,
            "currency": "EUR",
            "channel": "original_payment",
            "reason": "change_of_mind",
            **_LINE,
        }
    ],
    "refund_defect": [
        {
            "kind": "refund",
            "amount": 40.0,
            "currency": "EUR",
            "channel": "original_payment",
            "reason": "defect",
            **_LINE,
        }
    ],
    "gift": [
        {"kind": "compensation", "amount": 8.0, "currency": "EUR", "channel": "gift_card", **_LINE}
    ],
}
CORPUS = data_rows("shape_corpus.jsonl")
BLIND = data_rows("shape_blind_corpus.jsonl")


def verdict(case: dict[str, Any]) -> list[str]:
    """Every problem the reply audit and the commitments reader find with the case's reply."""
    policy = load(SHOP)
    lines = [OfferLine.model_validate(x) for x in OFFERS[case["offer"]]]
    draft = StrategyDraft(
        solution="As the reply says.",
        reply=case["reply"],
        internal_note="",
        confidence=0.9,
        needs_human=False,
        offer=lines,
    )
    books = CustomerOrders(
        matched=BOOK,
        orders=(BOOK,),
        policy=policy,
        demand=case.get("demand", "refund" if case["offer"] != "gift" else "compensation"),
        today=date(2026, 11, 30),
    )
    promised = commitments.Promised(lines)
    found = audit(draft, books)
    found += commitments.problems(
        draft.reply, promised, policy, books.context, (case["language"], *LANGUAGES)
    )
    return found


def _judged(case: dict[str, Any]) -> bool:
    problems = verdict(case)
    if case["expect"] == "pass":
        return problems == []
    return any(case["reason"] in p for p in problems)


@pytest.mark.parametrize("rows", [CORPUS, BLIND], ids=["corpus", "blind"])
def test_the_corpus_holds_natural_and_hostile_replies_in_every_shipped_language(
    rows: list[dict[str, Any]],
) -> None:
    kinds = {(c["language"], c["expect"]) for c in rows}
    assert kinds == {(lang, e) for lang in LANGUAGES for e in ("pass", "reject")}
    assert len({c["id"] for c in rows}) == len(rows)
    assert all(c.get("reason") for c in rows if c["expect"] == "reject")


# The blind file's first run (written after the code, run once as written): 1 false accept
# (de: "unser Buchbinder repariert den Einband", a repair stated without a promise marker) and
# 0 false rejects of 60. A remedy the shop never gives is now refused wherever it is named and
# not denied next to it, which left one false reject: a denial far after the word.
KNOWN = {"b-en-p05": "'repairs are something we never do': the negation is out of reach"}


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, id=c["id"], marks=pytest.mark.xfail(reason=KNOWN[c["id"]], strict=True))
        if c["id"] in KNOWN
        else pytest.param(c, id=c["id"])
        for c in CORPUS + BLIND
    ],
)
def test_no_false_accepts_or_rejects(case: dict[str, Any]) -> None:
    problems = verdict(case)
    if case["expect"] == "pass":
        assert problems == [], (case["note"], problems)
    else:
        assert any(case["reason"] in p for p in problems), (case["note"], problems)


def misjudged(rows: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """False accepts and false rejects per language (for the measure in docs/policy.md)."""
    out = {lang: (0, 0) for lang in LANGUAGES}
    for case in rows:
        if not _judged(case):
            accepts, rejects = out[case["language"]]
            wrong = case["expect"] == "reject"
            out[case["language"]] = (accepts + wrong, rejects + (not wrong))
    return out
