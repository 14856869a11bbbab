"""Customer-facing text says no more than the offer: every amount is a line or an order's price."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence

from baton_kafka.agents.guards.money import PROMISE, Money, money, sentences
from baton_kafka.agents.guards.skipping import Sieved, skipping
from baton_kafka.agents.policy.offer import CENT, cents
from baton_kafka.schemas.records import OfferLine, Order

_MULTIPLIER = Sieved(
    r"(?<![A-Za-z])(?:double|triple|quadruple|twice\s+(?:the|what|your|that|as)|thrice"
    r"|(?:\d+|two|three|four|five|ten|hundred)\s*(?:x|×|times)\s+(?:the|what|your|that|as|its"
    r"|over|more)|\d+\s*[x×](?![A-Za-z0-9])|[x×]\s*\d+)"
    r"|(?:the\s+)?same\s+(?:amount\s+)?again|(?:equal|equivalent|identical)\s+to\s+(?:your|the|what)"
    r"|matching\s+(?:your|the)\s+(?:order|amount|payment|price)"
    r"|[双两三四五六七八九十百千\d]+倍|翻倍|加倍|翻番|(?:和|与|跟)(?:订单|货款|实付)?金额(?:相同|一样|相等)"
    r"|同等金额|等额|相同金额|一样多|等值|等价",
    re.I,
)
_RECURRING = Sieved(
    r"(?<![A-Za-z])(?:every|each|per)\s+(?:month|week|year|day)"
    r"|(?<![A-Za-z])a\s+(?:month|week|year)\s+(?:for|until|over)|monthly|weekly|yearly|annually"
    r"|daily|for\s+(?:a|one|the\s+next|\d+|twelve|six)\s+(?:years?|months?|weeks?)"
    r"|each\s+time|every\s+time|recurring|instal?lments?"
    r"|每[个]?[月周年天日]|按[月周年]|[一二两三四五六\d]+个?[月年]内每|连续[一二两三四五六七八九十\d]+个?[月周年]"
    r"|分期|每次",
    re.I,
)
_ADDITIVE = skipping(
    r"(?<![A-Za-z])(?:plus|another|additional(?:ly)?|extra|on\s+top|in\s+addition|as\s+well"
    r"|also|add(?:ed|ing|s)?|top\s+up|together\s+with)(?![A-Za-z])|再|另外|另|额外|加上|外加|还",
    re.I,
)
_FUTURE = skipping(
    r"(?<![A-Za-z])(?:next|future|upcoming|following)\s+(?:purchase|order|buy|visit|item)s?"
    r"|下次|下一[单次笔]|今后|以后的订单|再次购买|下单时",
    re.I,
)
_DONE = skipping(
    r"(?<![A-Za-z])(?:has|have|had)\s+been|(?<![A-Za-z])(?:was|were|already)(?![A-Za-z])"
    r"|已经?|过了",
    re.I,
)
_WILL = skipping(
    r"(?<![A-Za-z])(?:will|shall|can|going\s+to)(?![A-Za-z])|'ll|’ll|[会将]|可以|为您|给您", re.I
)
_PAID_BEFORE = skipping(
    r"(?:实付|支付了?|付款|总价|paid|total\s+of|priced\s+at"
    r"|\d+(?:\.\d+)?\s*%\s*of\s+(?:its|the|their|your))\s*$",
    re.I,
)
_ORDER_NEXT = re.compile(r"\s*(?:\w+\s+)?(?:order|purchase|total|订单|货款)", re.I)
_A_GRAND = skipping(
    r"(?<![A-Za-z])(?:a|one|half\s+a|a\s+couple(?:\s+of)?|a\s+few)\s+grand(?![A-Za-z])", re.I
)
_ADDITIVE_REACH = 24
# Where money goes, as text names it: a channel other than the offer's is promised money too.
_CHANNELS = {
    "store_credit": Sieved(
        r"(?:store|shop|account)\s+credit|credit\s+(?:on|to|in)\s+your\s+(?:account|balance)"
        r"|购物金|账户余额|余额|guthaben",
        re.I,
    ),
    "voucher": Sieved(
        r"vouchers?|coupons?|gift\s?cards?|gift\s+certificates?|e-?gift|promo(?:tional)?\s+code"
        r"|discount\s+code|优惠券|代金券|礼品卡|现金券|抵用券|红包|购物卡|gutschein|cup[oó]n|クーポン",
        re.I,
    ),
    "points": Sieved(r"(?:loyalty|bonus|reward)\s+points|积分|ポイント", re.I),
}
_DENIED_BEFORE = skipping(
    r"(?<![A-Za-z])(?:not|no|never|nor|instead\s+of|rather\s+than|without|isn't|aren't|can't"
    r"|cannot|can\s+not|unable\s+to|don't|do\s+not|doesn't"
    r"|won't\s+be)\s+(?:[\w-]+\s+){0,3}$|(?:不是|并非|而非|不以|不用|无需|不需要|没有|不会|不发|不能|无法|不提供)"
    r"[^，。,；;]{0,6}$",
    re.I,
)
_FREE_ORDER = Sieved(
    r"(?<![A-Za-z])(?:next|future|following)\s+(?:order|purchase|one|item)s?\s+(?:is|are|will\s+be)"
    r"\s+(?:on\s+us|free|on\s+the\s+house)|free\s+(?:next|future)\s+(?:order|purchase)"
    r"|免单|下[次单一](?:次|单)?(?:购物|购买)?免费",
    re.I,
)


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
    yield from _channels(text, lines)
    if hit := _FREE_ORDER.search(text):
        yield f"gives away a future order ({hit.group()}): never a free or discounted next order"
    amounts = [cents(line.amount) for line in lines if line.amount]
    # A share is of the order's amount or, for one item of a multi-item order, of its line.
    paid = [matched.amount, *(i.total for i in matched.items)] if matched else None
    found = money(text, skip, (), carry=True)
    spans = sentences(text)
    for m in found:
        around = next((text[a:b] for a, b in spans if a <= m.at <= b), text)
        yield from _one(m, around, amounts, paid, prices, matched)
    for start, end in spans:
        sentence = text[start:end]
        # "grand" is in every match: most sentences skip the search.
        if "grand" in sentence.lower() and (hit := _A_GRAND.search(sentence)):
            yield f"mentions money ({hit.group()}) that is not a line of the offer"
        with_money = any(start <= m.at <= end for m in found)
        if not (with_money or PROMISE.search(sentence)):
            continue
        if hit := _MULTIPLIER.search(sentence):
            yield f"multiplies money ({hit.group()}): state each amount as the offer's lines"
        if hit := _RECURRING.search(sentence):
            yield f"promises money repeatedly ({hit.group()}): an offer line is paid once"
    # "59 now and another 59 later" promises two lines; "59 ... the 59" restates one.
    needed: Counter[float] = Counter()
    last: dict[float, int] = {}
    for m in found:
        if m.kind != "amount" or not m.promise:
            continue
        value = cents(m.value)
        if value not in needed:
            needed[value] = 1
        elif _ADDITIVE.search(text[max(0, m.at - _ADDITIVE_REACH) : m.at]) or (
            _same_sentence(spans, last[value], m.at) and _ADDITIVE.search(text, last[value], m.at)
        ):
            # "refund 59 EUR ... and top up your account with 59 EUR": said again, and added.
            needed[value] += 1
        last[value] = m.at
    have = Counter(amounts)
    for value, count in needed.items():
        if have[value] and count > have[value]:
            yield (
                f"promises {value:.2f} {count} times, the offer holds it {have[value]} "
                "time(s): state each line once"
            )


def _same_sentence(spans: Sequence[tuple[int, int]], a: int, b: int) -> bool:
    return any(start <= a and b <= end for start, end in spans)


def _channels(text: str, lines: Sequence[OfferLine]) -> Iterator[str]:
    """Every channel ``text`` names for money ("a voucher", "购物金") that no line pays into;
    one it only denies ("not a voucher") is not named."""
    offered = {line.channel for line in lines if line.amount}
    for channel, words in _CHANNELS.items():
        if channel in offered:
            continue
        for hit in words.finditer(text):
            if not _DENIED_BEFORE.search(text[max(0, hit.start() - 40) : hit.start()]):
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
) -> Iterator[str]:
    if m.kind == "percent":
        if hit := _FUTURE.search(sentence):
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
        (_DONE.search(sentence) and not _WILL.search(sentence))
        or _ORDER_NEXT.match(after)
        or _PAID_BEFORE.search(before)
    )
    promised = m.promise and not (a_price and fact)
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
