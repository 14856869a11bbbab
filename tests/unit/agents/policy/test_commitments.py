"""What a reply commits to and says was done, held to its offer, the policy and the records,
in every shipped language (corpus written before the reader; the blind part after it)."""

from __future__ import annotations

import json
import time
import tomllib
from collections import Counter
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from baton_kafka.agents import packs
from baton_kafka.agents.guards import claims, commitments
from baton_kafka.agents.policy import Policy, default_policy, load
from baton_kafka.agents.policy import offer as offers
from baton_kafka.agents.policy.load import EXAMPLES_FILE
from baton_kafka.agents.strategy import decide
from baton_kafka.agents.testing import ScriptedLLM
from baton_kafka.schemas import StrategyDraft
from baton_kafka.schemas.records import OfferLine, Order
from tests.fixtures.agents import BATON, KETTLE_NEW, draft, matched, ticket
from tests.fixtures.data import understanding
from tests.fixtures.paths import ROOT, TEST_DATA

TODAY = date(2026, 12, 5)
ALPINE = load(ROOT / "examples" / "shops" / "alpine" / "policy.toml")


def _at(day: str) -> datetime:
    return datetime.fromisoformat(f"{day}T10:00:00").replace(tzinfo=UTC)


def _order(oid: str, name: str, status: str, amount: float, cur: str, **more: Any) -> Order:
    delivered = more.pop("delivered", None)
    return Order(
        order_id=oid,
        customer_id="C-1",
        product_name=name,
        status=status,
        amount=amount,
        currency=cur,
        ordered_at=_at("2026-10-01"),
        delivered_at=_at(delivered) if delivered else None,
        **more,
    )


ORDERS = {
    o.order_id: o
    for o in (
        _order(
            "O-1001", "Midea Electric Kettle 1.7L", "delivered", 39.9, "USD", delivered="2026-11-25"
        ),
        _order("O-2002", "Philips Air Fryer", "cancelled", 59.0, "USD"),
        _order("O-3003", "Sony Headphones WH-1000", "refunded", 120.0, "USD", refunded=120.0),
        _order(
            "O-4004",
            "Anker Charger 65W",
            "shipped",
            25.0,
            "USD",
            carrier="SF Express",
            tracking_no="SF1234567890",
        ),
        _order(
            "100200300", "Trekkingrucksack 45L", "delivered", 129.0, "EUR", delivered="2026-12-02"
        ),
        _order(
            "100200301", "Daunenschlafsack Spark", "delivered", 89.0, "EUR", delivered="2026-10-21"
        ),
        _order("100200302", "Zelt Dolomit 3", "paid", 250.0, "EUR"),
        _order("100200303", "Trail Pro Shock Stöcke", "cancelled", 79.0, "EUR"),
    )
}


def _policy(oid: str | None) -> Policy:
    return ALPINE if oid and oid.isdigit() else default_policy()


def verdict(case: dict[str, Any]) -> list[str]:
    """Every reason the reply check gives for ``case``: its lines against the policy, its
    commitments against the offer, its claims against the records."""
    order = ORDERS.get(case["order"] or "")
    policy = _policy(case["order"])
    lines = [OfferLine(order_id=case["order"], **line) for line in case["offer"]]
    ctx = offers.OfferContext(order, "complaint", TODAY)
    earlier = frozenset(case["earlier"])
    promised = commitments.Promised(lines, earlier, case["needs_human"])
    langs = [case["lang"]]
    return [
        *offers.problems(lines, policy, ctx),
        *commitments.problems(case["text"], promised, policy, ctx, langs),
        *claims.problems(case["text"], order, earlier, langs),
    ]


def _corpus(name: str) -> list[dict[str, Any]]:
    path = TEST_DATA / name
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


# Written before the reader.
CORPUS = _corpus("commitments_corpus.jsonl")
# Written after it, without reading the packs; its first run (docs/security.md, "Commitments"):
# false accepts en 2/10, zh 4/10, de 1/10, ja 1/10, es 4/10, fr 0/10; false rejects en 1/10,
# es 1/10, the rest 0/10. The packs were widened after that run; it is asserted whole since.
BLIND = _corpus("commitments_blind_corpus.jsonl")


@pytest.mark.parametrize(
    "case",
    CORPUS + BLIND,
    ids=[f"{c['lang']}-{c['expect']}-{i}" for i, c in enumerate(CORPUS + BLIND)],
)
def test_the_corpus(case: dict[str, Any]) -> None:
    found = verdict(case)
    if case["expect"] == "pass":
        assert found == [], (case["text"], found)
    else:
        assert found, (case["text"], case.get("why"))


def test_every_shipped_language_has_natural_and_hostile_cases() -> None:
    counts = Counter((c["lang"], c["expect"]) for c in CORPUS)
    blind = Counter((c["lang"], c["expect"]) for c in BLIND)
    for lang in ("en", "zh", "de", "ja", "es", "fr"):
        assert counts[(lang, "pass")] >= 5 and counts[(lang, "reject")] >= 5, lang
        assert blind[(lang, "pass")] >= 10 and blind[(lang, "reject")] >= 10, lang


def test_a_line_naming_the_only_item_of_a_one_item_order_is_its_line() -> None:
    order = ORDERS["100200300"]
    line = order.line("  trekkingrucksack   45l ")
    assert line is not None and line.total == 129.0
    assert order.line("Zelt") is None
    lines = [OfferLine(kind="repair", order_id="100200300", item="Trekkingrucksack 45L")]
    ctx = offers.OfferContext(order, "repair", TODAY)
    assert offers.problems(lines, ALPINE, ctx) == []


def test_the_reason_names_the_missing_line_and_what_to_do() -> None:
    case = {
        "lang": "de",
        "order": "100200300",
        "offer": [],
        "earlier": [],
        "needs_human": False,
        "text": "Wir erstatten Ihnen den vollen Kaufpreis zurück.",
    }
    [reason] = verdict(case)
    assert reason.startswith(commitments.COMMITMENT)
    assert "refund or cancellation line" in reason and "do not promise it" in reason


def test_an_earlier_commitment_may_be_restated_and_shows_a_done_claim() -> None:
    text = "Your replacement has already been shipped and we will ship it again if it is lost."
    case = {
        "lang": "en",
        "order": "O-1001",
        "offer": [],
        "earlier": ["exchange"],
        "needs_human": False,
        "text": text,
    }
    assert verdict(case) == []
    assert verdict({**case, "earlier": []})


def test_a_shops_own_words_extend_the_pack(tmp_path: Path) -> None:
    (tmp_path / "de").mkdir()
    (tmp_path / "de" / "commitments.toml").write_text(
        "[kinds]\nrefund = ['\\bgeld retour\\b']\n", "utf-8"
    )
    case = {
        "lang": "de",
        "order": "100200300",
        "offer": [],
        "earlier": [],
        "needs_human": False,
        "text": "Wir schicken Ihnen das Geld retour.",
    }
    assert verdict(case) == []
    packs.extend(tmp_path)
    try:
        assert verdict(case)
    finally:
        packs.reset()


EXAMPLE_ORDERS = {
    "en": _order(
        "O-1001", "Midea Electric Kettle 1.7L", "delivered", 39.9, "USD", delivered="2026-11-30"
    ),
    "zh": _order(
        "2026-000731",
        "小米蓝牙耳机",
        "shipped",
        199.0,
        "CNY",
        carrier="顺丰速运",
        tracking_no="SF1482736455021",
    ),
    "de": _order(
        "B-3001", "Trekkingrucksack 45L", "delivered", 129.0, "EUR", delivered="2026-12-01"
    ),
}


@pytest.mark.parametrize("lang", sorted(EXAMPLE_ORDERS))
def test_the_prompts_examples_keep_their_word(lang: str) -> None:
    text = tomllib.loads(EXAMPLES_FILE.read_text("utf-8"))[lang]["text"]
    draft = StrategyDraft.model_validate(orjson.loads(text.partition("->\n")[2].replace("\n", " ")))
    order = EXAMPLE_ORDERS[lang]
    policy = ALPINE if lang == "de" else default_policy()
    ctx = offers.OfferContext(order, "complaint", TODAY)
    promised = commitments.Promised(draft.offer)
    for said in (draft.reply, draft.solution):
        assert commitments.problems(said, promised, policy, ctx, [lang]) == []
        assert claims.problems(said, order, (), [lang]) == []


@pytest.mark.parametrize(
    "text",
    ["We will not refund it, " * 900, "如果我们不会退款，" * 2000, "if " * 6000 + "we will refund"],
    ids=["clauses", "zh", "conditions"],
)
def test_a_reply_of_the_largest_size_is_read_in_linear_time(text: str) -> None:
    order = ORDERS["O-1001"]
    ctx = offers.OfferContext(order, "refund", TODAY)
    langs = ["en", "zh", "de", "ja", "es", "fr"]
    started = time.perf_counter()
    commitments.problems(text, commitments.Promised([]), default_policy(), ctx, langs)
    claims.problems(text, order, (), langs)
    # Reading each sentence's markers per clause took 95 s on the first text.
    assert time.perf_counter() - started < 10


PROMISED = "Your Bosch Electric Kettle 1.7L (order O-2): we will send you a replacement right away."
DONE = "Your Bosch Electric Kettle 1.7L (order O-2) has already been refunded in full."
EXCHANGE = [{"kind": "exchange", "order_id": "O-2"}]


async def test_a_promise_in_words_is_reasked_with_the_reason(kettle_store: Any) -> None:
    llm = ScriptedLLM([draft(PROMISED), draft(PROMISED, offer=EXCHANGE)])
    u = understanding("Bosch Electric Kettle 1.7L", demand="exchange")
    out = await decide(ticket("kettle broken"), BATON, u, matched(KETTLE_NEW), kettle_store, llm)
    assert out.failure is None and not out.degraded and out.value.reply == PROMISED
    feedback = llm.calls[1].feedback or ""
    assert "commitment:" in feedback and "no exchange line for order O-2" in feedback
    assert [line.kind for line in out.value.offer] == ["exchange"]


@pytest.mark.parametrize(("text", "reason"), [(PROMISED, "commitment:"), (DONE, "claim:")])
async def test_a_promise_or_claim_kept_after_the_reask_goes_to_a_person(
    kettle_store: Any, text: str, reason: str
) -> None:
    llm = ScriptedLLM([draft(text), draft(text)])
    u = understanding("Bosch Electric Kettle 1.7L", demand="exchange")
    out = await decide(ticket("kettle broken"), BATON, u, matched(KETTLE_NEW), kettle_store, llm)
    assert out.failure is not None and out.failure.reason == "validation_failed"
    assert out.failure.handoff and out.failure.error.startswith(reason)
    assert out.value.needs_human and text not in out.value.reply and out.value.offer == []
