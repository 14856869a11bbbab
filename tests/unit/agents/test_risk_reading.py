"""The risk reading of a ticket counts each product name once: a repeated name cuts nothing more."""

from __future__ import annotations

import random

from baton_kafka.agents import packs, risk

_NAMES = [
    "Spark Sleeping Bag",
    "spark plug",
    "Trail Pro Shock",
    "Fire TV Stick",
    "Philips Electric Kettle",
    "美的电热水壶",
    "Burn Notice DVD",
    "Legal Pad A4",
    "The Lawyer Lamp",
    "Ember Mug 2",
    "Smoke Detector X",
    "炎の鍋",
]
_WORDS = [
    "my", "the", "caught", "fire", "smoke", "burned", "lawyer", "court", "spark", "Spark",
    "sleeping", "bag", "Bag", "trail", "Pro", "shock", "electric", "kettle", "Kettle", "is",
    "leaking", "漏水了", "着火了", "美的", "电热水壶", "Fire", "TV", "stick", "sale", "fire sale",
    "-", "/", "'", "\"", "  ", "\n", "Ember", "mug", "2", "Legal", "pad", "legal", "炎の鍋", "が",
]  # fmt: skip


def _text(rng: random.Random) -> str:
    parts = [rng.choice(_WORDS) for _ in range(rng.randint(0, 14))]
    if rng.random() < 0.5:  # a name as the customer writes it, whole or in part
        name = rng.choice(_NAMES).split()
        parts.insert(rng.randint(0, len(parts)), " ".join(name[: rng.randint(1, len(name))]))
    return " ".join(parts) if rng.random() < 0.8 else "".join(parts)


def _names(rng: random.Random) -> list[str]:
    names = rng.sample(_NAMES, rng.randint(1, 4))
    for _ in range(rng.randint(1, 3)):  # the same product on several orders
        names.insert(rng.randint(0, len(names)), rng.choice(names))
    return names


def test_a_repeated_name_cuts_the_same_text_as_once_on_generated_tickets() -> None:
    rng = random.Random(61206)
    repeated = 0
    for _ in range(3000):
        text, names = _text(rng), _names(rng)
        once = list(dict.fromkeys(names))
        repeated += len(once) < len(names)
        assert risk.without_products(text, names) == risk.without_products(text, once), (
            text,
            names,
        )
    assert repeated == 3000


def test_the_reading_with_repeated_names_is_the_reading_with_each_once() -> None:
    rng = random.Random(7)
    read = risk._read_once.__wrapped__
    version = packs.version()
    for _ in range(400):
        text, names = _text(rng), _names(rng)
        language = rng.choice(["en", "zh", "de", "ja"])
        once = tuple(dict.fromkeys(names))
        assert read(text, language, tuple(names), (), version) == read(
            text, language, once, (), version
        )
        assert risk.scan(text, language, names) == risk.scan(text, language, once)


def test_the_cut_text_of_the_reading_is_the_text_without_products() -> None:
    rng = random.Random(11)
    for _ in range(1500):
        text, names = _text(rng), _names(rng)
        language = rng.choice(["en", "zh", "de", "ja", "fr"])
        assert risk.unnamed(text, language, names) == risk.without_products(text, names)


def _by_character(text: str) -> str:
    """The definition of ``risk.lower``: each character lowered alone, kept if it would grow."""
    return "".join(c if len(low := c.lower()) != 1 else low for c in text)


_CASED = "AaZzÄäÖßẞΣσςΟΔİIıiǅǄЖжΑΩ漏水カナ한 \n-'·\u0301\u00a6ﾀ１Ａ"


def test_lower_is_character_by_character_on_generated_texts() -> None:
    rng = random.Random(3)
    for _ in range(20000):
        if rng.random() < 0.7:
            text = "".join(rng.choice(_CASED) for _ in range(rng.randint(0, 12)))
        else:  # any code point, surrogates aside
            points = (rng.randint(0, 0x2FFFF) for _ in range(rng.randint(0, 8)))
            text = "".join(chr(p) for p in points if not 0xD800 <= p <= 0xDFFF)
        assert risk.lower(text) == _by_character(text), ascii(text)
    assert risk.lower("ΟΔΟΣ") == "οδοσ" and risk.lower("İx") == "İx"
