"""The stand-in as a judge: grades a reply from the facts of the judge's prompt, by fixed rules.

The judge's prompt holds one JSON object between ``<judge>`` and ``</judge>``: the ticket, the
label (demand, order), the order as the store holds it, the help articles shown, and the reply
with its offer. A reply is grounded only when every fact it states is cited by the policy, an
article or the store (the strategy stage's own deterministic check). Each
category is 0 (wrong), 1 (partly) or 2 (right), so a run is repeatable and a test can say which
reply must score what.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from baton_kafka.agents.guards.books import CustomerOrders
from baton_kafka.agents.guards.cited import describe, uncited
from baton_kafka.agents.policy import Policy, default_policy
from baton_kafka.schemas.records import Order

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
# The customer's request read backwards: a cancelled order shipped sooner instead.
_SOONER = (
    "expedit", "express", "faster", "sooner", "priority", "upgraded",
    "加急", "尽快发货", "优先发货", "加快",
)  # fmt: skip
# A remedy the customer said they do not want.
_REFUSED = re.compile(
    r"(?:(?:don't|do not|doesn't|does not|didn't|never)\s+(?:want|need|ask(?:ed)? for)"
    r"|\bnot|instead of|rather than)\s+(?:an?\s+|any\s+)?"
    r"(replacement|exchange|repair|refund|voucher|coupon)"
    r"|(?:不要|不想要?|不需要|不用)(换货|更换|换新|维修|退款|补偿|优惠券)",
    re.I,
)
# Services a reply may invent: invented unless a remedy of the policy names them.
_SERVICES = (
    "lifetime", "warranty extension", "extended warranty", "home visit", "visit your home",
    "technician", "engineer", "on-site", "for life", "extend your warranty",
    "终身", "延保", "上门", "技术人员", "工程师",
)  # fmt: skip
_REMEDY_DEMANDS = ("refund", "exchange", "repair", "compensation", "cancel")
_KINDS = {"cancel": "cancellation"}  # an offer's kind as the policy names its remedy
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


def _kinds(reply: dict[str, Any]) -> set[str]:
    return {str(line.get("kind")) for line in reply.get("offer") or []}


def _backwards(demand: str, ticket: str, reply: dict[str, Any]) -> str:
    """Why the reply does the opposite of what the customer asked, or ""."""
    text = f"{reply['reply']}\n{reply['solution']}"
    if demand == "cancel" and _has(text, _SOONER) and not _has(text, _WORDS["cancel"]):
        return "ships sooner an order the customer asked to cancel"
    refused = {w.casefold() for m in _REFUSED.finditer(ticket) for w in m.groups() if w}
    for kind in sorted(_kinds(reply)):
        words = (kind, *_WORDS.get(kind, ()))
        if any(w in r for r in refused for w in words):
            return f"offers the {kind} the customer refused"
    return ""


def _off_policy(
    demand: str, order: dict[str, Any], reply: dict[str, Any], policy: Policy | None
) -> str:
    """Why an offered remedy is not the policy's for this demand and status, or ""."""
    if demand not in _REMEDY_DEMANDS:  # a question about a remedy under way may confirm it
        return ""
    status = str(order.get("status"))
    for kind in sorted(_kinds(reply)):
        remedy = policy.remedy(_KINDS.get(kind, kind)) if policy else None
        if remedy and not (remedy.allows_demand(demand) and remedy.allows_status(status)):
            return f"offers {kind}, not the policy's remedy for {demand} on a {status} order"
    return ""


def _remedy(
    demand: str, order: dict[str, Any] | None, reply: dict[str, Any], policy: Policy | None
) -> tuple[int, str]:
    text = f"{reply['reply']}\n{reply['solution']}"
    kinds = _kinds(reply)
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
    off = _off_policy(demand, order, reply, policy)
    if off:
        return 0, off
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


def _invented(text: str, policy: Policy | None) -> str:
    """A service the reply promises that no remedy of the policy names, or ""."""
    named = " ".join(r.text for r in policy.remedies.values()).casefold() if policy else ""
    folded = text.casefold()
    return next((w for w in _SERVICES if w in folded and w not in named), "")


def _uncited(data: dict[str, Any], policy: Policy | None) -> str:
    """A fact the reply states that neither the policy, the articles shown nor the store
    states (the strategy stage's own check), or ""."""
    every = [o for o in (data.get("order"), *(data.get("orders") or [])) if o]
    own = list({o.order_id: o for o in (Order.model_validate(x) for x in every)}.values())
    matched = next(
        (o for o in own if data.get("order") and o.order_id == data["order"]["order_id"]), None
    )
    books = CustomerOrders(
        matched=matched,
        orders=own,
        policy=policy or default_policy(),
        message=str((data.get("ticket") or {}).get("text") or ""),
    )
    articles = [f"{a.get('title', '')}\n{a.get('text', '')}" for a in data.get("articles") or []]
    found = uncited(str(data["reply"]["reply"]), books, articles)
    return (
        f"states {describe(found[0])} ({found[0].written.strip()!r}) no source states"
        if found
        else ""
    )


def _grounded(
    order: dict[str, Any] | None, orders: list[dict[str, Any]], text: str, policy: Policy | None
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
    service = _invented(text, policy)
    if service:
        return 0, f"promises {service!r}, which no remedy of the policy names"
    return 2, ""


def judge_responder(data: dict[str, Any], policy: Policy | None = None) -> dict[str, Any]:
    """The verdict on the reply in a judge prompt's ``data``, by the shop's ``policy`` (the one
    the judge's system prompt states; None: no rule that needs it)."""
    label, order, reply = data.get("label") or {}, data.get("order"), data["reply"]
    text = f"{reply['reply']}\n{reply['solution']}"
    demand = str(label.get("demand"))
    remedy, why = _remedy(demand, order, reply, policy)
    understood = _understood(label, order, text)
    backwards = _backwards(demand, str((data.get("ticket") or {}).get("text") or ""), reply)
    if backwards and reply.get("status") != "handoff":
        remedy, understood, why = 0, 0, backwards
    grounded, invented = _grounded(order, list(data.get("orders") or []), reply["reply"], policy)
    if grounded and (unsourced := _uncited(data, policy)):
        grounded, invented = 0, unsourced
    tone = 2 if _has(reply["reply"], _KIND) else 1
    if reply["reply"].count("!") >= 3:
        tone = 0
    comment = "; ".join(c for c in (why, invented) if c)
    return {
        "remedy": remedy,
        "understood": understood,
        "grounded": grounded,
        "tone": tone,
        "comment": comment or "fits the ticket",
    }
