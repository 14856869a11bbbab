"""The executor seam: what carries an action out on the shop's systems, and how one is chosen."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from baton_kafka.schemas.action import Action

# What the shop's system says of an action: done, refused for good, or accepted and not done yet.
RemoteState = Literal["confirmed", "failed", "pending"]


@dataclass(frozen=True)
class Outcome:
    """The shop's system's answer about one action."""

    state: RemoteState
    remote_id: str | None = None
    detail: str = ""


class ExecutorUnavailable(Exception):
    """Whether the shop's system did the action is unknown (the connection dropped, a timeout,
    a 5xx): it is looked up before anything is sent again."""


class ExecutorRefused(Exception):
    """The executor cannot carry this action out (a kind it has no mapping for, an answer it
    cannot read): a person does it."""


class ForPerson(Exception):
    """The executor gives this action to a person, who carries it out and closes it with a
    ``done`` or ``failed`` decision; the customer hears when it is closed."""


@runtime_checkable
class Executor(Protocol):
    """Carries actions out; every call for one action carries its idempotency key."""

    name: str

    async def execute(self, action: Action) -> Outcome:
        """Ask the shop's system to do ``action`` once; raises ``ExecutorUnavailable`` when the
        answer is unknown, ``ExecutorRefused`` when it cannot be done by this executor."""
        ...

    async def lookup(self, action: Action, remote_id: str | None) -> Outcome | None:
        """What the shop's system knows of ``action`` (by its key, or ``remote_id``); None when
        it does not know it; raises ``ExecutorUnavailable`` when it cannot be asked now."""
        ...

    async def check(self) -> None:
        """Probe the shop's system once; raises ``ExecutorUnavailable`` or ``ExecutorRefused``
        with one line saying why."""
        ...

    async def close(self) -> None: ...
