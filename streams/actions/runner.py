"""The worker's side of actions: each one read off its topic, checked against the session it
claims to come from, recorded, carried out; the unfinished ones swept again."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from baton_kafka.agents.orders import OrderSource, StoreUnavailable
from baton_kafka.schemas.action import Action, LedgerEntry
from baton_kafka.schemas.codec import InvalidRecord, dumps, parse
from baton_kafka.schemas.framing import unframe
from baton_kafka.schemas.records import DeadLetter, OfferLine, Reply, StageName
from baton_kafka.streams.actions.executor import Executor
from baton_kafka.streams.actions.follow_up import tells
from baton_kafka.streams.actions.guard import Guard
from baton_kafka.streams.actions.ledger import Ledger
from baton_kafka.streams.actions.reconcile import carry_out
from baton_kafka.streams.runtime.records import dead_letters
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.runtime.session.batons import BatonStore

log = logging.getLogger("baton.actions")

STAGE: StageName = "act"


class Unverified(Exception):
    """The session's baton is not here (yet): the action waits, it is not refused."""


@dataclass
class Runner:
    """Carries out the actions of the sessions this worker owns, each at most once."""

    executor: Executor
    ledger: Ledger
    batons: BatonStore
    dead_letter: Callable[[DeadLetter, Source], Awaitable[None]]
    # The order source: an action's money is checked against what the order still allows.
    store: OrderSource | None = None
    backoff_s: float = 0.2
    # Tells the customer an action ended (follow_up.Teller); None: the ledger only.
    tell: Callable[[LedgerEntry], Awaitable[object]] | None = None
    # Records it in the session's baton for the next ticket's prompt (follow_up.Noting).
    note: Callable[[LedgerEntry], Awaitable[None]] | None = None
    # The approving decision's signature checked again, and the daily caps (guard.Guard).
    guard: Guard | None = None
    # One telling at a time: the topic, a sweep and a webhook may end the same action at once.
    _telling: asyncio.Lock = field(default_factory=asyncio.Lock, init=False, repr=False)

    async def handle(self, value: bytes | None, source: Source) -> LedgerEntry | None:
        """Record and carry out one action of the topic; an invalid one is a dead letter."""
        try:
            action = parse(Action, unframe(value)[1] if value else value)
        except (InvalidRecord, ValueError) as exc:
            await self._refuse(value, "invalid_input", str(exc), source)
            return None
        if source.key is not None and source.key != action.session_id:
            error = f"keyed {source.key!r}, not by its session {action.session_id!r}"
            await self._refuse(value, "untrusted_record", error, source)
            return None
        entry = self.ledger.get(action)
        if entry is None:
            entry = LedgerEntry.of(action)
            try:
                problem = await self.refused(action)
            except Unverified as exc:
                entry = entry.model_copy(update={"detail": str(exc)})
                await self.ledger.save(entry)
                return entry
            if problem is not None:
                # Never sent: a person sees why, in the ledger and the dead letter.
                entry = entry.model_copy(update={"state": "needs_person", "detail": problem})
                await self.ledger.save(entry)
                await self._refuse(value, "untrusted_record", problem, source)
                return entry
            if (over := self.capped(action)) is not None:
                return await self._over_cap(entry, over, value, source)
            # Saved with no wait since the cap was counted: the next action counts this one.
            await self.ledger.save(entry)
        done = await carry_out(
            self.executor, action, entry, self.ledger.save, backoff_s=self.backoff_s
        )
        return await self.told(done)

    async def told(self, entry: LedgerEntry) -> LedgerEntry:
        """Tell the customer an action that was sent has ended, once it is final; recorded in
        the ledger after the follow-up is acknowledged (a crash in between tells again)."""
        if self.tell is None or not tells(entry):
            return entry
        async with self._telling:
            # As the ledger holds it now: another path may have told it meanwhile.
            entry = self.ledger.get(entry.action) or entry
            if not tells(entry):
                return entry
            await self.tell(entry)
            if self.note is not None:
                await self.note(entry)
            entry = entry.model_copy(update={"told": True})
            await self.ledger.save(entry)
        return entry

    def unauthorised(self, action: Action) -> str | None:
        """Why the session does not back ``action`` (its line is not in an approved offer its
        baton holds for that ticket), or None; ``Unverified`` when the baton is not here."""
        baton = self.batons.get(action.session_id)
        if baton is None:
            raise Unverified(f"session {action.session_id} is not on this worker yet")
        line = action.offer_line()
        promised: list[OfferLine] = []
        memory = next((t for t in baton.tickets if t.ticket_id == action.ticket_id), None)
        if memory is not None:
            promised = list(memory.offer)
        entry = baton.in_flight
        if entry is not None and entry.reply and entry.ticket_id == action.ticket_id:
            # Written with the reply, before the baton records it as answered.
            pending = Reply.model_validate_json(entry.output)
            if pending.offer is not None and pending.offer.state == "approved":
                promised += pending.offer.lines
        if action.decision_id is not None and not any(
            n.decision_id == action.decision_id for n in baton.people
        ):
            return f"decision {action.decision_id} was not applied to the session"
        if self.guard is not None and (unsigned := self.guard.unsigned(action, baton)):
            return unsigned
        if line not in promised:
            return (
                f"line {action.line} ({action.kind} for {action.order_id}) is not in an "
                "approved offer of the session"
            )
        return None

    async def refused(self, action: Action) -> str | None:
        """Why ``action`` must not be carried out (not backed by the session, or more money
        than the order still allows), or None; ``Unverified`` when it cannot be told now."""
        return self.unauthorised(action) or await self.too_much(action)

    async def too_much(self, action: Action) -> str | None:
        """Why the action's money exceeds what its order allows: paid (the item's amount for
        an item), less what the store shows refunded, less the session's other actions on the
        order not failed (in flight or done), or None."""
        if not action.amount or self.store is None:
            return None
        try:
            order = await self.store.get(action.order_id)
        except StoreUnavailable as exc:
            raise Unverified(f"the order store did not answer: {exc}") from None
        if order is None:
            return f"order {action.order_id} is not in the order store"
        line = order.line(action.item) if action.item else None
        paid = line.amount if line is not None and line.amount is not None else order.amount
        others = sum(
            e.action.amount or 0.0
            for e in self.ledger.row(action.session_id).values()
            if e.action.order_id == action.order_id
            and e.idempotency_key != action.idempotency_key
            and e.state != "failed"
            and not e.dropped
        )
        allowed = paid - order.refunded - others
        if action.amount > allowed + 0.005:
            return (
                f"{action.amount:.2f} is more than order {action.order_id} still allows "
                f"({allowed:.2f}: paid {paid:.2f}, refunded {order.refunded:.2f}, "
                f"{others:.2f} in other actions)"
            )
        return None

    async def sweep(self, mine: Callable[[str], bool]) -> int:
        """Carry the unfinished actions of the sessions ``mine`` owns forward (a restart, a
        rebalance, a timeout left them requested or sent); how many were tried."""
        tried = 0
        for entry in self.ledger.open(mine):
            if entry.state == "requested":
                try:
                    problem = await self.refused(entry.action)
                except Unverified:
                    continue
                if problem is not None:
                    done = entry.model_copy(update={"state": "needs_person", "detail": problem})
                    await self.ledger.save(done)
                    continue
                if (over := self.capped(entry.action)) is not None:
                    where = Source(key=entry.action.session_id)
                    await self._over_cap(entry, over, dumps(entry.action), where)
                    continue
            done = await carry_out(
                self.executor, entry.action, entry, self.ledger.save, backoff_s=self.backoff_s
            )
            await self.told(done)
            tried += 1
        if self.tell is not None:
            for entry in self.ledger.untold(mine):
                await self.told(entry)
        return tried

    def capped(self, action: Action) -> str | None:
        """Why ``action`` is over a daily cap, or None (no await: counted and saved at once)."""
        return self.guard.over(action, self.ledger) if self.guard is not None else None

    async def _over_cap(
        self, entry: LedgerEntry, over: str, value: bytes | None, source: Source
    ) -> LedgerEntry:
        """Never sent: a person decides (its hand-off packet), a dead letter says why."""
        update = {"state": "needs_person", "detail": over, "handoff": "action_over_cap"}
        entry = entry.model_copy(update=update)
        await self.ledger.save(entry)
        await self._refuse(value, "action_over_cap", over, source)
        return await self.told(entry)

    async def _refuse(self, value: bytes | None, reason: str, error: str, source: Source) -> None:
        log.warning("action refused: %s", error)
        dl = dead_letters.letter(
            stage=STAGE, reason=reason, error=error, payload=value or b"", source=source
        )
        await self.dead_letter(dl, source)
