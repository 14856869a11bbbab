"""A reply's facts must be citable: each delivery time or date, size or measure, validity or
warranty period, price or fee it states is one the policy, a help article shown for the
ticket or the store states too (same kind, same unit, same figures)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from baton_kafka.agents import text_cache
from baton_kafka.agents.guards import alone, reading, words
from baton_kafka.agents.guards.books import CustomerOrders
from baton_kafka.agents.guards.clauses import readable
from baton_kafka.agents.guards.facts import Fact, measures, spans, stated
from baton_kafka.agents.guards.identifiers import identifiers
from baton_kafka.agents.policy import Policy
from baton_kafka.agents.policy.render import render
from baton_kafka.schemas.records import Order

UNCITED = "uncited fact"
# A source's figure cites these kinds whatever its words: a delivery time (how long the way to
# the customer takes) is cited only by a source that speaks of delivery, never by a dispatch
# or a remedy's time ("the replacement ships within 2 business days").
UNMARKED = frozenset({"dispatch", "validity", "size", "price"})
EVERY = frozenset({"delivery", *UNMARKED})
_WHAT = {
    "delivery": "a delivery time",
    "dispatch": "a dispatch time",
    "validity": "a validity, warranty or return period",
    "size": "a size or measure",
    "price": "a price or fee",
}
_CENT = 0.005
_SENTENCE = re.compile(r"(?<=[.!?])(?<!\d\.)\s+|[。！？\n]+")
_PRICED_KEY = re.compile("cost|fee|price|shipping")


@dataclass(frozen=True)
class Pool:
    """The figures sources state, by (kind, unit); amounts with their currency (None: any)."""

    figures: Mapping[tuple[str, str], tuple[tuple[float, str | None], ...]] = field(
        default_factory=dict
    )

    @classmethod
    def of(cls, facts: Iterable[Fact], unmarked: frozenset[str] = UNMARKED) -> Pool:
        """The figures of ``facts``, each citing its own kinds and the ``unmarked`` ones."""
        found: dict[tuple[str, str], list[tuple[float, str | None]]] = {}
        for f in facts:
            for kind in f.kinds | unmarked:
                found.setdefault((kind, f.unit), []).extend((v, f.currency) for v in f.values)
        return cls({k: tuple(v) for k, v in found.items()})

    def __or__(self, other: Pool) -> Pool:
        keys = {*self.figures, *other.figures}
        return Pool({k: (*self.figures.get(k, ()), *other.figures.get(k, ())) for k in keys})

    def cites(self, fact: Fact) -> bool:
        """Some kind of ``fact`` has each of its figures, in its unit (and currency)."""
        return any(all(self._has(kind, fact, v) for v in fact.values) for kind in fact.kinds)

    def _has(self, kind: str, fact: Fact, value: float) -> bool:
        tolerance = _CENT if fact.unit == "money" else max(0.01, abs(value) * 0.005)
        return any(
            abs(value - v) <= tolerance
            and (fact.currency is None or c is None or c.upper() == fact.currency.upper())
            for v, c in self.figures.get((kind, fact.unit), ())
        )


def _walk(value: Any, key: str = "") -> Iterator[Fact]:
    """The figures of a policy's data: texts read as text, ``*_days`` as days, caps, costs and
    fees as prices (so a shop's own tables are citable without code)."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from _walk(v, str(k))
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _walk(v, key)
    elif isinstance(value, str):
        yield from stated(reading.normalise(value))
    elif isinstance(value, int | float) and not isinstance(value, bool):
        if key.endswith("_days"):
            yield Fact(frozenset({"validity"}), "day", (float(value),), str(value), 0, 0)
        elif key == "cap" or _PRICED_KEY.search(key):
            yield Fact(frozenset({"price"}), "money", (float(value),), str(value), 0, 0)


_SOFT_BREAK = re.compile(r"(?<!\n)\n(?![\n\-*#|])")


@text_cache.across_tickets(64)
def _text_pool(text: str) -> Pool:
    """The figures a source text states; a Markdown paragraph's line breaks join its lines."""
    return Pool.of(stated(_SOFT_BREAK.sub(" ", reading.normalise(text))))


_POLICIES: dict[str, Pool] = {}
# The rendered policy's data block is read as data (``_walk``), not as one long sentence.
_DATA_BLOCK = re.compile(r"<policy_data>.*?</policy_data>", re.S)


def policy_pool(policy: Policy) -> Pool:
    """What the shop's policy states: its rendered text (the handbook's policy section and the
    shop's notes) and its data (turnarounds, windows, caps and any text or cost it holds)."""
    key = f"{policy.version}:{','.join(policy.languages)}"
    if key not in _POLICIES:
        _POLICIES[key] = _text_pool(_DATA_BLOCK.sub("", render(policy))) | Pool.of(
            _walk(policy.model_dump(mode="json"))
        )
    return _POLICIES[key]


def store_pool(orders: Iterable[Order]) -> Pool:
    """What the store states of the customer's orders: amounts, refunds and line prices, the
    order and delivery dates, and the measures in product names."""
    facts: list[Fact] = []
    for o in orders:
        for amount in (o.amount, o.refunded or None, *(i.total for i in o.items)):
            if amount:
                facts.append(Fact(frozenset({"price"}), "money", (amount,), "", 0, 0, o.currency))
        for item in o.items:
            if item.unit_price is not None:
                price = (item.unit_price,)
                facts.append(Fact(frozenset({"price"}), "money", price, "", 0, 0, o.currency))
        for moment in (o.ordered_at, o.delivered_at):
            if moment is not None:
                day = moment.month * 100.0 + moment.day
                facts.append(Fact(EVERY, "date", (day,), "", 0, 0))
        facts += (f for name in o.products() for f in _name_facts(name))
    return Pool.of(facts)


@words.per_text(maxsize=1024)
def _name_facts(name: str) -> tuple[Fact, ...]:
    """The measures a product's name states ("Kettle 1.7L"), read once per name."""
    return tuple(measures(name))


def quoted_prices(policy: Policy, articles: Sequence[str]) -> tuple[float, ...]:
    """The prices and fees the policy and the ``articles`` shown state ("3.50 EUR shipping"):
    a reply may quote them as facts."""
    pool = policy_pool(policy)
    for article in articles:
        pool = pool | _text_pool(article)
    return tuple(dict.fromkeys(v for v, _ in pool.figures.get(("price", "money"), ())))


@words.builder
def _reported() -> re.Pattern[str]:
    return re.compile(words.alternation("commitments", "markers.reported", end=False), re.I)


def _spans_of(text: str, books: CustomerOrders) -> list[tuple[int, int]]:
    """What in ``text`` is not a fact of the shop's: ids, phone numbers, product names."""
    skip = [(i.start, i.end) for i in identifiers(text, books.shapes)]
    skip += reading.phones(text)
    folded = text.casefold()
    names = {n.casefold() for o in books.own for n in o.products() if n}
    for name in names:
        skip += alone.spans(name, folded)  # str.find: no pattern compiled per name
    for pattern in books.name_phrases.values():
        skip += [m.span() for m in pattern.finditer(folded)]
    return skip


def uncited(text: str, books: CustomerOrders, articles: Sequence[str] = ()) -> list[Fact]:
    """The facts ``text`` states that neither ``books.policy``, the ``articles`` shown (their
    titles and texts) nor the store's copies of the customer's orders state. The customer's
    quoted words are not read; a size or date the customer wrote, and a figure of theirs a
    sentence reports back ("you wrote it took 9 days"), are theirs to state."""
    text = readable(text)
    facts = [f for f in stated(text, _spans_of(text, books)) if f.kinds]
    if not facts:
        return []
    sources = policy_pool(books.policy) | store_pool(books.own)
    for article in articles:
        sources = sources | _text_pool(article)
    theirs = books.message_facts
    own = Pool.of((f for f in theirs if f.unit in ("size", "date", "cm", "kg", "l")), EVERY)
    said = Pool.of(theirs, EVERY)
    reported = words.compiled(_reported)
    out = []
    for f in facts:
        if sources.cites(f) or own.cites(f):
            continue
        sentence = next((text[a:b] for a, b in spans(text, _SENTENCE) if a <= f.start <= b), text)
        if reported.search(sentence) and said.cites(f):
            continue
        out.append(f)
    return out


def describe(f: Fact) -> str:
    """What kind of fact ``f`` is, in words."""
    if f.unit == "date":
        return "a delivery date" if "delivery" in f.kinds else "a date"
    return " or ".join(_WHAT[k] for k in sorted(f.kinds))


def problems(text: str, books: CustomerOrders, articles: Sequence[str] = ()) -> list[str]:
    """One reason per fact of ``text`` that no source cites, for the re-ask and dead letter."""
    return [
        f"{UNCITED}: the reply states {describe(f)} ({f.written.strip()!r}) that neither the "
        "policy, the help articles shown nor the order states: state only what they say, or "
        "leave it out"
        for f in uncited(text, books, articles)
    ]
