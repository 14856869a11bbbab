"""The session state: batons by session and the memory index by customer, typed."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Protocol

from baton_kafka.agents import memory
from baton_kafka.schemas.baton import Baton, MemoryIndex, OrderMemory, SessionSummary
from baton_kafka.schemas.codec import dumps
from baton_kafka.streams.runtime.session import holding

# Batons kept parsed, by the size of their JSON (parsed, a baton takes about five times as
# much): a stage reads its session's baton several times in a row, and under a backlog the
# stages of hundreds of sessions interleave between a session's reads. A session of five turns
# now takes about 7 KiB (its entry in flight included): 8 MiB holds about 1,100 of them (about
# 40 MiB parsed). An LRU a little smaller than the sessions in play misses at every read: at
# 4 MiB the bench's backlog of 600 sessions re-parsed its batons at each ticket's first stage,
# at 1 MiB at nearly every read.
PARSED_BATON_BYTES = 8 << 20
# Memory indexes kept parsed, by the size of their JSON: every record a stage takes in asks
# for its customer's erasure mark, and the stages read the index for the customer's history.
PARSED_INDEX_BYTES = 1 << 20


class SessionTable(Protocol):
    """A changelog-backed table of JSON bytes keyed by session, partitioned like the topics."""

    def get(self, key: str) -> bytes | None: ...

    def put(self, key: str, value: bytes) -> None: ...

    async def put_durably(self, key: str, value: bytes) -> None:
        """``put``, returning once the changelog record is acknowledged."""
        ...

    def items(self) -> list[tuple[str, bytes]]:
        """Every entry this worker holds."""
        ...

    def delete(self, key: str) -> None:
        """Remove the session ``key``; its tombstone goes to the session's partition."""
        ...


class IndexTable(Protocol):
    """A changelog-backed table of JSON bytes every worker holds whole."""

    def get(self, key: str) -> bytes | None: ...

    def put(self, key: str, value: bytes) -> None: ...

    def keys(self) -> list[str]:
        """Every key this worker's replica holds."""
        ...

    def delete(self, key: str) -> None:
        """Remove ``key`` and write its tombstone to the changelog."""
        ...


class State(Protocol):
    """The tables a pipeline keeps: batons by session, the memory index by customer."""

    @property
    def batons(self) -> SessionTable: ...

    @property
    def customers(self) -> IndexTable: ...


class BatonStore:
    """Batons by session (parsed once per version) and the customers' memory indexes."""

    def __init__(self, state: State, index_keep: int = memory.INDEX_KEEP) -> None:
        self.state = state
        self.index_keep = index_keep
        self._parsed: OrderedDict[str, tuple[bytes, Baton]] = OrderedDict()
        self._parsed_bytes = 0
        # Per customer: the index bytes last read and the index they hold. An entry is used
        # only while the table holds the same bytes, so a write by anyone (this store, a
        # changelog recovery, a rebalance) is never answered from it.
        self._indexes: OrderedDict[str, tuple[bytes, MemoryIndex]] = OrderedDict()
        self._indexes_bytes = 0

    def get(self, session_id: str) -> Baton | None:
        """The session's baton (never mutate it: the same object is handed out again)."""
        raw = self.state.batons.get(session_id)
        if not raw:
            return None
        cached = self._parsed.get(session_id)
        if cached is not None and cached[0] == raw:
            self._parsed.move_to_end(session_id)
            return cached[1]
        baton = Baton.model_validate_json(raw)
        self._keep(session_id, raw, baton)
        return baton

    def _keep(self, session_id: str, raw: bytes, baton: Baton) -> None:
        """Keep ``baton`` parsed for as long as the table holds ``raw`` for the session."""
        self._forget(session_id)
        self._parsed[session_id] = (raw, baton)
        self._parsed_bytes += len(raw)
        while self._parsed_bytes > PARSED_BATON_BYTES and len(self._parsed) > 1:
            _, (old, _) = self._parsed.popitem(last=False)
            self._parsed_bytes -= len(old)

    def _forget(self, session_id: str) -> None:
        cached = self._parsed.pop(session_id, None)
        if cached is not None:
            self._parsed_bytes -= len(cached[0])

    def save(self, baton: Baton) -> None:
        """Write the baton; its changelog record goes out with the next flush.

        The next stage's read of it costs no parse (the baton goes back out as given: never
        mutate it after saving).
        """
        baton = holding.carry(self.get(baton.session_id), baton)
        raw = dumps(baton)
        self.state.batons.put(baton.session_id, raw)
        self._keep(baton.session_id, raw, baton)

    async def save_durably(self, baton: Baton) -> None:
        """Write the baton and wait for its changelog record's acknowledgement."""
        baton = holding.carry(self.get(baton.session_id), baton)
        raw = dumps(baton)
        self._keep(baton.session_id, raw, baton)
        await self.state.batons.put_durably(baton.session_id, raw)

    def delete(self, session_id: str) -> None:
        """Remove the session's baton and tombstone it in the changelog."""
        self._forget(session_id)
        self.state.batons.delete(session_id)

    def owned(self, owned: Callable[[str], bool]) -> Iterator[Baton]:
        """The batons of the sessions ``owned`` accepts, parsed afresh (expiry reads each once)."""
        for session_id, raw in self.state.batons.items():
            if owned(session_id):
                yield Baton.model_validate_json(raw)

    def parked(self, owned: Callable[[str], bool]) -> Iterator[Baton]:
        """The owned batons with an offer pending or an escalation recorded, parsed afresh
        (the others are passed over unparsed)."""
        for session_id, raw in self.state.batons.items():
            if owned(session_id) and (b'"pending":null' not in raw or b'"escalated":[]' not in raw):
                yield Baton.model_validate_json(raw)

    def index(self, customer_id: str) -> MemoryIndex | None:
        """The customer's memory index: a summary of each of their sessions (never mutate it:
        the same object is handed out again while the table holds the same bytes)."""
        raw = self.state.customers.get(customer_id)
        if not raw:
            self._forget_index(customer_id)
            return None
        cached = self._indexes.get(customer_id)
        if cached is not None and cached[0] == raw:
            self._indexes.move_to_end(customer_id)
            return cached[1]
        index = MemoryIndex.model_validate_json(raw)
        self._keep_index(customer_id, raw, index)
        return index

    def _keep_index(self, customer_id: str, raw: bytes, index: MemoryIndex) -> None:
        """Keep ``index`` parsed for as long as the table holds ``raw`` for the customer."""
        self._forget_index(customer_id)
        self._indexes[customer_id] = (raw, index)
        self._indexes_bytes += len(raw)
        while self._indexes_bytes > PARSED_INDEX_BYTES and len(self._indexes) > 1:
            _, (old, _) = self._indexes.popitem(last=False)
            self._indexes_bytes -= len(old)

    def _put_index(self, customer_id: str, index: MemoryIndex) -> None:
        """Write the customer's index; the next read of it costs no parse (never mutate it)."""
        raw = dumps(index)
        self.state.customers.put(customer_id, raw)
        self._keep_index(customer_id, raw, index)

    def merge_index(
        self,
        customer_id: str,
        summary: SessionSummary,
        since: datetime | None = None,
        orders: list[OrderMemory] | None = None,
    ) -> None:
        """Fold one session summary and its orders into the customer's index, without what
        was last discussed before ``since``.

        An index left empty (the summary itself is older) is tombstoned.
        """
        merged = memory.index_with(
            self.index(customer_id), customer_id, summary, self.index_keep, since, orders
        )
        if merged.sessions or merged.erased_at is not None:
            self._put_index(customer_id, merged)
        elif self.state.customers.get(customer_id) is not None:
            self._forget_index(customer_id)
            self.state.customers.delete(customer_id)

    def customers(self) -> list[str]:
        """The customers this worker's replica of the index holds."""
        return self.state.customers.keys()

    def prune_index(self, customer_id: str, since: datetime) -> tuple[int, bool]:
        """Drop the customer's sessions older than ``since``, tombstoning an index left empty.

        Returns how many sessions were dropped and whether the customer's key was tombstoned.
        """
        index = self.index(customer_id)
        if index is None:
            return 0, False
        pruned = memory.index_since(index, since)
        dropped = len(index.sessions) - len(pruned.sessions)
        # The mark of an erasure stays as long as a summary would: records written before it
        # (dead letters, a topic read again) may still arrive until then.
        marked = index.erased_at is not None and index.erased_at >= since
        if not pruned.sessions and not marked:
            self._forget_index(customer_id)
            self.state.customers.delete(customer_id)
            return dropped, True
        if dropped:
            self._put_index(customer_id, pruned)
        return dropped, False

    def delete_index(self, customer_id: str) -> None:
        """Tombstone the customer's memory index."""
        self._forget_index(customer_id)
        self.state.customers.delete(customer_id)

    def erase_index(self, customer_id: str, at: datetime) -> None:
        """Replace the customer's memory index by the mark of their erasure at ``at``."""
        self._forget_index(customer_id)
        self.state.customers.put(customer_id, dumps(MemoryIndex(key=customer_id, erased_at=at)))

    def erased_at(self, customer_id: str | None) -> datetime | None:
        """When the customer's data was last erased, if it was (and the mark is still kept)."""
        if not customer_id:
            return None
        index = self.index(customer_id)
        return index.erased_at if index is not None else None

    def _forget_index(self, customer_id: str) -> None:
        cached = self._indexes.pop(customer_id, None)
        if cached is not None:
            self._indexes_bytes -= len(cached[0])

    def earlier(self, customer_id: str | None, session_id: str) -> list[SessionSummary]:
        """The customer's other sessions (warm memory), most recent first."""
        if not customer_id:
            return []
        return memory.earlier_sessions(self.index(customer_id), session_id)
