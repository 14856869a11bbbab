"""The log handler's cheaper readings read as the plain ones: stamps, redacted messages, fields."""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from baton_kafka.agents.models.llm import Prompt
from baton_kafka.schemas.records import Ticket
from baton_kafka.streams.observe import logs
from baton_kafka.streams.observe.logs import FIELDS
from baton_kafka.streams.observe.redaction import PAYLOAD_KEYS, REDACTED, RedactFilter

SECRET = "a-configured-secret-42"


def plain_ts(created: float) -> str:
    return (
        datetime.fromtimestamp(created, UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


def moments(rng: random.Random) -> Iterator[float]:
    """Moments of a worker's life and the edges of the rounding: ties, carries, nearby floats."""
    for _ in range(3000):
        yield rng.uniform(1.6e9, 2.2e9)
    for _ in range(500):
        second = rng.randrange(0, 4_000_000_000)
        for fraction in (0.0, 0.9994999, 0.9995, 0.9999995, 0.99999949, 0.0000005, 0.0005):
            yield second + fraction
        micro = rng.randrange(0, 1_000_000)
        tie = second + (micro + 0.5) / 1e6
        yield from (tie, math.nextafter(tie, 0), math.nextafter(tie, math.inf))
        edge = float(second + 1)
        yield from (math.nextafter(edge, 0), edge, math.nextafter(edge, math.inf))
    yield from (0.0, 0.4, 59.9999999, 86399.9995)


def test_stamps_read_as_datetime_writes_them() -> None:
    rng = random.Random(7)
    seen = list(moments(rng))
    # In order (one second's lines after another) and shuffled (the cached second changes).
    for order in (sorted(seen), seen):
        for created in order:
            record = logging.makeLogRecord({"created": created})
            assert logs._ts(record) == plain_ts(created), repr(created)


def plain_filter(r: RedactFilter, record: logging.LogRecord) -> None:
    """The filter's reading with every argument taken through ``Redactor.value``."""
    red = r.redactor
    try:
        args = record.args
        if isinstance(args, Mapping):
            args = red.value(args)
        elif args:
            args = tuple(red.value(a) for a in args)
        msg = red.value(record.msg)
        text = str(msg) % args if args else str(msg)
    except Exception:
        text = f"{record.msg!s} {record.args!r}"
    record.msg, record.args = red.text(text), None
    for key in PAYLOAD_KEYS & record.__dict__.keys():
        setattr(record, key, REDACTED)


PROMPT = Prompt(stage="understand", system="S", context="c", output_type=Ticket, facts=None)
VALUES: list[Any] = [
    "ok",
    "",
    "understand",
    "system: 'x'",
    f"key {SECRET}",
    "sk-ant-api03-abcdefgh",
    "Bearer abc.def",
    "postgres://u:pw@h/db",
    0,
    -3,
    12.5,
    float("nan"),
    True,
    None,
    {"model": "m", "system": "secret prompt"},
    {"a": [1, {"prompt": "p"}]},
    ["x", {"messages": []}],
    ("t", 1),
    PROMPT,
    b"bytes",
]
FORMATS = [
    "plain",
    "%s",
    "%s %s",
    "%d",
    "%s: %d tokens in, %d out",
    "%r",
    "%(a)s",
    "100%",
    "%s %s %s",
    "system=%s",
    "prompt: '%s'",
]


def records(rng: random.Random) -> Iterator[logging.LogRecord]:
    for _ in range(6000):
        msg: Any = rng.choice(FORMATS)
        if rng.random() < 0.05:
            msg = rng.choice([PROMPT, 42, {"system": "s"}])
        shape = rng.random()
        if shape < 0.15:
            args: Any = None
        elif shape < 0.2:
            args = ()
        elif shape < 0.3:
            args = {"a": rng.choice(VALUES)}
        elif shape < 0.35:
            args = [rng.choice(VALUES)]
        else:
            args = tuple(rng.choice(VALUES) for _ in range(rng.randrange(1, 4)))
        extra = {k: rng.choice(VALUES) for k in rng.sample([*PAYLOAD_KEYS, "stage"], 2)}
        yield logging.makeLogRecord({"msg": msg, "args": args, **extra})


def test_the_filter_reads_as_the_plain_reading() -> None:
    fast, plain = RedactFilter([SECRET]), RedactFilter([SECRET])
    for record in records(random.Random(11)):
        copy = logging.makeLogRecord(dict(record.__dict__))
        assert fast.filter(record) and plain_filter(plain, copy) is None
        assert record.__dict__ == copy.__dict__ or (
            # NaN is not equal to itself: compare what the line shows.
            repr(record.__dict__) == repr(copy.__dict__)
        ), (copy.msg, copy.args)


def test_fields_read_as_getattr_reads_them() -> None:
    rng = random.Random(5)
    for _ in range(2000):
        given = {
            name: rng.choice(["T-1", "", 0, 1.5, None, "x y"])
            for name in rng.sample(FIELDS, rng.randrange(0, len(FIELDS) + 1))
        }
        record = logging.makeLogRecord(given)
        fields = logs._fields(record)
        assert fields == [
            (name, getattr(record, name))
            for name in FIELDS
            if getattr(record, name, None) is not None
        ]
