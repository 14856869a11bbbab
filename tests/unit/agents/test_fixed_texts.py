"""The sentences baton writes to a customer itself: every one, in every language the file has,
passes the language check, and a customer's tag finds its language by the language subtag."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from baton_kafka.agents.fixed_texts import fixed, keys, languages
from baton_kafka.agents.guards.language import language_of, language_problem
from baton_kafka.agents.guards.order_facts import facts_line
from baton_kafka.agents.people_texts import alternative, confirmation
from baton_kafka.schemas import Order
from baton_kafka.schemas.records import Offer, OfferLine

ORDER_ID, PRODUCT = "G-1001", "Midea Electric Kettle 1.7L"
LANGUAGES = languages()


def _order(status: str = "delivered") -> Order:
    return Order.model_validate(
        {
            "order_id": ORDER_ID,
            "customer_id": "C1",
            "product_name": PRODUCT,
            "status": status,
            "amount": 39.9,
            "currency": "EUR",
            "ordered_at": "2026-11-10T10:00:00Z",
        }
    )


def _offer(*kinds: str) -> Offer:
    lines = [
        OfferLine(kind=k, order_id=ORDER_ID, amount=39.9 if k == "refund" else None) for k in kinds
    ]
    return Offer(state="approved", lines=lines, total=39.9, currency="EUR")


def _texts(lang: str) -> Iterator[tuple[set[str], str]]:
    """Every sentence of the file in ``lang`` as a customer reads it (a fragment inside the
    sentence that uses it), with the keys it is made of."""
    for key in (
        "could_not_process",
        "still_working",
        "awaiting_approval",
        "denied_follow_up",
        "approval_overdue",
    ):
        yield {key}, fixed(key, lang)
    order = f" ({ORDER_ID})"
    about = fixed("holding_about_request", lang, order=order)
    yield {"holding", "holding_about_request"}, fixed("holding", lang, about=about)
    action = {"order": ORDER_ID, "amount": " (39.90 EUR)"}
    yield {"action_confirmed"}, fixed("action_confirmed", lang, **action, reference="900001")
    yield {"action_failed"}, fixed("action_failed", lang, **action)
    when = {"date": "2026-12-05", "reference": "900001"}
    yield {"action_done_before"}, fixed("action_done_before", lang, **action, **when)
    for key in keys():
        if key.startswith("status_"):
            yield {"order_line", key}, facts_line(_order(key.removeprefix("status_")), lang)
        if key.startswith("remedy_"):
            offer = _offer(key.removeprefix("remedy_"), "refund")
            made = {key, "remedy_refund", "list_separator", "offer_lines"}
            yield {"approved", *made}, confirmation(offer, lang)
            yield {"denied_alternative", *made}, alternative(offer, lang)


def test_the_file_writes_every_sentence_in_every_language_it_has() -> None:
    assert set(LANGUAGES) >= {"en", "zh", "de"}
    for key in keys():
        for lang in LANGUAGES:
            assert fixed(key, lang) != fixed(key, "en") or lang == "en" or key in _SAME, (key, lang)


# Written the same in several languages.
_SAME = {"list_separator"}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_fixed_text_passes_the_language_check_in_every_language(lang: str) -> None:
    covered: set[str] = set()
    names = (ORDER_ID, PRODUCT, "EUR")
    for made_of, text in _texts(lang):
        covered |= made_of
        assert language_problem(text, lang, names, LANGUAGES) is None, (made_of, text)
        assert language_of(text, names, LANGUAGES) == lang, (made_of, text)
    # A sentence added to the file is checked here too.
    assert covered == set(keys())


@pytest.mark.parametrize(
    ("tag", "lang", "expected"),
    [
        ("de", "de", "Bestellung G-1001: Midea Electric Kettle 1.7L, zugestellt."),
        ("de-CH", "de", "Bestellung G-1001: Midea Electric Kettle 1.7L, zugestellt."),
        ("zh-Hans", "zh", "订单 G-1001：Midea Electric Kettle 1.7L，已签收。"),
        ("en-GB", "en", "Order G-1001: Midea Electric Kettle 1.7L, delivered."),
    ],
)
def test_the_order_line_is_in_the_language_of_the_customers_tag(
    tag: str, lang: str, expected: str
) -> None:
    assert facts_line(_order(), tag) == expected
    # A status the file does not name is the store's word.
    assert facts_line(_order("on_hold"), tag).endswith(("on_hold.", "on_hold。"))


@pytest.mark.parametrize(("tag", "lang"), [("de", "de"), ("de-AT", "de"), ("zh-Hans", "zh")])
def test_a_persons_decision_is_told_in_the_language_of_the_customers_tag(
    tag: str, lang: str
) -> None:
    offer = _offer("refund")
    names = (ORDER_ID, "EUR")
    for text in (confirmation(offer, tag), alternative(offer, tag), alternative(None, tag)):
        assert language_of(text, names, LANGUAGES) == lang, text
    assert confirmation(offer, tag) == confirmation(offer, lang)
    # A remedy the file does not name keeps the policy's name; a language it lacks, the default.
    assert "goodwill_box" in confirmation(_offer("goodwill_box"), tag)
    assert confirmation(offer, "pt", "de") == confirmation(offer, "de")


def test_the_german_confirmation_reads_as_written() -> None:
    text = confirmation(_offer("refund", "exchange"), "de")
    assert text == (
        "Vielen Dank für Ihre Geduld. Ihr Anliegen wurde geprüft und genehmigt: Erstattung "
        "39.90 EUR, Umtausch für die Bestellung G-1001."
    )
    assert re.search("[\u4e00-\u9fff]", confirmation(_offer("refund"), "zh-Hans"))
