"""Grounding in ``baton eval``: each reply's stated facts (delivery and dispatch times, dates,
sizes, validity periods, prices) against the policy, the help articles that fit its ticket and
the store, by the deterministic check the strategy stage runs; a score per ticket and in all."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from baton_kafka.agents.articles import Article
from baton_kafka.agents.guards.books import CustomerOrders
from baton_kafka.agents.guards.cited import describe, uncited
from baton_kafka.agents.guards.clauses import readable
from baton_kafka.agents.guards.facts import stated
from baton_kafka.agents.policy import Policy
from baton_kafka.agents.prompts import ArticleFact
from baton_kafka.schemas.records import Order, Reply
from baton_kafka.streams.eval.score import Case


def sources_text(articles: Sequence[Article]) -> list[str]:
    """The articles as the strategy's prompt shows them: title and (cut) text."""
    return [f"{f.title}\n{f.text}" for f in (ArticleFact.of(a) for a in articles)]


def ground(reply: Reply, books: CustomerOrders, articles: Sequence[str]) -> dict[str, Any]:
    """One reply's grounding: the facts it states, those no source cites, and the share cited
    (1.0 when it states none)."""
    text = readable(reply.reply)
    found = [f for f in stated(text) if f.kinds]
    missing = uncited(reply.reply, books, articles)
    share = (len(found) - len(missing)) / len(found) if found else 1.0
    return {
        "stated": len(found),
        "uncited": [{"written": f.written.strip(), "what": describe(f)} for f in missing],
        "score": round(max(share, 0.0), 4),
    }


def grounding(
    cases: Sequence[Case],
    replies: Mapping[str, Reply],
    orders: Sequence[Order],
    policy: Policy,
    languages: Mapping[str, str],
    shown: Callable[[Case], Sequence[Article]],
) -> dict[str, Any]:
    """The report's ``grounding`` section: per ticket, overall and by language (``languages``:
    each ticket's); ``shown`` gives the articles that fit a case's ticket."""
    by_id = {o.order_id: o for o in orders}
    tickets: dict[str, dict[str, Any]] = {}
    for case in cases:
        reply = replies[case.ticket.ticket_id]
        order = by_id.get(reply.order_id or "") or by_id.get(case.label.order_id or "")
        customer = case.ticket.customer_id
        own = [o for o in orders if customer and o.customer_id == customer]
        books = CustomerOrders(matched=order, orders=own, policy=policy, message=case.ticket.text)
        tickets[case.ticket.ticket_id] = ground(reply, books, sources_text(shown(case)))

    def summary(ids: Sequence[str]) -> dict[str, Any]:
        rows = [tickets[i] for i in ids]
        stated_n = sum(r["stated"] for r in rows)
        uncited_n = sum(len(r["uncited"]) for r in rows)
        return {
            "tickets": len(rows),
            "facts_stated": stated_n,
            "facts_uncited": uncited_n,
            "tickets_with_uncited": sum(1 for r in rows if r["uncited"]),
            "score": round(sum(r["score"] for r in rows) / len(rows), 4) if rows else None,
        }

    ids = list(tickets)
    langs = sorted({languages.get(i, "") for i in ids})
    return {
        **summary(ids),
        "by_language": {
            lang: summary([i for i in ids if languages.get(i, "") == lang]) for lang in langs
        },
        "tickets": tickets,
    }


def render_grounding(section: Mapping[str, Any], pct: Callable[[float | None], str]) -> list[str]:
    """The grounding lines of the text report."""
    lines = [
        f"grounding: {pct(section['score'])} ({section['facts_uncited']} of "
        f"{section['facts_stated']} stated facts uncited, in {section['tickets_with_uncited']} "
        "tickets); by language: "
        + "; ".join(
            f"{lang} {pct(g['score'])} ({g['facts_uncited']}/{g['facts_stated']})"
            for lang, g in section["by_language"].items()
        )
    ]
    for ticket_id, row in section["tickets"].items():
        for fact in row["uncited"]:
            lines.append(f"  uncited {ticket_id}: {fact['what']} ({fact['written']!r})")
    return lines
