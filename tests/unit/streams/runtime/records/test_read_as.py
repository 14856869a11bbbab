"""A record's source as a stage read it is the source with its bytes and headers: the copy
made field by field is what ``dataclasses.replace`` makes."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime

from baton_kafka.streams.runtime.records.dead_letters import Source, read_as

SOURCES = [
    Source(),
    Source(topic="support.sessions", partition=3, offset=17, key="s-1"),
    Source(
        topic="t",
        partition=0,
        offset=0,
        key="",
        timestamp=datetime(2026, 1, 2, tzinfo=UTC),
        raw_key=b"s-1",
        value=b"old",
        headers=(("h", b"v"),),
    ),
]
VALUES = [None, b"", b'{"ticket":1}']
HEADERS = [None, [], [("traceparent", b"00-ab"), ("baton-signature", b"x")], (("a", b"b"),)]


@dataclass(frozen=True)
class _Wider(Source):
    """A source with a field of its own: read through ``replace``."""

    extra: str = "kept"


def test_the_source_as_read_is_the_replaced_source() -> None:
    for source, value, headers in itertools.product(SOURCES, VALUES, HEADERS):
        got = read_as(source, value, headers)
        want = replace(source, value=value, headers=tuple(headers or ()))
        assert type(got) is Source and got == want and hash(got) == hash(want)
        assert [getattr(got, f.name) for f in fields(Source)] == [
            getattr(want, f.name) for f in fields(Source)
        ]
        assert got is not source and repr(got) == repr(want)
    wider = read_as(_Wider(topic="t", extra="x"), b"v", None)
    assert isinstance(wider, _Wider) and wider.extra == "x" and wider.value == b"v"
