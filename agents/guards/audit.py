"""The reply auditor: money and ids in every text of a draft, against the customer's own orders."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence

from baton_kafka.agents.guards import conditions, offered, reading, shop_terms, words
from baton_kafka.agents.guards.alone import Alone
from baton_kafka.agents.guards.books import CustomerOrders
from baton_kafka.agents.guards.identifiers import Identifier, identifiers
from baton_kafka.agents.guards.money import marked, money
from baton_kafka.agents.guards.skipping import skipping
from baton_kafka.agents.policy import offer as offers
from baton_kafka.agents.rules.matching import distinct_name
from baton_kafka.schemas.records import Order
from baton_kafka.schemas.stages import StrategyDraft

FIELDS = ("reply", "solution", "internal_note")
CUSTOMER_FACING = ("reply", "solution")
_CENT = 0.005
_DIGIT_RUN = re.compile(r"\d+(?:[.,]\d+)*")


@words.builder
def _promised_before() -> re.Pattern[str]:
    """Right after a promise, a model number alone is an amount: "we will refund 42171 for it"."""
    verbs = words.alternation("money", "promise.verbs", end=False)
    fillers = words.alternation("money", "promise.fillers")
    return skipping(rf"(?:{verbs})\w*\s*(?:(?:{fillers})\s*)*$", re.I)


def audit(draft: StrategyDraft, books: CustomerOrders) -> list[str]:
    """Every problem with the offer, and with money, ids and links in every text of the draft.

    The offer must keep the policy (``agents.policy.offer``); reply and solution may state no
    amount that is not a line of it (or, outside a promise, an order's price), no link to a host
    the policy does not allow, no request for card data or passwords. The internal note may
    report what the customer asked for. No text names an id that is not the customer's.
    """
    problems = [f"offer: {p}" for p in offers.problems(draft.offer, books.policy, books.context)]
    if draft.offer and not draft.needs_human:
        said = conditions.problems(draft.reply, draft.offer, books.policy, books.reason)
        problems += [f"reply: {p}" for p in said]
    for name in FIELDS:
        text = reading.normalise(getattr(draft, name))
        if not text.strip():
            continue
        phones = reading.phones(text)
        ids = [i for i in identifiers(text, books.shapes) if not _inside(i, phones)]
        found = _customer_facing(text, ids, phones, draft, books) if name in CUSTOMER_FACING else ()
        problems += [f"{name}: {p}" for p in (*found, *_problems(text, ids, phones, books, name))]
    return list(dict.fromkeys(p.replace("offer: offer", "offer") for p in problems))


def _inside(i: Identifier, spans: Sequence[tuple[int, int]]) -> bool:
    return any(a <= i.start and i.end <= b for a, b in spans)


def _name_spans(text: str, names: Mapping[str, Alone]) -> list[tuple[int, int]]:
    """Where ``text`` names a product of the customer's ("Kettle 1500", "Forerunner 265").

    A number of the name with a currency next to it ("Forerunner 265 USD", "$265 Watch"), or
    alone right after a promise ("refund 42171"), is money, not the name.
    """
    folded = text.casefold()
    spans = []
    # Most texts name few of the phrases: a phrase not in the text is not searched for.
    named = (pattern for phrase, pattern in names.items() if phrase in folded)
    promised = words.compiled(_promised_before)
    for m in (m for pattern in named for m in pattern.finditer(folded)):
        start, end = m.span()
        edges = [d.span() for d in _DIGIT_RUN.finditer(text, start, end)]
        priced = any(
            (a == start and marked(text, a, a)) or (b == end and marked(text, b, b))
            for a, b in edges
        )
        bare = m.group().isdigit() and promised.search(text[max(0, start - 32) : start])
        if not (priced or bare):
            spans.append((start, end))
    return spans


def _customer_facing(
    text: str,
    found: list[Identifier],
    phones: list[tuple[int, int]],
    draft: StrategyDraft,
    books: CustomerOrders,
) -> Iterator[str]:
    for host in reading.hosts(text):
        if not reading.allowed(host, books.policy.links.allowed_hosts):
            yield f"links to {host}, which is not a host the shop allows; send no links"
    for secret in reading.asks_for_secrets(text):
        yield f"asks for {secret}: never ask a customer for card data, codes or passwords"
    own = books.own_tokens
    for number in reading.grouped_tracking(text):
        if number.casefold() not in own:
            yield f"tracking number {number} is not one of this customer's orders, do not name it"
    skip = [(i.start, i.end) for i in found] + phones + _name_spans(text, books.name_phrases)
    prices = books.prices
    if books.matched is not None and draft.offer:
        yield from _whole_for_one(text, draft, books.matched)
    policy = books.policy
    skip += shop_terms.stated_costs(text, policy)
    yield from shop_terms.never_promised(text, policy)
    yield from shop_terms.shipping(text, policy, books.matched, quoted=books.quoted)
    yield from shop_terms.channels(text, draft.offer, policy)
    plain = shop_terms.masked(text, draft.offer, policy)
    yield from offered.problems(plain, draft.offer, books.matched, prices, skip)


def _whole_for_one(text: str, draft: StrategyDraft, order: Order) -> Iterator[str]:
    """A reply about one item of a multi-item order gets that item's money, not the order's."""
    if len(order.items) < 2:
        return
    named = distinct_name(text, [i.product_name for i in order.items])
    item = order.line(named) if named else None
    whole = offers.total(
        [x for x in draft.offer if x.item is None and x.order_id == order.order_id]
    )
    if item is not None and whole > item.total + _CENT:
        yield (
            f"offers {whole:.2f} {order.currency} for the whole order {order.order_id} but "
            f"speaks only of its {item.product_name} ({item.total:.2f} paid): set the offer "
            "line's item to it and offer at most that"
        )


def _problems(
    text: str,
    found: list[Identifier],
    phones: list[tuple[int, int]],
    books: CustomerOrders,
    name: str,
) -> Iterator[str]:
    for i in found:
        if i.value.casefold() not in books.own_tokens:
            yield f"{i.kind} {i.value} is not one of this customer's orders, do not name it"
    if name in CUSTOMER_FACING:
        return  # their money is held to the offer instead
    matched = books.matched
    quoted = books.prices
    for m in money(text, [(i.start, i.end) for i in found] + phones, books.name_numbers):
        if m.reported and any(abs(m.value - a) < _CENT for a in books.asked):
            continue  # "you asked for 500 USD": the customer's own figure, reported back
        if m.kind == "percent":
            if not m.promise:
                continue
            if matched is None:
                yield (
                    f"offers {m.written} without a matched order, promise no money until the "
                    "order is known"
                )
            elif m.value > 100:
                yield f"{m.written} is more than the full amount of order {matched.order_id}"
            continue
        if not m.promise and any(abs(m.value - q) < _CENT for q in quoted):
            continue  # a price quoted from one of the orders discussed
        if matched is None:
            yield (
                f"mentions money ({m.written}) without a matched order, state no amount until "
                "the order is known"
            )
        elif m.value > matched.amount + _CENT:
            yield (
                f"amount {m.written} exceeds the {matched.amount:.2f} {matched.currency} of order "
                f"{matched.order_id}, state at most that"
            )
        elif m.currencies and matched.currency.upper() not in m.currencies:
            yield (
                f"amount {m.written} is not in the currency of order {matched.order_id} "
                f"({matched.currency})"
            )
