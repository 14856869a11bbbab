"""The deterministic check of a structured offer: the policy, the order, its dates, its ledger."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date

from baton_kafka.agents.policy.model import Policy, Remedy
from baton_kafka.schemas.records import LineCondition, Offer, OfferLine, Order

CENT = 0.005


def cents(value: float) -> float:
    """``value`` rounded half up to the cent, as a payment system books it."""
    return float(int(value * 100 + 0.5 + 1e-9)) / 100


@dataclass(frozen=True)
class OfferContext:
    """What an offer is checked against besides the policy.

    ``reason``: why the customer wants a remedy, as understood (a line may state its own).
    ``already``: money offered for the matched order in earlier answered replies, by remedy. A
    later line of the same remedy restates that commitment (the larger amount counts); lines of
    other remedies add to it, and all of it counts against what was paid, less what the shop
    refunded on the order outside baton (``Order.refunded``).
    """

    order: Order | None
    demand: str
    today: date
    already: Mapping[str, float] = field(default_factory=dict)
    reason: str | None = None  # the understood reason of the ticket, for a line without its own

    def committed(self, lines: Sequence[OfferLine]) -> float:
        """The money committed for the order with ``lines``: per remedy the larger amount."""
        new: dict[str, float] = {}
        for line in lines:
            new[line.kind] = new.get(line.kind, 0.0) + (line.amount or 0.0)
        kinds = {*new, *self.already}
        return cents(sum(max(new.get(k, 0.0), self.already.get(k, 0.0)) for k in kinds))

    def refundable(self) -> float:
        """What was paid for the order less what the shop has already refunded on it."""
        if self.order is None:
            return 0.0
        return cents(max(0.0, self.order.amount - self.order.refunded))

    def left(self, kind: str) -> float:
        """What a line of ``kind`` may still state before the refundable remainder is reached."""
        if self.order is None:
            return 0.0
        others = sum(v for k, v in self.already.items() if k != kind)
        return cents(max(0.0, self.refundable() - others))


def total(lines: Sequence[OfferLine]) -> float:
    """The money of ``lines``."""
    return cents(sum(line.amount or 0.0 for line in lines))


def limit(remedy: Remedy, paid: float) -> float | None:
    """The most a line of ``remedy`` may state for an order of ``paid``, or None: no own limit."""
    bounds = [b for b in (remedy.cap, cents(paid * remedy.share) if remedy.share else None) if b]
    if remedy.share == 0 or remedy.cap == 0:
        return 0.0
    return min(bounds) if bounds else None


def problems(lines: Sequence[OfferLine], policy: Policy, ctx: OfferContext) -> list[str]:
    """Every way ``lines`` break the policy for ``ctx``'s order; empty when they do not."""
    found = [p for line in lines for p in _line(line, policy, ctx)]
    order = ctx.order
    if order is not None:
        found += _per_item(lines, order)
    if order is not None and total(lines) and policy.money.total_at_most_paid:
        committed = ctx.committed(lines)
        if committed > ctx.refundable() + CENT:
            before = sum(ctx.already.values())
            earlier = f" ({before:.2f} was offered before)" if before > CENT else ""
            paid = f"the {order.amount:.2f} paid"
            if order.refunded > CENT:
                paid += f" less the {order.refunded:.2f} already refunded"
            found.append(
                f"offer: the lines bring what is offered for order {order.order_id} to "
                f"{committed:.2f} {order.currency}, more than {paid}{earlier}; offer at most that"
            )
    return list(dict.fromkeys(found))


def _per_item(lines: Sequence[OfferLine], order: Order) -> list[str]:
    """Money of several lines for the same item adds up against what that item cost."""
    by_item: dict[str, list[float]] = {}
    for line in lines:
        item = order.line(line.item) if line.item is not None else None
        if item is not None and line.order_id == order.order_id:
            by_item.setdefault(item.product_name, []).append(line.amount or 0.0)
    found = []
    for name, amounts in by_item.items():
        paid, money = order.line(name), sum(amounts)
        # One line over its item is reported by the line's own check.
        if len(amounts) > 1 and paid is not None and cents(money) > paid.total + CENT:
            found.append(
                f"offer: the lines for {name} bring it to {cents(money):.2f} {order.currency}, "
                f"more than the {paid.total:.2f} paid for that line; offer at most that"
            )
    return found


def _line(line: OfferLine, policy: Policy, ctx: OfferContext) -> Iterator[str]:
    order, kind = ctx.order, line.kind
    what = f"offer line {kind}"
    if order is None:
        yield f"{what}: no order is matched, so the reply may commit to nothing; leave offer empty"
        return
    if line.order_id != order.order_id:
        yield f"{what} is for {line.order_id}, not the matched order {order.order_id}"
        return
    if kind in policy.never:
        yield f"{what}: the shop never gives {kind} (policy: never); leave it out"
        return
    remedy = policy.remedy(kind)
    if remedy is None:
        yield f"{what}: not a remedy of this shop (allowed: {', '.join(policy.remedies)})"
        return
    reason = line.reason or ctx.reason
    if not remedy.allows_reason(reason):
        why = f"a {reason.replace('_', ' ')} request" if reason else "a request of no known reason"
        yield (
            f"{what}: does not answer {why} (only {', '.join(remedy.reasons)}); state the "
            "line's reason, or offer what the policy gives for it"
        )
    if not remedy.allows_status(str(order.status)):
        yield (
            f"{what}: not allowed for an order that is {order.status} (only "
            f"{', '.join(remedy.statuses)})"
        )
    if not remedy.allows_demand(ctx.demand):
        yield f"{what}: does not answer a {ctx.demand} request (only {', '.join(remedy.demands)})"
    if (late := _past_window(remedy, order, ctx.today, reason)) is not None:
        yield late.format(what=what)
    paid = order.amount
    if line.item is not None:
        item = order.line(line.item)
        if item is None:
            names = "; ".join(i.product_name for i in order.items) or order.product_name
            yield (
                f"{what} names {line.item!r}, which is not a line of order {order.order_id} "
                f"(its lines: {names}); name one of them, or leave item null for the whole order"
            )
            return
        paid = item.total
        what = f"{what} for {item.product_name}"
    if not remedy.money:
        if line.amount:
            yield f"{what} carries no amount; state money only on refund or compensation lines"
        return
    yield from _money(line, remedy, order, what, paid)


# Statuses before an order reaches the customer: a condition may be about its arrival.
_NOT_YET_ARRIVED = frozenset({"pending", "paid", "shipped"})


def hypothetical(kind: str, policy: Policy, ctx: OfferContext) -> list[str]:
    """Why the policy would not allow a remedy of ``kind`` for ``ctx``'s order once a condition
    the reply names holds ("if it breaks again, we can repair it"); empty when it would.

    The remedy must be the shop's and, for an order that has arrived, allow its status and be
    within its window; the customer's demand and money are not asked (nothing is promised yet).
    """
    if kind in policy.never:
        return [f"the shop never gives {kind}"]
    remedy = policy.remedy(kind)
    if remedy is None:
        return [f"{kind} is not a remedy of this shop (allowed: {', '.join(policy.remedies)})"]
    order = ctx.order
    if order is None or str(order.status) in _NOT_YET_ARRIVED:
        return []
    if not remedy.allows_status(str(order.status)):
        return [
            f"{kind} is not allowed for an order that is {order.status} (only "
            f"{', '.join(remedy.statuses)})"
        ]
    late = _past_window(remedy, order, ctx.today, ctx.reason)
    return [late.format(what=kind)] if late else []


def _past_window(remedy: Remedy, order: Order, today: date, reason: str | None) -> str | None:
    days = remedy.window(reason)
    if days is None or order.status != "delivered":
        return None
    since = (order.delivered_at or order.ordered_at).date()
    if (today - since).days <= days:
        return None
    why = f" for {reason.replace('_', ' ')}" if reason and reason in remedy.windows else ""
    return (
        f"{{what}}: past its {days}-day window{why} (order {order.order_id} was "
        f"delivered on {since.isoformat()}, {(today - since).days} days ago)"
    )


def _money(line: OfferLine, remedy: Remedy, order: Order, what: str, paid: float) -> Iterator[str]:
    if line.amount is None:
        yield f"{what} needs its amount"
        return
    if line.currency and line.currency.upper() != order.currency.upper():
        yield f"{what}: {line.currency} is not the order's currency ({order.currency})"
    if line.channel not in remedy.channels:
        yield (
            f"{what}: channel {line.channel or 'none'} is not allowed (only "
            f"{', '.join(remedy.channels)})"
        )
    # A line of one item is held to what that item cost, and the policy's share is of it.
    if line.item is not None and line.amount > paid + CENT:
        yield (
            f"{what}: {line.amount:.2f} {order.currency} is more than the {paid:.2f} paid for "
            f"that line of order {order.order_id}; offer at most that"
        )
        return
    most = limit(remedy, paid)
    if most is not None and line.amount > most + CENT:
        yield (
            f"{what}: {line.amount:.2f} {order.currency} is above the policy's limit of "
            f"{most:.2f} for order {order.order_id}"
        )


def settle(
    lines: Sequence[OfferLine],
    policy: Policy,
    order: Order | None,
    reason: str | None = None,
) -> Offer | None:
    """The validated ``lines`` as the reply's offer: approved, or waiting for a person.

    Each line carries the conditions its remedy states for its reason (``reason`` when the line
    names none). The approval threshold is the order's currency's, compared with the offer's
    money or, with ``approval.basis = "order"``, with the order's amount (any line then waits).
    """
    if not lines:
        return None
    lines = [with_conditions(line, policy, reason) for line in lines]
    money = total(lines)
    currency = order.currency if order is not None else None
    threshold = policy.approval_threshold(currency)
    basis = policy.approval.basis
    amount = order.amount if basis == "order" and order is not None else money
    waits = threshold is not None and amount > threshold + CENT
    if basis == "offer" and not money:
        waits = False  # an offer of no money has nothing to approve
    state = "needs_approval" if waits else "approved"
    return Offer(state=state, lines=list(lines), total=money, currency=currency)


def conditions(line: OfferLine, policy: Policy, reason: str | None = None) -> list[LineCondition]:
    """The conditions the policy attaches to ``line`` for its reason (``reason`` by default)."""
    remedy = policy.remedy(line.kind)
    if remedy is None:
        return []
    why = line.reason or reason
    return [c.line() for c in remedy.conditions if c.applies(why)]


def with_conditions(line: OfferLine, policy: Policy, reason: str | None = None) -> OfferLine:
    """``line`` carrying its policy conditions (whatever the model wrote into them)."""
    return line.model_copy(update={"conditions": conditions(line, policy, reason)})
