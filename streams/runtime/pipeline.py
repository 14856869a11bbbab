"""The Faust-side wrappers of the stages: decode, check context, call the stage, route, record."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

from agents import memory
from agents.asking import Failure, Outcome, budget_tokens
from agents.lookup import look_up
from agents.models.llm import LLM
from agents.orders import OrderStore, StoreUnavailable
from agents.prompts import EarlierSession
from agents.strategy import decide
from agents.understand import understand
from schemas.baton import Baton, IndexUpdate, InFlight, MemoryIndex
from schemas.codec import InvalidRecord, dumps, parse
from schemas.records import DeadLetter, Order, Reply, StageName, Ticket, utcnow
from schemas.stages import StageRecord
from streams.kafka.topics import TopicNames
from streams.observe.observer import CountingObserver, Observer
from streams.runtime import dead_letters
from streams.runtime.dead_letters import Source
from streams.runtime.scheduler import SessionGate
from streams.settings import Settings

log = logging.getLogger("baton.pipeline")

STAGE_ATTEMPTS = 3
# Batons kept parsed, by the size of their JSON (parsed, a baton takes about five times as
# much): a stage reads its session's baton several times in a row.
PARSED_BATON_BYTES = 1 << 20
Level = str


class Sink(Protocol):
    """Where records go: ``send`` returns once the broker acknowledged the record."""

    async def send(
        self,
        topic: str,
        key: str | None,
        value: bytes,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> None: ...

    async def contains(
        self, topic: str, key: str, since: datetime, match: Callable[[bytes], bool]
    ) -> bool:
        """Whether ``key``'s partition of ``topic`` holds a matching record from ``since`` on."""
        ...


class State(Protocol):
    """The tables: batons by session, the memory index by customer (changelog-backed)."""

    def get(self, table: str, key: str) -> bytes | None: ...

    def put(self, table: str, key: str, value: bytes) -> None: ...

    def items(self, table: str) -> list[tuple[str, bytes]]: ...

    async def put_durably(self, table: str, key: str, value: bytes) -> None:
        """``put``, returning once the changelog record is acknowledged."""
        ...

    def delete(self, table: str, key: str, session_id: str) -> None:
        """Remove ``key``; its tombstone goes to ``session_id``'s partition."""
        ...


@dataclass
class Pipeline:
    """Runs each stage for one record, with the baton, its entry in flight and dead letters."""

    settings: Settings
    llm: LLM
    store: OrderStore
    sink: Sink
    state: State
    gate: SessionGate = field(default_factory=SessionGate)
    observer: Observer = field(default_factory=CountingObserver)

    def __post_init__(self) -> None:
        self.topics = TopicNames.of(self.settings)
        self._parsed: OrderedDict[str, tuple[bytes, Baton]] = OrderedDict()
        self._parsed_bytes = 0

    def baton(self, session_id: str) -> Baton | None:
        """The session's baton from the table (parsed once per version; never mutate it)."""
        raw = self.state.get("batons", session_id)
        if not raw:
            return None
        cached = self._parsed.get(session_id)
        if cached is not None and cached[0] == raw:
            self._parsed.move_to_end(session_id)
            return cached[1]
        baton = Baton.model_validate_json(raw)
        if cached is not None:
            self._parsed_bytes -= len(cached[0])
        self._parsed[session_id] = (raw, baton)
        self._parsed.move_to_end(session_id)
        self._parsed_bytes += len(raw)
        while self._parsed_bytes > PARSED_BATON_BYTES and len(self._parsed) > 1:
            _, (old, _) = self._parsed.popitem(last=False)
            self._parsed_bytes -= len(old)
        return baton

    def _index(self, table: str, key: str) -> MemoryIndex | None:
        raw = self.state.get(table, key)
        return MemoryIndex.model_validate_json(raw) if raw else None

    def _earlier(self, ticket: Ticket) -> list[EarlierSession]:
        """The customer's other sessions (warm memory), most recent first."""
        if not ticket.customer_id:
            return []
        index = self._index("customers", ticket.customer_id)
        return [EarlierSession.of(s) for s in memory.earlier_sessions(index, ticket.session_id)]

    async def apply_index(self, value: bytes | None) -> None:
        """Fold one session summary into the customer's index."""
        try:
            update = parse(IndexUpdate, value)
        except InvalidRecord as exc:
            log.error("ignoring an invalid index update: %s", exc)
            return
        cid, summary = update.customer_id, update.summary
        merged = memory.index_with(self._index("customers", cid), cid, summary)
        self.state.put("customers", cid, dumps(merged))

    async def _send_index(self, baton: Baton, ticket_id: str | None, expired: bool = False) -> None:
        if baton.customer_id:
            update = IndexUpdate(
                customer_id=baton.customer_id,
                summary=memory.summarize(baton, ticket_id, expired=expired),
            )
            await self.sink.send(self.topics.memory_index, baton.customer_id, dumps(update))

    async def expire_sessions(
        self, owned: Callable[[str], bool], now: datetime | None = None
    ) -> int:
        """Tombstone batons idle longer than the TTL.

        The customer index keeps each expired session's summary, so "the order I asked about
        before" still resolves after expiry.
        """
        now = now or utcnow()
        cutoff = now - timedelta(seconds=self.settings.session_ttl_s)
        expired = 0
        for session_id, raw in self.state.items("batons"):
            if not owned(session_id):
                continue
            baton = Baton.model_validate_json(raw)
            if baton.updated_at >= cutoff:
                continue
            await self._send_index(baton, None, expired=True)
            self.state.delete("batons", session_id, session_id)
            expired += 1
        return expired

    def _save(self, baton: Baton) -> None:
        self.state.put("batons", baton.session_id, dumps(baton))

    async def _save_durably(self, baton: Baton) -> None:
        await self.state.put_durably("batons", baton.session_id, dumps(baton))

    def _entry(self, ticket: Ticket) -> InFlight | None:
        return _own_entry(self.baton(ticket.session_id), ticket)

    def _finished(self, ticket: Ticket, entry: InFlight | None) -> bool:
        """The ticket has its reply (sent, or pending in ``entry``): a copy goes no further."""
        if entry is not None and entry.pending:
            return True
        baton = self.baton(ticket.session_id)
        return baton is not None and ticket.ticket_id in baton.answered

    async def _redelivered(
        self, stage: StageName, ticket: Ticket, entry: InFlight | None, topic: str
    ) -> bool:
        """Settle a copy of a ticket the stage has seen before (``entry``); False if it must run.

        A finished ticket's copy stops here and frees the session. A ticket past this stage
        has its output on the next topic already, so the copy stops without freeing the
        session (the original is still on its way). A ticket whose entry is this stage's
        sends the recorded output again: the crash may have come before it was acknowledged.
        """
        if self._finished(ticket, entry):
            self.gate.leave(ticket.session_id, ticket.ticket_id)
        elif entry is None or not entry.reached(stage):
            return False
        elif entry.stage == stage:
            await self.sink.send(topic, ticket.session_id, entry.output.encode())
        self.observer.stage_done(stage, "reused", 0.0)
        return True

    async def dead_letter(self, dl: DeadLetter) -> None:
        """Write a dead letter and wait for the broker's acknowledgement."""
        self.observer.dead_letter(dl.stage, dl.reason)
        key = dl.session_id or dl.ticket_id
        await self.sink.send(self.topics.dead_letters, key, dumps(dl), dead_letters.headers(dl))

    async def intake(self, value: bytes | None, source: Source) -> None:
        """Validate a raw ticket and forward it keyed by session, or dead-letter it."""
        self.observer.record_in("intake")
        try:
            ticket = parse(Ticket, value)
        except InvalidRecord as exc:
            self.observer.stage_done("intake", "invalid", 0.0)
            dl = dead_letters.letter(
                stage="intake",
                reason="invalid_input",
                error=str(exc),
                payload=value or b"",
                source=source,
            )
            await self.dead_letter(dl)
            return
        self.observer.stage_done("intake", "ok", 0.0)
        record = StageRecord(
            ticket=ticket,
            source_topic=source.topic,
            source_partition=source.partition,
            source_offset=source.offset,
        )
        await self.sink.send(self.topics.sessions, ticket.session_id, dumps(record))

    async def run_stage(self, stage: StageName, value: bytes | None, source: Source) -> None:
        """Run ``stage`` on one envelope; every way out is a record, a reply or a dead letter."""
        self.observer.record_in(stage)
        try:
            record = parse(StageRecord, value)
        except InvalidRecord as exc:
            dl = dead_letters.letter(
                stage=stage,
                reason="invalid_input",
                error=str(exc),
                payload=value or b"",
                source=source,
            )
            await self.dead_letter(dl)
            self.observer.stage_done(stage, "invalid", 0.0)
            return
        ticket = record.ticket
        step = {"understand": self._understand, "lookup": self._lookup, "strategy": self._strategy}[
            stage
        ]
        if stage == "understand":
            await self.gate.enter(
                ticket.session_id, ticket.ticket_id, lambda: self._pending(ticket)
            )
        for attempt in range(1, STAGE_ATTEMPTS + 1):
            try:
                await step(record, source)
                return
            except Exception as exc:
                if attempt < STAGE_ATTEMPTS:
                    log.warning(
                        "%s failed on %s (attempt %d): %r", stage, ticket.ticket_id, attempt, exc
                    )
                    await asyncio.sleep(0.2 * 2**attempt)
                    continue
                log.exception("%s gave up on %s", stage, ticket.ticket_id)
                error = f"{type(exc).__name__}: {exc}"
                failure = Failure(
                    reason="stage_error",
                    error=error,
                    payload=value.decode("utf-8", "replace") if value else "",
                    attempts=attempt,
                )
                await self._fail_ticket(record, stage, failure, source)
                self.observer.stage_done(stage, "failed", 0.0)

    @staticmethod
    def _age(reply: Reply) -> float | None:
        """Seconds from the ticket's intake to its reply."""
        total = reply.timings_ms.get("end_to_end")
        return total / 1000 if total is not None else None

    @staticmethod
    def _timings(record: StageRecord, stage: StageName, started: float) -> dict[str, float]:
        timings = {**record.timings_ms, stage: round((time.monotonic() - started) * 1000, 1)}
        timings["end_to_end"] = round((utcnow() - record.received_at).total_seconds() * 1000, 1)
        return timings

    def _pending(self, ticket: Ticket) -> str | None:
        baton = self.baton(ticket.session_id)
        if baton is None:
            return None
        # Only tickets the chain saw start can be unfinished: memories rebuilt from a record's
        # snapshot stand for earlier tickets, have no status and must not hold the session.
        started = {e.ticket_id for e in baton.chain if e.stage == "understand"}
        open_ = [
            t.ticket_id
            for t in baton.tickets
            if t.status is None and t.ticket_id != ticket.ticket_id and t.ticket_id in started
        ]
        return open_[-1] if open_ else None

    def _context(self, stage: StageName, record: StageRecord) -> tuple[Level, Baton]:
        """The context health check: full, partial (from the snapshot) or minimal."""
        ticket = record.ticket
        baton = self.baton(ticket.session_id)
        previous: StageName = "understand" if stage == "lookup" else "lookup"
        if (
            baton is not None
            and baton.version >= record.baton_version
            and any(e.ticket_id == ticket.ticket_id and e.stage == previous for e in baton.chain)
            and any(t.ticket_id == ticket.ticket_id for t in baton.tickets)
        ):
            level, result = "full", baton
        elif record.snapshot.core_problems:
            level = "partial"
            result = memory.from_snapshot(ticket, record.snapshot, record.baton_version)
        else:
            level = "minimal"
            result = memory.new_baton(ticket)
        if level != "full" and record.understanding is not None:
            result = memory.apply_understanding(result, ticket, record.understanding)
        self.observer.context(stage, level)
        return level, result

    def _tokens_left(self, baton: Baton, record: StageRecord) -> int:
        return (
            self.settings.session_token_budget
            - budget_tokens(baton.usage)
            - budget_tokens(record.usage)
        )

    async def _forward(
        self,
        stage: Literal["understand", "lookup"],
        record: StageRecord,
        baton: Baton,
        outcome: Outcome[Any],
        source: Source,
        topic: str,
        started: float,
        **update: Any,
    ) -> None:
        usage = record.usage
        for call in outcome.calls:
            usage = usage.add(call)
        degraded = list(record.degraded)
        handoff = record.handoff
        if outcome.failure is not None:
            dl = dead_letters.from_failure(
                outcome.failure, stage=stage, ticket=record.ticket, source=source
            )
            await self.dead_letter(dl)
            degraded.append(dl.id)
            handoff = handoff or outcome.failure.handoff
        out = record.model_copy(
            update={
                **update,
                "baton_version": baton.version,
                "snapshot": memory.snapshot(baton),
                "usage": usage,
                "degraded": degraded,
                "handoff": handoff,
                "timings_ms": {
                    **record.timings_ms,
                    stage: round((time.monotonic() - started) * 1000, 1),
                },
            }
        )
        data = dumps(out)
        # One changelog record for both: the baton and the output a redelivered copy resends.
        entry = InFlight(ticket_id=record.ticket.ticket_id, stage=stage, output=data.decode())
        self._save(baton.model_copy(update={"in_flight": entry}))
        await self.sink.send(topic, record.ticket.session_id, data)
        self.observer.model_calls(outcome.calls)
        outcome_name = "degraded" if outcome.degraded else "ok"
        self.observer.stage_done(stage, outcome_name, time.monotonic() - started)

    async def _understand(self, record: StageRecord, source: Source) -> None:
        ticket = record.ticket
        if await self._redelivered(
            "understand", ticket, self._entry(ticket), self.topics.understood
        ):
            return
        started = time.monotonic()
        baton = self.baton(ticket.session_id) or memory.new_baton(ticket)
        self.observer.context("understand", "full")
        orders: list[Order] = []
        if ticket.customer_id:
            try:
                orders = await self.store.for_customer(ticket.customer_id)
            except StoreUnavailable:
                orders = []
        outcome = await understand(
            ticket,
            baton,
            self.llm,
            orders=orders,
            earlier=self._earlier(ticket),
            reask_limit=self.settings.reask_limit,
            tokens_left=self._tokens_left(baton, record),
        )
        baton = memory.apply_understanding(baton, ticket, outcome.value)
        await self._forward(
            "understand",
            record,
            baton,
            outcome,
            source,
            self.topics.understood,
            started,
            understanding=outcome.value,
        )

    async def _lookup(self, record: StageRecord, source: Source) -> None:
        ticket = record.ticket
        if await self._redelivered("lookup", ticket, self._entry(ticket), self.topics.matched):
            return
        if record.understanding is None:
            await self._broken(
                record, "lookup", "the record reached lookup without an understanding", source
            )
            return
        started = time.monotonic()
        _, baton = self._context("lookup", record)
        outcome = await look_up(
            ticket,
            record.understanding,
            baton,
            self.store,
            self.llm,
            earlier=self._earlier(ticket),
            reask_limit=self.settings.reask_limit,
            tokens_left=self._tokens_left(baton, record),
        )
        baton = memory.apply_match(baton, ticket, outcome.value)
        await self._forward(
            "lookup",
            record,
            baton,
            outcome,
            source,
            self.topics.matched,
            started,
            match=outcome.value,
        )

    async def _strategy(self, record: StageRecord, source: Source) -> None:
        ticket = record.ticket
        held = self.baton(ticket.session_id)
        entry = _own_entry(held, ticket)
        if held is not None and entry is not None and entry.pending:
            await self._resume_reply(entry, held)
            return
        if await self._redelivered("strategy", ticket, entry, self.topics.replies):
            return
        if record.understanding is None or record.match is None:
            await self._broken(
                record,
                "strategy",
                "the record reached strategy without its understanding and order match",
                source,
            )
            return
        started = time.monotonic()
        _, baton = self._context("strategy", record)
        u, match = record.understanding, record.match
        outcome = await decide(
            ticket,
            baton,
            u,
            match,
            self.llm,
            reask_limit=self.settings.reask_limit,
            tokens_left=self._tokens_left(baton, record),
        )
        draft = outcome.value
        degraded = list(record.degraded)
        handoff = draft.needs_human or record.handoff
        if outcome.failure is not None:
            dl = dead_letters.from_failure(
                outcome.failure, stage="strategy", ticket=ticket, source=source
            )
            await self.dead_letter(dl)
            degraded.append(dl.id)
            handoff = handoff or outcome.failure.handoff
        usage = record.usage
        for call in outcome.calls:
            usage = usage.add(call)
        status = "handoff" if handoff else "degraded" if degraded else "answered"
        timings = self._timings(record, "strategy", started)
        reply = Reply(
            ticket_id=ticket.ticket_id,
            session_id=ticket.session_id,
            customer_id=ticket.customer_id,
            status=status,
            reply=draft.reply,
            solution=draft.solution,
            internal_note=draft.internal_note,
            confidence=draft.confidence,
            order_id=match.order_id,
            product=match.order.product_name if match.order else u.product,
            language=u.language,
            baton_version=baton.version + 1,
            llm=self.llm.name,
            usage=usage,
            timings_ms=timings,
        )
        await self._reply(reply, baton)
        self.observer.model_calls(outcome.calls)
        outcome_name = "degraded" if outcome.degraded else "ok"
        self.observer.stage_done("strategy", outcome_name, time.monotonic() - started)

    async def _reply(self, reply: Reply, baton: Baton) -> None:
        """Publish the reply once; the baton remembers it so a redelivery cannot repeat it.

        The baton first holds the reply as pending (acknowledged before the reply is sent), so
        a crash between sending and recording is resolved from the topic itself.
        """
        data = dumps(reply)
        pending = InFlight(ticket_id=reply.ticket_id, stage="strategy", output=data.decode())
        await self._save_durably(baton.model_copy(update={"in_flight": pending}))
        await self.sink.send(self.topics.replies, reply.session_id, data)
        await self._replied(reply, baton)

    async def _resume_reply(self, entry: InFlight, baton: Baton) -> None:
        """Finish the reply ``baton`` holds as pending: send it unless the topic has it."""
        reply = Reply.model_validate_json(entry.output)
        since = entry.at - timedelta(seconds=5)
        marker = f'"ticket_id":{dumps(reply.ticket_id).decode()}'.encode()

        def is_it(value: bytes) -> bool:
            return marker in value and Reply.model_validate_json(value).ticket_id == reply.ticket_id

        if await self.sink.contains(self.topics.replies, reply.session_id, since, is_it):
            self.observer.stage_done("strategy", "reused", 0.0)
        else:
            await self.sink.send(self.topics.replies, reply.session_id, entry.output.encode())
        await self._replied(reply, baton)

    async def _replied(self, reply: Reply, baton: Baton) -> None:
        baton = memory.apply_reply(baton, reply)
        # Durable before the session moves on: from then on only the baton's answered list
        # keeps a redelivered copy from a second reply.
        await self._save_durably(baton)
        self.observer.reply(reply, self._age(reply))
        self.gate.leave(reply.session_id, reply.ticket_id)
        await self._send_index(baton, reply.ticket_id)

    async def _broken(
        self, record: StageRecord, stage: StageName, error: str, source: Source
    ) -> None:
        self.observer.context(stage, "broken")
        await self._fail_ticket(
            record, stage, Failure(reason="context_broken", error=error), source
        )

    async def _fail_ticket(
        self, record: StageRecord, stage: StageName, failure: Failure, source: Source
    ) -> None:
        """Dead-letter the ticket and still answer it once, as degraded."""
        ticket = record.ticket
        dl = dead_letters.from_failure(failure, stage=stage, ticket=ticket, source=source)
        if not dl.payload:
            dl = dl.model_copy(update={"payload": dumps(record).decode()})
        await self.dead_letter(dl)
        if self._finished(ticket, self._entry(ticket)):
            self.gate.leave(ticket.session_id, ticket.ticket_id)
            return
        baton = self.baton(ticket.session_id) or memory.new_baton(ticket)
        zh = any("\u4e00" <= ch <= "\u9fff" for ch in ticket.text)
        text = (
            "您好，我们暂时无法自动处理您的消息，已转交人工客服，会尽快回复您。"
            if zh
            else "We could not process your message automatically; a colleague will get back "
            "to you shortly."
        )
        reply = Reply(
            ticket_id=ticket.ticket_id,
            session_id=ticket.session_id,
            customer_id=ticket.customer_id,
            status="degraded",
            reply=text,
            solution="Manual follow-up.",
            internal_note=f"{stage} failed ({failure.reason}): {failure.error}; "
            f"dead letter {dl.id}",
            confidence=0.0,
            order_id=record.match.order_id if record.match else None,
            language="zh" if zh else "en",
            baton_version=baton.version + 1,
            llm=self.llm.name,
            usage=record.usage,
            timings_ms=self._timings(record, stage, time.monotonic()),
        )
        await self._reply(reply, baton)


def _own_entry(baton: Baton | None, ticket: Ticket) -> InFlight | None:
    """The baton's entry in flight if it belongs to ``ticket``."""
    entry = baton.in_flight if baton is not None else None
    return entry if entry is not None and entry.ticket_id == ticket.ticket_id else None
