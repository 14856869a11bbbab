"""Product and time matching in English and Chinese."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from agents.rules.matching import (
    content_words,
    extract_time_hint,
    find_product,
    mentioned_products,
    normalize,
    product_score,
    time_score,
)

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)  # a Sunday
ORDERS = [
    "Midea Electric Kettle 1.7L",
    "DualSense Wireless Controller",
    "华为 FreeBuds Pro 3 无线耳机",
    "Breville Barista Express Coffee Machine",
]


def test_normalize_casefolds_and_strips_punctuation() -> None:
    assert normalize("  The KETTLE, isn't it?! ") == "the kettle isnt it"
    assert normalize("ＰＳ５　手柄！") == "ps5 手柄"
    assert normalize("水壶，漏水了。") == "水壶 漏水了"


@pytest.mark.parametrize(
    ("mention", "product"),
    [
        ("the kettle", "Midea Electric Kettle 1.7L"),
        ("水壶", "美的电热水壶 1.7L"),
        ("my PS5 controller", "DualSense Wireless Controller"),
        ("手柄", "DualSense Wireless Controller"),
        ("kettle", "美的电热水壶 1.7L"),
        ("耳机", "Sony WH-CH720N Headphones"),
        ("my earbuds", "华为 FreeBuds Pro 3 无线耳机"),
        ("the coffee maker", "Breville Barista Express Coffee Machine"),
        ("破壁机", "Vitamix E310 Blender"),
        ("my rice cooker", "美的电饭煲 4L"),
        ("my sneakers", "Nike Pegasus Running Shoes"),
    ],
)
def test_product_score_matches_synonyms_across_languages(mention: str, product: str) -> None:
    assert product_score(mention, product) >= 0.7


@pytest.mark.parametrize(
    ("mention", "product"),
    [
        ("the kettle", "DualSense Wireless Controller"),
        ("my phone", "Sony WH-CH720N Headphones"),
        ("水壶", "华为 FreeBuds Pro 3 无线耳机"),
        ("手机", "华为 FreeBuds Pro 3 无线耳机"),
        ("", "Midea Electric Kettle 1.7L"),
    ],
)
def test_product_score_rejects_other_products(mention: str, product: str) -> None:
    assert product_score(mention, product) < 0.3


def test_product_score_is_bounded_and_exact_names_score_one() -> None:
    assert product_score("Midea Electric Kettle 1.7L", "midea electric kettle 1.7l") == 1.0
    for mention in ("kettle", "the xiaomi kettle", "漏水的水壶", "nothing at all"):
        assert 0.0 <= product_score(mention, "Midea Electric Kettle 1.7L") <= 1.0


def test_brand_words_break_ties_between_similar_products() -> None:
    xiaomi, bosch = "Xiaomi Smart Kettle Pro", "Bosch Electric Kettle 1.7L"
    assert product_score("the xiaomi kettle", xiaomi) > product_score("the xiaomi kettle", bosch)
    assert find_product("my Bosch kettle leaks", [xiaomi, bosch]) == bosch


def test_the_head_word_decides_between_related_products() -> None:
    names = ["Sony PS5 Console", "DualSense Wireless Controller"]
    assert find_product("my PS5 controller drifts", names) == names[1]
    assert find_product("my PS5 won't start", names) == names[0]


def test_plural_words_match_singular_names() -> None:
    assert product_score("headphones", "Sony Headphone") >= 0.9
    assert product_score("batteries", "AA Battery Pack") > 0.4


def test_products_outside_the_synonym_table_match_by_words() -> None:
    assert find_product("my kindle won't turn on", ["Kindle Paperwhite", *ORDERS]) == (
        "Kindle Paperwhite"
    )


def test_find_product_picks_the_mentioned_order() -> None:
    assert find_product("My kettle is leaking, I want a refund", ORDERS) == ORDERS[0]
    assert find_product("also, the controller I bought last month drifts", ORDERS) == ORDERS[1]
    assert find_product("我的耳机没声音了", ORDERS) == ORDERS[2]
    assert find_product("咖啡机不加热", ORDERS) == ORDERS[3]


def test_find_product_returns_an_exact_name_from_the_list() -> None:
    found = find_product("THE KETTLE!!", ORDERS)
    assert found is not None and found in ORDERS


@pytest.mark.parametrize(
    "text", ["How long will that take?", "这个能修吗", "my blender is broken", "", "？！"]
)
def test_find_product_returns_none_when_nothing_fits(text: str) -> None:
    assert find_product(text, ORDERS) is None


def test_find_product_with_no_products() -> None:
    assert find_product("my kettle", []) is None


def test_mentioned_products_in_order_of_appearance() -> None:
    assert mentioned_products("my air fryer and the blenders") == ["air fryer", "blender"]
    assert mentioned_products("我的电热水壶和耳机都坏了") == ["电热水壶", "耳机"]
    assert mentioned_products("how long will that take?") == []


def test_headphones_are_not_phones() -> None:
    assert mentioned_products("my headphones") == ["headphones"]


def test_content_words_skip_stopwords() -> None:
    assert content_words("Actually, can I send it back for repair instead?") == ["repair"]


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("I bought it yesterday", "yesterday"),
        ("the one from last week", "last week"),
        ("ordered it last month", "last month"),
        ("two weeks ago it broke", "two weeks ago"),
        ("3 days ago", "3 days ago"),
        ("a couple of months ago", "a couple of months ago"),
        ("昨天买的", "昨天"),
        ("我上周买的水壶", "上周"),
        ("上个月的订单", "上个月"),
        ("前天到的", "前天"),
        ("三天前下的单", "三天前"),
        ("去年买的手表", "去年"),
        ("My kettle is leaking", None),
        ("水壶漏水了", None),
    ],
)
def test_extract_time_hint(text: str, hint: str | None) -> None:
    assert extract_time_hint(text) == hint


def test_extract_time_hint_takes_the_first_reference() -> None:
    assert extract_time_hint("I ordered last month and it came yesterday") == "last month"


def _at(days_ago: int) -> datetime:
    return NOW - timedelta(days=days_ago)


@pytest.mark.parametrize(
    ("hint", "right", "wrong"),
    [
        ("yesterday", 1, 20),
        ("昨天", 1, 9),
        ("前天", 2, 30),
        ("三天前", 3, 40),
        ("3 days ago", 3, 40),
        ("last week", 10, 60),
        ("上周", 8, 60),
        ("two weeks ago", 14, 90),
        ("last month", 40, 2),
        ("上个月", 35, 120),
        ("去年", 400, 30),
        ("last year", 365, 5),
    ],
)
def test_time_score_prefers_dates_that_fit_the_hint(hint: str, right: int, wrong: int) -> None:
    fits, misses = time_score(hint, _at(right), NOW), time_score(hint, _at(wrong), NOW)
    assert fits >= 0.8
    assert misses < 0.5
    assert fits > misses


def test_time_score_uses_calendar_months() -> None:
    october = datetime(2026, 10, 2, tzinfo=UTC)
    november = datetime(2026, 11, 2, tzinfo=UTC)
    assert time_score("last month", october, NOW) == 1.0
    assert time_score("last month", november, NOW) < 1.0


def test_time_score_is_neutral_without_a_usable_hint() -> None:
    assert time_score(None, _at(3), NOW) == 0.5
    assert time_score("", _at(3), NOW) == 0.5
    assert time_score("at some point", _at(3), NOW) == 0.5


def test_time_score_accepts_naive_and_offset_datetimes() -> None:
    naive = datetime(2026, 11, 28, 12, 0)
    shanghai = datetime(2026, 11, 28, 20, 0, tzinfo=timezone(timedelta(hours=8)))
    assert time_score("yesterday", naive, NOW) == 1.0
    assert time_score("yesterday", shanghai, NOW) == 1.0


def test_an_impossible_time_hint_is_no_hint() -> None:
    from datetime import UTC, datetime

    from agents.rules.matching import time_score

    now = datetime(2026, 11, 29, tzinfo=UTC)
    assert time_score("5000 years ago", datetime(2026, 1, 1, tzinfo=UTC), now) == 0.5


def test_only_short_texts_are_remembered() -> None:
    from agents.rules import matching

    before = matching._units.cache_info().currsize  # type: ignore[attr-defined]
    reply = "We are sorry your Quokka Travel Kettle QK-7 leaks. " * 10
    assert product_score("Quokka Travel Kettle QK-7", reply) > 0.9
    assert product_score("Quokka Travel Kettle QK-7", reply + "!") > 0.9
    units = matching._units.cache_info()  # type: ignore[attr-defined]
    assert units.currsize == before + 1  # the product name only
