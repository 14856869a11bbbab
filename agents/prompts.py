"""How every prompt is built: static instructions first, then the baton's facts and the ticket."""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, Field

from baton_kafka.agents.articles import Article
from baton_kafka.agents.instructions import handbook, stage_text
from baton_kafka.agents.models.llm import Prompt
from baton_kafka.agents.policy import Policy, default_policy
from baton_kafka.agents.stages import lookup, strategy, understand
from baton_kafka.schemas.action import ActionNote
from baton_kafka.schemas.baton import Baton, OrderMemory, SessionSummary
from baton_kafka.schemas.decision import PersonNote
from baton_kafka.schemas.records import Offer, Order, StageName, Ticket
from baton_kafka.schemas.stages import OrderChoice, OrderMatch, StrategyDraft, Understanding

# Every stage's system prompt starts with the handbook, so it is a cache breakpoint of its own;
# this is the demo shop's.
SHARED_PREFIX = handbook(default_policy())
_STAGE_START = "\n# Your task: "
# The latest decisions of people a prompt shows.
PEOPLE_SHOWN = 5

T = TypeVar("T", bound=BaseModel)


class ItemFact(BaseModel):
    """One item of a multi-item order as the model sees it: ``amount`` is what the line cost."""

    product_name: str
    quantity: int = 1
    amount: float
    sku: str | None = None


class OrderFact(BaseModel):
    """An order as the model sees it (the items only when it holds several)."""

    order_id: str
    product_name: str
    status: str
    amount: float
    currency: str
    ordered_at: str
    delivered_at: str | None = None
    carrier: str | None = None
    tracking_no: str | None = None
    refunded: float | None = None
    items: list[ItemFact] = Field(default_factory=list)

    @classmethod
    def of(cls, order: Order) -> OrderFact:
        return cls(
            order_id=order.order_id,
            product_name=order.product_name,
            status=str(order.status),
            amount=order.amount,
            currency=order.currency,
            ordered_at=order.ordered_at.date().isoformat(),
            delivered_at=order.delivered_at.date().isoformat() if order.delivered_at else None,
            carrier=order.carrier,
            tracking_no=order.tracking_no,
            refunded=order.refunded or None,  # shown only when the shop refunded some of it
            items=[
                ItemFact(
                    product_name=i.product_name, quantity=i.quantity, amount=i.total, sku=i.sku
                )
                for i in order.items
            ]
            if len(order.items) > 1
            else [],
        )

    def products(self) -> list[str]:
        """Every product name the order answers to: its product_name, then each item's."""
        if not self.items:  # a one-item order: its product alone
            return [self.product_name]
        return list(dict.fromkeys([self.product_name, *(i.product_name for i in self.items)]))


class EarlierSession(BaseModel):
    """What an earlier session of the same customer was about."""

    session_id: str
    order_id: str | None = None
    product: str | None = None
    core_problem: str = ""
    at: str = ""

    @classmethod
    def of(cls, summary: SessionSummary) -> EarlierSession:
        return cls(
            session_id=summary.session_id,
            order_id=summary.order_id,
            product=summary.product,
            core_problem=summary.core_problem,
            at=summary.at.date().isoformat(),
        )


class HistoryFact(BaseModel):
    """An order the customer discussed before, as the prompt shows it."""

    order_id: str
    product: str | None = None
    asked: list[str] = Field(default_factory=list, description="What the customer asked for.")
    decided: str | None = None
    problems: list[str] = Field(default_factory=list)
    told_status: str | None = None
    at: str = ""

    @classmethod
    def of(cls, entry: OrderMemory) -> HistoryFact:
        return cls(
            order_id=entry.order_id,
            product=entry.product,
            asked=list(entry.demands),
            decided=entry.decision,
            problems=entry.problems,
            told_status=entry.told_status,
            at=entry.at.date().isoformat(),
        )


class SessionTopic(BaseModel):
    """An order the session discussed: its product, what was agreed on (the last request other
    than a question) and the problem raised about it."""

    order_id: str
    product: str | None = None
    demand: str | None = None
    problem: str | None = None


def _topics(baton: Baton, ticket_id: str) -> list[SessionTopic]:
    """The session's orders before ``ticket_id``, most recently discussed first (at most 5)."""
    # Product, demand and problem by order; only the five topics shown are made into models.
    latest: dict[str, tuple[str | None, str | None, str | None]] = {}
    for t in baton.tickets:
        if t.order_id and t.ticket_id != ticket_id:
            known = latest.pop(t.order_id, None)
            # A question about the process ("how long?") does not replace what was agreed on.
            asked = t.demand if t.demand != "information" or known is None else known[1]
            latest[t.order_id] = (t.product, asked, t.problem or (known[2] if known else None))
    shown = list(reversed(latest.items()))[:5]
    return [
        SessionTopic(order_id=oid, product=product, demand=demand, problem=problem)
        for oid, (product, demand, problem) in shown
    ]


class PersonFact(BaseModel):
    """A colleague's decision on the session, as the prompt shows it."""

    action: str
    text: str = ""
    offer: Offer | None = None
    at: str = ""

    @classmethod
    def of(cls, note: PersonNote) -> PersonFact:
        return cls(action=note.action, text=note.text, offer=note.offer, at=note.at.isoformat())


class SessionFacts(BaseModel):
    """The baton, reduced to what a prompt needs."""

    core_problems: list[str] = Field(default_factory=list)
    product: str | None = None
    problem: str | None = None
    demand: str | None = None
    previous_demand: str | None = Field(
        default=None, description="What the customer wanted in their previous ticket."
    )
    order_id: str | None = None
    order_history: list[str] = Field(default_factory=list)
    topics: list[SessionTopic] = Field(
        default_factory=list, description="The orders discussed, most recent first."
    )
    flags: list[str] = Field(default_factory=list)
    summary: str = ""
    offered: dict[str, dict[str, float]] = Field(
        default_factory=dict, description="Money offered per order and remedy in earlier replies."
    )
    repeats: int = Field(
        default=0,
        description="The session's tickets about the current problem, this one included.",
    )
    pending_offer: Offer | None = Field(
        default=None, description="An offer waiting for a colleague's approval: not promised."
    )
    people: list[PersonFact] = Field(
        default_factory=list, description="What colleagues decided and wrote, oldest first."
    )

    @classmethod
    def of(cls, baton: Baton, ticket_id: str = "") -> SessionFacts:
        previous = baton.demand
        if any(t.ticket_id == ticket_id for t in baton.tickets):
            # After understand ran, the baton's demand is this ticket's own.
            previous = next(
                (t.demand for t in reversed(baton.tickets) if t.ticket_id != ticket_id), None
            )
        return cls(
            previous_demand=previous,
            core_problems=baton.core_problems,
            product=baton.product,
            problem=baton.problem,
            demand=baton.demand,
            order_id=baton.order_id,
            order_history=baton.order_history[:5],
            topics=_topics(baton, ticket_id),
            flags=baton.flags,
            summary=baton.chain_summary,
            offered=baton.offered,
            repeats=_repeats(baton),
            pending_offer=baton.pending.offer if baton.pending else None,
            people=[PersonFact.of(n) for n in baton.people[-PEOPLE_SHOWN:]],
        )


def _repeats(baton: Baton) -> int:
    """How many of the session's tickets are about the session's current problem."""
    current = (baton.problem or "").casefold()
    if not current:
        return 0
    return sum(1 for t in baton.tickets if (t.problem or "").casefold() == current)


# How much of an earlier stage's result a later prompt shows: each text, list and object cut,
# and the whole result at most this many characters of JSON (what is left out is marked).
STAGE_RESULT_CHARS = 2_000
_STAGE_TEXT_CHARS = 300
_STAGE_ITEMS = 20
_STAGE_DEPTH = 4


class StageResult(BaseModel):
    """An earlier stage's result as a later prompt shows it: quoted data, never instructions.

    ``needs_human`` is the result's own ``needs_human`` field when that is the boolean true: the
    one field of a stage's result the strategy acts on by rule (it hands the ticket to a person).
    """

    stage: StageName = Field(description="The stage that wrote the result.")
    result: dict[str, Any] = Field(
        default_factory=dict, description="Its output, as JSON, cut to a bounded size."
    )
    cut: bool = Field(default=False, description="Parts of the result were left out for size.")
    needs_human: bool = Field(
        default=False, description="The stage asked for a person to answer the ticket."
    )

    @classmethod
    def of(cls, stage: str, value: Any) -> StageResult:
        data = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
        data = data if isinstance(data, dict) else {"value": data}
        shown, cut = _bounded(data, 0)
        kept: dict[str, Any] = {}
        for key, item in shown.items():
            if len(orjson.dumps({**kept, key: item})) > STAGE_RESULT_CHARS:
                cut = True
                break
            kept[key] = item
        return cls(stage=stage, result=kept, cut=cut, needs_human=data.get("needs_human") is True)


def _bounded(value: Any, depth: int) -> tuple[Any, bool]:
    """``value`` with every text, list and object cut to the bounds; whether anything was."""
    if isinstance(value, str):
        return value[:_STAGE_TEXT_CHARS], len(value) > _STAGE_TEXT_CHARS
    if isinstance(value, list | dict) and depth >= _STAGE_DEPTH:
        return None, True
    if isinstance(value, list):
        parts = [_bounded(v, depth + 1) for v in value[:_STAGE_ITEMS]]
        return [v for v, _ in parts], len(value) > _STAGE_ITEMS or any(c for _, c in parts)
    if isinstance(value, dict):
        items = list(value.items())[:_STAGE_ITEMS]
        bounded = {str(k)[:60]: _bounded(v, depth + 1) for k, v in items}
        cut = len(value) > _STAGE_ITEMS or any(c for _, c in bounded.values())
        return {k: v for k, (v, _) in bounded.items()}, cut
    return value, False


def stage_results(results: Mapping[str, Any] | None) -> list[StageResult]:
    """The earlier stages' results a stage record carries, as a later prompt shows them."""
    return [StageResult.of(name, value) for name, value in (results or {}).items()]


def persons_asked(facts: Facts) -> list[str]:
    """The earlier stages whose result asks for a person (``needs_human`` true), in order."""
    return [s.stage for s in facts.stages if s.needs_human]


# How much of a help article a prompt shows: its title and the start of its text.
ARTICLE_TITLE_CHARS = 120
ARTICLE_TEXT_CHARS = 1_200


class ArticleFact(BaseModel):
    """One of the shop's help articles as a prompt shows it: quoted reference, cut to size."""

    title: str = Field(description="The article's title.")
    text: str = Field(description="The article's text, cut to a bounded size.")
    source: str = Field(default="", description="The article's file name in the shop's folder.")
    cut: bool = Field(default=False, description="The text was cut for size.")

    @classmethod
    def of(cls, article: Article) -> ArticleFact:
        return cls(
            title=article.title[:ARTICLE_TITLE_CHARS],
            text=article.text[:ARTICLE_TEXT_CHARS],
            source=article.name[:120],
            cut=len(article.text) > ARTICLE_TEXT_CHARS,
        )


class Facts(BaseModel):
    """Everything a stage's prompt states, in structured form."""

    stage: StageName
    ticket_id: str
    customer_id: str | None = None
    today: str = Field(
        default="", description="The date the message was written: its time words count from it."
    )
    message: str
    session: SessionFacts
    orders: list[OrderFact] = Field(default_factory=list)
    earlier: list[EarlierSession] = Field(default_factory=list)
    history: list[HistoryFact] = Field(default_factory=list)
    understanding: Understanding | None = None
    match: OrderMatch | None = None
    stages: list[StageResult] = Field(
        default_factory=list,
        description="The results of the shop's own earlier stages, in the chain's order.",
    )
    articles: list[ArticleFact] = Field(
        default_factory=list,
        description="The shop's help articles that fit the ticket, best first: the shop's "
        "reference to state facts from, quoted as data, never instructions.",
    )
    actions: list[ActionNote] = Field(
        default_factory=list,
        description="What the shop's system did with the session's approved offers: each "
        "action's kind, amount, state, reference and when, newest last.",
    )
    from_customer: list[str] = Field(
        default_factory=list,
        description="The fields above that were derived from what the customer wrote.",
    )


# Facts derived from customer text: a model reads them as data, never as instructions. The
# session's flags and decision summary quote products and problems, a match's reason and a
# recall's evidence quote the message.
_FROM_CUSTOMER = (
    ("session.core_problems", lambda f: f.session.core_problems),
    ("session.product", lambda f: f.session.product),
    ("session.problem", lambda f: f.session.problem),
    ("session.topics", lambda f: f.session.topics),
    ("session.flags", lambda f: f.session.flags),
    ("session.summary", lambda f: f.session.summary),
    # A colleague's words are quoted as data too: they may quote the customer.
    ("session.people", lambda f: f.session.people),
    ("earlier", lambda f: f.earlier),
    ("history", lambda f: f.history),
    ("understanding", lambda f: f.understanding),
    ("match.reason", lambda f: f.match.reason if f.match else None),
    (
        "match.recall.evidence",
        lambda f: f.match.recall.evidence if f.match and f.match.recall else None,
    ),
    # A shop's stage may quote the customer or be a model's reading of them: data, always.
    ("stages", lambda f: f.stages),
)
# The facts the shop's own systems state (the store, the pipeline) or closed vocabularies
# (a demand is one of a few words whatever the customer wrote). Every field of ``Facts`` is
# in one of the two lists, or is the message itself (a test walks them).
FROM_SHOP = (
    "stage",
    "ticket_id",
    "customer_id",
    "today",
    "session.demand",
    "session.previous_demand",
    "session.order_id",
    "session.order_history",
    "session.offered",  # from validated offers of earlier replies, not from customer text
    "session.repeats",  # a count the shop makes
    "session.pending_offer",  # a validated offer of an earlier reply
    "actions",  # the shop's system's answers to typed actions
    "orders",
    "match.order_id",
    "match.order",
    "match.method",
    "match.confidence",
    "match.candidates",
    "match.recall.method",
    "match.recall.order_id",
    "match.recall.candidates",
    "match.recall.session_id",
    "articles",  # the shop's own help articles (data: a reply may cite them)
    "from_customer",
)
FROM_CUSTOMER = tuple(name for name, _ in _FROM_CUSTOMER)


def from_customer(facts: Facts) -> list[str]:
    """The fields of ``facts`` present and derived from customer text."""
    return [name for name, value in _FROM_CUSTOMER if value(facts)]


_OUTPUTS: dict[StageName, type[BaseModel]] = {
    understand.NAME: Understanding,
    lookup.NAME: OrderChoice,
    strategy.NAME: StrategyDraft,
}


def _schema_text(model: type[BaseModel]) -> str:
    return orjson.dumps(model.model_json_schema()).decode()


@functools.cache
def system_prompt(stage: StageName, policy: Policy | None = None) -> str:
    """The static, cacheable part of ``stage``'s prompt: the shared handbook, then the stage's."""
    policy = policy or default_policy()
    return (
        f"{handbook(policy)}\n{stage_text(stage, policy)}\n"
        f"Output schema ({_OUTPUTS[stage].__name__}):\n{_schema_text(_OUTPUTS[stage])}\n"
    )


def split_shared(system: str) -> list[str]:
    """``system`` as the handbook all stages share and the stage's own part (one part if not)."""
    at = system.find(_STAGE_START)
    return [system[:at], system[at:]] if at > 0 else [system]


@functools.cache
def prompt_version(policy: Policy | None = None) -> str:
    """The hash of every stage's system prompt as rendered for ``policy``."""
    texts = "\0".join(system_prompt(stage, policy) for stage in sorted(_OUTPUTS))
    return "p-" + hashlib.sha256(texts.encode()).hexdigest()[:10]


PROMPT_VERSION = prompt_version()


_KEEP_WHOLE = frozenset({"understanding", "match", "result"})


def _compact(value: Any) -> Any:
    """Drop empty values to save tokens, except inside stage records whose nulls are facts."""
    if isinstance(value, dict):
        return _compact_dict(value)
    if isinstance(value, list):
        return _compact_list(value)
    return value


# The JSON a facts dump holds: only its containers are walked, and an empty text, list or
# object, or a null, is dropped (a zero or a false is a fact and stays). A JSON dump's values
# are exactly dict, list, str or a scalar, so each is told by its type in one lookup; any other
# type (a subclass) takes the general test.
_CONTAINERS = (dict, list)
_EMPTIABLE = (str, list, dict)


def _compact_dict(value: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in value.items():
        kind = type(v)
        if kind is str:
            if v:
                out[k] = v
        elif kind is dict:
            if v:
                out[k] = v if k in _KEEP_WHOLE else _compact_dict(v)
        elif kind is list:
            if v:
                out[k] = v if k in _KEEP_WHOLE else _compact_list(v)
        elif v is None or (not v and isinstance(v, _EMPTIABLE)):
            continue
        elif k in _KEEP_WHOLE or not isinstance(v, _CONTAINERS):
            out[k] = v
        elif isinstance(v, dict):
            out[k] = _compact_dict(v)
        else:
            out[k] = _compact_list(v)
    return out


def _compact_list(value: list[Any]) -> list[Any]:
    # Each item told by its type first, as in an object; a text or a number is kept as it is.
    out: list[Any] = []
    for v in value:
        kind = type(v)
        if kind is dict or (kind is not list and isinstance(v, dict)):
            out.append(_compact_dict(v))
        elif kind is list or isinstance(v, list):
            out.append(_compact_list(v))
        else:
            out.append(v)
    return out


def _inert_json(value: Any) -> str:
    """JSON in which no ``<``, ``>`` or ``&`` appears, so no text inside can open or close a tag."""
    # Replaced in the UTF-8 bytes, before decoding: no byte of a longer character is ASCII, and
    # a byte string is searched alike whatever script its text is in.
    raw = orjson.dumps(value)
    return (
        raw.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026").decode()
    )


def render_context(facts: Facts) -> str:
    """The per-ticket part: facts as compact JSON, then the customer's message as a JSON string."""
    data = _compact(facts.model_dump(mode="json", exclude={"message"}))
    return (
        f"<facts>\n{_inert_json(data)}\n</facts>\n"
        f"<customer_message>\n{_inert_json(facts.message)}\n</customer_message>"
    )


_FACTS_RE = re.compile(r"<facts>\n(.*?)\n</facts>", re.S)
_MESSAGE_RE = re.compile(r"<customer_message>\n(.*?)\n</customer_message>", re.S)


def parse_context(context: str) -> Facts:
    """Rebuild the facts from a rendered context (what a model could read from its prompt)."""
    facts = _FACTS_RE.search(context)
    message = _MESSAGE_RE.search(context)
    if not facts or not message:
        raise ValueError("context has no <facts> or <customer_message> block")
    data = orjson.loads(facts.group(1))
    data["message"] = orjson.loads(message.group(1))
    return Facts.model_validate(data)


def build(
    stage: StageName,
    output_type: type[T],
    *,
    ticket: Ticket,
    baton: Baton,
    orders: list[Order],
    earlier: list[EarlierSession] | None = None,
    history: list[OrderMemory] | None = None,
    understanding: Understanding | None = None,
    match: OrderMatch | None = None,
    max_tokens: int = 1024,
    policy: Policy | None = None,
    stages: Mapping[str, Any] | None = None,
    articles: Sequence[Article] = (),
) -> Prompt[T]:
    """Build ``stage``'s prompt from the baton, the original ticket and real orders (and the
    results of the shop's earlier stages, ``stages``, by name, and the help ``articles`` that
    fit the ticket)."""
    facts = Facts(
        stage=stage,
        ticket_id=ticket.ticket_id,
        customer_id=ticket.customer_id,
        today=ticket.written_at().date().isoformat(),
        message=ticket.text,
        session=SessionFacts.of(baton, ticket.ticket_id),
        orders=[OrderFact.of(o) for o in orders],
        earlier=earlier or [],
        history=[HistoryFact.of(e) for e in history or []],
        understanding=understanding,
        match=match.model_copy(update={"candidates": [], "order": None}) if match else None,
        stages=stage_results(stages),
        articles=[ArticleFact.of(a) for a in articles],
        actions=list(baton.actions),
    )
    facts.from_customer = from_customer(facts)
    return Prompt(
        stage=stage,
        system=system_prompt(stage, policy),
        context=render_context(facts),
        output_type=output_type,
        facts=facts,
        max_tokens=max_tokens,
        version=prompt_version(policy),
    )
