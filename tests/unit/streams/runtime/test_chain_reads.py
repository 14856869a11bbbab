"""The chain's readings made once per chain equal the plain readings, for every stage of several
chains (the built-in one, a shop's stage inserted, a chain opening with a shop's stage), for an
equal stage that is another object, and over records lacking each result in turn."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

import pytest

from baton_kafka.agents.stage import FIRST_SOURCE, Stage
from baton_kafka.schemas.stages import OrderMatch, StageRecord, Understanding
from baton_kafka.streams.kafka.topics import TopicNames
from baton_kafka.streams.runtime import STAGES, Chain, stage
from baton_kafka.streams.settings import Settings
from examples.stages.priority import PRIORITY
from tests.fixtures.data import ticket
from tests.fixtures.shop_stages import Words, count_words, triage


def _chains() -> list[Chain]:
    _, lookup, strategy = STAGES
    opening = triage()
    counted = stage("count", after="understand", input=Understanding, output=Words, run=count_words)
    # Fed by a stage that carries no field of its own (its result is in ``results``).
    recount = stage("recount", after="count", input=Words, output=Words, run=count_words)
    return [
        Chain.builtin(),
        Chain.of([PRIORITY]),
        Chain.of([PRIORITY, counted]),
        Chain.of([counted, recount]),
        Chain((opening, lookup, strategy)),
    ]


# The plain readings, as the chain made them at every call before.
def _previous(chain: Chain, name: str) -> str | None:
    at = chain.names.index(name)
    return chain.names[at - 1] if at else None


def _source_role(chain: Chain, s: Stage[Any]) -> str:
    before = _previous(chain, s.name)
    return FIRST_SOURCE if before is None else chain[before].target_role


def _feeder(chain: Chain, s: Stage[Any]) -> Stage[Any] | None:
    at = chain.names.index(s.name)
    return next((x for x in reversed(chain.stages[:at]) if x.output is s.input), None)


def _missing(chain: Chain, s: Stage[Any], record: StageRecord) -> list[str]:
    at = chain.names.index(s.name)
    needed = [x for x in chain.stages[:at] if x.carries is not None or x is _feeder(chain, s)]
    return [x.name for x in needed if x.result(record) is None]


def _records() -> list[StageRecord]:
    bare = StageRecord(ticket=ticket("t1", "Where is my order?"))
    # Only whether a result is there matters to the readings: its contents are left out.
    understood = bare.model_copy(update={"understanding": Understanding.model_construct()})
    matched = understood.model_copy(update={"match": OrderMatch.model_construct()})
    extra = matched.model_copy(
        update={"results": {"priority": {"level": "normal"}, "count": {"words": 4}}}
    )
    counted = matched.model_copy(update={"results": {"count": {"words": 4}}})
    return [bare, understood, matched, counted, extra]


@pytest.mark.parametrize("chain", _chains(), ids=lambda c: "-".join(c.names))
def test_the_readings_made_once_are_the_plain_ones(chain: Chain) -> None:
    records = _records()
    for s in chain:
        # The chain's own stage object, an equal one, and one of the same name reading another
        # input (its feeder is not the chain's stage's).
        for asked in (s, dataclasses.replace(s), dataclasses.replace(s, input=Words)):
            assert chain.source_role(asked) == _source_role(chain, asked)
            assert chain.feeder(asked) is _feeder(chain, asked)
            for record in records:
                assert chain.missing(asked, record) == _missing(chain, asked, record)
        assert chain.previous(s.name) == _previous(chain, s.name)
    with pytest.raises(ValueError):
        chain.previous("nowhere")
    stranger = stage(
        "stranger", after="understand", input=Understanding, output=Words, run=count_words
    )
    with pytest.raises(ValueError):
        chain.feeder(stranger)


@pytest.mark.parametrize("chain", _chains(), ids=lambda c: "-".join(c.names))
def test_a_topic_role_is_the_plain_one(chain: Chain) -> None:
    names = TopicNames.of(Settings(namespace="u"), chain)
    own = dict(names.stages)
    roles = [*own, *(s.target_role for s in chain), *(chain.source_role(s) for s in chain)]
    for role in [*roles, "replies", "handoffs", "memory_index", "decisions", "actions"]:
        assert names.role(role) == (own[role] if role in own else str(getattr(names, role)))
    with pytest.raises(AttributeError):
        names.role("nowhere")
    # What the readings keep is no part of the value: equal, hashed and pickled the same.
    again = TopicNames.of(Settings(namespace="u"), chain)
    assert names == again and hash(names) == hash(again)
    assert pickle.loads(pickle.dumps(names)) == names
