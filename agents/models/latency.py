"""A worker's first model calls measured against its limits, and one line when they come close.

A slow server (a self-hosted model on a small machine, a far region) makes every ticket fail on
time limits that fit the first-party API, and each failure alone does not say why. The first
``first`` calls are timed; the first one that takes ``share`` of ``BATON_MODEL_TIMEOUT`` or more
(or times out), or a mean that would spend ``share`` of ``BATON_TICKET_MODEL_BUDGET`` over a
ticket's calls, is said once, at WARNING, naming the setting to raise. Calls that come back in
time are summed up once at INFO.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

log = logging.getLogger("baton_kafka.agents.models.latency")

CALLS_PER_TICKET = 3  # understand, look-up and strategy; re-asks come on top


@dataclass
class LatencyWatch:
    """Times the first ``first`` calls; ``observe`` returns the line it logged, if any."""

    timeout_s: float
    ticket_budget_s: float
    concurrency: int
    first: int = 5
    share: float = 0.5
    seen: list[float] = field(default_factory=list)
    said: bool = False

    def observe(
        self,
        seconds: float,
        *,
        timed_out: bool = False,
        budget_spent: bool = False,
        in_flight: int = 1,
    ) -> str | None:
        """Count one call of ``seconds`` (``in_flight``: calls out at once, this one included;
        ``budget_spent``: the ticket's model time ran out)."""
        if self.said or len(self.seen) >= self.first:
            return None
        self.seen.append(seconds)
        if budget_spent:
            line: str | None = (
                f"model calls are slow for the limits: a ticket's model time "
                f"(BATON_TICKET_MODEL_BUDGET={self.ticket_budget_s:g} s) ran out by call "
                f"{len(self.seen)}; raise BATON_TICKET_MODEL_BUDGET"
            )
        else:
            line = self._verdict(seconds, timed_out, in_flight)
        if line is not None:
            self.said = True
            log.warning(line)
        elif len(self.seen) == self.first:
            self.said = True
            line = (
                f"model latency: the first {self.first} calls took {self._mean():.1f} s on "
                f"average (longest {max(self.seen):.1f} s), within BATON_MODEL_TIMEOUT="
                f"{self.timeout_s:g} s and BATON_TICKET_MODEL_BUDGET={self.ticket_budget_s:g} s"
            )
            log.info(line)
        return line

    def _mean(self) -> float:
        return sum(self.seen) / len(self.seen)

    def _verdict(self, seconds: float, timed_out: bool, in_flight: int) -> str | None:
        n = len(self.seen)
        queued = (
            f"; {in_flight} calls were in flight: a server that answers one at a time queues "
            f"them (lower BATON_MODEL_CONCURRENCY={self.concurrency})"
            if in_flight > 1
            else ""
        )
        if timed_out or seconds >= self.share * self.timeout_s:
            what = "timed out" if timed_out else f"took {seconds:.1f} s"
            return (
                f"model calls are slow for the limits: call {n} {what} of "
                f"BATON_MODEL_TIMEOUT={self.timeout_s:g} s; raise BATON_MODEL_TIMEOUT (and "
                f"BATON_TICKET_MODEL_BUDGET={self.ticket_budget_s:g} s, which a ticket's "
                f"{CALLS_PER_TICKET} calls share){queued}"
            )
        ticket_s = self._mean() * CALLS_PER_TICKET
        if ticket_s >= self.share * self.ticket_budget_s:
            return (
                f"model calls are slow for the limits: {n} call(s) took {self._mean():.1f} s on "
                f"average, so a ticket's {CALLS_PER_TICKET} calls take about {ticket_s:.0f} s of "
                f"BATON_TICKET_MODEL_BUDGET={self.ticket_budget_s:g} s; raise "
                f"BATON_TICKET_MODEL_BUDGET{queued}"
            )
        return None
