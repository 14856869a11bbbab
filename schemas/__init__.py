"""baton's record contract: import this alone to read or write baton's topics."""

from schemas.baton import (
    Baton,
    ChainEntry,
    Erasure,
    IndexUpdate,
    InFlight,
    MemoryIndex,
    SessionSummary,
    TicketMemory,
)
from schemas.codec import decode, dumps, loads
from schemas.records import (
    MAX_TEXT_CHARS,
    SCHEMA_VERSION,
    CallUsage,
    DeadLetter,
    Order,
    Reply,
    Ticket,
    UsageTotals,
)
from schemas.stages import (
    OrderCandidate,
    OrderChoice,
    OrderMatch,
    Snapshot,
    StageRecord,
    StrategyDraft,
    Understanding,
)

__all__ = [
    "MAX_TEXT_CHARS",
    "SCHEMA_VERSION",
    "Baton",
    "CallUsage",
    "ChainEntry",
    "DeadLetter",
    "Erasure",
    "InFlight",
    "IndexUpdate",
    "MemoryIndex",
    "Order",
    "OrderCandidate",
    "OrderChoice",
    "OrderMatch",
    "Reply",
    "SessionSummary",
    "Snapshot",
    "StageRecord",
    "StrategyDraft",
    "Ticket",
    "TicketMemory",
    "Understanding",
    "UsageTotals",
    "decode",
    "dumps",
    "loads",
]
