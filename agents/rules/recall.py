"""References to an order discussed before, resolved against the customer's history.

"The one I sent for repair", "还没发货的那个", "last week's order": the message names no
product, or one that fits several orders, but says what was done about the order, its status
or when it was bought or discussed. Each clue narrows the customer's real orders; one left is
the order referred to, several left mean the customer is asked, never answered with a guess.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Literal

from baton_kafka.agents.rules.matching import find_product, normalize, product_score
from baton_kafka.agents.rules.phrases import PROBLEM_RX, problem_key
from baton_kafka.agents.rules.time_hints import extract_time_hint, time_score
from baton_kafka.schemas.baton import OrderMemory
from baton_kafka.schemas.records import Order
from baton_kafka.schemas.stages import OrderCandidate, Recall, RecallMethod

ASK_AMONG = 3
# Product scores this close name the product equally well: "the shoes" fits both pairs.
ALIKE = 0.01
_EN = r"(?<![a-z0-9])(?:{})(?![a-z0-9])"
_NOT = r"(?:not|never|hasn t|hasnt|haven t|havent|didn t|didnt|isn t|isnt|wasn t|wasnt|still not)"
_THING = r"(?:one|ones|order|item|thing|parcel|package|pair|purchase)"


def _rx(en: str, zh: str) -> re.Pattern[str]:
    return re.compile(f"{_EN.format(en)}|{zh}")


# What was done or asked about the order: the demands (or the store statuses) it points at.
_DONE: tuple[tuple[re.Pattern[str], frozenset[str]], ...] = (
    (
        _rx(
            r"(?:sent|send|took|shipped|mailed|brought|posted|returned|dropped off|handed in)"
            r"\b(?:\s+\w+){0,4}\s+(?:for|in for|to be|off"
            r" for|in to be|away for)\s+(?:a\s+|the\s+)?(?:repair|repairs|repaired|fixing|fixed)"
            r"|(?:in|out) for repairs?|being (?:repaired|fixed)|the repair|my repair"
            r"|repair (?:job|order|request|ticket)|repaired yet",
            r"送修|寄修|返修|拿去修|送去修|寄去修|送去维修|寄回维修|维修中|修理中|在修|修的那",
        ),
        frozenset({"repair"}),
    ),
    (
        _rx(
            r"the refund|my refund|refunded|(?:asked|applied|requested|filed)(?: \w+)? for"
            r"(?: a| the)? refund|refund (?:request|i asked|i requested)"
            r"|(?:returned|returning|sent back|sending back)(?: \w+){0,3} for(?: a)? refund",
            r"退款的|申请退款|申请了退款|退了款|退款那|要退款的|退款申请|退钱的|钱[^，。？！,.?!]{0,5}退",
        ),
        frozenset({"refund", "refunded", "returned"}),
    ),
    (
        _rx(
            r"(?:i|we) (?:returned|sent back|send back|shipped back|mailed back)"
            r"|(?:the|my) return(?! (?:label|shipping|postage|address|policy|form|fee|cost|process"
            r"|window|period|instructions))|returned(?: one| item| order| pair)"
            r"|the one (?:i|we) (?:sent|shipped) back",
            r"退货的|退回的|退掉的|退了的|寄回去的|退货那|退的那",
        ),
        frozenset({"refund", "exchange", "returned", "refunded"}),
    ),
    (
        _rx(
            r"(?:i|we) (?:exchanged|swapped)|the exchange|my exchange|the replacement"
            r"|(?:getting|being|having (?:it|them)|got (?:it|them)) replaced"
            r"|exchange (?:request|i asked)|(?:asked|applied) (?:\w+ )?(?:to|for)(?: an)? exchange",
            r"换货的|换了的|换的那|换货那|申请换货|要换的",
        ),
        frozenset({"exchange"}),
    ),
    (
        _rx(
            r"(?:i|we) cancel+ed|the cancel+ation|cancel+ed (?:one|order)|(?:asked|wanted|tried) to"
            r" cancel",
            r"取消的那|取消了的|要取消的|取消那",
        ),
        frozenset({"cancel", "cancelled"}),
    ),
    (
        _rx(r"(?:i|we) complained|my complaint|the complaint", r"投诉的那|投诉过的"),
        frozenset({"complaint"}),
    ),
)

# The order's status in the store today.
_STATUS: tuple[tuple[re.Pattern[str], frozenset[str]], ...] = (
    (
        _rx(
            rf"{_NOT}(?: been| yet)? (?:shipped|dispatched|sent out|sent)|not (?:yet )?shipped"
            r"|yet to (?:ship|be shipped)|still (?:pending|processing)",
            r"还没发货|没发货|未发货|还没有发货|没有发货|还没寄出|没寄出|未寄出|还没发出",
        ),
        frozenset({"pending", "paid"}),
    ),
    (
        _rx(
            r"on (?:its|the|their) way|in transit|still coming|out for delivery|being shipped",
            r"在路上|运输中|派送中|还在运|还在跑|在途",
        ),
        frozenset({"shipped"}),
    ),
    (
        _rx(
            r"(?:got|get|been|was|went) (?:lost|missing)|(?:managed|managing) to lose|lost (?:it|"
            r"the (?:parcel|package|order))|lost in (?:the )?(?:post|mail|transit)",
            r"丢了|丢件|弄丢|寄丢",
        ),
        frozenset({"lost"}),
    ),
    (
        _rx(
            rf"{_NOT}(?: yet)? (?:arrived|come|turned up|shown up|been delivered|delivered)"
            r"|(?:hasn t|has not|haven t|have not) (?:arrived|come)",
            r"还没到|没到的|还没收到|没收到的",
        ),
        frozenset({"shipped", "lost", "paid", "pending"}),
    ),
    (
        _rx(
            rf"{_THING} (?:that|which) (?:was |were |has |have |had )?(?:already )?"
            r"(?:delivered|arrived|came)|(?:already|just) (?:been )?(?:delivered|arrived)",
            r"已签收|签收的|收到的那|已经到了的|到了的那",
        ),
        frozenset({"delivered"}),
    ),
)

# Words that point back at something ("the one ...", "那个"): a time alone is a clue only
# next to one of them, so "my kettle broke last week" does not become a reference.
_POINTER = _rx(
    rf"the {_THING}|that {_THING}|(?:s|week|month|year|day)s? {_THING}|those"
    r"|(?:i|we) (?:asked|wrote|talked) about"
    r"|(?:bought|ordered|got)",
    r"那个|那单|那件|那台|那双|那笔|那次|问的|买的|咨询的|订的",
)


_TALKED = _rx(
    r"(?:i|we) (?:asked|wrote|talked|chatted|spoke|contacted you) about|(?:asked|talked) about",
    r"问的|问过的|咨询的|咨询过的|聊的|说的那",
)
_BOUGHT = _rx(
    r"(?:i|we) (?:bought|ordered|purchased|got)|(?:week|month|year|day)s? (?:order|purchase)",
    r"买的|订的|下单的|购买的|的订单",
)


@dataclass(frozen=True)
class Clues:
    """What a message says about the order it means, each with the words it was read from."""

    done: frozenset[str] = frozenset()
    done_words: tuple[str, ...] = ()
    status: frozenset[str] = frozenset()
    status_words: tuple[str, ...] = ()
    time_hint: str | None = None
    time_of: Literal["talk", "purchase", "either"] = "either"
    problem: str | None = None
    problem_words: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.done or self.status or self.time_hint or self.problem)

    @property
    def points(self) -> bool:
        """Says what was done about the order or its status (more than a time)."""
        return bool(self.done or self.status)


def _read(
    table: Iterable[tuple[re.Pattern[str], frozenset[str]]], norm: str
) -> tuple[frozenset[str], tuple[str, ...]]:
    """The kinds every matching clue allows ("returned ... for a refund": a refund), else any."""
    sets: list[frozenset[str]] = []
    words: list[str] = []
    for rx, kind in table:
        found = rx.search(norm)
        if found:
            sets.append(kind)
            words.append(found.group(0).strip())
    if not sets:
        return frozenset(), ()
    common = frozenset.intersection(*sets)
    return common or frozenset.union(*sets), tuple(words)


# A ticket's text is read for clues by several stages in a row; what it gives never changes.
@functools.lru_cache(maxsize=256)
def clues(message: str) -> Clues:
    """The clues a message gives about an order it refers back to."""
    norm = normalize(message)
    done, done_words = _read(_DONE, norm)
    status, status_words = _read(_STATUS, norm)
    hint = extract_time_hint(message)
    if hint and not _POINTER.search(norm):
        hint = None
    talked, bought = bool(_TALKED.search(norm)), bool(_BOUGHT.search(norm))
    of: Literal["talk", "purchase", "either"] = (
        "talk" if talked and not bought else "purchase" if bought and not talked else "either"
    )
    key = next(((k, rx) for k, rx in PROBLEM_RX.items() if rx.search(norm)), None)
    problem, problem_words = (key[0], (key[1].search(norm).group(0),)) if key else (None, ())  # type: ignore[union-attr]
    return Clues(done, done_words, status, status_words, hint, of, problem, problem_words)


@dataclass(frozen=True)
class Known:
    """A real order of the customer as the store has it."""

    order_id: str
    product_name: str
    status: str
    ordered_at: datetime


def _fits_done(entry: OrderMemory | None, order: Known, done: frozenset[str]) -> bool:
    asked: set[str] = set(entry.demands) if entry else set()
    if entry and entry.decision:
        asked.add(entry.decision)
    return bool(asked & done) or order.status in done


def _when(entry: OrderMemory | None, order: Known, found: Clues, now: datetime) -> float:
    hint = found.time_hint
    bought = time_score(hint, order.ordered_at, now) if found.time_of != "talk" else 0.0
    talked = time_score(hint, entry.at, now) if entry and found.time_of != "purchase" else 0.0
    return max(bought, talked)


def _raised(entry: OrderMemory | None, problem: str) -> bool:
    return bool(entry) and any(problem_key(p) == problem for p in entry.problems)  # type: ignore[union-attr]


def applies(found: Clues, product: str | None, refers: bool, alike: int) -> bool:
    """Whether to resolve by clues: no product named, a reference back, or a product that fits
    several orders with a clue of what was done or their status (a product and a time alone
    are left to the ranking)."""
    return bool(found) and (not product or refers or (alike > 1 and found.points))


def resolve(
    message: str,
    product: str | None,
    history: list[OrderMemory],
    orders: list[Known],
    *,
    current: str | None = None,
    now: datetime | None = None,
) -> Recall | None:
    """The order the message refers back to, by clue; ``ask`` when several fit; None: no clue.

    Only the customer's real ``orders`` can be chosen; ``history`` says what was discussed
    about them. Clues apply in turn (what was done, status, a problem raised before, time,
    product words); a clue no
    order fits means the message is not about this history, and nothing is resolved.
    """
    found = clues(message)
    if not found or not orders:
        return None
    now = now or datetime.now(UTC)
    entries = {e.order_id: e for e in history}
    pool = sorted(orders, key=lambda o: (o.order_id in entries, o.ordered_at), reverse=True)
    steps: list[tuple[RecallMethod, list[Known]]] = []
    evidence: list[str] = []
    if found.done:
        pool = [o for o in pool if _fits_done(entries.get(o.order_id), o, found.done)]
        steps.append(("demand", pool))
        evidence.extend(found.done_words)
    if found.status:
        pool = [o for o in pool if o.status in found.status]
        steps.append(("status", pool))
        evidence.extend(found.status_words)
    # A problem alone points back only away from the session's order: "it still leaks"
    # continues the current topic, "the pair with the split sole" returns to another.
    alone = not (found.done or found.status or found.time_hint)
    if found.problem and alone and _raised(entries.get(current or ""), found.problem):
        return None
    if found.problem:
        raised = [o for o in pool if _raised(entries.get(o.order_id), found.problem)]
        if raised or not (found.done or found.status or found.time_hint):
            pool = raised
            steps.append(("problem", pool))
            evidence.extend(found.problem_words)
    if found.time_hint and pool:
        best = max(_when(entries.get(o.order_id), o, found, now) for o in pool)
        if best >= 0.7:
            pool = [o for o in pool if _when(entries.get(o.order_id), o, found, now) == best]
        steps.append(("time", pool))
        evidence.append(found.time_hint)
    if product and pool:
        scores = {o.order_id: product_score(product, o.product_name) for o in pool}
        best = max(scores.values())
        pool = [o for o in pool if best >= 0.5 and scores[o.order_id] >= best - ALIKE]
        steps.append(("product", pool))
        evidence.append(product)
    if not pool:
        return None
    if len(pool) > 1:
        discussed = [o for o in pool if o.order_id in entries]
        if current in {o.order_id for o in pool}:
            pool = [o for o in pool if o.order_id == current]
        elif len(discussed) == 1:
            pool = discussed  # what the customer talked about before is what they point at
    if len(pool) > 1:
        fitting = [
            OrderCandidate(
                order_id=o.order_id,
                product_name=o.product_name,
                status=o.status,
                ordered_at=o.ordered_at,
                score=1.0,
            )
            for o in pool[:ASK_AMONG]
        ]
        return Recall(method="ask", evidence=evidence, order_id=None, candidates=fitting)
    chosen = pool[0]
    # The clue that left one order decided; a tie broken by the session's order or by what
    # was discussed is credited to the last clue read.
    method = next((m for m, kept in steps if len(kept) == 1), steps[-1][0])
    entry = entries.get(chosen.order_id)
    return Recall(
        method=method,
        evidence=evidence,
        order_id=chosen.order_id,
        session_id=entry.session_id if entry else None,
    )


def known(order_id: str, product_name: str, status: str, ordered_at: str | datetime) -> Known:
    """A store order as the resolver reads it (``ordered_at`` as a datetime or ISO text)."""
    if isinstance(ordered_at, str):
        day = date.fromisoformat(ordered_at[:10])
        ordered_at = datetime.combine(day, datetime.min.time(), UTC)
    return Known(order_id, product_name, str(status), ordered_at)


def explain(recall: Recall) -> str:
    """One line for the chain: the method, the evidence and the order (or the candidates)."""
    words = ", ".join(repr(w) for w in recall.evidence)
    if recall.order_id is None:
        names = ", ".join(f"{c.order_id} ({c.product_name})" for c in recall.candidates)
        return f"several orders fit {words}: {names}; the customer is asked which one"
    return f"recalled by {recall.method} from {words}: order {recall.order_id}"


def relevant(
    message: str,
    history: list[OrderMemory],
    orders: list[Known],
    *,
    current: str | None = None,
    now: datetime | None = None,
) -> list[OrderMemory]:
    """The history entries a prompt needs: the order the message points back to, or the ones
    that fit equally; none when it points back at nothing."""
    if not history:
        return []  # whatever the message points back to, no entry of it can be shown
    pointed = resolved(message, history, orders, current=current, now=now)
    if pointed is not None:
        return pointed
    by_id = {e.order_id: e for e in history}
    # A product discussed before, named again ("and the tumbler?"): what was asked about it.
    others = [o for o in orders if o.order_id in by_id and o.order_id != current]
    if not others:
        return []  # no product to name again: the message need not be read for one
    named = find_product(message, [o.product_name for o in others])
    return [by_id[o.order_id] for o in others if o.product_name == named][:1]


def resolved(
    message: str,
    history: list[OrderMemory],
    orders: list[Known],
    *,
    current: str | None = None,
    now: datetime | None = None,
) -> list[OrderMemory] | None:
    """The history entries of the order(s) ``resolve`` finds the message pointing back to;
    None when it finds none."""
    found = resolve(message, None, history, orders, current=current, now=now)
    if found is None:
        return None
    by_id = {e.order_id: e for e in history}
    ids = [found.order_id] if found.order_id else [c.order_id for c in found.candidates]
    return [by_id[i] for i in ids if i in by_id]


def known_orders(orders: Iterable[Order]) -> list[Known]:
    """The store's orders as the resolver reads them."""
    return [known(o.order_id, o.product_name, str(o.status), o.ordered_at) for o in orders]
