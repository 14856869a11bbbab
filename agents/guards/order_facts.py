"""Order facts from the store, not the model's copy: near-miss ids and copies of the handbook's
example ids corrected to the matched order's, a missing id rendered, and carrier and status
claims checked against the matched order."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from baton_kafka.agents.fixed_texts import fixed, fixed_or
from baton_kafka.agents.guards import reading
from baton_kafka.agents.guards.audit import FIELDS
from baton_kafka.agents.guards.books import CustomerOrders
from baton_kafka.agents.guards.drift import addresses
from baton_kafka.agents.guards.identifiers import Identifier, IdKind, identifiers
from baton_kafka.agents.guards.numbers import RUN
from baton_kafka.agents.instructions import EXAMPLE_ORDER_IDS, EXAMPLE_TRACKING_NUMBERS
from baton_kafka.agents.languages import primary
from baton_kafka.schemas.records import Order
from baton_kafka.schemas.stages import StrategyDraft

FACTS = "order facts"
CORRECTED = "An id the model wrote slightly wrong was corrected from the store"

# Languages written without spaces between sentences.
_UNSPACED = frozenset({"zh", "ja", "yue", "wuu"})
# Carriers a reply may name; one that is not the matched order's is a fact the store contradicts.
_CARRIERS = (
    "UPS", "DHL", "FedEx", "USPS", "EMS", "DPD", "GLS", "Royal Mail", "La Poste", "PostNL",
    "顺丰速运", "顺丰", "京东物流", "京东快递", "中通快递", "中通", "圆通速递", "圆通", "韵达",
    "申通", "极兔", "邮政",
)  # fmt: skip
_LATIN_CARRIER = re.compile(
    r"(?<![A-Za-z])(" + "|".join(re.escape(c) for c in _CARRIERS if c.isascii()) + r")(?![A-Za-z])"
)
_CJK_CARRIER = re.compile("|".join(re.escape(c) for c in _CARRIERS if not c.isascii()))
# Sentence ends: ".!?" before a space or the end ("1.7L" is no end), and the CJK stops.
_SENTENCE_END = re.compile(r"(?<=[.!?])(?:\s+|$)|(?<=[。！？；;\n])")
_DIGIT_RUN = re.compile(r"\d+")
# A claim that the parcel has arrived, or that it is still travelling.
_DELIVERED = re.compile(
    r"\b(?:has|have|had|was|were)\s+(?:already\s+)?(?:been\s+)?delivered\b|\bis\s+delivered\b"
    r"|已签收|已送达|已妥投|已经送到",
    re.I,
)
_IN_TRANSIT = re.compile(
    r"\b(?:is|are)\s+(?:still\s+)?(?:in\s+transit|on\s+(?:its|their)\s+way)\b"
    r"|\bhas\s+(?:been\s+)?shipped\b|正在运输|运输中|在途|已发货|配送中",
    re.I,
)
# Conditions and futures: "once it is delivered", "签收后".
_CONDITIONAL = re.compile(
    r"\b(?:once|when|after|as soon as|until|if|unless)\b|签收后|送达后|到货后|收到后|一旦|如果",
    re.I,
)
_NOT_ARRIVED = {"paid", "pending", "shipped", "lost"}
_NOT_TRAVELLING = {"delivered", "cancelled", "refunded", "returned", "paid", "pending"}


def _close(a: str, b: str) -> bool:
    """One edit apart (a substitution, insertion, deletion or two neighbours swapped)."""
    if a == b:
        return False
    if len(a) == len(b):
        diff = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        if len(diff) == 1:
            return True
        i = diff[0]
        return len(diff) == 2 and diff[1] == i + 1 and a[i] == b[i + 1] and a[i + 1] == b[i]
    if abs(len(a) - len(b)) != 1:
        return False
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


def _digits(text: str) -> str:
    return "".join(c for c in text if c.isdigit())


def _longest_run(text: str) -> str:
    return max(_DIGIT_RUN.findall(text), key=len, default="")


def near_miss_of(token: str, orders: Sequence[Order]) -> str | None:
    """The one order id ``token`` is a near-miss of, or None (no such order, or several).

    Tried in turn, the first that fits any order decides: the same id in another case; the
    same digits under another prefix or none ("O-1001", "1001" for "G-1001"); one edit away.
    """
    folded = token.casefold()
    digits = _digits(token)
    tiers = (
        lambda oid: folded == oid.casefold(),
        lambda oid: len(digits) >= 3 and digits in (_digits(oid), _longest_run(oid)),
        lambda oid: _close(folded, oid.casefold()),
    )
    for fits in tiers:
        hits = {o.order_id for o in orders if fits(o.order_id)}
        if hits:
            return hits.pop() if len(hits) == 1 else None
    return None


def _tracking_target(token: str, orders: Sequence[Order]) -> str | None:
    hits = {o.tracking_no for o in orders if o.tracking_no and _close(token, o.tracking_no)}
    return hits.pop() if len(hits) == 1 else None


@dataclass(frozen=True)
class Correction:
    """One id of a text replaced by the store's."""

    field: str
    written: str
    stored: str


_EXAMPLE_IDS: dict[str, IdKind] = {i.casefold(): "order id" for i in EXAMPLE_ORDER_IDS}
_EXAMPLE_IDS |= {t.casefold(): "tracking number" for t in EXAMPLE_TRACKING_NUMBERS}
_EXAMPLE = re.compile(
    r"(?<![A-Za-z0-9-])(?:" + "|".join(re.escape(i) for i in _EXAMPLE_IDS) + r")(?![A-Za-z0-9-])",
    re.I,
)


# Each example id's longest run of ASCII digits: a text without it cannot hold the id in any
# case, so most texts are not searched at all. An id without digits is always searched for.
_EXAMPLE_DIGITS = tuple(max(re.findall("[0-9]+", i), key=len, default="") for i in _EXAMPLE_IDS)


def _example_copies(text: str) -> list[Identifier]:
    """The handbook's example ids written in ``text``, wherever they stand."""
    if not any(run in text for run in _EXAMPLE_DIGITS):
        return []
    return [
        Identifier(_EXAMPLE_IDS[m.group().casefold()], m.group(), m.start(), m.end())
        for m in _EXAMPLE.finditer(text)
    ]


def _target(ident: Identifier, books: CustomerOrders) -> str | None:
    """The store's id ``ident`` stands for: a copied example id is the matched order's (none
    without a match); a near-miss is the one order it can be, only the matched one if any."""
    matched = books.matched
    kind = _EXAMPLE_IDS.get(ident.value.casefold())
    if kind is not None:
        # A placeholder: without a matched order it stands for none (the checks decide).
        if matched is None:
            return None
        return matched.order_id if kind == "order id" else matched.tracking_no
    target = near_miss_of(ident.value, books.own)
    if ident.kind == "tracking number":
        # "单号" is said of both: a tracking number first, else an order id.
        target = _tracking_target(ident.value, books.own) or target
    if matched is not None and target not in (matched.order_id, matched.tracking_no):
        return None
    return target


def _as_written(books: CustomerOrders) -> tuple[set[str], set[str]]:
    """The ids a text may name as written: the store's own (exactly), and the ticket's,
    session's, customer's and the products' model numbers (in any case)."""
    exact = {o.order_id for o in books.own} | {o.tracking_no for o in books.own if o.tracking_no}
    # An id the store writes with its "#" ("#1001", Shopify's names) is read as the digits after it.
    exact |= {x.removeprefix("#") for x in exact}
    keep = {k.casefold() for k in books.known_ids}
    keep |= {t.casefold() for o in books.own for n in o.products() for t in RUN.findall(n)}
    return exact, keep


def _fixes(
    text: str, books: CustomerOrders, written: tuple[set[str], set[str]] | None = None
) -> list[tuple[Identifier, str]]:
    exact, keep = written or _as_written(books)
    found = identifiers(text, books.shapes)
    found += [
        c
        for c in _example_copies(text)
        if not any(i.start < c.end and c.start < i.end for i in found)
    ]
    out = []
    for ident in found:
        if ident.value in exact or ident.value.casefold() in keep:
            continue
        target = _target(ident, books)
        if target is not None:
            out.append((ident, target))
    return out


def _replaced(text: str, fixes: Iterable[tuple[Identifier, str]]) -> str:
    for ident, stored in sorted(fixes, key=lambda f: -f[0].start):
        text = text[: ident.start] + stored + text[ident.end :]
    return text


def facts_line(order: Order, language: str, default: str = "en") -> str:
    """The matched order as the store holds it, in the customer's language (its language
    subtag's, else ``default``'s)."""
    status = fixed_or(f"status_{order.status}", language, str(order.status), default)
    return fixed(
        "order_line",
        language,
        default,
        order_id=order.order_id,
        product=order.product_name,
        status=status,
    )


def corrected(
    draft: StrategyDraft, books: CustomerOrders, language: str, names: Sequence[str] = ()
) -> tuple[StrategyDraft, list[Correction]]:
    """``draft`` with near-miss order ids and tracking numbers replaced by the store's, when one
    of the customer's orders is the only one they can be (the matched one, when there is a
    match), copies of the handbook's example ids by the matched order's, and its id and product
    added to a reply that names no order id at all but addresses the product (one of
    ``names``; a reply off the topic is left for the re-ask); what was replaced."""
    updates: dict[str, str] = {}
    done: list[Correction] = []
    written = _as_written(books)  # the same for each text of the draft
    for name in FIELDS:
        text = getattr(draft, name)
        fixes = _fixes(text, books, written)
        if fixes:
            updates[name] = _replaced(text, fixes)
            done += [Correction(name, i.value, stored) for i, stored in fixes]
    matched = books.matched
    reply = updates.get("reply", draft.reply)
    if matched is not None and matched.order_id not in reply:
        named = [i for i in identifiers(reply, books.shapes) if i.kind == "order id"]
        on_topic = not names or any(addresses(f"{reply}\n{draft.solution}", n) for n in names)
        if not named and on_topic:
            sep = "" if primary(language) in _UNSPACED or reply.endswith((" ", "\n")) else " "
            updates["reply"] = f"{reply}{sep}{facts_line(matched, language)}"
            done.append(Correction("reply", "", matched.order_id))
    if not done:
        return draft, []
    if any(c.written for c in done):
        stored = ", ".join(dict.fromkeys(c.stored for c in done if c.written))
        note = updates.get("internal_note", draft.internal_note)
        updates["internal_note"] = f"{note} {CORRECTED}: {stored}.".strip()
    return draft.model_copy(update=updates), done


def fact_problems(draft: StrategyDraft, books: CustomerOrders) -> list[str]:
    """Carrier and status claims of the reply that the matched order contradicts."""
    order = books.matched
    if order is None:
        return []
    text = reading.normalise(draft.reply)
    problems = carrier_problems(order, text)
    status = str(order.status)
    arrived, travelling = status in _NOT_ARRIVED, status in _NOT_TRAVELLING
    if not (arrived or travelling):  # no claim of either kind contradicts this status
        return list(dict.fromkeys(problems))
    products = order.products()
    for sentence in _SENTENCE_END.split(text):
        # Each test only skips the sentence: the cheap ones first, the condition words last.
        about = order.order_id in sentence or any(n in sentence for n in products)
        if not about:
            continue
        if arrived and _DELIVERED.search(sentence):
            claim = "delivered"
        elif travelling and _IN_TRANSIT.search(sentence):
            claim = "on its way"
        else:
            continue
        if _CONDITIONAL.search(sentence):
            continue
        problems.append(wrong_status(order, claim))
    return list(dict.fromkeys(problems))


def carrier_problems(order: Order, text: str) -> list[str]:
    """The carriers ``text`` (normalised) names that are not ``order``'s, each a problem."""
    problems = []
    own_carrier = (order.carrier or "").casefold()
    named = {m.group() for m in _LATIN_CARRIER.finditer(text)}
    named |= {m.group() for m in _CJK_CARRIER.finditer(text)}
    for carrier in sorted(named):
        c = carrier.casefold()
        if not own_carrier or not (c in own_carrier or own_carrier in c):
            ships = f"ships with {order.carrier}" if order.carrier else "has no carrier yet"
            problems.append(
                f"{FACTS}: the reply names the carrier {carrier}, but order {order.order_id} "
                f"{ships}; name only the carrier in <facts>"
            )
    return problems


def wrong_status(order: Order, claim: str) -> str:
    """The problem of a reply saying ``order`` is ``claim`` ("delivered", "on its way")."""
    return (
        f"{FACTS}: the reply says order {order.order_id} is {claim}, but its status is "
        f"{order.status!s}; state the status in <facts>"
    )
