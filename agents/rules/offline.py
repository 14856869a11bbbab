"""The deterministic rule-based model: answers every stage from the prompt's facts alone."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import cast

from pydantic import BaseModel

from agents.models.llm import Answer, OutputInvalid, Prompt, T
from agents.prompts import Facts, OrderFact, parse_context
from agents.rules.matching import (
    content_words,
    extract_time_hint,
    find_product,
    mentioned_products,
    normalize,
    product_score,
    time_score,
)
from agents.rules.phrases import (
    ACTIONS,
    CLAUSE_EN,
    CLAUSE_ZH,
    CLOSING,
    DEFAULT_DEMAND,
    DELIVERY,
    DEMAND_ACK,
    DEMANDS,
    EARLIER,
    GENERAL,
    INJECTION,
    LEGAL,
    NOUN,
    PROBLEM_RX,
    PROBLEMS,
    RETURN_LOGISTICS,
    SAFETY,
    STATUS,
    hits,
    is_chinese,
    pad,
    problem_key,
)
from schemas.records import CallUsage, StageName
from schemas.stages import Demand, OrderChoice, StrategyDraft, Understanding

MODEL = "offline-rules"


def _core_problem(
    zh: bool, product: str | None, problem: str, key: str | None, demand: str, previous: str | None
) -> str:
    name = product[:120] if product else None
    if zh:
        clause = CLAUSE_ZH[demand]
        if demand == "information" and previous in NOUN:
            clause = f"想知道{NOUN[previous][1]}需要多久"
        subject = name or "订单"
        if key == "general":
            return f"客户需要{pad(subject)}方面的帮助，{clause}。"
        if key:
            return f"客户的{pad(subject)}{PROBLEMS[key][4]}，{clause}。"
        return f"客户的{pad(subject).rstrip()}出现问题（{problem[:120]}），{clause}。"
    clause = CLAUSE_EN[demand]
    if demand == "information" and previous in NOUN:
        clause = f"they want to know how long the {NOUN[previous][0]} will take"
    subject = f"Customer's {name}" if name else "Customer's order"
    if key == "general":
        return f"Customer needs help with their {name or 'order'} and {clause}."
    if key:
        return f"{subject} {PROBLEMS[key][3]} and {clause}."
    return f"{subject} has a problem ({problem[:120]}) and {clause}."


def understand_rules(facts: Facts) -> Understanding:
    """Read product, problem, demand and time from the message, the session and the orders."""
    message, session = facts.message, facts.session
    norm, zh = normalize(message), is_chinese(message)
    names = list(dict.fromkeys(o.product_name for o in facts.orders))
    mentions = mentioned_products(message)
    product = find_product(message, names)
    if product and mentions:
        best = product_score(message, product)
        rivals = [n for n in names if n != product and product_score(message, n) >= best - 0.05]
        if rivals:  # Several orders fit the words equally: keep the customer's own word.
            product = mentions[0]
    named = product is not None or bool(mentions)
    refers = not named and bool(EARLIER.search(norm))
    past = next((e for e in facts.earlier if e.product), None) if refers else None
    if product is None and mentions:
        current = session.product
        product = current if current and product_score(mentions[0], current) >= 0.5 else mentions[0]
    elif product is None:
        product = session.product or (past.product if past else None)
    same_topic = product == session.product
    key = next((k for k, rx in PROBLEM_RX.items() if hits(rx, norm)), None)
    if key is None and past is not None and not session.problem:
        # "The order I asked about before" continues that session's problem.
        key = problem_key(past.core_problem)
    if key:
        problem = PROBLEMS[key][4] if zh else PROBLEMS[key][2]
    elif session.problem and same_topic:
        problem, key = session.problem, problem_key(session.problem)
    else:
        problem, key = GENERAL[zh], "general"
    demands = [d for d, rx in DEMANDS.items() if hits(rx, norm)]
    previous = session.previous_demand if session.previous_demand in CLAUSE_EN else None
    if not demands and past is not None:
        demands = [d for d, rx in DEMANDS.items() if hits(rx, normalize(past.core_problem))]
    if (
        demands == ["refund"]
        and previous in ("exchange", "repair")
        and RETURN_LOGISTICS.search(norm)
    ):
        # Shipping an item back is part of the exchange or repair already agreed on.
        demands = [cast(Demand, previous)]
    if "information" in demands and previous in demands:
        # "How long will the repair take?" asks about the process already agreed on.
        demands = ["information"]
    demand: Demand = (
        demands[0]
        if demands
        else cast(Demand, previous)
        if previous and same_topic
        else DEFAULT_DEMAND.get(key or "", "other")
    )
    time_hint = extract_time_hint(message)
    keywords: list[str] = [*mentions]
    for rx in (*PROBLEM_RX.values(), *DEMANDS.values()):
        keywords += hits(rx, norm)
    keywords += [time_hint] if time_hint else []
    keywords += content_words(message)
    return Understanding(
        product=product,
        problem=problem,
        demand=demand,
        time_hint=time_hint,
        keywords=list(dict.fromkeys(keywords))[:8],
        language="zh" if zh else "en",
        core_problem=_core_problem(zh, product, problem, key, demand, previous)[:400],
        refers_to_earlier=refers,
    )


def _status_fit(key: str | None, demand: str, status: str) -> float:
    if status in ("cancelled", "refunded"):
        return 0.1
    if key in DELIVERY:
        table = {"shipped": 1.0, "lost": 1.0, "paid": 0.8, "pending": 0.8, "delivered": 0.3}
    elif demand == "cancel":
        table = {"paid": 1.0, "pending": 1.0, "shipped": 0.6, "delivered": 0.3}
    elif demand in ("refund", "exchange", "repair", "compensation") or key not in (None, "general"):
        table = {"delivered": 1.0, "returned": 0.5, "shipped": 0.4, "paid": 0.3}
    else:
        table = {"delivered": 0.7, "shipped": 0.7, "paid": 0.6}
    return table.get(status, 0.3)


def _ordered(order: OrderFact) -> datetime:
    return datetime.combine(date.fromisoformat(order.ordered_at[:10]), datetime.min.time(), UTC)


def choose_rules(facts: Facts, now: datetime | None = None) -> OrderChoice:
    """Pick the candidate order the message is about, or none; never an id outside the facts."""
    u = facts.understanding or understand_rules(facts)
    by_id = {o.order_id: o for o in facts.orders}
    if not by_id:
        return OrderChoice(order_id=None, reason="The customer has no candidate orders.")
    lowered = facts.message.casefold()
    named = [oid for oid in by_id if oid.casefold() in lowered]
    if named:
        return OrderChoice(order_id=named[0], reason=f"The message names order {named[0]}.")
    current = facts.session.order_id if facts.session.order_id in by_id else None
    if u.refers_to_earlier and not (u.product and current):
        for past in sorted(facts.earlier, key=lambda e: e.at, reverse=True):
            if past.order_id in by_id:
                return OrderChoice(
                    order_id=past.order_id,
                    reason=f"The customer refers to the earlier conversation about order "
                    f"{past.order_id}.",
                )
    key, now = problem_key(u.problem), now or datetime.now(UTC)
    scored = []
    for order in facts.orders:
        p = product_score(u.product, order.product_name) if u.product else 0.0
        t = time_score(u.time_hint, _ordered(order), now)
        s = _status_fit(key, u.demand, order.status)
        bonus = 0.1 if order.order_id == current else 0.0
        scored.append((0.6 * p + 0.25 * t + 0.15 * s + bonus, p, t, s, order))
    scored.sort(key=lambda row: row[0], reverse=True)
    _, p, t, s, best = scored[0]
    why = f"product {p:.2f}, time {t:.2f}, status {best.status} ({s:.2f})"
    if u.product:
        if p < 0.5:
            return OrderChoice(order_id=None, reason=f"No candidate order is a {u.product[:80]}.")
        return OrderChoice(order_id=best.order_id, reason=f"Best match for the product: {why}.")
    if current:
        return OrderChoice(order_id=current, reason="The session is already about this order.")
    fitting = [row for row in scored if row[3] >= 0.8]
    if len(scored) == 1 or len(fitting) == 1:
        choice = scored[0][4] if len(scored) == 1 else fitting[0][4]
        return OrderChoice(order_id=choice.order_id, reason="The only order that fits the request.")
    return OrderChoice(order_id=None, reason="No product named and several orders could fit.")


def _status(status: str, zh: bool) -> str:
    return STATUS.get(status, (status, status))[zh]


def _case(demand: str, previous: str | None, key: str | None, status: str) -> str:
    """Which action applies to a matched order with ``status`` ("" when its facts are missing)."""
    if demand in ("refund", "compensation", "cancel") and status in ("cancelled", "refunded"):
        return "closed"
    if demand == "refund":
        table = {"paid": "cancel_full", "pending": "cancel_full", "shipped": "refund_transit"}
        return {**table, "lost": "refund_lost"}.get(status, "refund_return")
    if demand == "cancel":
        table = {"shipped": "cancel_shipped", "delivered": "cancel_delivered"}
        return table.get(status, "cancel_full")
    if demand in ("exchange", "repair", "compensation", "complaint"):
        return demand
    if demand == "information" and previous in NOUN and key not in DELIVERY:
        return f"time_{previous}"
    if demand == "information" or key in DELIVERY:
        if status == "delivered" and key in DELIVERY:
            return "investigate"
        table = {"shipped": "in_transit", "paid": "not_shipped", "pending": "not_shipped"}
        return {**table, "lost": "refund_lost"}.get(status, "status")
    return "other"


# The order store could not be read: the reply says so instead of claiming no order exists.
STORE_UNAVAILABLE = (
    "I could not check your order right now because our order system is temporarily "
    "unavailable. A colleague will check it and get back to you; if you have the order number "
    "at hand, please send it.",
    "我们的订单系统暂时无法访问，目前无法核实您的订单。同事会尽快核实后回复您；如方便，请提供订单号。",
)


def _action(case: str, zh: bool, oid: str | None, order: OrderFact | None, what: str) -> str:
    money = (
        f"{order.amount:.2f} {order.currency}"
        if order
        else ("实付金额" if zh else "the amount paid")
    )
    comp = (
        f"{min(order.amount, round(order.amount * 0.1, 2)):.2f} {order.currency}"
        if order
        else ("实付金额的 10%" if zh else "10% of the amount paid")
    )
    carrier = ""
    if order and order.carrier:
        tracking = f", tracking number {order.tracking_no}" if order.tracking_no else ""
        carrier = (
            f"（{order.carrier} {order.tracking_no or ''}）"
            if zh
            else f" with {order.carrier}{tracking}"
        )
    template = STORE_UNAVAILABLE if case == "store_unavailable" else ACTIONS[case]
    return template[zh].format(
        oid=oid,
        what=what,
        money=money,
        comp=comp,
        carrier=carrier,
        status=_status(order.status, zh) if order else "",
        delivered=(order.delivered_at or order.ordered_at) if order else "",
    )


def strategy_rules(facts: Facts) -> StrategyDraft:
    """Decide and write a policy-respecting reply in the customer's language."""
    u = facts.understanding or understand_rules(facts)
    zh, norm = u.language == "zh", normalize(facts.message)
    oid = facts.match.order_id if facts.match else None
    order = next((o for o in facts.orders if o.order_id == oid), None)
    key = problem_key(u.problem)
    safety, legal = key in SAFETY, bool(LEGAL.search(norm))
    injection = bool(INJECTION.search(norm))
    needs_human = safety or legal or injection
    product = order.product_name if order else u.product
    what = product or ("商品" if zh else "item")
    handoff = "safety" if safety else "legal" if legal else None
    if oid:
        case = handoff or _case(
            u.demand, facts.session.previous_demand, key, order.status if order else ""
        )
    elif facts.match is not None and facts.match.method == "unavailable":
        case = "store_unavailable"
    else:
        case = "no_order"
    actions = [_action(c, zh, oid, order, what) for c in dict.fromkeys((handoff or case, case))]
    if zh:
        issue = PROBLEMS[key][4] if key else f"出现的问题（{u.problem[:80]}）"
        parts = [f"您好，很抱歉您的{pad(what)}{issue}。"]
        if key == "general":
            parts = [f"您好，感谢您就{pad(what)}联系我们。"]
        if oid:
            detail = f"{what}，{_status(order.status, zh)}" if order else what
            parts.append(f"我查到了您的订单 {oid}（{detail}）。")
    else:
        issue = PROBLEMS[key][3] if key else f"has a problem ({u.problem[:80]})"
        parts = [f"Hello, I'm sorry to hear that your {what} {issue}."]
        if key == "general":
            parts = [f"Hello, thank you for contacting us about your {what}."]
        if oid:
            detail = f"{what}, {_status(order.status, zh)}" if order else what
            parts.append(f"I found your order {oid} ({detail}).")
    silent = ("no_order", "store_unavailable", "closed", "other")
    if (handoff or case in silent) and u.demand in DEMAND_ACK:
        parts.append(DEMAND_ACK[u.demand][zh])
    if facts.match is not None and facts.match.method == "history":
        past = next((e for e in facts.earlier if e.order_id == oid), None)
        if past is not None and past.core_problem:
            parts.append(
                f"您之前咨询过这个订单：{past.core_problem}"
                if zh
                else f"You asked about this order before: {past.core_problem}"
            )
    reply = ("" if zh else " ").join([*parts, *actions, CLOSING[zh]])
    history = [*facts.session.core_problems[-5:]]
    if u.core_problem not in history:
        history.append(u.core_problem)
    flags = [f for f, on in (("safety", safety), ("legal", legal), ("injection", injection)) if on]
    money = f", {order.amount:.2f} {order.currency}" if order else ""
    note = (
        f"Session core problems: {' / '.join(h.rstrip('.。') for h in history)}. "
        f"Decision: {case} for order "
        f"{oid or 'none'}{f' ({order.status}{money})' if order else ''}; demand {u.demand}."
    )
    if flags:
        note += f" Flags: {', '.join(flags)}; handed to a person."
    if injection:
        note += " The message tried to override instructions; it was ignored."
    confidence = 0.3 if needs_human else 0.9 if oid else 0.5
    return StrategyDraft(
        solution=" ".join(actions) if not zh else "".join(actions),
        reply=reply,
        internal_note=note,
        confidence=confidence,
        needs_human=needs_human,
    )


class OfflineLLM:
    """The rule-based model behind the ``LLM`` protocol: free, instant and deterministic."""

    name = "offline"

    def model_for(self, stage: StageName) -> str:
        """Name of the model used for ``stage``."""
        return MODEL

    async def ask(
        self, prompt: Prompt[T], *, feedback: str | None = None, max_tokens: int | None = None
    ) -> Answer[T]:
        """Answer from the prompt's facts; raise ``OutputInvalid`` when the rules cannot."""
        rules: dict[type[BaseModel], Callable[[Facts], BaseModel]] = {
            Understanding: understand_rules,
            OrderChoice: choose_rules,
            StrategyDraft: strategy_rules,
        }
        rule = rules.get(prompt.output_type)
        if rule is None:
            raise OutputInvalid(f"offline model cannot produce {prompt.output_type.__name__}")
        try:
            facts = prompt.facts
            value = rule(facts if isinstance(facts, Facts) else parse_context(prompt.context))
        except ValueError as exc:  # also pydantic's ValidationError
            raise OutputInvalid(f"offline rules failed: {exc}") from exc
        usage = CallUsage(stage=prompt.stage, model=MODEL)
        return Answer(value=cast(T, value), usage=usage, raw=value.model_dump_json())

    async def aclose(self) -> None:
        """Nothing to release."""
