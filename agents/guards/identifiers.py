"""Finding order ids and tracking numbers in text, by their shape and the words before them."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from baton_kafka.agents.guards import words
from baton_kafka.agents.guards.numbers import digit_runs
from baton_kafka.agents.guards.skipping import skipping

IdKind = Literal["order id", "tracking number"]

# O-1001, EV-101, ORD-88231: upper-case letters, a hyphen, digits, nothing after.
_ORDER_SHAPE = re.compile(r"[A-Z]{1,5}-\d{3,}")
_DIGITS = re.compile(r"\d")
_DIGIT_SPLIT = re.compile(r"(\d+)")
_LONG = re.compile(r"[A-Za-z0-9]{10,}")
_DATE = re.compile(r"\d{4}-\d{1,2}-\d{1,2}")
_ID_CHARS = re.compile(r"[A-Za-z0-9-]+")  # ids have no decimal point: "order: 39.99" is a price


@words.builder
class _Words:
    """The words before an id and after an amount, of every language pack, compiled."""

    def __init__(self) -> None:
        alt = words.alternation
        self.ORDER_WORDS = skipping(
            rf"(?:{alt('numbers', 'ids.order', end=False)})\s*[:：#]?\s*$", re.I
        )
        tracking = alt("numbers", "ids.tracking", end=False)
        self.TRACKING_WORDS = skipping(rf"(?:{tracking})\s*[:：#]?\s*$", re.I)
        currency = sorted(words.table("money", "currency.after"), key=len, reverse=True)
        self.MONEY_NEXT = re.compile(
            rf"\s*(?:{'|'.join(map(re.escape, currency)) or '(?!)'})", re.I
        )


def _w() -> _Words:
    return words.compiled(_Words)


@dataclass(frozen=True)
class Identifier:
    """An order-id-like or tracking-number-like token, where it is in the text."""

    kind: IdKind
    value: str
    start: int
    end: int


# Ids of many orders share a few shapes: each compiled once, whatever else ``re`` has cached since.
_compiled = functools.lru_cache(maxsize=256)(re.compile)


@functools.lru_cache(maxsize=4096)
def shape(order_id: str) -> re.Pattern[str] | None:
    """The pattern of ids written like ``order_id`` ("O-1001" -> ``O-\\d{2,6}``), if any.

    Digit runs keep about their width, so "3-5" or "2026-03-14" never look like "2024-118830";
    an id of digits alone needs 6 or more of them ("400918273"), else it has no shape.
    """
    parts = [p for p in _DIGIT_SPLIT.split(order_id) if p]
    runs = [p for p in parts if p.isdigit()]
    if not runs or (len(parts) == 1 and len(runs[0]) < 6):
        return None
    if len(parts) == 1:
        width = len(runs[0])
        return _compiled(rf"\d{{{width - 1},{width + 1}}}")
    lettered = any(c.isalpha() for c in order_id)

    def run(p: str) -> str:
        if not lettered:
            return rf"\d{{{len(p)}}}"  # "305-1123456-7788990": fixed groups
        return rf"\d{{{max(1, len(p) - 2)},{len(p) + 2}}}"

    return _compiled("".join(run(p) if p.isdigit() else re.escape(p) for p in parts))


def _digit_count(token: str) -> int:
    return len(_DIGITS.findall(token))


def identifiers(text: str, shapes: Iterable[re.Pattern[str]] = ()) -> list[Identifier]:
    """Every order-id-like and tracking-number-like token of ``text``.

    Order ids: ``ABC-123`` shapes, tokens shaped like ``shapes`` (the customer's own ids), and
    any token with 3+ digits after "order", "#" or "订单号". Tracking numbers: letter-and-digit
    tokens of 10+ characters with 8+ digits, and any token with 6+ digits after "tracking" or
    "运单号".
    """
    return list(_identifiers(text, tuple(shapes)))


# The audit, the store check and the cited facts read the same reply's ids: read once.
@words.per_text(maxsize=256)
def _identifiers(text: str, shapes: tuple[re.Pattern[str], ...]) -> tuple[Identifier, ...]:
    w = _w()
    patterns = [_ORDER_SHAPE, *shapes]
    found: list[Identifier] = []
    for token, start, end in digit_runs(text):
        kind: IdKind | None = None
        for p in patterns:
            if p.fullmatch(token):
                kind = "order id"
                break
        else:
            digits = _digit_count(token)
            if digits < 3:
                continue  # no id of the words before it or of its length has fewer digits
            kind = _by_words(text, token, start, digits)
        if kind == "order id" and w.MONEY_NEXT.match(text, end) and "-" not in token:
            kind = None  # "订单1299元": an amount after the word order, not an id
        if kind is not None:
            found.append(Identifier(kind, token, start, end))
    return tuple(found)


def _by_words(text: str, token: str, start: int, digits: int) -> IdKind | None:
    """What a token of 3+ digits without an id's shape is, by the words before it and its size."""
    w = _w()
    before = text[max(0, start - 30) : start]
    if digits >= 6 and w.TRACKING_WORDS.search(before):
        return "tracking number"
    if (
        _ID_CHARS.fullmatch(token)
        and not _DATE.fullmatch(token)
        and (w.ORDER_WORDS.search(before) or before.endswith("#"))
    ):
        return "order id"
    if digits >= 8 and _LONG.fullmatch(token):
        return "tracking number"
    return None


_w()  # compiled at import, as module patterns are; again only when a shop adds words
