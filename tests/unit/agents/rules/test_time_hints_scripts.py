"""A time hint, searched for only in the scripts a text is written in, is the hint every
pattern of its language finds."""

from __future__ import annotations

import re
import unicodedata

from baton_kafka.agents.rules.phrases import written_in
from baton_kafka.agents.rules.time_hints import _chosen, _joined, extract_time_hint
from tests.unit.agents.rules.texts import every_text, generated

# How customers write times, in both scripts, in full width and next to each other.
_TIMES = [
    "3 days ago", "a couple of weeks ago", "two months ago", "the day before yesterday",
    "yesterday", "earlier today", "this morning", "last weekend", "this week", "last month",
    "this month", "last year", "this year", "recently", "the other day", "few days back",
    "三天前", "两个星期之前", "5个月以前", "十二天前", "大前天", "前天", "昨天", "今日", "上周",
    "上个礼拜", "上週", "这周", "本周", "这个星期", "上个月", "这个月", "本月", "前年", "去年",
    "今年", "最近", "前几天", "前阵子", "ＹＥＳＴＥＲＤＡＹ", "３天前", "LAST Month", "Today",
    "vor 3 Tagen", "vor einer Woche", "gestern", "letzte Woche", "vorgestern", "hace dos días",
    "ayer", "la semana pasada", "el mes pasado", "il y a trois jours", "avant-hier", "hier",
    "la semaine dernière", "le mois dernier", "先週", "一昨日", "3日前", "二週間前", "先月", "昨年",
    "おとといです",
]  # fmt: skip


def _plain(text: str) -> str | None:
    """The definition: every hint of the text's language (and English's and Chinese's)
    searched, the first found kept."""
    every = _joined(_chosen(written_in(text)))
    text = unicodedata.normalize("NFKC", text)
    best: re.Match[str] | None = None
    for hint in every:
        match = hint.rx.search(text)
        if match and (best is None or match.start() < best.start()):
            best = match
    return best.group(0).strip().lower() if best else None


def test_the_hint_is_the_plain_reading_on_the_corpora_and_written_times() -> None:
    pool = [*_TIMES * 40, *list(every_text())[:3000]]  # a time in about half the pieces
    texts = [*_TIMES, *generated(pool, 6000, seed=3), *every_text()]
    found = in_ascii = 0
    for text in texts:
        got = extract_time_hint(text)
        assert got == _plain(text), text
        found += got is not None
        in_ascii += got is not None and unicodedata.normalize("NFKC", text).isascii()
    assert found > 3000  # the texts do hold times in both scripts
    assert in_ascii > 400  # and in ASCII texts, searched from the first start of a hint
