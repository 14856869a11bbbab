"""Customer-facing text says no more than the offer: every amount is a line or an order's price."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence

from baton_kafka.agents.guards import words
from baton_kafka.agents.guards.money import COMMITS, PROMISE, Money, clauses_of, money, sentences
from baton_kafka.agents.guards.skipping import Sieved, skipping
from baton_kafka.agents.policy.offer import CENT, cents
from baton_kafka.agents.ticket_memo import shelf
from baton_kafka.schemas.records import OfferLine, Order


@words.builder
class _Words:
    """The offer check's words of every language pack, compiled."""

    def __init__(self) -> None:
        alt = words.alternation
        self.MULTIPLIER = Sieved(alt("money", "wording.multiples", end=False), re.I)
        self.RECURRING = Sieved(alt("money", "wording.repeats", end=False), re.I)
        self.ADDITIVE = skipping(alt("money", "wording.additive"), re.I)
        further = alt("money", "wording.further")
        self.FURTHER_BEFORE = skipping(rf"(?:{further})\s*$", re.I)
        self.FURTHER_AFTER = re.compile(rf"\s*(?:{further})", re.I)
        self.FUTURE = Sieved(alt("money", "wording.future", end=False), re.I)
        self.DONE = Sieved(alt("money", "wording.done"), re.I)
        self.WILL = Sieved(alt("money", "wording.will"), re.I)
        self.PAID_BEFORE = skipping(rf"(?:{alt('money', 'wording.paid_before')})\s*$", re.I)
        self.ORDER_NEXT = re.compile(
            rf"\s*(?:\w+\s+)?(?:{alt('money', 'wording.order_next', end=False)})", re.I
        )
        # Read in every sentence: most ASCII ones hold none of its words ("grand") at all.
        self.A_GRAND = Sieved(alt("money", "amounts.a_thousand"), re.I)
        self.CHANNELS = {
            channel: Sieved(alt("money", f"channels.{channel}", end=False), re.I)
            for channel in ("store_credit", "voucher", "points", "original_payment")
        }
        denied = alt("money", "wording.denied_before")
        self.DENIED_BEFORE = skipping(rf"(?:{denied})(?:\s+[\w-]+){{0,3}}\s*$", re.I)
        self.DENIED_AFTER = re.compile(rf"\s*(?:{alt('money', 'wording.denied_after')})", re.I)
        self.FREE_ORDER = Sieved(alt("money", "wording.free_order"), re.I)


def _w() -> _Words:
    return words.compiled(_Words)


_ADDITIVE_REACH = 24


def problems(
    text: str,
    lines: Sequence[OfferLine],
    matched: Order | None,
    prices: Sequence[float],
    skip: list[tuple[int, int]],
) -> Iterator[str]:
    """Every amount ``text`` states beyond ``lines`` (the validated offer) and ``prices``.

    Nothing the customer wrote is exempt: a figure they asked for may not be repeated. A
    promise must be an offer line; a mention without a promise may also be an order's price.
    Multiplied, recurring, added-on and future-order money is never within an offer.
    """
    w = _w()
    yield from _channels(text, lines)
    if hit := w.FREE_ORDER.search(text):
        yield f"gives away a future order ({hit.group()}): never a free or discounted next order"
    amounts = [cents(line.amount) for line in lines if line.amount]
    # A share is of the order's amount or, for one item of a multi-item order, of its line.
    paid = [matched.amount, *(i.total for i in matched.items)] if matched else None
    found = money(text, skip, (), carry=True)
    spans = sentences(text)
    promise = PROMISE.now()
    for m in found:
        a, b = next(((a, b) for a, b in spans if a <= m.at <= b), (0, len(text)))
        beside = [cents(x.value) for x in found if a <= x.at <= b and x is not m]
        yield from _one(m, text[a:b], amounts, paid, prices, matched, _clause(text, m.at), beside)
    # A draft's solution repeats sentences of its reply: each is read once per ticket.
    said: dict[tuple[str, bool], tuple[str, ...]] = shelf("offered.sentences", w, promise)
    for start, end in spans:
        sentence = text[start:end]
        with_money = any(start <= m.at <= end for m in found)
        told = said.get((sentence, with_money))
        if told is None:
            told = said[sentence, with_money] = tuple(_sentence(w, sentence, with_money, promise))
        yield from told
    yield from _on_top(text, found)
    yield from _twice(text, found, spans, amounts)


def _sentence(w: _Words, sentence: str, with_money: bool, promise: Sieved) -> Iterator[str]:
    """What one sentence says of money beyond lines (``with_money``: it states an amount)."""
    if hit := w.A_GRAND.search(sentence):
        yield f"mentions money ({hit.group()}) that is not a line of the offer"
    if not (with_money or promise.search(sentence)):
        return
    if hit := w.MULTIPLIER.search(sentence):
        yield f"multiplies money ({hit.group()}): state each amount as the offer's lines"
    if hit := w.RECURRING.search(sentence):
        yield f"promises money repeatedly ({hit.group()}): an offer line is paid once"


def _clause(text: str, at: int) -> str:
    return next((text[a:b] for a, b in clauses_of(text) if a <= at <= b), text)


def _on_top(text: str, found: Sequence[Money]) -> Iterator[str]:
    """The first promised amount of the text said to come on top ("a further 28,35 €",
    "28,35 € adicionales"): on top of money the text does not state, so no line of the offer."""
    w = _w()
    first = next((m for m in found if m.kind == "amount"), None)
    if first is None or not first.promise:
        return
    before = w.FURTHER_BEFORE.search(text[max(0, first.at - _ADDITIVE_REACH) : first.at])
    after = w.FURTHER_AFTER.match(text, first.at + len(first.written))
    if hit := before or after:
        yield (
            f"promises {first.written} on top of other money ({hit.group().strip()}), which is "
            "not a line of the offer: state each line once, as the whole amount"
        )


def _twice(
    text: str, found: Sequence[Money], spans: Sequence[tuple[int, int]], amounts: list[float]
) -> Iterator[str]:
    """The same amount promised again: "59 now and another 59 later", or one sentence whose
    two clauses each commit to it; "59 ... the 59" restates one."""
    w = _w()
    # A plain dict: most texts promise nothing, and a Counter costs more to make than it saves.
    needed: dict[float, int] = {}
    last: dict[float, int] = {}
    for m in found:
        if m.kind != "amount" or not m.promise:
            continue
        value = cents(m.value)
        if value not in needed:
            needed[value] = 1
        elif (
            w.ADDITIVE.search(text[max(0, m.at - _ADDITIVE_REACH) : m.at])
            or w.FURTHER_AFTER.match(text, m.at + len(m.written))
        ) or (
            _same_sentence(spans, last[value], m.at)
            and (
                w.ADDITIVE.search(text, last[value], m.at) or _both_commit(text, last[value], m.at)
            )
        ):
            # "refund 59 EUR ... and top up your account with 59 EUR": said again, and added.
            needed[value] += 1
        last[value] = m.at
    if not needed:
        return  # nothing promised: nothing promised too often
    have = Counter(amounts)
    for value, count in needed.items():
        if have[value] and count > have[value]:
            yield (
                f"promises {value:.2f} {count} times, the offer holds it {have[value]} "
                "time(s): state each line once"
            )


def _both_commit(text: str, a: int, b: int) -> bool:
    """Two places of one sentence in different clauses, each of which commits the shop."""
    clauses = clauses_of(text)
    first = next((c for c in clauses if c[0] <= a <= c[1]), None)
    second = next((c for c in clauses if c[0] <= b <= c[1]), None)
    if first is None or second is None or first == second:
        return False
    return bool(COMMITS.search(text, *first)) and bool(COMMITS.search(text, *second))


def _same_sentence(spans: Sequence[tuple[int, int]], a: int, b: int) -> bool:
    return any(start <= a and b <= end for start, end in spans)


def _channels(text: str, lines: Sequence[OfferLine]) -> Iterator[str]:
    """Every channel ``text`` names for money ("a voucher", "购物金") that no line pays into;
    one it only denies ("not a voucher") is not named."""
    w = _w()
    offered = {line.channel for line in lines if line.amount}
    for channel, pattern in w.CHANNELS.items():
        if channel in offered or (channel == "original_payment" and not offered):
            continue  # with no money offered, "your original payment method" pays nothing
        for hit in pattern.finditer(text):
            denied = w.DENIED_BEFORE.search(text[max(0, hit.start() - 40) : hit.start()])
            if not (denied or w.DENIED_AFTER.match(text, hit.end())):
                yield (
                    f"speaks of {hit.group()} ({channel}), which is no channel of the offer: "
                    "state only where the offer's money goes"
                )
                break


def around(sentence: str, m: Money) -> tuple[str, str]:
    """What stands before and after ``m`` in its sentence."""
    at = sentence.find(m.written)
    if at < 0:
        return "", ""
    return sentence[:at], sentence[at + len(m.written) :]


def _one(
    m: Money,
    sentence: str,
    amounts: list[float],
    paid: Sequence[float] | None,
    prices: Sequence[float],
    matched: Order | None,
    clause: str = "",
    beside: Sequence[float] = (),
) -> Iterator[str]:
    w = _w()
    if m.kind == "percent":
        if hit := w.FUTURE.search(sentence):
            yield (
                f"offers {m.written} of a {hit.group()}, which is not a line of the offer: "
                "never a discount on a future order"
            )
            return
        if not m.promise:
            return
        if paid is None:
            yield f"offers {m.written} without a matched order, promise no money until it is known"
            return
        shares = [cents(base * m.value / 100) for base in paid]
        if not any(abs(share - a) < CENT * 2 for share in shares for a in amounts):
            yield (
                f"offers {m.written}, which is no line of the offer: state offered money as "
                "the offer's amounts"
            )
        return
    value = cents(m.value)
    in_offer = any(abs(value - a) < CENT for a in amounts)
    a_price = any(abs(value - cents(p)) < CENT for p in prices)
    # An order's price stated as a fact commits to nothing: what was done ("the 39.99 USD refund
    # has been processed", "已原路退回") or which order it was ("half of the 259.98 USD order").
    before, after = around(sentence, m)
    fact = (
        (w.DONE.search(sentence) and not w.WILL.search(sentence))
        or (w.DONE.search(clause) and not w.WILL.search(clause))
        or w.ORDER_NEXT.match(after)
        or w.PAID_BEFORE.search(before)
    )
    promised = m.promise and not (a_price and fact)
    done = (w.DONE.search(sentence) and not w.WILL.search(sentence)) or (
        w.DONE.search(clause) and not w.WILL.search(clause)
    )
    # The order named or what was paid ("of the 59.00 EUR you paid") is not what was refunded.
    which = w.ORDER_NEXT.match(after) or w.PAID_BEFORE.search(before)
    if (
        matched is not None
        and m.promise
        and done
        and not which
        and _whole_told_refunded(value, matched, beside)
    ):
        yield (
            f"says {m.written} was refunded, but the records of order {matched.order_id} "
            f"show {matched.refunded:.2f} of its {matched.amount:.2f} {matched.currency} "
            "refunded: state what the records show"
        )
        return
    if matched is None:
        if promised or not a_price:
            yield (
                f"mentions money ({m.written}) without a matched order, state no amount until "
                "the order is known"
            )
    elif not in_offer and (promised or not a_price):
        what = "promises" if m.promise else "mentions"
        yield (
            f"{what} {m.written}, which is not a line of the offer; state only the offer's amounts"
        )
    elif m.currencies and matched.currency.upper() not in m.currencies:
        yield (
            f"amount {m.written} is not in the currency of order {matched.order_id} "
            f"({matched.currency})"
        )


def _whole_told_refunded(value: float, order: Order, beside: Sequence[float]) -> bool:
    """Whether ``value`` is the whole price of ``order``, which the records show refunded in
    part only, with the part refunded not stated beside it."""
    refunded = cents(order.refunded)
    if not 0 < refunded < cents(order.amount) - CENT:
        return False
    if abs(value - cents(order.amount)) >= CENT:
        return False
    return not any(abs(x - refunded) < CENT for x in beside)


_w()  # compiled at import, as module patterns are; again only when a shop adds words
