"""What the pipeline reports as it works: an observer interface metrics and logs implement."""

from __future__ import annotations

import logging
from collections import Counter
from typing import Protocol

from baton_kafka.schemas.records import CallUsage, Reply

log = logging.getLogger("baton.observe")


class Observer(Protocol):
    """Receives one call per pipeline event; must be cheap and never raise."""

    def record_in(self, stage: str) -> None: ...

    def stage_done(self, stage: str, outcome: str, seconds: float) -> None:
        """``outcome``: ok, degraded, reused (a redelivered copy), invalid, refused, throttled
        (a refusal past its sender's budget), failed, flooded or taken_over (a person has the
        session: no agent ran)."""
        ...

    def dead_letter(self, stage: str, reason: str) -> None: ...

    def model_calls(self, calls: list[CallUsage]) -> None: ...

    def context(self, stage: str, level: str) -> None:
        """``level``: full, partial, minimal or broken."""
        ...

    def reply(self, reply: Reply, end_to_end_s: float | None) -> None: ...


class QuietObserver:
    """Does nothing on every event: an observer of your own subclasses it and overrides what
    it watches."""

    def record_in(self, stage: str) -> None:
        return None

    def stage_done(self, stage: str, outcome: str, seconds: float) -> None:
        return None

    def dead_letter(self, stage: str, reason: str) -> None:
        return None

    def model_calls(self, calls: list[CallUsage]) -> None:
        return None

    def context(self, stage: str, level: str) -> None:
        return None

    def reply(self, reply: Reply, end_to_end_s: float | None) -> None:
        return None


class Guarded:
    """An observer given to the worker: what it raises is logged once per kind of event and
    never reaches the record being processed."""

    def __init__(self, observer: Observer) -> None:
        self.observer = observer
        self.failed: set[str] = set()

    def _call(self, event: str, *args: object) -> None:
        try:
            getattr(self.observer, event)(*args)
        except Exception as exc:  # an observer must not fail a ticket
            if event not in self.failed:
                self.failed.add(event)
                log.warning(
                    "observer %s failed on %s: %s: %s (logged once)",
                    type(self.observer).__name__,
                    event,
                    type(exc).__name__,
                    exc,
                )

    def record_in(self, stage: str) -> None:
        self._call("record_in", stage)

    def stage_done(self, stage: str, outcome: str, seconds: float) -> None:
        self._call("stage_done", stage, outcome, seconds)

    def dead_letter(self, stage: str, reason: str) -> None:
        self._call("dead_letter", stage, reason)

    def model_calls(self, calls: list[CallUsage]) -> None:
        self._call("model_calls", calls)

    def context(self, stage: str, level: str) -> None:
        self._call("context", stage, level)

    def reply(self, reply: Reply, end_to_end_s: float | None) -> None:
        self._call("reply", reply, end_to_end_s)


class CountingObserver:
    """Counts events by name; the default, and what tests read."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def record_in(self, stage: str) -> None:
        self.counts[f"in.{stage}"] += 1

    def stage_done(self, stage: str, outcome: str, seconds: float) -> None:
        self.counts[f"done.{stage}.{outcome}"] += 1

    def dead_letter(self, stage: str, reason: str) -> None:
        self.counts[f"dead_letter.{stage}.{reason}"] += 1

    def model_calls(self, calls: list[CallUsage]) -> None:
        for call in calls:
            self.counts[f"model_calls.{call.stage}"] += 1

    def context(self, stage: str, level: str) -> None:
        self.counts[f"context.{level}"] += 1

    def reply(self, reply: Reply, end_to_end_s: float | None) -> None:
        self.counts[f"reply.{reply.status}"] += 1


class Fanout:
    """Sends every event to several observers."""

    def __init__(self, *observers: Observer) -> None:
        self.observers = observers

    def record_in(self, stage: str) -> None:
        for o in self.observers:
            o.record_in(stage)

    def stage_done(self, stage: str, outcome: str, seconds: float) -> None:
        for o in self.observers:
            o.stage_done(stage, outcome, seconds)

    def dead_letter(self, stage: str, reason: str) -> None:
        for o in self.observers:
            o.dead_letter(stage, reason)

    def model_calls(self, calls: list[CallUsage]) -> None:
        for o in self.observers:
            o.model_calls(calls)

    def context(self, stage: str, level: str) -> None:
        for o in self.observers:
            o.context(stage, level)

    def reply(self, reply: Reply, end_to_end_s: float | None) -> None:
        for o in self.observers:
            o.reply(reply, end_to_end_s)
