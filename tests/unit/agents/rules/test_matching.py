"""Product matching in English and Chinese."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from baton_kafka.agents.rules.matching import (
    content_words,
    find_product,
    mentioned_products,
    normalize,
    product_score,
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


def test_only_short_texts_are_remembered() -> None:
    from baton_kafka.agents.rules import matching

    # Emptied first: a cache that earlier tests filled to its size would not grow at all.
    matching._units.cache_clear()  # type: ignore[attr-defined]
    before = matching._units.cache_info().currsize  # type: ignore[attr-defined]
    reply = "We are sorry your Quokka Travel Kettle QK-7 leaks. " * 10
    assert product_score("Quokka Travel Kettle QK-7", reply) > 0.9
    assert product_score("Quokka Travel Kettle QK-7", reply + "!") > 0.9
    units = matching._units.cache_info()  # type: ignore[attr-defined]
    assert units.currsize == before + 1  # the product name only
