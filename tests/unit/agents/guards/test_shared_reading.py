"""The guards' shared reading of a text: the same answer as reading it anew, and read again
when a shop's packs change the words it is read by."""

import random
import unicodedata
from pathlib import Path

import pytest

from baton_kafka.agents import packs
from baton_kafka.agents.guards import numbers, reading, words
from baton_kafka.agents.guards.identifiers import identifiers
from baton_kafka.agents.rules import matching


@pytest.fixture(autouse=True)
def _clean():
    packs.reset()
    yield
    packs.reset()


def _shop_pack(tmp_path: Path, concern: str, body: str) -> Path:
    (tmp_path / "en").mkdir(parents=True, exist_ok=True)
    (tmp_path / "en" / f"{concern}.toml").write_text(body, "utf-8")
    return tmp_path


def test_an_id_word_a_shop_adds_is_read_after_the_same_text_was_read_without_it(
    tmp_path: Path,
) -> None:
    text = "Your ticketref 48213 is noted."
    assert identifiers(text) == []
    packs.extend(_shop_pack(tmp_path, "numbers", "[ids]\norder = ['ticketref']\n"))
    assert [(i.kind, i.value) for i in identifiers(text)] == [("order id", "48213")]


def test_a_currency_code_a_shop_adds_makes_a_glued_amount_a_number(tmp_path: Path) -> None:
    text = "We will refund XQZ2000 today."
    assert numbers.all_numbers(text, []) == []
    packs.extend(_shop_pack(tmp_path, "money", '[currency.after]\nXQZ = ["XQZ"]\n'))
    assert [n.value for n in numbers.all_numbers(text, [])] == [2000.0]


def test_a_phone_word_a_shop_adds_finds_the_number_after_it(tmp_path: Path) -> None:
    text = "Ring 1234 5678 99 for help."
    assert reading.phones(text) == []
    packs.extend(_shop_pack(tmp_path, "numbers", "[ids]\nphone = ['ring']\n"))
    assert reading.phones(text) == [(5, 17)]


def _read_anew(text: str, skip: list[tuple[int, int]]) -> list[numbers.Number]:
    """The digit numbers of ``text`` outside ``skip``, read from the text itself each time."""
    taken = list(skip)

    def free(start: int, end: int) -> bool:
        return all(end <= a or start >= b for a, b in taken)

    found = []
    for m in numbers._SPACED.finditer(text):
        if free(*m.span()):
            value = numbers.plain_value("".join(m.group().split()))
            if value is not None:
                taken.append(m.span())
                found.append(numbers._with_scale(text, numbers.Number(value, *m.span())))
    for token, start, end in numbers.digit_runs(text):
        if free(start, end):
            found += numbers._read_run(text, token, start)
    return found


def test_what_a_caller_leaves_out_is_applied_to_the_shared_reading() -> None:
    text = "Order O-1001: refund 1 299,00 EUR, 3-5 days, fifty points, 两百元."
    whole = [(n.value, n.start) for n in numbers.all_numbers(text, [])]
    assert whole == [(1299.0, 21), (3.0, 35), (5.0, 37), (50.0, 45), (200.0, 59)]
    # The spaced amount cut by what is left out is read as its parts outside it.
    cut = [(n.value, n.start) for n in numbers.all_numbers(text, [(21, 22)])]
    assert cut == [(299.0, 23), (3.0, 35), (5.0, 37), (50.0, 45), (200.0, 59)]
    rng = random.Random(40)
    pieces = [
        "1 299,00",
        "1.299,00",
        "59,00",
        "3-5",
        "5万",
        "RMB2000",
        "2k",
        "1,2,3",
        "O-1001",
        " ",
        " ",
        "refund ",
        "两百",
        "fifty ",
        "2026-11",
        "12 345 678",
        "4K",
        "1.7L",
    ]
    for _ in range(2000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 9)))
        skip = []
        for _ in range(rng.randrange(3)):
            a = rng.randrange(len(text) + 1)
            skip.append((a, min(len(text), a + rng.randrange(1, 6))))
        assert list(numbers.digit_numbers(text, skip)) == _read_anew(text, skip), (text, skip)
    words.forget_readings()
    assert [(n.value, n.start) for n in numbers.all_numbers(text, [])] == [
        (n.value, n.start)
        for n in sorted(
            [*_read_anew(text, []), *numbers._words_read(text, numbers._own_language(text))],
            key=lambda n: n.start,
        )
    ]


def test_a_shared_reading_handed_out_is_the_callers_own_list() -> None:
    text = "Call +49 30 1234 5678 about order EV-1001."
    first = identifiers(text)
    first.clear()
    assert [i.value for i in identifiers(text)] == ["EV-1001"]
    spans = reading.phones(text)
    spans.append((0, 1))
    assert reading.phones(text) == [(5, 21)]


def _by_category(text: str) -> str:
    """``matching.normalize`` as it read each character's category, one by one."""
    text = unicodedata.normalize("NFKC", text).casefold().translate(matching._APOSTROPHES)
    kept = [" " if unicodedata.category(ch)[0] in "PSZC" else ch for ch in text]
    return " ".join("".join(kept).split())


def test_normalize_keeps_what_reading_each_characters_category_kept() -> None:
    rng = random.Random(40)
    ranges = [(0, 0x250), (0x2000, 0x2070), (0x3000, 0x3100), (0x4E00, 0x4F00), (0xFF00, 0xFFF0)]
    for _ in range(4000):
        chars = []
        for _ in range(rng.randrange(40)):
            low, high = rng.choice(ranges)
            code = rng.randrange(low, high) if rng.random() < 0.9 else rng.randrange(0x10FFFF)
            chars.append(chr(code) if not 0xD800 <= code < 0xE000 else "?")
        text = "".join(chars)
        assert matching.normalize(text) == _by_category(text), repr(text)
