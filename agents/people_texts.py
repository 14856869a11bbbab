"""What the customer is told when a person decides on an offer, in their language."""

from __future__ import annotations

from schemas.records import Offer


def _lines_text(offer: Offer, language: str) -> str:
    parts = [
        f"{line.kind} {line.amount:.2f} {line.currency or offer.currency or ''}".strip()
        if line.amount
        else line.kind
        for line in offer.lines
    ]
    order_id = offer.lines[0].order_id if offer.lines else ""
    joined = "、".join(parts) if language == "zh" else ", ".join(parts)
    return f"{joined} (订单 {order_id})" if language == "zh" else f"{joined} for order {order_id}"


def confirmation(offer: Offer, language: str) -> str:
    """The customer's text of an approved offer."""
    if language == "zh":
        return f"您好，您的请求已审核通过：{_lines_text(offer, language)}。感谢您的耐心。"
    return (
        f"Thank you for your patience. Your request has been reviewed and approved: "
        f"{_lines_text(offer, language)}."
    )


def alternative(offer: Offer | None, language: str) -> str:
    """The customer's text of a denied offer: the option offered instead, or a follow-up."""
    if offer is None:
        if language == "zh":
            return "您好，经过审核，我们无法按原方案处理。同事会尽快与您联系，说明可行的方案。"
        return (
            "Thank you for your patience. After review we cannot proceed as first proposed; a "
            "colleague will contact you shortly with the options we can offer."
        )
    if language == "zh":
        lines = _lines_text(offer, language)
        return f"您好，经过审核，我们无法按原方案处理，但可以为您提供：{lines}。"
    return (
        "Thank you for your patience. After review we cannot proceed as first proposed, but we "
        f"can offer you: {_lines_text(offer, language)}."
    )
