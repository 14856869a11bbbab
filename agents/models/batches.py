"""Model calls sent through the Message Batches API at half price: collected, sent, polled, resumed.

``BatchLLM`` is an ``LLM``: the first ask of a prompt joins the next batch and waits for it.
It is asked through a ``BatchSender``, Claude whose sending hands the request to the batch, so
the request is built, and the batch's message read and costed, by ``AnthropicLLM.ask`` itself,
exactly as a live call's (the stage's validators then run on it in ``agents.asking``); the cost
is then set to the batch price. What a batch cannot settle goes live, through the wrapped
``AnthropicLLM`` at the full price:

- a re-ask (invalid or cut-off output): it needs the first answer, and a second batch round for
  a few tickets would add up to 24 hours to the whole run for a few cents;
- a request the batch did not answer (``errored``, ``expired``, ``canceled``): the live call
  retries transient errors and classifies the rest exactly as a worker would (a dead letter and
  the rules' fallback), so a batch run degrades no ticket a live run would not;
- on resume, a request the saved batch does not hold as it is built now.

``run_batched`` runs coroutines (one per ticket) and sends one batch whenever every unfinished
one waits on it. A ``BatchJournal`` (a JSON file) keeps each batch's id and its custom_id ->
(ticket, stage, request digest) map, so a run stopped while polling resumes the same batches.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import anthropic
from anthropic.types import Message
from pydantic import BaseModel

from baton_kafka.agents.models.batch_journal import BatchFailed, BatchJournal, Saved, digest
from baton_kafka.agents.models.batch_tally import Tally
from baton_kafka.agents.models.claude import AnthropicLLM
from baton_kafka.agents.models.llm import Answer, ModelFailure, Prompt
from baton_kafka.agents.models.prices import batch_price, cost, price_for
from baton_kafka.schemas.records import CallUsage, StageName

T = TypeVar("T", bound=BaseModel)

log = logging.getLogger(__name__)

MAX_REQUESTS = 100_000  # the API's limit per batch


class NotAnswered(Exception):
    """The batch holds no message for a request: ``kind`` is ``errored``, ``expired``,
    ``canceled`` or ``rebuilt`` (on resume, the request is built differently now)."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


# The ticket and stage of the ask a BatchSender is sending (one per task).
_asking: contextvars.ContextVar[tuple[str, StageName]] = contextvars.ContextVar("batch_asking")


class BatchSender(AnthropicLLM):
    """Claude whose ``_send`` hands the request to ``hand_over`` (the batch) instead of the API.

    ``ask`` builds the request and reads, validates and costs the message it gets back
    exactly as for a live call; only the sending differs.
    """

    hand_over: Callable[[dict[str, Any]], Awaitable[Message]] | None = None

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        # A batch's wait is no call's latency: nothing to measure against the live limits.
        self.latency.first = 0

    async def _send(self, model: str, request: dict[str, Any], deadline: float) -> Message:
        # No deadline: a batch takes up to 24 hours, and its wait is no ticket's model time.
        assert self.hand_over is not None, "a BatchSender sends only through a BatchLLM"
        return await self.hand_over(request)

    @property
    def client(self) -> anthropic.AsyncAnthropic:
        """The SDK client the batch calls go through."""
        return self._client


@dataclass
class _Pending:
    params: dict[str, Any]
    ticket_id: str
    stage: StageName
    digest: str
    future: asyncio.Future[Any]
    custom_id: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return (self.ticket_id, self.stage)


class BatchLLM:
    """Claude through the Message Batches API; see the module docstring for what goes live."""

    def __init__(
        self,
        live: AnthropicLLM,
        sender: BatchSender,
        journal: BatchJournal,
        *,
        poll_s: float = 60.0,
        say: Callable[[str], None] = print,
    ) -> None:
        self.live, self.sender = live, sender
        sender.hand_over = self._hand_over
        self.name = live.name
        self.journal = journal
        self.poll_s = poll_s
        self.say = say
        self.tally = Tally()
        self.queued = asyncio.Event()
        self._pending: list[_Pending] = []

    @property
    def waiting(self) -> int:
        """Asks waiting for the next batch."""
        return len(self._pending)

    def model_for(self, stage: StageName) -> str:
        return self.live.model_for(stage)

    async def ask(
        self, prompt: Prompt[T], *, feedback: str | None = None, max_tokens: int | None = None
    ) -> Answer[T]:
        """A first ask waits for the next batch; a re-ask, or what the batch left, goes live."""
        if feedback is not None or (max_tokens or prompt.max_tokens) != prompt.max_tokens:
            return await self._live(prompt, feedback=feedback, max_tokens=max_tokens)
        ticket_id = str(getattr(prompt.facts, "ticket_id", ""))
        token = _asking.set((ticket_id, prompt.stage))
        try:
            answer = await self.sender.ask(prompt)
        except NotAnswered as exc:
            if exc.kind in ("errored", "expired", "canceled"):
                setattr(self.tally, exc.kind, getattr(self.tally, exc.kind) + 1)
            log.info("batch: %s for %s of %s: asking live", exc.kind, prompt.stage, ticket_id)
            return await self._live(prompt)
        except ModelFailure as exc:
            # Invalid, cut off or refused: paid at the batch price, then handled as a live one.
            self.tally.succeeded += 1
            exc.usage = [self._batch_priced(u) for u in exc.usage]
            raise
        finally:
            _asking.reset(token)
        self.tally.succeeded += 1
        return replace(answer, usage=self._batch_priced(answer.usage))

    async def _hand_over(self, params: dict[str, Any]) -> Message:
        ticket_id, stage = _asking.get()
        pending = _Pending(
            params=params,
            ticket_id=ticket_id,
            stage=stage,
            digest=digest(params),
            future=asyncio.get_running_loop().create_future(),
        )
        self._pending.append(pending)
        self.queued.set()
        result = await pending.future
        kind = getattr(result, "type", "rebuilt")
        if kind != "succeeded":
            raise NotAnswered(kind)
        message: Message = result.message
        return message

    async def _live(
        self, prompt: Prompt[T], *, feedback: str | None = None, max_tokens: int | None = None
    ) -> Answer[T]:
        self.tally.live += 1
        try:
            answer = await self.live.ask(prompt, feedback=feedback, max_tokens=max_tokens)
        except ModelFailure as exc:
            self.tally.live_cost_usd += sum(u.cost_usd or 0.0 for u in exc.usage)
            raise
        self.tally.live_cost_usd += answer.usage.cost_usd or 0.0
        return answer

    def _batch_priced(self, usage: CallUsage) -> CallUsage:
        price = price_for(usage.model, self.live.prices)
        at_batch = cost(usage, batch_price(price)) if price is not None else None
        self.tally.batch_cost_usd += at_batch or 0.0
        self.tally.batch_cost_at_live_price_usd += usage.cost_usd or 0.0
        tokens = self.tally.batch_tokens.setdefault(usage.model, {})
        for kind in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
            tokens[kind] = tokens.get(kind, 0) + getattr(usage, kind)
        return usage.model_copy(update={"cost_usd": at_batch})

    async def flush(self) -> None:
        """Send what waits as one batch (or resume the journal's batch of this step), wait for it
        to end and hand every waiting ask its result."""
        pending = sorted(self._pending, key=lambda p: p.key)
        self._pending = []
        self.queued.clear()
        step = self.tally.batches
        self.tally.batches += 1
        saved = self.journal.batches[step] if step < len(self.journal.batches) else None
        try:
            if saved is None:
                sent, saved = pending, await self._create(step, pending)
            else:
                sent = self._match(saved, pending)
            # Nothing of the saved batch is wanted any more: no need to wait for it.
            results = await self._wait(saved) if sent else {}
        except BaseException:
            # The run stops here (the journal keeps the batch to resume); its asks end with it.
            for p in pending:
                p.future.cancel()
            raise
        self.tally.batched += len(sent)
        in_batch = {id(p) for p in sent}
        for p in pending:
            p.future.set_result(results.get(p.custom_id) if id(p) in in_batch else None)

    def _match(self, saved: Saved, pending: Sequence[_Pending]) -> list[_Pending]:
        by_key = {(t, s): (cid, d) for cid, (t, s, d) in saved.requests.items()}
        sent = []
        for p in pending:
            cid, was = by_key.get(p.key, ("", ""))
            if cid and was == p.digest:
                p.custom_id = cid
                sent.append(p)
        self.tally.resumed += 1
        self.tally.rebuilt += len(pending) - len(sent)
        self.say(
            f"batch {saved.id}: resumed ({len(sent)} of {len(pending)} request(s) in it"
            + (
                ", the others are asked live: built differently now)"
                if len(sent) < len(pending)
                else ")"
            )
        )
        return sent

    async def _create(self, step: int, pending: Sequence[_Pending]) -> Saved:
        if len(pending) > MAX_REQUESTS:
            raise BatchFailed(
                f"batch {step + 1} would hold {len(pending)} requests, more than the API's "
                f"{MAX_REQUESTS}: run fewer tickets at once"
            )
        requests = []
        for i, p in enumerate(pending):
            p.custom_id = f"{p.stage}-{i:05d}"
            requests.append({"custom_id": p.custom_id, "params": p.params})
        try:
            batch = await self.sender.client.messages.batches.create(requests=requests)  # type: ignore[arg-type]
        except anthropic.AnthropicError as exc:
            raise BatchFailed(f"cannot create batch {step + 1}: {exc}") from None
        saved = Saved(batch.id, {p.custom_id: (p.ticket_id, p.stage, p.digest) for p in pending})
        self.journal.add(saved)
        self.tally.created += 1
        stages: dict[str, int] = {}
        for p in pending:
            stages[p.stage] = stages.get(p.stage, 0) + 1
        what = ", ".join(f"{n} {s}" for s, n in stages.items())
        self.say(f"batch {batch.id}: created with {len(pending)} request(s) ({what})")
        return saved

    async def _wait(self, saved: Saved) -> dict[str, Any]:
        batches = self.sender.client.messages.batches
        while True:
            try:
                batch = await batches.retrieve(saved.id)
            except (anthropic.APIConnectionError, anthropic.InternalServerError) as exc:
                self.say(f"batch {saved.id}: cannot poll ({exc}); trying again")
                batch = None
            except anthropic.AnthropicError as exc:
                raise BatchFailed(f"cannot poll batch {saved.id}: {exc}") from None
            if batch is not None:
                c = batch.request_counts
                self.say(
                    f"batch {saved.id}: {batch.processing_status}: processing {c.processing}, "
                    f"succeeded {c.succeeded}, errored {c.errored}, expired {c.expired}"
                    + (f", canceled {c.canceled}" if c.canceled else "")
                )
                if batch.processing_status == "ended":
                    break
            await asyncio.sleep(self.poll_s)
        try:
            stream = await batches.results(saved.id)
            return {r.custom_id: r.result async for r in stream}
        except anthropic.AnthropicError as exc:
            raise BatchFailed(f"cannot read the results of batch {saved.id}: {exc}") from None

    async def aclose(self) -> None:
        await self.live.aclose()
        await self.sender.aclose()


async def run_batched(llm: BatchLLM, coroutines: Sequence[Coroutine[Any, Any, Any]]) -> list[Any]:
    """Run ``coroutines`` together; whenever every unfinished one waits on ``llm``'s next batch,
    send it. Returns their results in order; the first exception cancels the rest."""
    tasks = [asyncio.create_task(c) for c in coroutines]
    try:
        while unfinished := [t for t in tasks if not t.done()]:
            if llm.waiting and llm.waiting >= len(unfinished):
                await llm.flush()
                continue
            llm.queued.clear()
            queued = asyncio.create_task(llm.queued.wait())
            try:
                await asyncio.wait([*unfinished, queued], return_when=asyncio.FIRST_COMPLETED)
            finally:
                queued.cancel()
            for t in tasks:
                if t.done() and not t.cancelled() and t.exception() is not None:
                    raise t.exception()  # type: ignore[misc]
        return [t.result() for t in tasks]
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
