"""Prompt sizes: counted by the Messages API's token counting, the estimate when it fails."""

from __future__ import annotations

from baton_kafka.agents.models.tokens import (
    ApiCounter,
    Estimator,
    estimate_prefix_tokens,
    estimate_tokens,
)
from baton_kafka.agents.prompts import system_prompt
from baton_kafka.agents.rules.offline import OfflineLLM
from baton_kafka.agents.testing.standin import StandIn
from baton_kafka.schemas.baton import Baton, TicketMemory
from baton_kafka.schemas.records import Order, UsageTotals
from baton_kafka.streams.bench.load import Workload, minimal_context, prompt_sizes
from tests.fixtures.agents import client, respond
from tests.fixtures.data import order
from tests.fixtures.data import reply as make_reply

SYSTEM = system_prompt("understand")
CONTEXT = "Message: my kettle leaks. 水壶漏水了"


async def test_claude_counts_with_the_api_through_the_sdk() -> None:
    async with StandIn(responder=respond) as standin:
        llm = client(standin)
        try:
            count = await llm.count_tokens("understand", SYSTEM, CONTEXT)
        finally:
            await llm.aclose()
        assert standin.stats()["token_counts"] > 0
    assert count.method == "counted"
    # The stand-in counts deterministically: its estimate of the system and message text.
    assert count.tokens == estimate_tokens(SYSTEM) + estimate_tokens(CONTEXT)


async def test_the_system_part_is_counted_once_per_model_and_prompt_version() -> None:
    async with StandIn(responder=respond) as standin:
        llm = client(standin)
        counter = llm.counter
        try:
            await counter.count("m", SYSTEM, "first context", version="p3")
            first = counter.requests
            await counter.count("m", SYSTEM, "second context", version="p3")
            assert counter.requests == first + 1  # the new context only
            await counter.count("m", SYSTEM, "second context", version="p3")
            assert counter.requests == first + 1  # nothing new
            await counter.count("m", SYSTEM, "second context", version="p4")
            assert counter.requests == first + 2  # the system part again, for the new version
            await counter.count("other", SYSTEM, "second context", version="p4")
            assert counter.requests == first + 5  # another model: system, probe, context
        finally:
            await llm.aclose()
        assert standin.stats()["token_counts"] == counter.requests


async def test_a_failing_endpoint_falls_back_to_the_estimate() -> None:
    async with StandIn(responder=respond) as standin:
        standin.count_tokens_fails = True
        llm = client(standin)
        try:
            count = await llm.count_tokens("understand", SYSTEM, CONTEXT)
        finally:
            await llm.aclose()
        assert standin.stats()["token_counts"] >= 1
    assert count.method == "estimated"
    assert count.tokens == estimate_tokens(SYSTEM) + estimate_tokens(CONTEXT)


async def test_a_failure_is_not_cached_so_a_recovered_endpoint_counts_again() -> None:
    async with StandIn(responder=respond) as standin:
        standin.count_tokens_fails = True
        llm = client(standin)
        counter: ApiCounter = llm.counter
        try:
            assert (await counter.count("m", SYSTEM, CONTEXT)).method == "estimated"
            standin.count_tokens_fails = False
            assert (await counter.count("m", SYSTEM, CONTEXT)).method == "counted"
        finally:
            await llm.aclose()


async def test_the_offline_counter_estimates() -> None:
    count = await Estimator().count(OfflineLLM().model_for("understand"), SYSTEM, CONTEXT)
    assert count.method == "estimated"
    assert count.tokens == estimate_tokens(SYSTEM) + estimate_tokens(CONTEXT)


def _sized() -> tuple[list, dict, dict, dict[str, Order]]:
    ticket = Workload("m", 1, 1).tickets()[0]
    o = order("O-1")
    baton = Baton(
        session_id=ticket.session_id,
        tickets=[TicketMemory(ticket_id=ticket.ticket_id, core_problem="Kettle leaks.")],
    )
    reply = make_reply(
        ticket.ticket_id,
        ticket.session_id,
        order_id="O-1",
        usage=UsageTotals(calls=1, input_tokens=500, by_stage={"strategy": 1}),
    )
    return [ticket], {ticket.ticket_id: reply}, {ticket.session_id: baton}, {"O-1": o}


async def test_bench_prompt_sizes_say_whether_they_were_counted() -> None:
    tickets, replies, batons, orders = _sized()
    minimal = minimal_context("strategy", tickets[0], ["Kettle leaks."], orders["O-1"])
    async with StandIn(responder=respond) as standin:
        llm = client(standin)
        try:
            counted = await prompt_sizes(
                tickets, replies, batons, orders, counter=llm.counter, model_for=llm.model_for
            )
            standin.count_tokens_fails = True
            fresh = client(standin)
            failed = await prompt_sizes(
                tickets, replies, batons, orders, counter=fresh.counter, model_for=fresh.model_for
            )
            await fresh.aclose()
        finally:
            await llm.aclose()
    offline = await prompt_sizes(tickets, replies, batons, orders)
    assert counted.method == "counted"
    assert failed.method == "estimated" and offline.method == "estimated"
    assert counted.minimal_context == estimate_tokens(minimal)
    assert counted.minimal == offline.minimal == failed.minimal


# Texts of every shipped language, ASCII and not: Han, kana, Hangul, fullwidth, accents, dashes.
_TEXTS = [
    "",
    "The kettle from order ORD-1042 leaks — refund?",
    "Der Wasserkocher (Bestellung 1042) ist undicht; Größe 42.",
    "¿Dónde está mi pedido nº 1042? Llegó roto.",
    "注文番号 1042 のケトルが水漏れしています。",
    "我的订单 ORD-1042 的水壶漏水了，请退款。",
    "주문 1042 주전자가 샙니다 ＡＢＣ",
    "plain ascii only, 12345 and more words",
]


def test_prefix_estimates_equal_the_estimate_of_each_prefix() -> None:
    for text in _TEXTS:
        n = len(text)
        ends = sorted({0, 1, 3, n // 3, n // 2, n - 1, n, n + 5, -1, -n - 3})
        assert estimate_prefix_tokens(text, ends) == [estimate_tokens(text[:e]) for e in ends]
    system = system_prompt("strategy")
    ends = [len(system) // 4, len(system) // 2, len(system)]
    assert estimate_prefix_tokens(system, ends) == [estimate_tokens(system[:e]) for e in ends]


def test_the_ascii_shortcut_counts_as_the_scan_does() -> None:
    assert estimate_tokens("a" * 4001) == 1001
    # One non-ASCII character that is not CJK still counts a quarter token, as before.
    assert estimate_tokens("a" * 4000 + "é") == 1001
    assert estimate_tokens("a" * 4000 + "水") == 1001
    assert estimate_tokens("a" * 4000 + "水水") == 1002
