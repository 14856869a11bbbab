"""Carrying one action out against its ledger entry: look up before any resend, never twice."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from baton_kafka.schemas.action import FINAL, Action, LedgerEntry
from baton_kafka.schemas.records import utcnow
from baton_kafka.streams.actions.executor import (
    Executor,
    ExecutorRefused,
    ExecutorUnavailable,
    ForPerson,
    Outcome,
)

log = logging.getLogger("baton.actions")

Save = Callable[[LedgerEntry], Awaitable[None]]
SEND_ATTEMPTS = 3
LOOKUP_ATTEMPTS = 3


def _with(entry: LedgerEntry, **changes: object) -> LedgerEntry:
    return entry.model_copy(update={**changes, "updated_at": utcnow()})


def settled(entry: LedgerEntry, outcome: Outcome) -> LedgerEntry:
    """The entry once the system's answer is known (pending stays sent, with its reference)."""
    state = "sent" if outcome.state == "pending" else outcome.state
    return _with(
        entry, state=state, remote_id=outcome.remote_id or entry.remote_id, detail=outcome.detail
    )


async def _lookup(
    executor: Executor, action: Action, entry: LedgerEntry, backoff_s: float
) -> Outcome | None:
    """What the system knows of the action; ``ExecutorUnavailable`` when it cannot be asked."""
    for attempt in range(LOOKUP_ATTEMPTS):
        try:
            return await executor.lookup(action, entry.remote_id)
        except ExecutorUnavailable:
            if attempt == LOOKUP_ATTEMPTS - 1:
                raise
            await asyncio.sleep(backoff_s * 2**attempt)
    return None


async def carry_out(
    executor: Executor,
    action: Action,
    entry: LedgerEntry,
    save: Save,
    *,
    backoff_s: float = 0.2,
) -> LedgerEntry:
    """Bring ``action`` to a final state, or leave it ``sent`` when the system cannot be asked.

    An entry already ``sent`` (a crash, a rebalance, a timeout came between send and answer)
    is looked up on the system first and sent again only if the system does not know it. Each
    send is recorded (``save``, durable) before it goes out, so a crash during it is a
    ``sent`` entry the next pass looks up. A send whose answer is lost is looked up too.
    """
    if entry.state in FINAL:
        return entry
    if entry.state == "sent":
        try:
            found = await _lookup(executor, action, entry, backoff_s)
        except ExecutorUnavailable as exc:
            return _with(entry, detail=f"lookup: {exc}")
        except ExecutorRefused as exc:
            entry = _with(entry, state="needs_person", detail=str(exc))
            await save(entry)
            return entry
        if found is not None:
            entry = settled(entry, found)
            await save(entry)
            return entry
    while entry.attempts < SEND_ATTEMPTS:
        entry = _with(entry, state="sent", attempts=entry.attempts + 1)
        await save(entry)
        try:
            outcome = await executor.execute(action)
        except ForPerson as exc:
            entry = _with(entry, state="needs_person", detail=str(exc), handoff="action_manual")
            break
        except ExecutorRefused as exc:
            entry = _with(entry, state="needs_person", detail=str(exc))
            break
        except ExecutorUnavailable as exc:
            log.warning("action %s: %s; looking it up", action.idempotency_key, exc)
            try:
                found = await _lookup(executor, action, entry, backoff_s)
            except ExecutorUnavailable as again:
                # Unknown whether it was done: it stays sent, the next pass looks it up.
                return _with(entry, detail=f"lookup: {again}")
            except ExecutorRefused as refused:
                entry = _with(entry, state="needs_person", detail=str(refused))
                break
            if found is None:
                await asyncio.sleep(backoff_s * 2 ** (entry.attempts - 1))
                continue
            outcome = found
        entry = settled(entry, outcome)
        break
    else:
        entry = _with(entry, state="needs_person", detail=f"not done after {entry.attempts} sends")
    await save(entry)
    return entry
