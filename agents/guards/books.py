"""What a draft is audited against: the customer's orders as the store holds them, and what
a text may name of them."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date

from baton_kafka.agents.guards import reading, shop_terms
from baton_kafka.agents.guards.alone import Alone
from baton_kafka.agents.guards.facts import Fact, stated
from baton_kafka.agents.guards.identifiers import shape
from baton_kafka.agents.guards.numbers import RUN, all_numbers
from baton_kafka.agents.policy import Policy, default_policy
from baton_kafka.agents.policy import offer as offers
from baton_kafka.schemas.baton import Baton
from baton_kafka.schemas.records import Order, Ticket

_ID_NUMBER = re.compile(r"\d{3,}")


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
        folded = reading.normalise(self.message).casefold()  # as the draft's texts are read
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
