"""What customer-facing text commits the shop to, as typed commitments held to the offer.

Every commitment the text states must be a line of the offer (text ⊆ offer); the lines are held
to the policy by ``agents.policy.offer`` (offer ⊆ policy). A sentence that asks or offers a
choice, a clause that denies, and the customer's own words reported back commit to nothing. A
condition on something other than the customer's own act ("if it breaks again, we can repair
it") names a remedy the policy must allow for the order, not a line; a condition on the
customer's act ("if you send it back, we will refund you") or on a person's approval is a
promise, so it is a line. What the shop usually does ("refunds usually arrive within 5 days")
is information, read like a condition. A deed told as done ("we have already refunded you") is
a claim, held to the records by ``claims``, not a commitment. The words per language are the
``commitments`` packs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from baton_kafka.agents.guards import clauses
from baton_kafka.agents.guards.clauses import Marks, Sentence, denied, marks, readable, sentences
from baton_kafka.agents.policy import Policy
from baton_kafka.agents.policy import offer as offers
from baton_kafka.agents.ticket_memo import shelf
from baton_kafka.schemas.records import OfferLine

COMMITMENT = "commitment"
# The offer lines that make a commitment of each kind true; a line of the shop's own remedy of
# the same name does too ("voucher", "callback"). A delivery date has none: the store keeps no
# delivery dates, so only a shop's remedy of that name covers one.
COVERED_BY: dict[str, tuple[str, ...]] = {
    "refund": ("refund", "cancellation"),
    "return": ("refund", "exchange", "repair"),
    "label": ("refund", "exchange", "repair"),
    "exchange": ("exchange",),
    "replacement": ("exchange",),
    "repair": ("repair",),
    "cancellation": ("cancellation",),
    "voucher": ("compensation",),
    "credit": ("compensation", "refund"),
    "compensation": ("compensation",),
    "callback": ("escalation",),
    "delivery_date": (),
}
_SAID = {
    "refund": "a refund",
    "return": "taking the item back",
    "label": "a return label",
    "exchange": "an exchange",
    "replacement": "a replacement",
    "repair": "a repair",
    "cancellation": "a cancellation",
    "voucher": "a voucher",
    "credit": "a credit",
    "compensation": "compensation",
    "callback": "a call back",
    "delivery_date": "a delivery date",
}
Mode = Literal["firm", "hypothetical"]


@dataclass(frozen=True)
class Commitment:
    """One thing a text commits the shop to: its kind, the words stating it, how it binds."""

    kind: str
    words: str
    language: str
    mode: Mode = "firm"


def read(text: str, languages: Iterable[str]) -> list[Commitment]:
    """Every commitment ``text`` states, read with the ``commitments`` pack of each language."""
    text = readable(text)
    found: dict[tuple[str, str], Commitment] = {}
    for language in dict.fromkeys(languages):
        pack = marks("commitments", language, "kinds")
        if pack is None or not pack.may_read(text):
            continue  # no commitment word of this language stands anywhere in the text
        for c in _read(text, pack):
            found.setdefault((c.kind, c.words), c)
    return list(found.values())


def _read(text: str, pack: Marks) -> Iterator[Commitment]:
    # A draft's solution repeats sentences of its reply: each is read once per ticket and pack.
    said: dict[str, tuple[Commitment, ...]] = shelf("commitments", pack)
    for sentence in sentences(text, pack):
        found = said.get(sentence.text)
        if found is None:
            found = said[sentence.text] = tuple(_in_sentence(sentence, pack))
        yield from found


def _in_sentence(sentence: Sentence, pack: Marks) -> Iterator[Commitment]:
    """The commitments of one sentence."""
    # Each sentence's markers are read once: a long sentence of many clauses stays linear.
    mode: Mode | None = None  # read only for a sentence that commits to something
    deeds = marks("claims", pack.language, "claims")
    for clause in clauses.unasked(sentence, pack, pack, "promise"):
        for kind, words in pack.words.items():
            for hit in words.finditer(clause):
                if _told_done(deeds, clause, hit.start(), hit.end()):
                    continue  # a claim, held to the records by ``claims``
                if not denied(pack, clause, hit.start(), hit.end()):
                    mode = mode or _mode(pack, sentence.text)
                    yield Commitment(kind, hit.group().strip(), pack.language, mode)
                    break


def _told_done(deeds: Marks | None, clause: str, start: int, end: int) -> bool:
    """Whether the words at ``start:end`` stand inside a deed told as done ("nous vous avons
    déjà remboursé", "已经为您退款"): what the records must show, not what is promised."""
    if deeds is None or not deeds.may_hold(clause):
        return False
    return any(
        m.start() <= start and end <= m.end()
        for pattern in deeds.words.values()
        for m in pattern.finditer(clause)
    )


def _mode(pack: Marks, sentence: str) -> Mode:
    """How a sentence's commitments bind: ``hypothetical`` in a general or conditional
    sentence (unless the condition is the customer's or an approval), else ``firm``."""
    if pack.has("general", sentence) or (
        pack.has("conditional", sentence)
        and not (pack.has("customer_condition", sentence) or pack.has("approval", sentence))
    ):
        return "hypothetical"
    return "firm"


def covering(kind: str, policy: Policy) -> tuple[str, ...]:
    """The remedies whose lines make a commitment of ``kind`` true, under ``policy``."""
    own = (kind,) if policy.remedy(kind) is not None else ()
    return (*own, *(k for k in COVERED_BY.get(kind, ()) if k != kind))


@dataclass(frozen=True)
class Promised:
    """What a text's commitments are compared with: the offer, what the session promised before
    for the matched order (by remedy), and whether the draft hands the ticket to a person."""

    lines: Sequence[OfferLine]
    earlier: frozenset[str] = frozenset()
    needs_human: bool = False


def problems(
    text: str,
    promised: Promised,
    policy: Policy,
    ctx: offers.OfferContext,
    languages: Iterable[str],
) -> list[str]:
    """Every commitment of ``text`` that is not a line of the offer (or, for a hypothetical
    one, a remedy the policy does not allow for the order), as a reason the writer can act on."""
    order = ctx.order
    kinds = {line.kind for line in promised.lines} | set(promised.earlier)
    found: list[str] = []
    for c in read(text, languages):
        remedies = covering(c.kind, policy)
        if any(k in kinds for k in remedies):
            continue
        if c.kind == "callback" and promised.needs_human:
            continue  # a person takes the ticket over and calls back
        said = _SAID.get(c.kind, c.kind)
        if c.mode == "hypothetical":
            why = [p for k in remedies for p in offers.hypothetical(k, policy, ctx)]
            if remedies and len(why) < len(remedies):
                continue  # one of its remedies is the shop's for this order
            reason = "; ".join(why) or "no remedy of this shop provides it"
            found.append(
                f"{COMMITMENT}: the reply promises {said} if something happens ({c.words!r}), "
                f"but the policy would not allow it ({reason}); do not promise it"
            )
            continue
        if order is None:
            found.append(
                f"{COMMITMENT}: the reply promises {said} ({c.words!r}) but no order is "
                "matched, so it may commit to nothing; ask for the order instead"
            )
            continue
        lines = " or ".join(remedies) if remedies else "remedy of the shop"
        found.append(
            f"{COMMITMENT}: the reply promises {said} ({c.words!r}) but the offer has no "
            f"{lines} line for order {order.order_id}: add the line (the policy checks it) "
            "or do not promise it"
        )
    return list(dict.fromkeys(found))
