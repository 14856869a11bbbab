"""What ``baton bench`` sends: sessions cloned from the demo data, and the smallest prompts."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from baton_kafka.agents.languages import DEFAULT_LANGUAGES, customer_language
from baton_kafka.agents.models.tokens import Counter, Estimator, TokenCount
from baton_kafka.agents.prompts import (
    PROMPT_VERSION,
    Facts,
    OrderFact,
    SessionFacts,
    render_context,
    system_prompt,
)
from baton_kafka.agents.stages import understand
from baton_kafka.schemas.baton import Baton
from baton_kafka.schemas.records import Order, Reply, StageName, Ticket
from baton_kafka.streams.demo import demo_file, read_jsonl
from baton_kafka.streams.runtime.chain import STAGES

FOLLOW_UPS = {
    "en": (
        "Any update on this?",
        "Can you check where things stand with my order?",
        "Thanks. How long will that take?",
        "Please confirm what happens next.",
    ),
    "zh": (
        "有进展了吗？",
        "请帮我查一下订单现在的情况。",
        "谢谢，大概要多久？",
        "请确认下一步怎么处理。",
    ),
}


@dataclass(frozen=True)
class Scenario:
    """One demo session: its customer, that customer's orders and the messages, in order."""

    customer_id: str | None
    orders: tuple[Order, ...]
    texts: tuple[str, ...]

    @property
    def language(self) -> str:
        return customer_language(self.texts[0], DEFAULT_LANGUAGES)

    def text(self, index: int) -> str:
        """The ``index``-th message: the scenario's own, then follow-ups."""
        if index < len(self.texts):
            return self.texts[index]
        follow = FOLLOW_UPS[self.language]
        return follow[(index - len(self.texts)) % len(follow)]


def scenarios() -> list[Scenario]:
    """The demo data's sessions, each with its customer's orders."""
    orders: list[Order] = read_jsonl(demo_file("orders.jsonl"), Order)
    tickets: list[Ticket] = read_jsonl(demo_file("tickets.jsonl"), Ticket)
    by_session: dict[str, list[Ticket]] = {}
    for t in tickets:
        by_session.setdefault(t.session_id, []).append(t)
    return [
        Scenario(
            customer_id=ts[0].customer_id,
            orders=tuple(o for o in orders if o.customer_id == ts[0].customer_id),
            texts=tuple(t.text for t in ts),
        )
        for ts in by_session.values()
    ]


@dataclass
class Workload:
    """Sessions of a run: orders to import and tickets to publish, in publication order."""

    prefix: str
    sessions: int
    per_session: int

    def __post_init__(self) -> None:
        self._scenarios = scenarios()

    def session_id(self, index: int) -> str:
        return f"{self.prefix}-s{index:05d}"

    def _scenario(self, index: int) -> Scenario:
        return self._scenarios[index % len(self._scenarios)]

    def _customer(self, index: int) -> str | None:
        customer = self._scenario(index).customer_id
        return f"{customer}-{self.prefix}{index}" if customer else None

    def orders(self) -> list[Order]:
        """Every session's customer gets private copies of the scenario's orders."""
        out = []
        for i in range(self.sessions):
            customer = self._customer(i)
            for o in self._scenario(i).orders:
                out.append(
                    o.model_copy(
                        update={
                            # No zero padding: the reply check reads digits as amounts.
                            "order_id": f"{o.order_id}-{self.prefix}{i}",
                            "customer_id": customer,
                        }
                    )
                )
        return out

    def ticket(self, session: int, turn: int) -> Ticket:
        """Ticket ``turn`` (0-based) of session ``session``.

        Sessions past ``sessions`` belong to the same customers again, in the same order.
        """
        customer = session % self.sessions
        return Ticket(
            ticket_id=f"{self.prefix}-{session:05d}-{turn:04d}",
            session_id=self.session_id(session),
            customer_id=self._customer(customer),
            text=self._scenario(customer).text(turn),
        )

    def tickets(self) -> list[Ticket]:
        """All tickets in waves: the first of every session, then the second, and so on."""
        return self.take(self.sessions * self.per_session)

    def take(self, count: int) -> list[Ticket]:
        """The first ``count`` tickets of ``rolling()``."""
        return list(itertools.islice(self.rolling(), count))

    def rolling(self) -> Iterator[Ticket]:
        """Sessions without end (for a soak): ``sessions`` conversations at a time.

        Each block of ``sessions`` new sessions, one per customer, runs its ``per_session``
        tickets in waves; then the next block starts, so old sessions go idle and expire
        while the customers come back.
        """
        block = 0
        while True:
            for turn in range(self.per_session):
                for c in range(self.sessions):
                    yield self.ticket(block * self.sessions + c, turn)
            block += 1


@dataclass(frozen=True)
class PromptSize:
    """Tokens of the prompts sent and of the smallest prompts with the same facts.

    ``method`` says how the minimal prompts were measured: ``counted`` by the API's token
    counting, ``estimated``, or ``partly counted`` when the endpoint failed for some.
    """

    sent: int
    sent_context: int
    minimal: int
    minimal_context: int
    cache_read: int
    method: str = "estimated"

    @property
    def ratio(self) -> float | None:
        return self.sent / self.minimal if self.minimal else None

    @property
    def context_ratio(self) -> float | None:
        return self.sent_context / self.minimal_context if self.minimal_context else None

    @property
    def cache_share(self) -> float | None:
        return self.cache_read / self.sent if self.sent else None


def minimal_context(
    stage: StageName, ticket: Ticket, core_problems: Sequence[str], order: Order | None
) -> str:
    """The per-ticket prompt reduced to the message, the session's core problems and the order."""
    facts = Facts(
        stage=stage,
        ticket_id=ticket.ticket_id,
        message=ticket.text,
        session=SessionFacts(core_problems=list(core_problems)),
        orders=[OrderFact.of(order)] if order else [],
    )
    return render_context(facts)


def _method(counts: Sequence[TokenCount]) -> str:
    counted = sum(1 for c in counts if c.method == "counted")
    if counted == len(counts) and counts:
        return "counted"
    return "partly counted" if counted else "estimated"


async def prompt_sizes(
    tickets: Sequence[Ticket],
    replies: Mapping[str, Reply],
    batons: Mapping[str, Baton],
    orders: Mapping[str, Order],
    *,
    counter: Counter | None = None,
    model_for: Callable[[StageName], str] = lambda stage: "",
) -> PromptSize:
    """Sum what the replies report as sent against minimal prompts for the same calls.

    A ticket's minimal prompt per call is the stage's fixed instructions plus the message, the
    core problems the session had before it (and its own, after understand) and the matched
    order; every call a reply's usage counts (re-asks included) needs one. ``counter`` measures
    them (the API's count for Claude), the estimate without one.
    """
    counter = counter or Estimator()
    counts: list[TokenCount] = []

    async def tokens(stage: StageName, system: str, context: str) -> int:
        count = await counter.count(model_for(stage), system, context, version=PROMPT_VERSION)
        counts.append(count)
        return count.tokens

    system = {s.name: await tokens(s.name, system_prompt(s.name), "") for s in STAGES}
    sent = sent_context = minimal = minimal_ctx = cache_read = 0
    for ticket in tickets:
        reply = replies.get(ticket.ticket_id)
        baton = batons.get(ticket.session_id)
        if reply is None or baton is None:
            continue
        usage = reply.usage
        sent += usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        sent_context += usage.input_tokens
        cache_read += usage.cache_read_tokens
        ids = [t.ticket_id for t in baton.tickets]
        mine = ids.index(ticket.ticket_id) if ticket.ticket_id in ids else len(ids)
        order = orders.get(reply.order_id) if reply.order_id else None
        for stage, calls in usage.by_stage.items():
            if stage not in system:
                continue
            known = baton.core_problems[: mine + (0 if stage == understand.NAME else 1)]
            context = await tokens(stage, "", minimal_context(stage, ticket, known, order))
            minimal += calls * (system[stage] + context)
            minimal_ctx += calls * context
    return PromptSize(sent, sent_context, minimal, minimal_ctx, cache_read, _method(counts))
