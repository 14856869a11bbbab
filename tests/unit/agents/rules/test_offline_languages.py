"""The offline model in German, Spanish, French and Japanese: tickets of a shop serving all six
languages through the pipeline (the real strategy stage and its checks), each answered in the
customer's language, about the right order, with no hand-off."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from baton_kafka.agents.languages import customer_language
from baton_kafka.agents.rules.offline import OfflineLLM
from baton_kafka.agents.rules.phrases import problem_key, reading, words
from baton_kafka.schemas import Order, Reply, Ticket
from baton_kafka.streams.runtime.pipeline import Pipeline
from baton_kafka.streams.settings import Settings
from baton_kafka.streams.testing import TestPipeline
from tests.fixtures.data import days_ago
from tests.fixtures.paths import TEST_DATA
from tests.fixtures.stores import sqlite_store

HERE = TEST_DATA / "offline_languages"
POLICY = HERE / "policy.toml"
LANGUAGES = ("de", "es", "fr", "ja")


def _cases(name: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (HERE / name).read_text("utf-8").splitlines() if line]


def _orders(case: dict[str, Any]) -> list[Order]:
    return [
        Order(
            order_id=o["order_id"],
            customer_id=case["id"],
            product_name=o["product"],
            status=o["status"],
            amount=o["amount"],
            currency="EUR",
            ordered_at=days_ago((o["delivered_days_ago"] or 0) + 4),
            delivered_at=days_ago(o["delivered_days_ago"])
            if o["delivered_days_ago"] is not None
            else None,
        )
        for o in case["orders"]
    ]


async def _replies(
    tmp_path: Path, cases: list[dict[str, Any]]
) -> tuple[dict[str, Reply], Pipeline]:
    orders = [o for case in cases for o in _orders(case)]
    tickets = [
        Ticket(ticket_id=c["id"], session_id=f"S-{c['id']}", customer_id=c["id"], text=c["text"])
        for c in cases
    ]
    async with sqlite_store(tmp_path / "orders.sqlite3", orders) as store:
        pipeline = TestPipeline(
            orders=store,
            settings=Settings(namespace="langs", session_ttl_s=3600, policy_file=POLICY),
            llm=OfflineLLM(),
        )
        replies = {r.ticket_id: r for r in await pipeline.send(*tickets)}
    return replies, pipeline


def _demand(reply: Reply) -> str | None:
    found = re.search(r"; demand (\w+)\.", reply.internal_note)
    return found.group(1) if found else None


def _tally(cases: list[dict[str, Any]], replies: dict[str, Reply]) -> dict[str, Counter[str]]:
    """Per language: answered in it, handed off, about the wrong order, in another language."""
    served = ("de", "en", "zh", "es", "ja", "fr")
    out: dict[str, Counter[str]] = {lang: Counter() for lang in LANGUAGES}
    for case in cases:
        r, tally = replies[case["id"]], out[case["lang"]]
        tally["tickets"] += 1
        in_language = customer_language(r.reply, served) == case["lang"]
        tally["answered in language"] += r.status == "answered" and in_language
        tally["handed off"] += r.status != "answered"
        tally["wrong order"] += r.order_id != case["order_id"]
        tally["other language"] += not in_language
        tally["not understood"] += _demand(r) == "other"
    return out


async def test_each_language_is_answered_in_it_about_the_right_order(tmp_path: Path) -> None:
    cases = _cases("corpus.jsonl")
    assert {c["lang"] for c in cases} == set(LANGUAGES)
    replies, pipeline = await _replies(tmp_path, cases)
    assert pipeline.dead_letters == []
    for case in cases:
        r = replies[case["id"]]
        detail = f"{case['id']}: {r.status} {r.reply}"
        assert r.status == "answered", detail
        assert r.language == case["lang"], detail
        assert customer_language(r.reply, pipeline.policy.languages) == case["lang"], detail
        assert r.order_id == case["order_id"], detail
        assert case["order_id"] in r.reply, detail
        assert _demand(r) == case["demand"], detail
        # Never the English sentences: the pack's own are used.
        english = words("en")["texts"]["closing"]
        assert english not in r.reply, detail
        assert words(case["lang"])["texts"]["closing"] in r.reply, detail


async def test_the_amounts_of_a_reply_are_the_offer_lines(tmp_path: Path) -> None:
    """A refund of a lost parcel in each language: the reply states the line's amount."""
    cases = [c for c in _cases("corpus.jsonl") if c["id"].endswith("-refund")]
    replies, _ = await _replies(tmp_path, cases)
    for case in cases:
        r = replies[case["id"]]
        assert r.offer is not None and r.offer.lines, case["id"]
        (line,) = [x for x in r.offer.lines if x.kind == "refund"]
        assert line.amount == 45.0 and line.order_id == case["order_id"]
        assert "45.00 EUR" in r.reply, r.reply


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_pack_has_every_sentence_the_english_one_has(lang: str) -> None:
    english, pack = words("en"), words(lang)
    for section in ("problems", "demands", "core", "clauses", "ack", "nouns", "status"):
        assert set(pack[section]) == set(english[section]), (lang, section)
    for section in ("actions", "remedies", "channels", "texts"):
        assert set(pack[section]) == set(english[section]), (lang, section)
        for key, text in english[section].items():
            said = set(re.findall(r"\{(\w+)\}", pack[section][key]))
            if key in ("carrier", "tracking"):  # the tracking number inline or in a clause
                assert said <= {"carrier", "tracking", "tracking_no"}, (lang, key)
                continue
            # The same placeholders: every amount and id the English sentence states.
            assert said == set(re.findall(r"\{(\w+)\}", text)), (lang, section, key)


# Blind parts, written after the code and not tuned to, with what was measured when each was
# first run: (wrong orders, not answered in language, requests not understood) per language.
# blind.jsonl first had es 1 and fr 1 wrong orders ("mi frontal", "la pointure 41" against
# "Boots 41") and the generic answer to "siguen sin llegar" and "j'attends toujours"; the packs
# and the size reading were fixed after, so it is no longer blind and pins the fixed figures.
# blind2.jsonl was written after those fixes.
BLIND = {
    "blind.jsonl": {"de": (0, 0, 0), "es": (0, 0, 0), "fr": (0, 0, 0), "ja": (0, 0, 0)},
    # "la tienda 2P" is no tent to the rules (a "tienda" is also a shop): the customer is asked
    # which order; three German requests ("einen neuen", "zurückbuchen", no shipping
    # confirmation yet) get the "refund, exchange or repair?" answer.
    "blind2.jsonl": {"de": (0, 0, 3), "es": (1, 0, 1), "fr": (0, 0, 0), "ja": (0, 0, 0)},
}


@pytest.mark.parametrize("name", BLIND)
async def test_blind_corpus_per_language(tmp_path: Path, name: str) -> None:
    """Tickets written after the code: the figures per language are held to what was measured."""
    cases = _cases(name)
    replies, pipeline = await _replies(tmp_path, cases)
    assert pipeline.dead_letters == []
    tally = _tally(cases, replies)
    print(name, {lang: dict(t) for lang, t in tally.items()})
    for lang, t in tally.items():
        wrong, unanswered, generic = BLIND[name][lang]
        assert t["other language"] == 0, (lang, t)
        assert t["wrong order"] <= wrong, (lang, t)
        assert t["answered in language"] >= t["tickets"] - unanswered, (lang, t)
        assert t["not understood"] <= generic, (lang, t)


@pytest.mark.parametrize(
    ("text", "problem", "demand"),
    [
        ("Mein Aurora Wasserkocher leckt, ich möchte mein Geld zurück.", "leaking", "refund"),
        (
            "Ich möchte keine Erstattung, sondern einen Umtausch, er ist zu klein.",
            "fit",
            "exchange",
        ),
        ("Der Wasserkocher ist kaputt, bitte reparieren.", "broken", "repair"),
        ("Mi hervidor gotea, quiero un reembolso.", "leaking", "refund"),
        ("No quiero un reembolso, prefiero cambiarlo: es demasiado pequeño.", "fit", "exchange"),
        ("Ma bouilloire fuit, je voudrais être remboursé.", "leaking", "refund"),
        ("Pas de remboursement, je préfère un échange : elle est trop petite.", "fit", "exchange"),
        ("ケトルから水漏れしています。返金してください。", "leaking", "refund"),
        ("ケトルが壊れました。修理をお願いします。", "broken", "repair"),
    ],
)
def test_each_language_is_read_into_its_problem_and_demand(
    text: str, problem: str, demand: str
) -> None:
    from tests.unit.agents.rules.test_offline import _understand

    u = _understand(text)
    assert (problem_key(u.problem), u.demand) == (problem, demand), u
    if any(
        word in text.casefold() for word in ("wasserkocher", "hervidor", "bouilloire", "ケトル")
    ):
        assert u.product and "Kettle" in u.product, u  # the kettle in the customer's words


def test_english_and_chinese_are_read_by_their_own_words_only() -> None:
    """Another language's words never read an English or Chinese text."""
    from tests.unit.agents.rules.test_offline import _understand

    assert reading("en") == reading("zh")
    assert reading("de").problems["broken"].pattern != reading("en").problems["broken"].pattern
    assert problem_key("my kettle is kaputt") is None
    assert problem_key("mein Wasserkocher ist kaputt") == "broken"
    assert _understand("The kettle is late, says the tarde").demand == "information"


def test_an_order_id_in_full_width_digits_is_the_orders() -> None:
    from tests.unit.agents.rules.test_offline import ORDERS, _choose

    oid = ORDERS[1].order_id
    wide = oid.translate({ord(c): ord(c) + 0xFEE0 for c in "0123456789"})
    assert wide != oid
    assert _choose(f"注文番号：{wide} の件です。").order_id == oid
