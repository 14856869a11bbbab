"""A ticket's language and product mentions are read once per ticket, shared by its stages
and their rules, and never across tickets: the next ticket with the same text reads again."""

from __future__ import annotations

from typing import Any

import pytest

from baton_kafka.agents import languages
from baton_kafka.agents.languages import DEFAULT_LANGUAGES, customer_language
from baton_kafka.agents.rules import matching
from baton_kafka.agents.rules.matching import mentioned_products
from baton_kafka.agents.ticket_memo import TicketMemo, sharing
from baton_kafka.streams.testing import TestPipeline
from tests.fixtures.data import ticket

TEXT = "My kettle is leaking, I want a refund."


def _counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often the language is told and the mentions are found, by their plain readings."""
    calls = {"language": 0, "mentions": 0}
    told, found = languages._customer_language, matching._mentions

    def language(*args: Any) -> Any:
        calls["language"] += 1
        return told(*args)

    def mentions(*args: Any) -> Any:
        calls["mentions"] += 1
        return found(*args)

    monkeypatch.setattr(languages, "_customer_language", language)
    monkeypatch.setattr(matching, "_mentions", mentions)
    return calls


async def test_a_ticket_reads_its_language_and_mentions_once(
    pipeline: TestPipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _counted(monkeypatch)
    (reply,) = await pipeline.send(ticket("t1", TEXT))
    assert reply.order_id == "O-1"
    # The understanding, its rules and the reply's drift check all share the one reading.
    assert calls == {"language": 1, "mentions": 1}


async def test_two_tickets_with_the_same_text_read_it_twice(
    pipeline: TestPipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _counted(monkeypatch)
    await pipeline.send(ticket("t1", TEXT))
    await pipeline.send(ticket("t2", TEXT, session="S2"))
    assert calls == {"language": 2, "mentions": 2}


def test_readings_are_kept_in_the_ticket_memo_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counted(monkeypatch)
    first, second = TicketMemo("t1", "C1", 0.0), TicketMemo("t2", "C1", 0.0)
    for memo in (first, second, first):
        with sharing(memo):
            for _ in range(3):
                assert customer_language(TEXT, DEFAULT_LANGUAGES) == "en"
                assert mentioned_products(TEXT) == ["kettle"]
    assert calls == {"language": 2, "mentions": 2}
    # Outside any ticket nothing is kept: each call reads anew.
    customer_language(TEXT, DEFAULT_LANGUAGES), mentioned_products(TEXT)
    customer_language(TEXT, DEFAULT_LANGUAGES), mentioned_products(TEXT)
    assert calls == {"language": 4, "mentions": 4}
