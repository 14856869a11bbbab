"""Scoring of ``baton eval``: which labelled facts a reply carries, invented orders, leaks.

Everything here is pure and deterministic. Texts and terms are compared after NFKC
normalisation and case folding (typographic apostrophes read as ``'``). A term is *found* in a
text when it occurs there; a term that starts with a Latin letter or digit must not be preceded
by one, so ``leak`` finds "leaking" but not "bleak", and ``fix`` not "prefix". Chinese terms
match anywhere.

Facts, per ticket (a fact whose label is null or empty is not labelled and cannot be missed):

- product: the label's ``product`` or one of its ``product_terms`` is found in the reply;
- problem: one of the label's ``problem`` terms (synonyms in both languages) is found in the
  reply;
- demand: one of the demand's words (``demand_terms``: the ``eval`` language pack's
  ``[demand]`` table in English, Chinese, the reply's language and the ticket's) is found in
  the reply or the solution;
- order: ``Reply.order_id`` equals the label's ``order_id`` and, when that is not null, the id
  occurs in the reply as a whole token.

The reply is the customer-facing ``Reply.reply``; the internal note never counts as carrying.
A ticket is *amnesic* when any labelled fact is missing; the amnesia rate is the share of
amnesic tickets. Order-resolution accuracy is the share of tickets whose ``Reply.order_id``
equals the label's ``order_id`` (null included).

Invented orders: ``Reply.order_id``, or an order id in the reply, solution or internal note,
that is not an order of the ticket's customer in the order file. Ids are found as the known ids
of the order file (whole tokens) and as tokens of the shape ``ID_SHAPE`` (capital letters, then
hyphen-separated parts ending in digits, e.g. ``EV-101``), except tokens that occur in the
customer's own product names or tracking numbers.

Leaks: another customer's order id, or a *distinctive term* of another customer's order, found
in the reply, solution or internal note, unless the term also occurs in what this customer
legitimately has: their own tickets' texts, product names and labelled product terms.
Distinctive terms of an order are its full product name, the name's first word when that is a
capitalised Latin word (the brand) or a Chinese run that is more than a product kind, and its
model tokens (Latin tokens with both letters and digits, e.g. ``V12``, ``WH-1000XM5``, but not
measures such as ``1.7L``); a term is kept only when it belongs to the orders of exactly one
customer, and is found only as a whole token (``V8`` is not found in "V80").
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Annotated, Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from baton_kafka.agents import packs
from baton_kafka.agents.languages import DEFAULT_LANGUAGES, HAN, customer_language
from baton_kafka.agents.rules.matching import mentioned_products
from baton_kafka.schemas.records import Order, Reply, Ticket
from baton_kafka.schemas.stages import Demand
from baton_kafka.streams.eval.expected import ExpectedAction

FACTS = ("product", "problem", "demand", "order")

# Mixed English and Chinese text is read in both, whatever its detected language.
ALWAYS_READ = ("en", "zh")

ID_SHAPE = re.compile(r"(?<![A-Za-z0-9-])[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*-[0-9]+(?![A-Za-z0-9-])")
_LATIN_TOKEN = re.compile(r"[A-Za-z0-9]+(?:[.\-][A-Za-z0-9]+)*")
_CJK_RUN = re.compile(f"[{HAN}]+")
_MEASURE = re.compile(r"\d+(?:\.\d+)?(?:l|ml|w|v|kw|mah|wh|inch|in|cm|mm|m|kg|g)", re.I)
_APOSTROPHES = dict.fromkeys(map(ord, "’‘`´"), "'")

Term = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class Label(BaseModel):
    """What a correct reply to one eval ticket must carry."""

    model_config = ConfigDict(extra="forbid")

    phase: int = Field(ge=1, description="Published after every earlier phase was answered.")
    product: Term | None = Field(description="The product the reply must name, or null.")
    product_terms: list[Term] = Field(
        default_factory=list, description="Other ways of naming the product, any one suffices."
    )
    problem: list[Term] = Field(description="Problem terms, any one suffices; [] = unlabelled.")
    demand: Demand
    order_id: str | None = Field(description="The order the reply must resolve, or null.")
    tags: list[Term] = Field(default_factory=list, description="Kinds of case, for breakdowns.")
    final_state: list[ExpectedAction] | None = Field(
        default=None,
        description="The actions the reply to this ticket should leave on the shop's side (its "
        "approved offer lines); [] = nothing should be done; null = not labelled, not scored.",
    )


class Case(BaseModel):
    """One line of an eval file: a ticket plus its label."""

    ticket: Ticket
    label: Label


def _errors(exc: ValidationError, prefix: str) -> str:
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"])
        parts.append(f"{prefix}{where}: {err['msg']}" if where else f"{prefix}{err['msg']}")
    return "; ".join(parts)


def parse_case(line: bytes | str) -> Case:
    """Read one eval line; raise ``ValueError`` saying readably what is wrong."""
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError("an eval line must be a JSON object")
    if "label" not in data:
        raise ValueError("label: Field required")
    label = data.pop("label")
    try:
        ticket = Ticket.model_validate(data)
    except ValidationError as exc:
        raise ValueError(_errors(exc, "")) from None
    try:
        return Case(ticket=ticket, label=Label.model_validate(label))
    except ValidationError as exc:
        raise ValueError(_errors(exc, "label.")) from None


def fold(text: str) -> str:
    """``text`` as compared: NFKC, case-folded, typographic apostrophes made plain."""
    return unicodedata.normalize("NFKC", text).translate(_APOSTROPHES).casefold()


def _latin(ch: str) -> bool:
    return ch.isascii() and ch.isalnum()


def _term_pattern(term: str, whole: bool) -> re.Pattern[str]:
    pattern = re.escape(fold(term))
    if _latin(term[:1]):
        pattern = f"(?<![a-z0-9]){pattern}"
    if whole and _latin(term[-1:]):
        pattern = f"{pattern}(?![a-z0-9])"
    return re.compile(pattern)


def found(text: str, term: str, *, whole: bool = False) -> bool:
    """True when ``term`` occurs in ``text`` under the rules of this module.

    ``whole`` also forbids a Latin letter or digit right after a term that ends in one.
    """
    term = term.strip()
    return bool(term) and _term_pattern(term, whole).search(fold(text)) is not None


def found_terms(text: str, terms: Iterable[str]) -> list[str]:
    """The ``terms`` found in ``text``, in the given order, without repeats."""
    return [t for t in dict.fromkeys(terms) if found(text, t)]


def has_token(text: str, token: str) -> bool:
    """True when ``token`` occurs in ``text`` as a whole token (ids, model names)."""
    pattern = rf"(?<![A-Za-z0-9\-]){re.escape(token)}(?![A-Za-z0-9\-])"
    return re.search(pattern, text) is not None


def _model_tokens(name: str) -> list[str]:
    tokens = _LATIN_TOKEN.findall(unicodedata.normalize("NFKC", name))
    return [
        t
        for t in tokens
        if len(t) >= 2
        and any(c.isdigit() for c in t)
        and any(c.isalpha() for c in t)
        and not _MEASURE.fullmatch(t)
    ]


def _brand(name: str) -> str | None:
    first = unicodedata.normalize("NFKC", name).split()[0] if name.split() else ""
    cjk = _CJK_RUN.match(first)
    if cjk:
        run = cjk.group(0)
        return run if len(run) >= 2 and mentioned_products(run) != [run] else None
    latin = _LATIN_TOKEN.fullmatch(first)
    return first if latin and len(first) >= 2 and first[0].isupper() else None


def order_terms(order: Order) -> set[str]:
    """The candidate distinctive terms of an order (before the one-customer rule)."""
    terms = {order.product_name.strip(), *_model_tokens(order.product_name)}
    brand = _brand(order.product_name)
    if brand:
        terms.add(brand)
    return terms


def _owner(customer_id: str | None, session_id: str) -> str:
    # Tickets without a customer are only related to the rest of their own session.
    return customer_id if customer_id is not None else f"session:{session_id}"


@dataclass(frozen=True)
class World:
    """What the scorer knows: the order file and what each customer legitimately has."""

    orders: Mapping[str, Order]
    own_ids: Mapping[str, frozenset[str]]
    distinctive: Mapping[str, frozenset[str]]
    own_text: Mapping[str, str]
    own_tokens: Mapping[str, str]

    @classmethod
    def build(cls, orders: Sequence[Order], cases: Sequence[Case]) -> World:
        """Index the orders and the customers' own texts."""
        by_customer: dict[str, list[Order]] = defaultdict(list)
        for order in orders:
            by_customer[order.customer_id].append(order)
        owners: dict[str, set[str]] = defaultdict(set)
        for customer, own in by_customer.items():
            for order in own:
                for term in order_terms(order):
                    owners[fold(term)].add(customer)
        distinctive = {
            customer: frozenset(t for o in own for t in order_terms(o) if len(owners[fold(t)]) == 1)
            for customer, own in by_customer.items()
        }
        texts: dict[str, list[str]] = defaultdict(list)
        for case in cases:
            owner = _owner(case.ticket.customer_id, case.ticket.session_id)
            label = case.label
            texts[owner] += [case.ticket.text, *label.product_terms]
            texts[owner] += [label.product] if label.product else []
        for customer, own in by_customer.items():
            texts[customer] += [o.product_name for o in own]
        tokens = {
            c: "\n".join(f"{o.product_name}\n{o.tracking_no or ''}" for o in own)
            for c, own in by_customer.items()
        }
        return cls(
            orders={o.order_id: o for o in orders},
            own_ids={c: frozenset(o.order_id for o in own) for c, own in by_customer.items()},
            distinctive=distinctive,
            own_text={owner: "\n".join(parts) for owner, parts in texts.items()},
            own_tokens=tokens,
        )

    def customer_of(self, order_id: str) -> str | None:
        order = self.orders.get(order_id)
        return order.customer_id if order else None


@dataclass
class TicketScore:
    """The verdict on one reply; ``None`` for a fact that is not labelled."""

    ticket_id: str
    session_id: str
    customer_id: str | None
    phase: int
    language: str
    tags: list[str]
    status: str
    expected_order: str | None
    order_id: str | None
    product: bool | None
    problem: bool | None
    demand: bool
    order: bool
    order_resolved: bool
    invented: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    llm: str = ""
    reply: str = ""
    solution: str = ""
    internal_note: str = ""

    @property
    def missing(self) -> list[str]:
        """The labelled facts the reply does not carry."""
        return [name for name in FACTS if getattr(self, name) is False]

    @property
    def amnesia(self) -> bool:
        return bool(self.missing)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "missing": self.missing, "amnesia": self.amnesia}


def language(text: str, languages: Sequence[str] = DEFAULT_LANGUAGES) -> str:
    """The language ``text`` is answered in: the one detector's, among ``languages``."""
    return customer_language(text, languages)


def demand_terms(demand: str, languages: Iterable[str] = ()) -> list[str]:
    """The words that carry ``demand``: the eval packs' in English, Chinese and ``languages``."""
    terms: list[str] = []
    for lang in dict.fromkeys((*ALWAYS_READ, *languages)):
        words = packs.pack("eval", lang).get("demand", {}).get(demand, [])
        if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
            raise packs.PackError(f"{lang}/eval.toml: demand.{demand} must be a list of words")
        terms += words
    return list(dict.fromkeys(terms))


def demand_carried(demand: str, reply: Reply, ticket_language: str) -> bool:
    """True when the reply or its solution holds a word of ``demand`` in its language."""
    text = f"{reply.reply}\n{reply.solution}"
    written_in = customer_language(reply.reply, packs.languages("eval") or ALWAYS_READ)
    return bool(found_terms(text, demand_terms(demand, (written_in, ticket_language))))


def invented_orders(reply: Reply, customer_id: str | None, world: World) -> list[str]:
    """Order ids in the reply record that are not orders of ``customer_id``."""
    own = world.own_ids.get(customer_id, frozenset()) if customer_id else frozenset()
    texts = "\n".join((reply.reply, reply.solution, reply.internal_note))
    own_tokens = world.own_tokens.get(customer_id, "") if customer_id else ""
    seen = [reply.order_id] if reply.order_id else []
    seen += [oid for oid in world.orders if has_token(texts, oid)]
    seen += [t for t in ID_SHAPE.findall(texts) if not has_token(own_tokens, t)]
    return [oid for oid in dict.fromkeys(seen) if oid not in own]


def leaks(reply: Reply, case: Case, world: World) -> list[str]:
    """Other customers' order ids and distinctive product terms found in the reply record."""
    owner = _owner(case.ticket.customer_id, case.ticket.session_id)
    texts = "\n".join((reply.reply, reply.solution, reply.internal_note))
    own_text = world.own_text.get(owner, case.ticket.text)
    out = [oid for oid in world.orders if world.customer_of(oid) != owner and has_token(texts, oid)]
    for customer, terms in sorted(world.distinctive.items()):
        if customer == owner:
            continue
        out += [
            t
            for t in sorted(terms)
            if found(texts, t, whole=True) and not found(own_text, t, whole=True)
        ]
    return list(dict.fromkeys(out))


def score(
    case: Case, reply: Reply, world: World, languages: Sequence[str] = DEFAULT_LANGUAGES
) -> TicketScore:
    """Score one reply against its case's label (its language among the shop's ``languages``)."""
    label, ticket = case.label, case.ticket
    product_terms = [label.product, *label.product_terms] if label.product else []
    expected = label.order_id
    resolved = reply.order_id == expected
    lang = language(ticket.text, languages)
    return TicketScore(
        ticket_id=ticket.ticket_id,
        session_id=ticket.session_id,
        customer_id=ticket.customer_id,
        phase=label.phase,
        language=lang,
        tags=list(label.tags),
        status=reply.status,
        expected_order=expected,
        order_id=reply.order_id,
        product=bool(found_terms(reply.reply, product_terms)) if product_terms else None,
        problem=bool(found_terms(reply.reply, label.problem)) if label.problem else None,
        demand=demand_carried(label.demand, reply, lang),
        order=resolved and (expected is None or has_token(reply.reply, expected)),
        order_resolved=resolved,
        invented=invented_orders(reply, ticket.customer_id, world),
        leaks=leaks(reply, case, world),
        llm=reply.llm,
        reply=reply.reply,
        solution=reply.solution,
        internal_note=reply.internal_note,
    )


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _group(scores: Sequence[TicketScore]) -> dict[str, Any]:
    amnesic = sum(s.amnesia for s in scores)
    resolved = sum(s.order_resolved for s in scores)
    return {
        "tickets": len(scores),
        "amnesic": amnesic,
        "amnesia_rate": _rate(amnesic, len(scores)),
        "order_accuracy": _rate(resolved, len(scores)),
    }


def summarize(scores: Sequence[TicketScore]) -> dict[str, Any]:
    """The overall figures, per fact, per tag and per language."""
    facts = {}
    for name in FACTS:
        labelled = [s for s in scores if getattr(s, name) is not None]
        carried = sum(bool(getattr(s, name)) for s in labelled)
        facts[name] = {
            "labelled": len(labelled),
            "carried": carried,
            "rate": _rate(carried, len(labelled)),
        }
    tags = sorted({t for s in scores for t in s.tags})
    return {
        **_group(scores),
        "sessions": len({s.session_id for s in scores}),
        "orders_resolved": sum(s.order_resolved for s in scores),
        "facts": facts,
        "invented_orders": sum(len(s.invented) for s in scores),
        "tickets_with_invented_orders": sum(bool(s.invented) for s in scores),
        "leaks": sum(len(s.leaks) for s in scores),
        "tickets_with_leaks": sum(bool(s.leaks) for s in scores),
        "statuses": dict(sorted(Counter(s.status for s in scores).items())),
        "by_tag": {t: _group([s for s in scores if t in s.tags]) for t in tags},
        "by_language": {
            lang: _group([s for s in scores if s.language == lang])
            for lang in sorted({s.language for s in scores})
        },
    }
