"""The strategy stage's rules: a policy-respecting decision and reply in the customer's language."""

from __future__ import annotations

from datetime import date

from baton_kafka.agents import risk
from baton_kafka.agents.policy import Policy, default_policy
from baton_kafka.agents.policy import offer as offers
from baton_kafka.agents.prompts import Facts, ItemFact, OrderFact, persons_asked
from baton_kafka.agents.rules.matching import product_score
from baton_kafka.agents.rules.phrases import (
    ACTIONS,
    CHANNELS,
    CLOSING,
    DELIVERY,
    DEMAND_ACK,
    NOUN,
    PROBLEMS,
    REMEDY_NAMES,
    STATUS,
    pad,
    problem_key,
)
from baton_kafka.agents.rules.understanding import understand_rules
from baton_kafka.schemas.records import OfferLine, Order
from baton_kafka.schemas.stages import StrategyDraft, Understanding

# The remedies each case commits to; the money ones carry the amount.
_REMEDIES: dict[str, tuple[str, ...]] = {
    "cancel_full": ("cancellation", "refund"),
    "refund_return": ("refund",),
    "refund_transit": ("refund",),
    "refund_lost": ("refund",),
    "cancel_shipped": ("refund",),
    "cancel_delivered": ("refund",),
    "exchange": ("exchange",),
    "repair": ("repair",),
    "compensation": ("compensation",),
    "investigate": ("investigation",),
    "complaint": ("escalation",),
}
# What a case turns into when the policy does not allow it, tried in order.
_INSTEAD: dict[str, tuple[str, ...]] = {
    "refund_return": ("exchange", "repair"),
    "cancel_delivered": ("exchange",),
    "repair": ("exchange",),
    "exchange": ("repair",),
}


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


def _as_order(o: OrderFact) -> Order:
    """The order as the prompt states it, for the policy check (dates at midnight UTC)."""
    return Order.model_validate(
        {
            **o.model_dump(exclude={"ordered_at", "delivered_at"}, exclude_none=True),
            "customer_id": "prompt",
            "ordered_at": f"{o.ordered_at}T00:00:00Z",
            "delivered_at": f"{o.delivered_at}T00:00:00Z" if o.delivered_at else None,
        }
    )


def _item(order: OrderFact | None, product: str | None) -> ItemFact | None:
    """The one item of a multi-item ``order`` that ``product`` names, or None: the whole order."""
    if order is None or not product or not order.items:
        return None
    scored = sorted(
        ((product_score(product, i.product_name), i) for i in order.items),
        key=lambda pair: pair[0],
        reverse=True,
    )
    best, item = scored[0]
    if best < 0.5 or (len(scored) > 1 and scored[1][0] >= best):
        return None
    return item


def _lines(
    case: str,
    order: OrderFact,
    policy: Policy,
    context: offers.OfferContext,
    item: ItemFact | None = None,
) -> list[OfferLine]:
    """The offer lines ``case`` commits to for ``order`` (or its one ``item``), within what is
    left to pay on it."""
    lines = []
    name = item.product_name if item else None
    for kind in _REMEDIES.get(case, ()):
        remedy = policy.remedy(kind)
        if remedy is None or not remedy.money:
            lines.append(OfferLine(kind=kind, order_id=order.order_id, item=name))
            continue
        most = offers.limit(remedy, item.amount if item else order.amount)
        left = min(context.left(kind), item.amount) if item else context.left(kind)
        amount = offers.cents(min(left, most) if most is not None else left)
        lines.append(
            OfferLine(
                kind=kind,
                order_id=order.order_id,
                item=name,
                amount=amount,
                currency=order.currency,
                channel=remedy.channels[0],
            )
        )
    return lines


def _decide_case(
    case: str,
    demand: str,
    order: OrderFact,
    policy: Policy,
    today: date,
    offered: dict[str, float],
    item: ItemFact | None = None,
) -> tuple[str, list[OfferLine]]:
    """``case`` or what the policy allows instead, with its offer lines."""
    if case not in _REMEDIES:
        return case, []
    context = offers.OfferContext(_as_order(order), demand, today, offered)
    for option in (case, *_INSTEAD.get(case, ())):
        lines = _lines(option, order, policy, context, item)
        money = any(line.amount is not None for line in lines)
        if money and offers.total(lines) <= 0:
            continue  # nothing left to pay on this order
        if not offers.problems(lines, policy, context):
            return option, lines
    return "not_covered", []


def _action(
    case: str,
    zh: bool,
    oid: str | None,
    order: OrderFact | None,
    what: str,
    policy: Policy,
    lines: list[OfferLine],
    wanted: str,
) -> str:
    paid = next((line for line in lines if line.kind == "refund"), None)
    comp = next((line for line in lines if line.kind == "compensation"), None)
    money = (
        f"{(paid.amount if paid and paid.amount is not None else order.amount):.2f} "
        f"{order.currency}"
        if order
        else ("实付金额" if zh else "the amount paid")
    )
    kind = _REMEDIES.get(case, (case.removeprefix("time_"),))[-1]
    if case == "investigate":
        kind = "investigation"
    carrier = ""
    if order and order.carrier:
        tracking = f", tracking number {order.tracking_no}" if order.tracking_no else ""
        carrier = (
            f"（{order.carrier} {order.tracking_no or ''}）"
            if zh
            else f" with {order.carrier}{tracking}"
        )
    channel = CHANNELS.get(comp.channel or "", ("", "")) if comp else ("", "")
    template = STORE_UNAVAILABLE if case == "store_unavailable" else ACTIONS[case]
    return template[zh].format(
        oid=oid,
        what=what,
        money=money,
        comp=f"{comp.amount:.2f} {order.currency}" if comp and order else "",
        channel=channel[zh] or (comp.channel if comp else ""),
        carrier=carrier,
        status=_status(order.status, zh) if order else "",
        delivered=(order.delivered_at or order.ordered_at) if order else "",
        turn=policy.turnaround("escalation" if case == "complaint" else kind, "zh" if zh else "en"),
        remedy=REMEDY_NAMES.get(wanted, (wanted, wanted))[zh],
    )


def _which(zh: bool, orders: list[OrderFact]) -> str:
    """Ask which of the orders that fit equally the customer means; promise nothing yet."""
    if zh:
        listed = "、".join(
            f"{o.product_name}（订单 {o.order_id}，{_status(o.status, zh)}）" for o in orders
        )
        return (
            f"您的账户中有几个订单都符合您的描述：{listed}。"
            "请问您指的是哪一个？确认后我会马上为您处理。"
        )
    listed = "; ".join(
        f"{o.product_name} (order {o.order_id}, {_status(o.status, zh)})" for o in orders
    )
    return (
        f"More than one order on your account fits what you describe: {listed}. Which one do "
        "you mean? As soon as you tell me, I will take care of it."
    )


def handoff_triggers(facts: Facts, u: Understanding, policy: Policy) -> list[str]:
    """The policy's hand-off triggers the ticket sets off (safety, legal, self-harm, injection,
    repeats): the understanding's risk flags its words ground, and the language packs' and the
    policy's trigger words, the customer's product names cut out first."""
    rules = policy.handoff
    names = [n for o in facts.orders for n in o.products()]
    flags = risk.read(facts.message, u.risks, u.language, names, rules.triggers)
    kinds = {f.kind for f in flags if rules.on(f.kind)}
    problem = facts.session.problem
    if problem and u.problem == problem and rules.on("safety"):
        # A follow-up on the session's problem ("and I want compensation for this"): a hazard
        # raised about it before still stands, read from the problem by the same packs.
        carried = risk.scan(problem, u.language, names, rules.triggers)
        kinds |= {f.kind for f in carried if f.kind == "safety"}
    repeated = bool(rules.repeated_contact and facts.session.repeats >= rules.repeated_contact)
    found = {
        "safety": "safety" in kinds,
        "legal": "legal" in kinds,
        "self_harm": "self_harm" in kinds,
        "injection": "injection" in kinds,
        "repeated contact": repeated,
    }
    return [name for name, on in found.items() if on]


def strategy_rules(facts: Facts, policy: Policy | None = None) -> StrategyDraft:
    """Decide by ``policy`` (the demo shop's by default) and write the reply and its offer."""
    policy = policy or default_policy()
    u = facts.understanding or understand_rules(facts)
    zh = u.language == "zh"
    oid = facts.match.order_id if facts.match else None
    order = next((o for o in facts.orders if o.order_id == oid), None)
    key = problem_key(u.problem)
    found = handoff_triggers(facts, u, policy)
    safety, legal = "safety" in found, "legal" in found or "self_harm" in found
    injection, repeated = "injection" in found, "repeated contact" in found
    # An earlier stage of the shop's asked for a person: a senior colleague takes over.
    asked = persons_asked(facts)
    needs_human = bool(found or asked)
    item = _item(order, u.product)
    product = item.product_name if item else order.product_name if order else u.product
    what = product or ("商品" if zh else "item")
    handoff = "safety" if safety else "legal" if legal or repeated or asked else None
    lines: list[OfferLine] = []
    wanted = ""
    if oid:
        case = handoff or _case(
            u.demand, facts.session.previous_demand, key, order.status if order else ""
        )
        if order is not None and not handoff:
            today = date.fromisoformat(facts.today) if facts.today else date.today()
            offered = facts.session.offered.get(order.order_id, {})
            wanted = _REMEDIES.get(case, ("",))[-1]
            case, lines = _decide_case(case, u.demand, order, policy, today, offered, item)
    elif facts.match is not None and facts.match.method == "unavailable":
        case = "store_unavailable"
    elif facts.match is not None and facts.match.recall and facts.orders:
        case = "which_order"
    else:
        case = "no_order"
    actions = [
        _which(zh, facts.orders)
        if c == "which_order"
        else _action(c, zh, oid, order, what, policy, lines, wanted)
        for c in dict.fromkeys((handoff or case, case))
    ]
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
    silent = ("no_order", "which_order", "store_unavailable", "closed", "other", "not_covered")
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
    flags = [
        f
        for f, on in (
            ("safety", safety),
            ("legal", "legal" in found),
            ("self-harm", "self_harm" in found),
            ("injection", injection),
            ("repeated contact", repeated),
        )
        if on
    ]
    money = f", {order.amount:.2f} {order.currency}" if order else ""
    note = (
        f"Session core problems: {' / '.join(h.rstrip('.。') for h in history)}. "
        f"Decision: {case} for order "
        f"{oid or 'none'}{f' ({order.status}{money})' if order else ''}; demand {u.demand}."
    )
    if flags:
        note += f" Flags: {', '.join(flags)}; handed to a person."
    if asked:
        note += f" Stage {', '.join(asked)} asked for a person; handed to a person."
    if injection:
        note += " The message tried to override instructions; it was ignored."
    confidence = 0.3 if needs_human else 0.9 if oid else 0.5
    return StrategyDraft(
        solution=" ".join(actions) if not zh else "".join(actions),
        reply=reply,
        internal_note=note,
        confidence=confidence,
        needs_human=needs_human,
        offer=lines,
    )
