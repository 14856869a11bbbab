"""The policy's real shape as data: windows and remedies by reason, remedies never given,
conditions copied onto the lines, approval per currency and basis, return shipping by place and
the shop's own channels; each checked by ``baton check``'s vocabulary with a near name."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from baton_kafka.agents.guards import shop_terms
from baton_kafka.agents.policy import PolicyError, load, parse
from baton_kafka.agents.policy.offer import OfferContext, hypothetical, problems, settle
from baton_kafka.agents.policy.render import render
from baton_kafka.schemas.records import LineCondition, OfferLine, Order
from baton_kafka.schemas.stages import Understanding
from tests.fixtures.data import order
from tests.fixtures.paths import ROOT

BOOKSHOP = ROOT / "examples" / "shops" / "bookshop" / "policy.toml"
BOOK = order(
    "LL-100300",
    product_name="Der Zauberberg",
    amount=40.0,
    currency="EUR",
    delivered_at=datetime(2026, 11, 20, 12, tzinfo=UTC),
)


def line(kind: str, **fields: object) -> OfferLine:
    return OfferLine.model_validate({"kind": kind, "order_id": BOOK.order_id, **fields})


def refund(amount: float = 40.0, **fields: object) -> OfferLine:
    return line("refund", amount=amount, currency="EUR", channel="original_payment", **fields)


def check(lines: list[OfferLine], today: date, reason: str | None = None, o: Order = BOOK):
    ctx = OfferContext(o, "refund", today, reason=reason)
    return problems(lines, load(BOOKSHOP), ctx)


def test_the_window_is_the_one_of_the_lines_reason() -> None:
    late = date(2027, 1, 10)  # 51 days after delivery
    assert any(
        "past its 14-day window for change of mind" in p
        for p in check([refund(reason="change_of_mind")], late)
    )
    assert check([refund(reason="defect")], late) == []
    # The line's reason, else the ticket's understood one, else the strictest window.
    assert check([refund()], late, reason="defect") == []
    assert any("past its 14-day window" in p for p in check([refund()], late))
    assert check([refund(reason="change_of_mind")], date(2026, 11, 30)) == []


def test_a_remedy_answers_only_its_reasons() -> None:
    today = date(2026, 11, 30)
    found = check([line("exchange", reason="change_of_mind")], today)
    assert any("does not answer a change of mind request" in p for p in found), found
    assert any("state the line's reason" in p for p in check([line("exchange")], today))
    assert check([line("exchange", reason="damaged_in_transit")], today) == []


def test_a_remedy_the_shop_never_gives_is_refused_as_such() -> None:
    policy = load(BOOKSHOP)
    found = check([line("repair", reason="defect")], date(2026, 11, 30))
    assert found == ["offer line repair: the shop never gives repair (policy: never); leave it out"]
    ctx = OfferContext(BOOK, "repair", date(2026, 11, 30))
    assert hypothetical("repair", policy, ctx) == ["the shop never gives repair"]
    problems_ = list(shop_terms.never_promised("We will repair the binding for you.", policy))
    assert problems_ and problems_[0].startswith("never: ")
    assert list(shop_terms.never_promised("We do not repair books.", policy)) == []


def test_the_lines_carry_the_conditions_of_their_reason() -> None:
    policy = load(BOOKSHOP)
    offer = settle([refund(reason="change_of_mind")], policy, BOOK)
    assert offer is not None and offer.lines[0].conditions == [
        LineCondition(kind="item_back", days=14)
    ]
    offer = settle([refund(reason="defect")], policy, BOOK)
    assert offer is not None and offer.lines[0].conditions == []
    offer = settle([line("exchange")], policy, BOOK, reason="defect")
    assert offer is not None and offer.lines[0].conditions == [LineCondition(kind="photo_first")]
    gift = line("compensation", amount=8.0, currency="EUR", channel="gift_card")
    offer = settle([gift], policy, BOOK)
    assert offer is not None and offer.lines[0].conditions == [
        LineCondition(kind="voucher_valid", years=3)
    ]


def test_approval_is_per_currency_and_on_the_offer_or_the_order(tmp_path: Path) -> None:
    policy = load(BOOKSHOP)
    dear = BOOK.model_copy(update={"amount": 200.0})
    assert settle([refund(81.0)], policy, dear).state == "needs_approval"  # type: ignore[union-attr]
    assert settle([refund(79.0)], policy, dear).state == "approved"  # type: ignore[union-attr]
    in_chf = dear.model_copy(update={"currency": "CHF"})
    assert settle([refund(85.0)], policy, in_chf).state == "approved"  # type: ignore[union-attr]
    # A currency the table does not name, with no amount for every currency: a person decides.
    in_usd = dear.model_copy(update={"currency": "USD"})
    assert settle([refund(5.0)], policy, in_usd).state == "needs_approval"  # type: ignore[union-attr]
    assert policy.approval_threshold("USD") == 0.0
    text = BOOKSHOP.read_text("utf-8").replace('basis = "offer"', 'basis = "order"')
    by_order = parse(text.encode(), "policy.toml")
    held = settle([line("exchange", reason="defect")], by_order, dear)
    assert held is not None and held.state == "needs_approval"
    small = settle([line("exchange", reason="defect")], by_order, BOOK)
    assert small is not None and small.state == "approved"


def test_the_demo_shop_keeps_one_threshold_for_every_currency() -> None:
    demo = load(None)
    assert demo.approval_threshold("EUR") == demo.approval_threshold("JPY") == 10000.0


def test_return_shipping_by_country_and_region() -> None:
    shipping = load(BOOKSHOP).shipping
    assert shipping.terms("DE").payer == "shop"  # type: ignore[union-attr]
    assert shipping.terms("at").cost == 4.9  # type: ignore[union-attr]
    other = shipping.terms("US")
    assert other is not None and other.cost == 12.0 and other.duties == "customer"


def test_the_policy_facts_reach_the_prompt() -> None:
    text = render(load(BOOKSHOP))
    assert "The shop never gives: repair." in text
    assert (
        "Return shipping from eu (DE, AT, FR, NL, BE, LU, IT, ES): paid by the customer, 4.9 EUR."
        in text
    )
    assert "customs duties paid by the customer" in text
    assert "above 80 EUR, 90 CHF" in text
    assert "14 days for change_of_mind, 730 days for defect" in text
    assert "on condition photo_first" in text
    assert "Channel gift_card: A Leselicht gift card" in text


def test_free_shipping_is_refused_where_the_customer_pays_every_return() -> None:
    text = BOOKSHOP.read_text("utf-8").replace('[shipping.returns.DE]\npayer = "shop"\n', "")
    policy = parse(text.encode(), "policy.toml")
    said = "Return shipping is free: we will refund 40.00 EUR once the book is back."
    assert any("says shipping is free" in p for p in shop_terms.shipping(said, policy, BOOK))
    assert shop_terms.shipping(said, load(BOOKSHOP), BOOK) == []


def test_the_understanding_and_the_offer_line_carry_the_reason() -> None:
    fields = Understanding.model_fields
    assert "reason" in fields and fields["reason"].description
    assert OfferLine.model_fields["reason"].description
    with pytest.raises(ValueError):
        line("refund", reason="changed_mind")


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (
            'never = ["repair"]',
            'never = ["repiar"]',
            "never[0]: unknown remedy 'repiar' (did you mean 'repair'?)",
        ),
        (
            "windows = { change_of_mind = 14,",
            "windows = { change_of_mnd = 14,",
            "remedies.refund.windows.change_of_mnd: unknown reason 'change_of_mnd' "
            "(did you mean 'change_of_mind'?)",
        ),
        (
            'reasons = ["defect", "damaged_in_transit"',
            'reasons = ["defekt", "damaged_in_transit"',
            "remedies.exchange.reasons[0]: unknown reason 'defekt' (did you mean 'defect'?)",
        ),
        (
            '{ kind = "photo_first" }',
            '{ kind = "photo_frist" }',
            "remedies.exchange.conditions[0].kind: unknown condition 'photo_frist' "
            "(did you mean 'photo_first'?)",
        ),
        (
            'channels = ["gift_card"]',
            'channels = ["gift_crad"]',
            "remedies.compensation.channels[0]: unknown channel 'gift_crad' "
            "(did you mean 'gift_card'?)",
        ),
        (
            "words = { de = ['leselicht-geschenkkarte', 'geschenkkarte'], ",
            "words = { ",
            "channels.gift_card.words: no words in de",
        ),
        (
            "[shipping.returns.DE]",
            "[shipping.returns.Germany]",
            "shipping.returns.Germany: not a country code",
        ),
        (
            'eu = ["DE", "AT",',
            'eu = ["DE", "AU2",',
            "shipping.regions.eu[1]: unknown country 'AU2'",
        ),
        (
            'basis = "offer"',
            'basis = "offers"',
            "approval.basis: Input should be 'offer' or 'order'",
        ),
        (
            "above = { EUR = 80.0,",
            "above = { euro = 80.0,",
            "approval.above: Value error, 'euro' is not an ISO 4217",
        ),
        (
            'payer = "shop"',
            'payer = "shopp"',
            "shipping.returns.DE.payer: Input should be 'shop' or 'customer'",
        ),
        ("never = [", 'never = ["exchange", ', "never: 'exchange' is also a remedy of the policy"),
    ],
)
def test_baton_check_names_each_mistake_in_the_new_keys(
    before: str, after: str, expected: str
) -> None:
    text = BOOKSHOP.read_text("utf-8")
    assert before in text, before
    with pytest.raises(PolicyError) as caught:
        parse(text.replace(before, after, 1).encode(), "policy.toml")
    lines = str(caught.value).splitlines()
    assert any(expected.removeprefix("approval.above: Value error, ") in x for x in lines), lines
    assert all(x.startswith("policy.toml: ") for x in lines)


def test_the_bookshops_own_trigger_words_hand_off() -> None:
    from tests.fixtures.risk import triggers

    policy = load(BOOKSHOP)
    assert triggers("Das Buch kam an und riecht stark nach Schimmel.", policy=policy) == {"safety"}
    assert triggers("The audiobook CD case gave off a strong solvent smell.", policy=policy) == {
        "safety"
    }
    assert triggers("Das Buch kam an und riecht stark nach Schimmel.") == set()


@pytest.mark.parametrize(
    ("text", "kind", "stated"),
    [
        (
            "Mein Buch LL-100200 kam an, aber im Zauberberg fehlen die Seiten 40 bis 56. "
            "Ich möchte ein neues Exemplar.",
            "exchange",
            "Bitte schicken Sie uns zuerst ein Foto des Schadens.",
        ),
        (
            "My order LL-100200 arrived late, I want compensation.",
            "compensation",
            "It is valid for 3 years.",
        ),
    ],
)
async def test_the_offline_rules_state_the_conditions_of_their_lines(
    text: str, kind: str, stated: str
) -> None:
    from baton_kafka.streams.runtime.worker import build_llm
    from baton_kafka.streams.settings import load as load_settings
    from baton_kafka.streams.testing import MemoryOrders, TestPipeline
    from tests.fixtures.data import ticket

    settings = load_settings({"BATON_LLM": "offline", "BATON_POLICY": str(BOOKSHOP)})
    pipeline = TestPipeline(
        orders=MemoryOrders(BOOK.model_copy(update={"order_id": "LL-100200"})),
        settings=settings,
        llm=build_llm(settings),
    )
    [reply] = await pipeline.send(
        ticket("t1", text).model_copy(update={"created_at": datetime(2026, 11, 30, tzinfo=UTC)})
    )
    await pipeline.aclose()
    assert reply.status == "answered", reply.internal_note
    assert reply.offer is not None and [x.kind for x in reply.offer.lines] == [kind]
    assert reply.offer.lines[0].conditions
    assert stated in reply.reply
