"""baton's record contract: import this alone to read or write baton's topics."""

from baton_kafka.schemas.baton import (
    Baton,
    ChainEntry,
    Erasure,
    IndexUpdate,
    InFlight,
    MemoryIndex,
    SessionSummary,
    TicketMemory,
)
from baton_kafka.schemas.codec import decode, dumps, loads
from baton_kafka.schemas.handoff import HandoffPacket, Promise, Promised, Turn
from baton_kafka.schemas.lines import OrderLine
from baton_kafka.schemas.records import (
    MAX_TEXT_CHARS,
    SCHEMA_VERSION,
    CallUsage,
    DeadLetter,
    Offer,
    OfferLine,
    Order,
    Reply,
    Ticket,
    UsageTotals,
)
from baton_kafka.schemas.stages import (
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
    "HandoffPacket",
    "InFlight",
    "IndexUpdate",
    "MemoryIndex",
    "Offer",
    "OfferLine",
    "Order",
    "OrderCandidate",
    "OrderChoice",
    "OrderLine",
    "OrderMatch",
    "Promise",
    "Promised",
    "Reply",
    "SessionSummary",
    "Snapshot",
    "StageRecord",
    "StrategyDraft",
    "Ticket",
    "TicketMemory",
    "Turn",
    "Understanding",
    "UsageTotals",
    "decode",
    "dumps",
    "loads",
]
