"""A reply states every condition its offer's lines carry (a photo first, the item back within N
days, a voucher valid N years), read with the ``conditions`` language packs."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from baton_kafka.agents import packs
from baton_kafka.agents.guards.clauses import denied, marks, readable, sentences
from baton_kafka.agents.guards.numbers import all_numbers
from baton_kafka.agents.policy import Policy
from baton_kafka.agents.policy import offer as offers
from baton_kafka.schemas.records import LineCondition, OfferLine

CONDITION = "condition"


@dataclass(frozen=True)
class _Pack:
    """One language's condition words, compiled."""

    kinds: Mapping[str, re.Pattern[str]]
    units: Mapping[str, re.Pattern[str]]


_compiled: dict[str, tuple[Mapping[str, Any], _Pack]] = {}


def _any(entries: Sequence[str]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{e})" for e in entries) or "(?!)", re.I)


def _pack(language: str) -> _Pack | None:
    words = packs.pack("conditions", language)
    if not words:
        return None
    known = _compiled.get(language)
    if known is None or known[0] is not words:  # a shop's pack added later: compiled again
        kinds = {k: _any(v) for k, v in words.get("kinds", {}).items()}
        units = {k: _any(v) for k, v in words.get("units", {}).items()}
        known = _compiled[language] = (words, _Pack(kinds, units))
    return known[1]


def kinds() -> tuple[str, ...]:
    """Every condition kind some language pack has words for."""
    found: dict[str, None] = {}
    for words in packs.all_packs("conditions").values():
        found.update(dict.fromkeys(words.get("kinds", {})))
    return tuple(found)


def _wanted(c: LineCondition) -> tuple[str, int] | None:
    """The unit and number a statement of ``c`` must carry, if any."""
    if c.days is not None:
        return "days", c.days
    if c.years is not None:
        return "years", c.years
    return None


def _said(c: LineCondition) -> str:
    wanted = _wanted(c)
    return f"{c.kind} ({wanted[1]} {wanted[0]})" if wanted else c.kind


def _numbers_with(unit: re.Pattern[str] | None, clause: str) -> list[float]:
    """The numbers of ``clause`` written with ``unit`` right after them ("14 days", "14天")."""
    if unit is None:
        return []
    found = []
    for n in all_numbers(clause, []):
        rest = clause[n.end :].lstrip(" \u00a0")
        if unit.match(rest):
            found.append(n.value)
    return found


def denied_in_any(clause: str, start: int, end: int, languages: Sequence[str]) -> bool:
    """Whether any language's negation denies ``clause[start:end]`` ("No photo is needed"):
    a word of several languages ("photo") is read by each, and one denial is enough."""
    for language in languages:
        grammar = marks("commitments", language, "kinds")
        if grammar is not None and denied(grammar, clause, start, end):
            return True
    return False


def _stated(text: str, c: LineCondition, languages: Sequence[str]) -> tuple[bool, float | None]:
    """Whether ``text`` states ``c``, and a different number it gives for it instead."""
    wanted = _wanted(c)
    wrong: float | None = None
    for language in languages:
        pack, grammar = _pack(language), marks("commitments", language, "kinds")
        words = pack.kinds.get(c.kind) if pack else None
        if pack is None or words is None or grammar is None:
            continue
        unit = pack.units.get(wanted[0]) if wanted else None
        for sentence in sentences(text, grammar):
            for clause in sentence.clauses:
                hits = list(words.finditer(clause))
                if all(denied_in_any(clause, h.start(), h.end(), languages) for h in hits):
                    continue
                if wanted is None:
                    return True, None
                near = _numbers_with(unit, clause) or _numbers_with(unit, sentence.text)
                if any(abs(v - wanted[1]) < 1e-9 for v in near):
                    return True, None
                if near:
                    wrong = near[0]
    return False, wrong


def required(lines: Sequence[OfferLine], policy: Policy, reason: str | None) -> list[LineCondition]:
    """The conditions ``lines`` carry under ``policy`` (each once)."""
    found: dict[LineCondition, None] = {}
    for line in lines:
        found.update(dict.fromkeys(offers.conditions(line, policy, reason)))
    return list(found)


def problems(
    text: str,
    lines: Sequence[OfferLine],
    policy: Policy,
    reason: str | None = None,
    languages: Iterable[str] | None = None,
) -> Iterator[str]:
    """Every condition of ``lines`` (as ``policy`` attaches them) that ``text`` does not state,
    or states with another number than the policy's."""
    langs = tuple(languages) if languages is not None else packs.languages("conditions")
    body = readable(text)
    for c in required(lines, policy, reason):
        stated, wrong = _stated(body, c, langs)
        if stated:
            continue
        if wrong is not None:
            wanted = _wanted(c)
            assert wanted is not None
            yield (
                f"{CONDITION}: the reply gives {wrong:g} {wanted[0]} for {c.kind}, the policy's "
                f"condition is {wanted[1]} {wanted[0]}: state it as the policy does"
            )
        else:
            yield (
                f"{CONDITION}: the offer carries the condition {_said(c)}, which the reply does "
                "not state: tell the customer"
            )
