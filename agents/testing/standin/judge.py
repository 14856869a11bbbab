"""The stand-in as a judge: grades a reply from the facts of the judge's prompt, by fixed rules.

The judge's prompt holds one JSON object between ``<judge>`` and ``</judge>``: the ticket, the
label (demand, order), the order as the store holds it, and the reply with its offer. Each
category is 0 (wrong), 1 (partly) or 2 (right), so a run is repeatable and a test can say which
reply must score what.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

JUDGE_OPEN, JUDGE_CLOSE = "<judge>", "</judge>"
CATEGORIES = ("remedy", "understood", "grounded", "tone")

_WORDS: dict[str, tuple[str, ...]] = {
    "refund": ("refund", "money back", "退款", "退还"),
    "exchange": ("exchange", "replace", "new one", "换货", "更换", "换新"),
    "repair": ("repair", "warranty", "维修", "保修", "修理"),
    "compensation": ("compensat", "voucher", "coupon", "补偿", "优惠券", "代金券"),
    "cancel": ("cancel", "取消"),
    "information": (
        "on its way", "in transit", "tracking", "shipped", "delivered", "business days",
        "运输", "运单", "已发货", "已签收", "工作日", "预计",
    ),
    "complaint": ("complaint", "escalat", "sorry", "投诉", "抱歉", "反馈"),
    "other": ("help", "assist", "帮助", "协助"),
}  # fmt: skip
_RETURN = ("return", "send it back", "refuse the delivery", "退回", "寄回", "拒收")
_ASKS = ("order number", "order id", "订单号", "which", "哪个", "哪一")
_KIND = (
    "greet",
    "thank",
    "sorry",
    "please",
    "hello",
    "hi ",
    "dear",
    "您好",
    "感谢",
    "谢谢",
    "抱歉",
    "请",
)
_ID = re.compile(
    r"(?<![A-Za-z0-9-])(?:[A-Z]{1,5}-\d{2,}|\d{3,}-\d{3,}(?:-\d+)?|[A-Z0-9]{10,})(?![\w-])"
)
_AMOUNT = re.compile(r"(\d+(?:[.,]\d{1,2})?)\s*(?:USD|EUR|CNY|RMB|元|dollars?|euros?)", re.I)


def judge_block(text: str) -> dict[str, Any] | None:
    """The facts of a judge's prompt, or None when ``text`` is not one."""
    start, end = text.find(JUDGE_OPEN), text.find(JUDGE_CLOSE)
    if start < 0 or end < start:
        return None
    data = orjson.loads(text[start + len(JUDGE_OPEN) : end])
    return data if isinstance(data, dict) else None


def _has(text: str, words: tuple[str, ...]) -> bool:
    folded = text.casefold()
    return any(w in folded for w in words)


def _remedy(demand: str, order: dict[str, Any] | None, reply: dict[str, Any]) -> tuple[int, str]:
    text = f"{reply['reply']}\n{reply['solution']}"
    kinds = {line.get("kind") for line in reply.get("offer") or []}
    if order is None:
        asks = _has(text, _ASKS)
        return (2, "asks for the order") if asks else (0, "no order and no question for it")
    status = str(order.get("status"))
    if reply.get("status") == "handoff":
        return 1, "handed to a person"
    if demand in ("refund", "cancel") and status in ("refunded", "cancelled"):
        if "refund" in kinds:
            return 0, f"refunds an order already {status}"
        return 2, f"no second refund of a {status} order"
    if demand == "cancel" and status in ("shipped", "delivered"):
        if "cancel" in kinds:
            return 0, f"cancels a {status} order"
        return (2, "offers a return instead") if _has(text, _RETURN) else (1, "no way out")
    if demand in kinds or _has(text, _WORDS.get(demand, ())):
        return 2, f"{demand} as asked"
    if demand == "refund" and kinds & {"exchange", "repair"}:
        return 0, "another remedy than the refund asked for"
    return 1, f"no {demand} stated"


def _understood(label: dict[str, Any], order: dict[str, Any] | None, text: str) -> int:
    product = label.get("product") or (order or {}).get("product_name")
    expected = label.get("order_id")
    if not product and not expected:  # nothing to name: understood when it asks which order
        return 2 if _has(text, _ASKS) else 1
    named = [bool(product and product.casefold() in text.casefold())]
    named.append(bool(expected and expected in text) if expected else bool(product))
    return sum(named)


def _grounded(
    order: dict[str, Any] | None, orders: list[dict[str, Any]], text: str
) -> tuple[int, str]:
    every = [o for o in (order, *orders) if o]
    own = {str(o[k]) for o in every for k in ("order_id", "tracking_no") if o.get(k)}
    name = " ".join(str(o.get("product_name") or "") for o in every)
    strange = [t for t in _ID.findall(text) if t not in own and t not in name and not t.isalpha()]
    if strange:
        return 0, f"names {strange[0]}, not in the store"
    limit = float((order or {}).get("amount") or 0)
    for m in _AMOUNT.finditer(text):
        if float(m.group(1).replace(",", ".")) > limit + 0.005:
            return 0, f"states {m.group(0)}, above the order"
    return 2, ""


def judge_responder(data: dict[str, Any]) -> dict[str, Any]:
    """The verdict on the reply in a judge prompt's ``data``."""
    label, order, reply = data.get("label") or {}, data.get("order"), data["reply"]
    text = f"{reply['reply']}\n{reply['solution']}"
    remedy, why = _remedy(str(label.get("demand")), order, reply)
    grounded, invented = _grounded(order, list(data.get("orders") or []), reply["reply"])
    tone = 2 if _has(reply["reply"], _KIND) else 1
    if reply["reply"].count("!") >= 3:
        tone = 0
    comment = "; ".join(c for c in (why, invented) if c)
    return {
        "remedy": remedy,
        "understood": _understood(label, order, text),
        "grounded": grounded,
        "tone": tone,
        "comment": comment or "fits the ticket",
    }
