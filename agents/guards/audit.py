"""The reply auditor: money and ids in every text of a draft, against the customer's own orders."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from agents.guards.identifiers import identifiers, shape
from agents.guards.money import money
from agents.guards.numbers import RUN, all_numbers
from schemas.baton import Baton
from schemas.records import Order, Ticket
from schemas.stages import StrategyDraft

FIELDS = ("reply", "solution", "internal_note")
_CENT = 0.005


@dataclass(frozen=True)
class CustomerOrders:
    """What a draft is audited against: the customer's orders as the store holds them.

    ``matched`` is the order the reply is about (re-read from the store, never the record's
    copy); ``discussed`` the ids of the orders the session talked about before; ``message`` the
    customer's own words (an amount they wrote may be reported back, never promised);
    ``known_ids`` the ticket's, session's and customer's ids, which a note may name.
    """

    matched: Order | None = None
    orders: Sequence[Order] = ()
    discussed: frozenset[str] = frozenset()
    message: str = ""
    known_ids: frozenset[str] = frozenset()
    own: tuple[Order, ...] = field(init=False)

    def __post_init__(self) -> None:
        own = {o.order_id: o for o in self.orders}
        if self.matched is not None:
            own[self.matched.order_id] = self.matched
        object.__setattr__(self, "own", tuple(own.values()))

    @classmethod
    def of(
        cls, matched: Order | None, orders: Sequence[Order], baton: Baton, ticket: Ticket
    ) -> CustomerOrders:
        """The customer's orders, with the ones ``baton``'s session discussed marked as such."""
        discussed = {baton.order_id, *baton.order_history, *(t.order_id for t in baton.tickets)}
        known = {ticket.ticket_id, ticket.session_id, ticket.customer_id, baton.customer_id}
        return cls(
            matched=matched,
            orders=tuple(orders),
            discussed=frozenset(d for d in discussed if d),
            message=ticket.text,
            known_ids=frozenset(k for k in known if k),
        )

    @property
    def talked_about(self) -> list[Order]:
        """The matched order and every other order of the customer the session discussed."""
        return [o for o in self.own if o is self.matched or o.order_id in self.discussed]

    @functools.cached_property
    def shapes(self) -> list[re.Pattern[str]]:
        """How the customer's order ids are written ("G-\\d+"), to spot ids like them."""
        shapes = {p.pattern: p for o in self.own if (p := shape(o.order_id)) is not None}
        return list(shapes.values())

    @functools.cached_property
    def own_tokens(self) -> frozenset[str]:
        """Ids a text may name: the customer's orders, tracking numbers and product names'
        model numbers ("OL-3303"), and the ticket's, session's and customer's ids."""
        tokens = {k.casefold() for k in self.known_ids}
        for o in self.own:
            tokens.update((o.customer_id.casefold(), o.order_id.casefold()))
            tokens.update(t.casefold() for t in (o.tracking_no,) if t)
            tokens.update(t.casefold() for t in RUN.findall(o.product_name))
            tokens.update(re.findall(r"\d{3,}", o.order_id))  # "order 1001" for O-1001
        return frozenset(tokens)

    @functools.cached_property
    def name_numbers(self) -> frozenset[float]:
        """Numbers written alone in the discussed products' names: "Pro 3", "Forerunner 265"."""
        names = (o.product_name for o in self.talked_about)
        return frozenset(float(t) for name in names for t in RUN.findall(name) if t.isdigit())

    @functools.cached_property
    def asked(self) -> list[float]:
        """The numbers the customer wrote."""
        return [n.value for n in all_numbers(self.message, [])]


def audit(draft: StrategyDraft, books: CustomerOrders) -> list[str]:
    """Every problem with money and ids in the reply, the solution and the internal note.

    No amount above the matched order's (or in another currency), no money at all without a
    matched order, no order id or tracking number that is not one of the customer's own.
    """
    problems = [f"{name}: {p}" for name in FIELDS for p in _problems(getattr(draft, name), books)]
    return list(dict.fromkeys(problems))


def _problems(text: str, books: CustomerOrders) -> Iterator[str]:
    if not text.strip():
        return
    found = identifiers(text, books.shapes)
    for i in found:
        if i.value.casefold() not in books.own_tokens:
            yield f"{i.kind} {i.value} is not one of this customer's orders, do not name it"
    matched = books.matched
    quoted = [o.amount for o in books.talked_about]
    for m in money(text, [(i.start, i.end) for i in found], books.name_numbers):
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
