"""What the customer is told when a person decides on an offer, in their language (the
sentences are ``fixed_texts.toml``'s)."""

from __future__ import annotations

from baton_kafka.agents.fixed_texts import fixed, fixed_or
from baton_kafka.schemas.records import Offer


def _lines_text(offer: Offer, language: str, default: str) -> str:
    parts = []
    for line in offer.lines:
        kind = fixed_or(f"remedy_{line.kind}", language, line.kind, default)
        currency = line.currency or offer.currency or ""
        parts.append(f"{kind} {line.amount:.2f} {currency}".strip() if line.amount else kind)
    order_id = offer.lines[0].order_id if offer.lines else ""
    joined = fixed("list_separator", language, default).join(parts)
    return fixed("offer_lines", language, default, lines=joined, order_id=order_id)


def confirmation(offer: Offer, language: str, default: str = "en") -> str:
    """The customer's text of an approved offer."""
    return fixed("approved", language, default, lines=_lines_text(offer, language, default))


def alternative(offer: Offer | None, language: str, default: str = "en") -> str:
    """The customer's text of a denied offer: the option offered instead, or a follow-up."""
    if offer is None:
        return fixed("denied_follow_up", language, default)
    lines = _lines_text(offer, language, default)
    return fixed("denied_alternative", language, default, lines=lines)
