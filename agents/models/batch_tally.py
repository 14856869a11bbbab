"""What a batched run sent and what it cost: at the batch price, and as the same calls made live."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Tally:
    """What a batched run sent and what it cost, at the batch price and as live calls."""

    batches: int = 0
    created: int = 0
    resumed: int = 0
    batched: int = 0
    succeeded: int = 0
    errored: int = 0
    expired: int = 0
    canceled: int = 0
    rebuilt: int = 0
    live: int = 0
    batch_cost_usd: float = 0.0
    batch_cost_at_live_price_usd: float = 0.0
    live_cost_usd: float = 0.0
    batch_tokens: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def cost_usd(self) -> float:
        """What the run cost: the batched calls at the batch price plus the live calls."""
        return round(self.batch_cost_usd + self.live_cost_usd, 8)

    @property
    def live_run_cost_usd(self) -> float:
        """What the same calls would have cost made live."""
        return round(self.batch_cost_at_live_price_usd + self.live_cost_usd, 8)

    def as_dict(self) -> dict[str, Any]:
        """The figures for a JSON report."""
        return {
            "batches": self.batches,
            "created": self.created,
            "resumed": self.resumed,
            "batched_requests": self.batched,
            "succeeded": self.succeeded,
            "errored": self.errored,
            "expired": self.expired,
            "canceled": self.canceled,
            "rebuilt": self.rebuilt,
            "live_calls": self.live,
            "batch_tokens": {m: dict(t) for m, t in self.batch_tokens.items()},
            "cost_usd": self.cost_usd,
            "live_run_cost_usd": self.live_run_cost_usd,
            "saved_usd": round(self.live_run_cost_usd - self.cost_usd, 8),
        }
