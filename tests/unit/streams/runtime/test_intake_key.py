"""The intake's sequencing key: a ticket's session as its value names it, whatever its key."""

from __future__ import annotations

import struct

import orjson
import pytest

from baton_kafka.schemas.codec import parse
from baton_kafka.schemas.records import Ticket
from baton_kafka.streams.runtime.intake import session_key

TICKET = {"ticket_id": "t-1", "session_id": "s-1", "text": "Where is my order?"}


def raw(**changes: object) -> bytes:
    return orjson.dumps({**TICKET, **changes})


def test_tickets_of_one_session_share_a_key_whatever_their_record_keys() -> None:
    assert session_key(raw(), b"a") == session_key(raw(ticket_id="t-2"), b"b")
    assert session_key(raw(), None) == session_key(raw(), b"")
    assert session_key(raw(), b"a") != session_key(raw(session_id="s-2"), b"a")


def test_a_session_named_by_a_number_is_the_session_of_its_digits() -> None:
    number = raw(session_id=12345)
    text = raw(session_id="12345")
    assert parse(Ticket, number).session_id == parse(Ticket, text).session_id
    assert session_key(number, b"x") == session_key(text, b"y")


def test_a_framed_ticket_names_its_session_like_a_plain_one() -> None:
    framed = b"\x00" + struct.pack(">I", 7) + raw()
    assert session_key(framed, b"x") == session_key(raw(), b"y")


@pytest.mark.parametrize(
    "value",
    [
        None,
        b"",
        b"not json",
        b"[1, 2]",
        b'"text"',
        b"{}",
        b'{"session_id": null}',
        b'{"session_id": ""}',
        b'{"session_id": true}',
        b'{"session_id": {"a": 1}}',
        b"\xff\xfe",
        b"[" * 2000,
    ],
)
def test_a_value_naming_no_session_keeps_its_record_key_and_never_raises(
    value: bytes | None,
) -> None:
    assert session_key(value, b"k") == session_key(value, b"k")
    assert session_key(value, b"k") != session_key(value, b"j")
    # It can never share a key with a session of that name.
    assert session_key(value, b"s-1") != session_key(raw(), None)
