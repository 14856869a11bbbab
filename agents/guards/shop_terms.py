"""Customer-facing text against the policy's own terms: no promise of a remedy the shop never
gives, a return shipping cost only as the policy states it, and the shop's own money channels
named only when a line pays into them."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from baton_kafka.agents import packs
from baton_kafka.agents.guards import commitments, offered
from baton_kafka.agents.guards.clauses import marks, readable, sentences
from baton_kafka.agents.guards.conditions import denied_in_any
from baton_kafka.agents.guards.money import Money, clauses_of, money
from baton_kafka.agents.policy import Policy
from baton_kafka.schemas.records import OfferLine, Order

NEVER = "never"
SHIPPING = "shipping"
_CENT = 0.005
_compiled: dict[tuple[str, ...], re.Pattern[str]] = {}


def _any(entries: Sequence[str]) -> re.Pattern[str]:
    key = tuple(entries)
    if key not in _compiled:
        _compiled[key] = re.compile("|".join(f"(?:{e})" for e in entries) or "(?!)", re.I)
    return _compiled[key]


def _languages(languages: Iterable[str] | None) -> tuple[str, ...]:
    return tuple(languages) if languages is not None else packs.languages("conditions")


def never_promised(
    text: str, policy: Policy, languages: Iterable[str] | None = None
) -> Iterator[str]:
    """Every mention in ``text`` of a remedy the policy says the shop never gives that no
    negation denies: a promise, an offer, a question ("shall we repair it?") alike."""
    if not policy.never:
        return
    langs = _languages(languages)
    body = readable(text)
    told: set[str] = set()
    for language in langs:
        grammar = marks("commitments", language, "kinds")
        if grammar is None:
            continue
        for kind, words in grammar.words.items():
            remedies = commitments.covering(kind, policy)
            if kind in told or not (
                kind in policy.never or (remedies and all(r in policy.never for r in remedies))
            ):
                continue
            for sentence in sentences(body, grammar):
                hit = next(
                    (
                        h
                        for clause in sentence.clauses
                        for h in words.finditer(clause)
                        if not denied_in_any(clause, h.start(), h.end(), langs)
                    ),
                    None,
                )
                if hit is not None:
                    told.add(kind)
                    yield (
                        f"{NEVER}: the reply speaks of {kind} ({hit.group().strip()!r}), which "
                        "the shop never gives: do not offer it"
                    )
                    break


def shipping_costs(policy: Policy) -> list[tuple[float, str | None]]:
    """Every return shipping cost the policy states, with its currency."""
    return [(t.cost, t.currency) for t in policy.shipping.returns.values()]


@dataclass(frozen=True)
class _Stated:
    """An amount a clause about return shipping states, where it stands in the text."""

    money: Money
    start: int
    end: int


def _about_shipping(
    body: str, languages: tuple[str, ...]
) -> Iterator[tuple[str, list[_Stated], bool]]:
    """Each clause of ``body`` about return shipping (in any of ``languages``): its text, the
    amounts it states, and whether it calls shipping free (a clause ends at a comma, not
    inside "4,90 €")."""
    amounts = [m for m in money(body, []) if m.kind == "amount"]
    seen: set[tuple[int, int]] = set()
    for language in languages:
        words = packs.pack("conditions", language).get("shipping", {})
        if not words.get("words"):
            continue
        about, free = _any(words["words"]), _any(words.get("free", []))
        for a, b in clauses_of(body):
            clause = body[a:b]
            if (a, b) in seen or not about.search(clause):
                continue
            seen.add((a, b))
            stated = [_Stated(m, m.at, m.at + len(m.written)) for m in amounts if a <= m.at < b]
            yield clause, stated, bool(free.search(clause))


def _shipping_problems(
    text: str,
    policy: Policy,
    order: Order | None,
    languages: tuple[str, ...],
    quoted: Sequence[float] = (),
) -> Iterator[str]:
    """A clause about return shipping states a cost the policy has (or a price the policy or
    an article shown quotes), and calls it free only where the shop pays."""
    terms = policy.shipping.returns
    if not terms:
        return
    costs = shipping_costs(policy)
    shop_pays = any(t.payer == "shop" for t in terms.values())
    currency = order.currency.upper() if order is not None else ""
    for _, stated, free in _about_shipping(readable(text), languages):
        for s in stated:
            m = s.money
            if not any(
                abs(m.value - cost) < _CENT
                and (not m.currencies or (c or currency) in m.currencies)
                for cost, c in costs
            ) and not any(abs(m.value - q) < _CENT for q in quoted):
                listed = ", ".join(f"{cost:g} {c or ''}".strip() for cost, c in costs)
                yield (
                    f"{SHIPPING}: the reply gives {m.written} for shipping, which is not a "
                    f"cost of the policy's return shipping ({listed})"
                )
        if free and not shop_pays:
            yield (
                f"{SHIPPING}: the reply says shipping is free, but the policy has the "
                "customer pay every return"
            )


def stated_costs(
    text: str, policy: Policy, languages: Iterable[str] | None = None
) -> list[tuple[int, int]]:
    """Where ``text`` (normalised) states one of the policy's return shipping costs in a
    clause about shipping: a fact of the policy, not money the reply promises."""
    costs = [cost for cost, _ in shipping_costs(policy) if cost]
    if not costs:
        return []
    return [
        (s.start, s.end)
        for _, stated, _ in _about_shipping(readable(text), _languages(languages))
        for s in stated
        if any(abs(s.money.value - c) < _CENT for c in costs)
    ]


def shipping(
    text: str,
    policy: Policy,
    order: Order | None,
    languages: Iterable[str] | None = None,
    quoted: Sequence[float] = (),
) -> list[str]:
    """Every shipping cost ``text`` states that neither the policy nor an article shown does."""
    found = _shipping_problems(text, policy, order, _languages(languages), quoted)
    return list(dict.fromkeys(found))


def _own_channels(policy: Policy) -> dict[str, re.Pattern[str]]:
    return {
        name: _any([w for ws in c.words.values() for w in ws])
        for name, c in policy.channels.items()
    }


def channels(text: str, lines: Sequence[OfferLine], policy: Policy) -> Iterator[str]:
    """Every channel of the shop's own ``text`` names that no line of the offer pays into."""
    paid = {line.channel for line in lines if line.amount}
    w = offered._w()  # the shipped channels' denials hold for the shop's own
    for name, pattern in _own_channels(policy).items():
        if name in paid:
            continue
        for hit in pattern.finditer(text):
            denied = w.DENIED_BEFORE.search(text[max(0, hit.start() - 40) : hit.start()])
            if not (denied or w.DENIED_AFTER.match(text, hit.end())):
                yield (
                    f"speaks of {hit.group()} ({name}), which is no channel of the offer: "
                    "state only where the offer's money goes"
                )
                break


def masked(text: str, lines: Sequence[OfferLine], policy: Policy) -> str:
    """``text`` with the words of the shop's own channels that the offer pays into blanked (same
    length), so the shipped channels' words inside them ("Geschenkgutschein") are not read."""
    paid = {line.channel for line in lines if line.amount}
    for name, pattern in _own_channels(policy).items():
        if name in paid:
            text = pattern.sub(lambda m: "_" * len(m.group()), text)
    return text
