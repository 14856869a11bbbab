"""The reply auditor: money and ids in every text of a draft, against the customer's own orders."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date

from baton_kafka.agents.guards import conditions, offered, reading, shop_terms, words
from baton_kafka.agents.guards.alone import Alone
from baton_kafka.agents.guards.facts import Fact, stated
from baton_kafka.agents.guards.identifiers import Identifier, identifiers, shape
from baton_kafka.agents.guards.money import marked, money
from baton_kafka.agents.guards.numbers import RUN, all_numbers
from baton_kafka.agents.guards.skipping import skipping
from baton_kafka.agents.policy import Policy, default_policy
from baton_kafka.agents.policy import offer as offers
from baton_kafka.agents.rules.matching import distinct_name
from baton_kafka.schemas.baton import Baton
from baton_kafka.schemas.records import Order, Ticket
from baton_kafka.schemas.stages import StrategyDraft

FIELDS = ("reply", "solution", "internal_note")
CUSTOMER_FACING = ("reply", "solution")
_CENT = 0.005
_DIGIT_RUN = re.compile(r"\d+(?:[.,]\d+)*")
_ID_NUMBER = re.compile(r"\d{3,}")


@words.builder
def _promised_before() -> re.Pattern[str]:
    """Right after a promise, a model number alone is an amount: "we will refund 42171 for it"."""
    verbs = words.alternation("money", "promise.verbs", end=False)
    fillers = words.alternation("money", "promise.fillers")
    return skipping(rf"(?:{verbs})\w*\s*(?:(?:{fillers})\s*)*$", re.I)


@dataclass(frozen=True)
class CustomerOrders:
    """What a draft is audited against: the customer's orders as the store holds them.

    ``matched`` is the order the reply is about (re-read from the store, never the record's
    copy); ``discussed`` the ids of the orders the session talked about before; ``choices``
    the ids of the orders the reply asks the customer to choose between (their products may
    be named, their prices are not stated); ``message`` the customer's own words (an amount
    they wrote may be reported back, never promised); ``known_ids`` the ticket's, session's
    and customer's ids, which a note may name; ``policy`` the shop's rules the offer is held
    to, for the customer's ``demand`` (and understood ``reason``) on ``today``, with
    ``already`` offered for the matched order in earlier replies; ``quoted`` the prices and
    fees the policy and the help articles shown state (quoted as facts, never promised).
    """

    matched: Order | None = None
    orders: Sequence[Order] = ()
    discussed: frozenset[str] = frozenset()
    choices: frozenset[str] = frozenset()
    message: str = ""
    known_ids: frozenset[str] = frozenset()
    policy: Policy = field(default_factory=default_policy)
    demand: str = "other"
    today: date = field(default_factory=date.today)
    already: Mapping[str, float] = field(default_factory=dict)
    reason: str | None = None
    quoted: tuple[float, ...] = ()
    own: tuple[Order, ...] = field(init=False)

    def __post_init__(self) -> None:
        own = {o.order_id: o for o in self.orders}
        if self.matched is not None:
            own[self.matched.order_id] = self.matched
        object.__setattr__(self, "own", tuple(own.values()))

    @classmethod
    def of(
        cls,
        matched: Order | None,
        orders: Sequence[Order],
        baton: Baton,
        ticket: Ticket,
        *,
        policy: Policy | None = None,
        demand: str = "other",
        already: Mapping[str, float] | None = None,
        reason: str | None = None,
        choices: Sequence[Order] = (),
    ) -> CustomerOrders:
        """The customer's orders, with the ones ``baton``'s session discussed marked as such
        and the ``choices`` the reply may ask between."""
        discussed = {baton.order_id, *baton.order_history, *(t.order_id for t in baton.tickets)}
        known = {ticket.ticket_id, ticket.session_id, ticket.customer_id, baton.customer_id}
        return cls(
            matched=matched,
            orders=tuple(orders),
            discussed=frozenset(d for d in discussed if d),
            choices=frozenset(o.order_id for o in choices),
            message=ticket.text,
            known_ids=frozenset(k for k in known if k),
            policy=policy or default_policy(),
            demand=demand,
            today=ticket.written_at().date(),
            already=dict(already or {}),
            reason=reason,
        )

    @property
    def context(self) -> offers.OfferContext:
        """What the draft's offer is checked against besides the policy."""
        return offers.OfferContext(self.matched, self.demand, self.today, self.already, self.reason)

    @functools.cached_property
    def talked_about(self) -> tuple[Order, ...]:
        """The matched order and every other order of the customer the session discussed."""
        return tuple(o for o in self.own if o is self.matched or o.order_id in self.discussed)

    @functools.cached_property
    def named(self) -> tuple[Order, ...]:
        """The orders whose products a text may name: the talked-about ones, the choices, and
        those whose product the customer's message names by its digits ("the Charge 6?")."""
        folded = self.message.casefold()
        told = (o for o in self.own if o.order_id in self.choices or _names(folded, o))
        return (*self.talked_about, *told)

    @functools.cached_property
    def shapes(self) -> list[re.Pattern[str]]:
        """How the customer's order ids are written ("G-\\d+"), to spot ids like them."""
        own = (p for o in self.own if (p := shape(o.order_id)) is not None)
        shapes = {p.pattern: p for p in (*self.policy.id_shapes, *own)}
        return list(shapes.values())

    @functools.cached_property
    def own_tokens(self) -> frozenset[str]:
        """Ids a text may name: the customer's orders, tracking numbers and product names'
        model numbers ("OL-3303"), and the ticket's, session's and customer's ids."""
        tokens = {k.casefold() for k in self.known_ids}
        for o in self.own:
            tokens.update((o.customer_id.casefold(), o.order_id.casefold()))
            tokens.update(t.casefold() for t in (o.tracking_no,) if t)
            tokens.update(t.casefold() for n in o.products() for t in RUN.findall(n))
            tokens.update(i.sku.casefold() for i in o.items if i.sku)
            tokens.update(_ID_NUMBER.findall(o.order_id))  # "order 1001" for O-1001
        return frozenset(tokens)

    @functools.cached_property
    def name_phrases(self) -> dict[str, Alone]:
        """The named products' names, and their parts with digits, as text names them
        (each with how it is found written alone).

        The whole name, each word with digits with its neighbour ("forerunner 265"), and a
        model number of 4+ digits alone ("the LEGO set 42171").
        """
        phrases: set[str] = set()
        for name in (n for o in self.named for n in o.products()):
            phrases.update(_phrases(name))  # one set filled in reading order: the order kept
        return {p: _phrase(p) for p in phrases if _wanted(p)}

    @functools.cached_property
    def name_numbers(self) -> frozenset[float]:
        """Numbers written alone in the named products' names: "Pro 3", "Forerunner 265"."""
        names = (n for o in self.named for n in o.products())
        return frozenset(float(t) for name in names for t in RUN.findall(name) if t.isdigit())

    @functools.cached_property
    def prices(self) -> list[float]:
        """What the talked-about orders cost: each order's amount, each line's and unit price,
        and what the shop already refunded on it (a fact to state, never to promise again); and
        the prices the shop's reference states (``quoted``)."""
        found = [o.amount for o in self.talked_about]
        # The policy's return shipping costs are facts a reply may state.
        found += [cost for cost, _ in shop_terms.shipping_costs(self.policy) if cost]
        found += [o.refunded for o in self.talked_about if o.refunded]
        for item in (i for o in self.talked_about for i in o.items):
            found += [item.total, *([item.unit_price] if item.unit_price is not None else [])]
        return [*found, *self.quoted]

    @functools.cached_property
    def asked(self) -> list[float]:
        """The numbers the customer wrote."""
        return [n.value for n in all_numbers(self.message, [])]

    @functools.cached_property
    def message_facts(self) -> tuple[Fact, ...]:
        """The facts the customer's own words state: read once for every draft of the ticket."""
        return tuple(stated(reading.normalise(self.message)))


def _names(folded: str, order: Order) -> bool:
    """Whether casefolded ``folded`` names a product of ``order`` by a part with digits."""
    found = (p for n in order.products() for p in _phrases(n) if p in folded and _wanted(p))
    return any(next(_phrase(p).finditer(folded), None) is not None for p in found)


@functools.lru_cache(maxsize=4096)
def _phrases(name: str) -> tuple[str, ...]:
    """The parts of product ``name`` a text may name it by, casefolded, in the order they are
    read: the whole name, each word with digits with its neighbour ("forerunner 265"), and a
    model number of 4+ digits alone ("the LEGO set 42171"); only those ``_wanted`` are used."""
    name = name.casefold()
    words = name.split()
    phrases = [name]
    for i, w in enumerate(words):
        if any(map(str.isdigit, w)):  # as any(c.isdigit() for c in w), without a frame
            phrases += [" ".join(words[j : j + 2]) for j in (i - 1, i) if j >= 0]
    phrases += [w for w in words if w.isdigit() and len(w) >= 4]
    return tuple(phrases)


def _wanted(phrase: str) -> bool:
    """A phrase with a digit and more than two characters: one a number may be read in."""
    return len(phrase) > 2 and any(map(str.isdigit, phrase))


@functools.lru_cache(maxsize=4096)
def _phrase(phrase: str) -> Alone:
    """``phrase`` written alone, not inside a longer word or number."""
    # Letters and digits of Latin script bound it; a Chinese character after it does not.
    return Alone(phrase)  # found with str.find: no pattern compiled per product name


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
