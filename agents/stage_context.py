"""What a stage function may draw on for one ticket: ``StageContext``."""

from __future__ import annotations

import functools
import inspect
import logging
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar, overload

import orjson
from prometheus_client import Counter
from pydantic import BaseModel

from baton_kafka.agents.asking import ask_with_data, budget_tokens
from baton_kafka.agents.models.llm import LLM
from baton_kafka.agents.orders import OrderSource
from baton_kafka.agents.outcome import Failure
from baton_kafka.agents.policy import Policy
from baton_kafka.agents.stage import Inputs, Stage, carrier
from baton_kafka.schemas.baton import Baton
from baton_kafka.schemas.records import CallUsage, Order, Ticket
from baton_kafka.schemas.stages import StageRecord

R = TypeVar("R", bound=BaseModel)

# What stages count themselves, by stage and event; the worker's /metrics shows it.
STAGE_EVENTS = Counter(
    "baton_stage_events", "Events a stage counted itself.", ["stage", "event"], registry=None
)


@dataclass(frozen=True)
class StageMetrics:
    """A stage's own counters: ``count("vip")`` adds to ``baton_stage_events_total``."""

    stage: str

    def count(self, event: str, n: float = 1.0) -> None:
        """Add ``n`` to the stage's ``event`` counter."""
        STAGE_EVENTS.labels(stage=self.stage, event=event).inc(n)

    def value(self, event: str) -> float:
        """The ``event`` counter's total in this process (0 before the first count)."""
        wanted = {"stage": self.stage, "event": event}
        for metric in STAGE_EVENTS.collect():
            for sample in metric.samples:
                if sample.name.endswith("_total") and sample.labels == wanted:
                    return float(sample.value)
        return 0.0


@dataclass
class StageContext:
    """One ticket's context for a stage function: the session's baton (a copy), the customer's
    orders, the model, the policy, the earlier stages' results, a logger and metrics.

    A function declares it as a parameter annotated ``StageContext``: ``async def
    tag(ticket: Ticket, ctx: StageContext) -> Priority``. Nothing it changes here is kept: a
    stage writes the baton only through its ``update``.
    """

    stage: str
    ticket: Ticket
    input: Any = field(repr=False)
    policy: Policy = field(repr=False)
    model: LLM = field(repr=False)
    log: logging.LoggerAdapter[logging.Logger] = field(repr=False)
    metrics: StageMetrics = field(repr=False)
    _baton: Baton = field(repr=False)
    _record: StageRecord = field(repr=False)
    _source: OrderSource = field(repr=False)
    _reask_limit: int = field(default=1, repr=False)
    _tokens_left: int | None = field(default=None, repr=False)
    calls: list[CallUsage] = field(default_factory=list, repr=False)
    failure: Failure | None = field(default=None, repr=False)

    @classmethod
    def of(cls, stage: str, i: Inputs) -> StageContext:
        """The context of stage ``stage`` for the ticket ``i`` is about."""
        given = i.given if i.given is not None else i.ticket
        log = logging.LoggerAdapter(
            logging.getLogger(f"baton.stage.{stage}"),
            {"ticket_id": i.ticket.ticket_id, "session_id": i.ticket.session_id},
        )
        return cls(
            stage=stage,
            ticket=i.ticket,
            input=given,
            policy=i.policy,
            model=i.llm,
            log=log,
            metrics=StageMetrics(stage),
            _baton=i.baton,
            _record=i.record,
            _source=i.store,
            _reask_limit=i.reask_limit,
            _tokens_left=i.tokens_left,
        )

    @functools.cached_property
    def baton(self) -> Baton:
        """A copy of the session's baton as this stage found it (changing it keeps nothing)."""
        return self._baton.model_copy(deep=True)

    @property
    def results(self) -> Mapping[str, Any]:
        """The shop's earlier stages' results by stage name, as JSON (read-only)."""
        return MappingProxyType(orjson.loads(orjson.dumps(self._record.results)))

    @overload
    def result(self, stage: Stage[R]) -> R | None: ...
    @overload
    def result(self, stage: str, output: type[R]) -> R | None: ...

    def result(self, stage: Stage[R] | str, output: type[R] | None = None) -> R | None:
        """An earlier stage's result as its type (a built-in's or the shop's; None before it
        ran): ``ctx.result(PRIORITY)``, or ``ctx.result("understand", Understanding)``."""
        name = stage if isinstance(stage, str) else stage.name
        wanted = output if isinstance(stage, str) else stage.output
        if wanted is None:
            raise TypeError(f"result({name!r}): say the result's type")
        carried = carrier(name)
        found = getattr(self._record, carried) if carried else None
        if found is None:
            found = self._record.results.get(name)
        if found is None:
            return None
        if isinstance(found, BaseModel):
            found = found.model_dump(mode="json")
        return wanted.model_validate(found)

    async def orders(self, limit: int = 50) -> list[Order]:
        """The ticket's customer's orders, newest first (none without a customer id)."""
        if not self.ticket.customer_id:
            return []
        return await self._source.for_customer(self.ticket.customer_id, limit)

    async def order(self, order_id: str) -> Order | None:
        """One of the customer's orders; None when it is not theirs or does not exist."""
        found = await self._source.get(order_id)
        if found is None or not self.ticket.customer_id:
            return None
        return found if found.customer_id == self.ticket.customer_id else None

    async def ask(
        self, output: type[R], *, prompt: str, data: Any = None, max_tokens: int = 512
    ) -> R | None:
        """Ask the model for ``output`` (``prompt`` as the instructions; the message and
        ``data`` as JSON), validated and re-asked like any stage's answer; None when the model
        is the offline one or failed (the failure then marks the reply degraded, with a dead
        letter). Each call counts against the ticket's budgets like the other stages'."""
        if self.model.name == "offline":
            return None
        if isinstance(data, BaseModel):
            data = data.model_dump(mode="json")
        facts = {"message": self.ticket.text, "input": data}
        spent = sum(budget_tokens(c) for c in self.calls)
        left = None if self._tokens_left is None else max(self._tokens_left - spent, 0)
        asked = await ask_with_data(
            self.model,
            self.stage,
            output,
            system=prompt,
            data=facts,
            max_tokens=max_tokens,
            reask_limit=self._reask_limit,
            tokens_left=left,
        )
        self.calls.extend(asked.calls)
        failure = asked.failure
        # A spent budget is reported once, by the strategy, as for the built-in stages.
        if asked.value is None and failure is not None and failure.reason != "budget_exceeded":
            self.failure = self.failure or failure
        return asked.value


def wants_context(fn: Callable[..., Any]) -> tuple[bool, bool]:
    """Whether ``fn`` takes the declared input and whether it takes a ``StageContext``: its
    parameters after the ticket, by annotation (``(ticket, input)``, ``(ticket, ctx)`` or
    ``(ticket, input, ctx)``)."""
    params = list(inspect.signature(fn).parameters.values())[1:]
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # an annotation that does not resolve: read it as written
        hints = {}

    def is_context(p: inspect.Parameter) -> bool:
        hint = hints.get(p.name, p.annotation)
        if isinstance(hint, str):
            return hint.strip("'\"").rpartition(".")[2] == "StageContext"
        return hint is StageContext

    kinds = [is_context(p) for p in params]
    return (not kinds or not kinds[0]), any(kinds)
