"""The offline model's problem vocabulary: how customers describe a problem, in both languages."""

from __future__ import annotations

import time

import pytest

from baton_kafka.agents.rules.matching import normalize
from baton_kafka.agents.rules.phrases import (
    DEFAULT_DEMAND,
    PROBLEM_BY_LABEL,
    PROBLEM_RX,
    PROBLEMS,
    SAFETY,
    hits,
    problem_key,
)
from baton_kafka.schemas.records import MAX_TEXT_CHARS


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("The blender makes a grinding sound when it starts", "noise"),
        ("There's a clicking and whining coming from the fan", "noise"),
        ("搅拌机一开就咔咔响", "noise"),
        ("吹风机声音特别大，很吵", "noise"),
        ("The phone screen keeps flickering", "display"),
        ("My monitor has a black screen after ten minutes", "display"),
        ("手机屏幕一直闪，时好时坏的", "display"),
        ("平板花屏了", "display"),
        ("The heater runs but it is not heating", "no_heat"),
        ("The hair dryer only blows cold air", "no_heat"),
        ("电热毯插上电一点都不热", "no_heat"),
        ("电暖器不出热风", "no_heat"),
        ("The charger gets very hot when plugged in", "overheat"),
        ("充电器插上以后特别烫", "overheat"),
        ("The sole is coming apart at the toe", "coming_apart"),
        ("The pair with the split sole", "coming_apart"),
        ("The seams are fraying after a week", "coming_apart"),
        ("鞋子穿了一周就开胶了", "coming_apart"),
        ("The tumbler lid leaks", "leaking"),
        ("咖啡机底部一直滴水", "leaking"),
        ("It arrived with a crack in the jar", "damaged"),
        ("杯子有裂纹", "damaged"),
        ("My order still shows in transit after a week", "not_delivered"),
        ("The parcel got lost in the post", "not_delivered"),
        ("The one that hasn't shipped yet", "not_delivered"),
        ("物流好几天都没更新了", "not_delivered"),
        ("还在路上的那个包裹", "not_delivered"),
        ("I still haven't received my refund", "refund_missing"),
        ("钱怎么还没退给我", "refund_missing"),
        ("没收到退款", "refund_missing"),
        ("My watch won't hold a charge", "battery"),
        ("扫地机器人充不上电", "battery"),
        ("The fridge stopped cooling", "broken"),
        ("洗衣机启动不了", "broken"),
        ("These shoes run small", "fit"),
        ("鞋子偏大", "fit"),
        ("They sent the wrong colour", "wrong_item"),
        ("颜色不对，我买的是黑色", "wrong_item"),
        ("The jacket faded after one wash", "quality"),
        ("衣服洗了一次就缩水", "quality"),
        ("I ordered it by mistake", "unwanted"),
        ("拍错了，不想要了", "unwanted"),
    ],
)
def test_customers_words_for_a_problem_find_its_kind(text: str, key: str) -> None:
    assert problem_key(text) == key


@pytest.mark.parametrize(
    "text",
    [
        "Separately, my laptop needs a new charger cable",  # "separately" is no separated sole
        "Can I split the payment?",
        "That's not cool, I want to talk to someone",
        "我没退货，还在家里",  # not having sent it back says nothing about the refund
        "Has my refund been processed?",  # a question about a refund is no missing refund
    ],
)
def test_ordinary_words_are_not_read_as_a_problem(text: str) -> None:
    assert problem_key(text) is None


def test_every_problem_has_labels_that_lead_back_to_it_and_a_default_demand() -> None:
    # A safety problem goes to a person, whatever was asked, so it has no default demand.
    for key, (_en, _zh, label_en, predicate, label_zh) in PROBLEMS.items():
        assert PROBLEM_BY_LABEL[label_en] == key
        assert PROBLEM_BY_LABEL[label_zh] == key
        if key not in ("general", *SAFETY):
            assert predicate
            assert key in DEFAULT_DEMAND, key


@pytest.mark.parametrize(
    "unit",
    [
        "the sole has has has come come loose loose ",
        "refund has not not yet yet arrived arrived ",
        "screen keeps keeps going going black ",
        "屏幕屏幕闪闪鞋底鞋底开开物流物流没没更新",
        "not not heating heating isnt isnt hot hot ",
    ],
)
def test_problem_patterns_scan_a_ticket_of_the_largest_size_in_linear_time(unit: str) -> None:
    norm = normalize((unit * (MAX_TEXT_CHARS // len(unit) + 1))[:MAX_TEXT_CHARS])
    started = time.perf_counter()
    for rx in PROBLEM_RX.values():
        hits(rx, norm)
    elapsed = time.perf_counter() - started
    # Linear, the scan takes milliseconds; a pattern that backtracks takes seconds.
    assert elapsed < 0.25, f"{elapsed * 1000:.0f} ms"
