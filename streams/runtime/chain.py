"""The chain: the built-in stages plus the shop's own, in order; stage names derive from it."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from baton_kafka.agents.stage import FIRST_SOURCE, Stage
from baton_kafka.agents.stages.lookup.declared import STAGE as LOOKUP
from baton_kafka.agents.stages.strategy.declared import STAGE as STRATEGY
from baton_kafka.agents.stages.understand.declared import STAGE as UNDERSTAND
from baton_kafka.schemas import topics
from baton_kafka.schemas.stages import StageRecord
from baton_kafka.schemas.topics import topic_problem

# Names baton's records already use for steps outside the chain: reading a ticket in and
# applying a person's decision.
RESERVED = frozenset({"intake", "decide"})


@dataclass(frozen=True)
class Chain:
    """Stages in the order a ticket goes through them: the first opens the session, the last
    answers. Each stage reads the topic the one before it writes (the first: ``sessions``).

    ``Chain.builtin().insert(stage, after="understand")`` is the built-in chain with a stage of
    the shop's own between understand and lookup.
    """

    stages: tuple[Stage[Any], ...]

    def __post_init__(self) -> None:
        names = [s.name for s in self.stages]
        if len(set(names)) != len(names):
            raise ValueError(f"the chain names a stage twice: {', '.join(names)}")
        if taken := sorted(set(names) & RESERVED):
            raise ValueError(f"stage name {', '.join(taken)} is baton's own (not a chain stage)")
        if not self.stages or not self.stages[0].opens_session:
            raise ValueError("the chain's first stage must be the one that opens the session")
        if not self.stages[-1].answers or any(s.answers for s in self.stages[:-1]):
            raise ValueError("the chain's last stage, and only it, must answer")
        if any(s.opens_session for s in self.stages[1:]):
            raise ValueError("only the chain's first stage may open the session")
        carried = [s.carries for s in self.stages if s.carries is not None]
        if twice := sorted({c for c in carried if carried.count(c) > 1}):
            raise ValueError(f"two stages carry their result in the record's {twice[0]}")
        for before, stage in zip(self.stages, self.stages[1:], strict=False):
            if stage.input is not before.output and not any(
                s.output is stage.input for s in self.stages[: self.stages.index(stage)]
            ):
                raise ValueError(
                    f"stage {stage.name} reads {stage.input.__name__}, "
                    "which no stage before it writes"
                )

        for name, topic in self.own_topics().items():
            if (problem := topic_problem(topic)) is not None:
                raise ValueError(f"stage {name}: topic {topic!r} {problem}")
            if topic in topics.ALL:
                raise ValueError(f"stage {name}: topic {topic} is one of baton's own")

    @classmethod
    def builtin(cls) -> Chain:
        """understand, lookup, strategy."""
        return BUILTIN

    @classmethod
    def of(cls, stages: Chain | Iterable[Stage[Any]] | None) -> Chain:
        """``stages`` as a chain: a chain as it is, stages (each with its ``after``) inserted
        into the built-in chain, None the built-in chain."""
        if stages is None:
            return BUILTIN
        if isinstance(stages, Chain):
            return stages
        chain = BUILTIN
        for stage in stages:
            after = getattr(stage, "after", "")
            if not after:
                raise ValueError(f"stage {stage.name}: say where it goes (after=...)")
            chain = chain.insert(stage, after=after)
        return chain

    def insert(self, stage: Stage[Any], *, after: str) -> Chain:
        """This chain with ``stage`` right after the stage named ``after``."""
        if after not in self.names:
            raise ValueError(f"stage {stage.name}: no stage {after!r} to go after")
        at = self.names.index(after) + 1
        return Chain((*self.stages[:at], stage, *self.stages[at:]))

    def __iter__(self) -> Iterator[Stage[Any]]:
        return iter(self.stages)

    def __len__(self) -> int:
        return len(self.stages)

    @functools.cached_property
    def names(self) -> tuple[str, ...]:
        # Made once: every record's checks ask for it several times.
        return tuple(s.name for s in self.stages)

    def __getitem__(self, name: str) -> Stage[Any]:
        for s in self.stages:
            if s.name == name:
                return s
        raise KeyError(f"no stage {name!r} in the chain ({', '.join(self.names)})")

    @property
    def first(self) -> Stage[Any]:
        return self.stages[0]

    @property
    def answering(self) -> Stage[Any]:
        return self.stages[-1]

    @functools.cached_property
    def _at(self) -> dict[str, int]:
        return {name: at for at, name in enumerate(self.names)}

    @functools.cached_property
    def _read(self) -> dict[str, tuple[str, Stage[Any] | None, tuple[Stage[Any], ...]]]:
        # Per stage of the chain: its source role, feeder and needed stages, made once (every
        # record's checks and its stage ask for them).
        return {
            s.name: (self._source_role(s), self._feeder(s), self._needed(s)) for s in self.stages
        }

    def _own(self, stage: Stage[Any]) -> tuple[str, Stage[Any] | None, tuple[Stage[Any], ...]]:
        """``stage``'s source role, feeder and needed stages: made once for the chain's own
        stages, afresh for another object of the same name (a feeder depends on its input)."""
        at = self._at.get(stage.name)
        if at is None or self.stages[at] is not stage:
            return (self._source_role(stage), self._feeder(stage), self._needed(stage))
        return self._read[stage.name]

    def previous(self, name: str) -> str | None:
        """The stage before ``name`` (None for the first)."""
        at = self._at.get(name)
        if at is None:
            at = self.names.index(name)  # raises ValueError, as for any name not in the chain
        return self.names[at - 1] if at else None

    def following(self, name: str) -> str | None:
        """The stage after ``name``, which reads its output (None for the answering one)."""
        at = self._at.get(name)
        if at is None:
            at = self.names.index(name)
        return self.names[at + 1] if at + 1 < len(self.names) else None

    def source_role(self, stage: Stage[Any]) -> str:
        """The ``TopicNames`` role of the topic ``stage`` reads."""
        return self._own(stage)[0]

    def _source_role(self, stage: Stage[Any]) -> str:
        before = self.previous(stage.name)
        return FIRST_SOURCE if before is None else self[before].target_role

    def feeder(self, stage: Stage[Any]) -> Stage[Any] | None:
        """The latest stage before ``stage`` whose output is what ``stage`` reads (None: the
        ticket)."""
        return self._own(stage)[1]

    def _feeder(self, stage: Stage[Any]) -> Stage[Any] | None:
        at = self.names.index(stage.name)
        return next((s for s in reversed(self.stages[:at]) if s.output is stage.input), None)

    def missing(self, stage: Stage[Any], record: StageRecord) -> list[str]:
        """The earlier stages whose result ``stage`` needs and ``record`` lacks."""
        return [s.name for s in self._own(stage)[2] if s.result(record) is None]

    def _needed(self, stage: Stage[Any]) -> tuple[Stage[Any], ...]:
        at = self.names.index(stage.name)
        feeder = self._feeder(stage)
        return tuple(s for s in self.stages[:at] if s.carries is not None or s is feeder)

    def own_topics(self) -> dict[str, str]:
        """Each stage's own output topic (stages without a ``TopicNames`` role): role -> name."""
        return {
            s.name: s.topic or f"support.{s.name}"
            for s in self.stages
            if not s.role and not s.answers
        }

    def internal_roles(self) -> tuple[str, ...]:
        """The roles of the topics stages read from each other (signed, session-keyed)."""
        return tuple(self.source_role(s) for s in self.stages)


STAGES: tuple[Stage[Any], ...] = (UNDERSTAND, LOOKUP, STRATEGY)
"""The built-in stages in the chain's order, each declared in its folder with ``stage()``: the
one place they are listed together (``agents.stages.ORDER`` is their names, held to it)."""

BUILTIN = Chain(STAGES)
