"""The final-state axis of ``baton eval``: the actions each reply leaves for the shop, scored
against the label's ``final_state``, as support benchmarks score the shop's database.

The actual actions of a reply are the ones the pipeline writes to ``support.actions``
(:func:`baton_kafka.schemas.action.actions_of`): one per line of an approved offer; an offer
waiting for a person's approval, a hand-off and a reply without an offer leave none (the eval
applies no decision). Actions are compared as a multiset of (kind, order, item, amount to the
cent, currency): a ticket is *exact* when its reply's actions are exactly the label's, nothing
missing and nothing extra (a second refund of the same order is extra). A session is exact when
every ticket of it is labelled and exact, so the session ends with the shop holding exactly
what its labels list. Tickets without a ``final_state`` label are counted, not scored.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from baton_kafka.agents.languages import DEFAULT_LANGUAGES
from baton_kafka.schemas.action import actions_of
from baton_kafka.schemas.records import Order, Reply
from baton_kafka.streams.eval.expected import ExpectedAction
from baton_kafka.streams.eval.score import Case, language

# kind, order, item, amount in cents, currency
Key = tuple[str, str, str | None, int | None, str | None]

SHOWN = 10


def _key(
    kind: str, order_id: str, item: str | None, amount: float | None, currency: str | None
) -> Key:
    cents = None if amount is None else round(amount * 100)
    return (kind.strip().casefold(), order_id, item, cents, currency.upper() if currency else None)


def expected_keys(expected: Iterable[ExpectedAction]) -> Counter[Key]:
    """The label's actions as compared."""
    return Counter(_key(e.kind, e.order_id, e.item, e.amount, e.currency) for e in expected)


def actual_keys(reply: Reply) -> Counter[Key]:
    """The actions the pipeline writes for ``reply``, as compared."""
    return Counter(
        _key(a.kind, a.order_id, a.item, a.amount, a.currency) for a in actions_of(reply)
    )


def show(key: Key) -> str:
    """One action, readable: ``refund EV-101 39.99 USD``."""
    kind, order_id, item, cents, currency = key
    parts = [kind, order_id]
    if item is not None:
        parts.append(f"[{item}]")
    if cents is not None:
        parts.append(f"{cents / 100:.2f}")
    if currency is not None:
        parts.append(currency)
    return " ".join(parts)


def _listed(keys: Counter[Key]) -> list[str]:
    return [show(k) for k in sorted(keys.elements(), key=str)]


def label_problems(case: Case, orders: Mapping[str, Order]) -> list[str]:
    """What is wrong with the case's ``final_state`` against the orders file: an order that is
    not there or not the ticket's customer's, an amount without the order's currency."""
    problems = []
    for n, e in enumerate(case.label.final_state or ()):
        where = f"label.final_state.{n}"
        order = orders.get(e.order_id)
        if order is None:
            problems.append(f"{where}: order {e.order_id} is not in the orders file")
        elif order.customer_id != case.ticket.customer_id:
            problems.append(f"{where}: order {e.order_id} is not the customer's")
        elif e.amount is not None and (e.currency or "").upper() != order.currency.upper():
            problems.append(f"{where}: an amount needs the order's currency {order.currency}")
    return problems


def score_ticket(case: Case, reply: Reply, languages: Sequence[str]) -> dict[str, Any]:
    """One ticket's verdict: its expected and actual actions, what is missing or extra, and
    ``exact`` (None when the ticket has no ``final_state`` label)."""
    actual = actual_keys(reply)
    labelled = case.label.final_state
    expected = expected_keys(labelled) if labelled is not None else None
    return {
        "ticket_id": case.ticket.ticket_id,
        "session_id": case.ticket.session_id,
        "language": language(case.ticket.text, languages),
        "status": reply.status,
        "offer": reply.offer.state if reply.offer is not None else None,
        "expected": None if expected is None else _listed(expected),
        "actual": _listed(actual),
        "missing": [] if expected is None else _listed(expected - actual),
        "extra": [] if expected is None else _listed(actual - expected),
        "exact": None if expected is None else expected == actual,
    }


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _group(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    scored = [r for r in rows if r["exact"] is not None]
    exact = sum(bool(r["exact"]) for r in scored)
    return {"scored": len(scored), "exact": exact, "exact_rate": _rate(exact, len(scored))}


def _mark_repeats(
    cases: Sequence[Case], replies: Mapping[str, Reply], rows: list[dict[str, Any]]
) -> None:
    """Set each row's ``repeated``: its actions that an earlier ticket of the same customer
    (of the session, without one) already wrote, in publication order."""
    written: dict[str, Counter[Key]] = {}
    for i in sorted(range(len(cases)), key=lambda i: (cases[i].label.phase, i)):
        t = cases[i].ticket
        before = written.setdefault(t.customer_id or f"session:{t.session_id}", Counter())
        actual = actual_keys(replies[t.ticket_id])
        rows[i]["repeated"] = _listed(actual & before)
        before.update(actual)


def final_state(
    cases: Sequence[Case],
    replies: Mapping[str, Reply],
    languages: Sequence[str] = DEFAULT_LANGUAGES,
    *,
    shop: str = "",
) -> dict[str, Any]:
    """The report's ``final_state`` section: tickets in exactly the labelled state, overall,
    per language and per session, with every ticket's verdict."""
    rows = [score_ticket(c, replies[c.ticket.ticket_id], languages) for c in cases]
    _mark_repeats(cases, replies, rows)
    sessions: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        sessions.setdefault(row["session_id"], []).append(row)
    whole = [s for s in sessions.values() if all(r["exact"] is not None for r in s)]
    return {
        "shop": shop,
        "tickets": len(rows),
        **_group(rows),
        "unlabelled": sum(r["exact"] is None for r in rows),
        "actions": sum(len(r["actual"]) for r in rows),
        "waiting_for_approval": sum(r["offer"] == "needs_approval" for r in rows),
        "repeated": sum(len(r["repeated"]) for r in rows),
        "tickets_with_repeats": sum(bool(r["repeated"]) for r in rows),
        "by_language": {
            lang: _group([r for r in rows if r["language"] == lang])
            for lang in sorted({r["language"] for r in rows})
        },
        "sessions": {
            "scored": len(whole),
            "exact": sum(all(r["exact"] for r in s) for s in whole),
            "exact_rate": _rate(sum(all(r["exact"] for r in s) for s in whole), len(whole)),
        },
        "per_ticket": rows,
    }


def render_final_state(section: Mapping[str, Any], pct: Callable[[float | None], str]) -> list[str]:
    """The text report's lines for the ``final_state`` section."""
    s = section
    shop = f" ({s['shop']})" if s["shop"] else ""
    lines = [
        "",
        f"final state{shop}: {pct(s['exact_rate'])} ({s['exact']} of {s['scored']} labelled tickets"
        f" leave exactly the expected actions; {s['unlabelled']} not labelled); "
        f"{s['actions']} actions written, {s['waiting_for_approval']} offers waiting for approval",
        "final state by language: "
        + "; ".join(
            f"{lang} {g['exact']}/{g['scored']} {pct(g['exact_rate'])}"
            for lang, g in s["by_language"].items()
        ),
        f"repeated actions: {s['repeated']} (in {s['tickets_with_repeats']} tickets: an action "
        "an earlier ticket of the customer already wrote, written again)",
        f"final state by session: {pct(s['sessions']['exact_rate'])} "
        f"({s['sessions']['exact']} of {s['sessions']['scored']} fully labelled sessions)",
    ]
    wrong = [r for r in s["per_ticket"] if r["exact"] is False]
    for r in wrong[:SHOWN]:
        notes = [f"missing {', '.join(r['missing'])}"] if r["missing"] else []
        notes += [f"extra {', '.join(r['extra'])}"] if r["extra"] else []
        lines.append(f"  {r['ticket_id']}: {'; '.join(notes)}")
    if len(wrong) > SHOWN:
        lines.append(f"  and {len(wrong) - SHOWN} more (--json: final_state.per_ticket)")
    return lines
