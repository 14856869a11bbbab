"""A blind corpus for the eval's demand words, written after the packs: natural replies that
address the customer's demand in every shipped language score it as carried, replies that do
not address it score it as missing, scored as ``baton eval`` scores a ticket."""

from __future__ import annotations

from collections import Counter

import orjson
import pytest

from baton_kafka.agents.packs import LANGUAGES
from baton_kafka.schemas.records import Reply
from baton_kafka.streams.eval.score import World, parse_case, score
from tests.fixtures.paths import data_rows

CORPUS = [
    (c["language"], c["demand"], c["carried"], c["reply"])
    for c in data_rows("eval_demand_corpus.jsonl")
]

TICKET = {
    "en": "My kettle leaks.",
    "zh": "我的水壶漏水。",
    "de": "Mein Wasserkocher ist undicht.",
    "es": "Mi hervidor pierde agua.",
    "fr": "Ma bouilloire fuit.",
    "ja": "電気ケトルから水が漏れます。",
}


def test_the_corpus_covers_every_shipped_language_both_ways() -> None:
    kinds = Counter((lang, carried) for lang, _, carried, _ in CORPUS)
    assert set(kinds) == {(lang, c) for lang in LANGUAGES for c in (True, False)}


@pytest.mark.parametrize(("lang", "demand", "carried", "text"), CORPUS)
def test_demand_scored_in_the_reply_s_language(
    lang: str, demand: str, carried: bool, text: str
) -> None:
    line = {
        "ticket_id": "t1",
        "session_id": "s1",
        "customer_id": "ana",
        "text": TICKET[lang],
        "created_at": "2026-11-29T09:00:00Z",
        "label": {"phase": 1, "product": None, "problem": [], "demand": demand, "order_id": None},
    }
    case = parse_case(orjson.dumps(line))
    reply = Reply.model_validate(
        {
            "ticket_id": "t1",
            "session_id": "s1",
            "customer_id": "ana",
            "status": "answered",
            "reply": text,
            "solution": "",
            "internal_note": "",
            "confidence": 0.9,
            "order_id": None,
        }
    )
    verdict = score(case, reply, World.build([], [case]), LANGUAGES)
    assert verdict.language == lang
    assert verdict.demand is carried
    assert verdict.amnesia is not carried
