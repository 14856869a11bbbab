"""Time hints in English and Chinese: found in a message, scored against order dates."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from baton_kafka.agents.rules.time_hints import extract_time_hint, time_score

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
