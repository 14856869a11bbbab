"""Time hints in every shipped language: found in a message, scored against order dates."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from baton_kafka.agents.rules.time_hints import _parse_hint, extract_time_hint, time_score

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)  # a Sunday


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
    now = datetime(2026, 11, 29, tzinfo=UTC)
    assert time_score("5000 years ago", datetime(2026, 1, 1, tzinfo=UTC), now) == 0.5


# (text, the hint found, the unit and count it is read as): each language's own words, from
# its pack, and the near misses that are no time.
_OTHERS = [
    ("Ich habe es vor 3 Tagen bestellt", "vor 3 tagen", ("day", 3)),
    ("vor einer Woche gekauft", "vor einer woche", ("week", 1)),
    ("Die Bestellung von letzter Woche", "letzter woche", ("week", 1)),
    ("Vorgestern angekommen", "vorgestern", ("day", 2)),
    ("Was ich letzten Monat gekauft habe", "letzten monat", ("month", 1)),
    ("vor zwei Monaten bestellt", "vor zwei monaten", ("month", 2)),
    ("Gibt es die Trail Boots 41 auch in 42?", None, None),
    ("Lo compré hace dos semanas", "hace dos semanas", ("week", 2)),
    ("Llegó ayer", "ayer", ("day", 1)),
    ("El pedido de la semana pasada", "semana pasada", ("week", 1)),
    ("Lo que compré el mes pasado", "mes pasado", ("month", 1)),
    ("hace 3 días que lo pedí", "hace 3 días", ("day", 3)),
    ("¿Tienen la talla 42?", None, None),
    ("Je l'ai commandé il y a trois jours", "il y a trois jours", ("day", 3)),
    ("Livré avant-hier", "avant-hier", ("day", 2)),
    ("La commande de la semaine dernière", "semaine dernière", ("week", 1)),
    ("Ce que j'ai acheté le mois dernier", "mois dernier", ("month", 1)),
    ("il y a 2 ans", "il y a 2 ans", ("year", 2)),
    ("Avez-vous les Trail Boots 41 en 42 ?", None, None),
    ("先週注文したもの", "先週", ("week", 1)),
    ("一昨日届きました", "一昨日", ("day", 2)),
    ("3日前に買いました", "3日前", ("day", 3)),
    ("二週間前に注文しました", "二週間前", ("week", 2)),
    ("先月買ったもの", "先月", ("month", 1)),
    ("数日前に届いた", "数日前", ("day", 3)),
    ("Trail Boots 41の42サイズはありますか？", None, None),
]


@pytest.mark.parametrize(("text", "hint", "parsed"), _OTHERS)
def test_time_hints_in_german_spanish_french_and_japanese(
    text: str, hint: str | None, parsed: tuple[str, int] | None
) -> None:
    assert extract_time_hint(text) == hint
    assert (_parse_hint(hint) if hint else None) == parsed


def test_each_languages_hint_scores_the_dates_it_names() -> None:
    assert time_score("vor 3 tagen", _at(3), NOW) == 1.0
    assert time_score("hace dos semanas", _at(14), NOW) == 1.0
    assert time_score("il y a trois jours", _at(40), NOW) < 0.5
    assert time_score("一昨日", _at(2), NOW) == 1.0 and time_score("一昨日", _at(1), NOW) < 1.0
    assert time_score("先週", _at(8), NOW) == 1.0
