"""Ids as real systems send them: printable text up to 200 characters, numbers as digits."""

from __future__ import annotations

import re
import unicodedata

import pytest
from pydantic import ValidationError

from baton_kafka.schemas.codec import InvalidRecord, parse
from baton_kafka.schemas.contracts import json_schema
from baton_kafka.schemas.records import ID_PATTERN, MAX_ID_CHARS, Order, Ticket

# Shapes real shops send, each kept exactly as sent.
REAL_IDS = {
    "email with a plus": "ana.silva+orders@example.org",
    "Shopify global id": "gid://shopify/Customer/1029384756",
    "inner space": "ANA SILVA 01",
    "quotes and shell": "t'$(id)`id`\"; rm -rf ~",
    "path-like": "../../etc/passwd",
    "leading dash": "-rf",
    "Chinese": "票-1",
    "Cyrillic lookalike": "аna",  # the first letter is U+0430
    "emoji": "🫖-42",
    "longest": "x" * MAX_ID_CHARS,
    "longest in Chinese": "票" * MAX_ID_CHARS,
}

# id -> a phrase the one-line error must hold.
REFUSED = {
    "a\nb": "control character (U+000A)",
    "a\tb": "control character (U+0009)",
    "a\x1b[2Jb": "control character (U+001B)",
    "ab\u202e": "invisible character (U+202E, Cf)",
    "zero\u200bwidth": "invisible character (U+200B, Cf)",
    "non\u00a0breaking": "invisible character (U+00A0, Zs)",
    " leading": "starts with a space",
    "trailing ": "ends with a space",
    "   ": "is blank",
    "x" * (MAX_ID_CHARS + 1): "at most 200 characters",
}


def _ticket(value: object) -> Ticket:
    return Ticket.model_validate(
        {"ticket_id": value, "session_id": value, "customer_id": value, "text": "hi"}
    )


@pytest.mark.parametrize("value", list(REAL_IDS.values()), ids=list(REAL_IDS))
def test_real_ids_are_kept_exactly(value: str) -> None:
    ticket = _ticket(value)
    assert ticket.ticket_id == ticket.session_id == ticket.customer_id == value
    order = Order.model_validate(
        {
            "order_id": value,
            "customer_id": value,
            "product_name": "Kettle",
            "status": "paid",
            "amount": 1,
            "ordered_at": "2026-10-02T10:00:00Z",
        }
    )
    assert order.order_id == order.customer_id == value


def test_lookalike_ids_stay_different_ids() -> None:
    assert _ticket("ana").session_id != _ticket("аna").session_id
    # Composed and decomposed accents are two ids too: an id is compared as it was sent.
    composed, decomposed = "josé", unicodedata.normalize("NFD", "josé")
    assert _ticket(composed).session_id != _ticket(decomposed).session_id


def test_a_json_number_is_taken_as_its_digits() -> None:
    raw = b'{"ticket_id": 1029384756, "session_id": -7, "customer_id": 0, "text": "hi"}'
    ticket = parse(Ticket, raw)
    assert (ticket.ticket_id, ticket.session_id, ticket.customer_id) == ("1029384756", "-7", "0")
    # The widest integers a JSON reader keeps exactly.
    assert parse(Ticket, raw.replace(b"1029384756", b"18446744073709551615")).ticket_id == (
        "18446744073709551615"
    )


@pytest.mark.parametrize(
    ("raw", "phrase"),
    [
        (b"12.5", "is the number 12.5"),
        (b"1e3", "is the number 1000.0"),
        # Beyond 64 bits the reader has a float: refused rather than rounded to another id.
        (b"123456789012345678901234567890", "send an id as a string"),
        (b"true", "Input should be a valid string"),
    ],
)
def test_a_number_that_is_not_an_exact_whole_number_is_refused(raw: bytes, phrase: str) -> None:
    record = b'{"ticket_id": ' + raw + b', "session_id": "s", "text": "hi"}'
    with pytest.raises(InvalidRecord, match=re.escape(phrase)) as raised:
        parse(Ticket, record)
    assert str(raised.value).startswith("ticket_id: ")


@pytest.mark.parametrize("value", list(REFUSED), ids=[repr(v)[:24] for v in REFUSED])
def test_unprintable_or_padded_ids_are_refused_in_one_line(value: str) -> None:
    with pytest.raises(ValidationError) as raised:
        Ticket(ticket_id=value, session_id="s", text="hi")
    (error,) = raised.value.errors(include_url=False)
    assert REFUSED[value] in error["msg"]
    assert "\n" not in error["msg"] and "\x1b" not in error["msg"]


def test_the_json_schema_pattern_states_the_validators_rule() -> None:
    pattern = re.compile(ID_PATTERN)
    stated = ("Cc", "Cf", "Zs", "Zl", "Zp")
    # Every character of the Basic Multilingual Plane, alone and inside an id: the pattern
    # refuses nothing the validator takes, and refuses every control, format and separator
    # character; what it leaves to the validator (unassigned, private use) is that alone.
    for c in range(0x10000):
        char = chr(c)
        alone, inside = bool(pattern.fullmatch(char)), bool(pattern.fullmatch(f"a{char}b"))
        printable = char.isprintable()
        assert not (printable and char != " ") or alone, hex(c)
        assert not printable or inside, hex(c)
        if unicodedata.category(char) in stated and char != " ":
            assert not inside, hex(c)
    for value in [*REAL_IDS.values(), *REFUSED]:
        try:
            Ticket(ticket_id=value, session_id="s", text="hi")
            valid = True
        except ValidationError:
            valid = False
        if len(value) <= MAX_ID_CHARS:  # the length is the schema's maxLength
            assert bool(pattern.fullmatch(value)) == valid, value


def test_the_ticket_schema_takes_numbers_and_records_baton_writes_carry_strings() -> None:
    ticket = json_schema("ticket")["properties"]["session_id"]
    assert {"type": "integer", "description": "Taken as its decimal digits."} in ticket["anyOf"]
    (text,) = [s for s in ticket["anyOf"] if s["type"] == "string"]
    assert text["pattern"] == ID_PATTERN and text["maxLength"] == MAX_ID_CHARS
    stage = json_schema("stage-record")["$defs"]["Ticket"]["properties"]["session_id"]
    assert stage["type"] == "string" and stage["pattern"] == ID_PATTERN


def _plain_id_number(value: object) -> object:
    """The id reading without its shortcut for text: the one the shortcut must equal."""
    if isinstance(value, int) and not isinstance(value, bool) and -(1 << 63) <= value < 1 << 64:
        return str(value)
    if isinstance(value, float | int) and not isinstance(value, bool):
        raise ValueError(f"is the number {value!r}: send an id as a string or a whole number")
    return value


class _Text(str):
    """Text of a subclass of str (passes the shortcut by)."""


def test_an_id_read_by_the_shortcut_is_the_plain_reading() -> None:
    from baton_kafka.schemas.records import _id_number

    values: list[object] = [*REAL_IDS.values(), "", " ", "12", "-0", _Text("x"), True, False]
    values += [0, -1, 1 << 63, (1 << 64) - 1, 1 << 64, -(1 << 63), -(1 << 63) - 1, 1.0, 2.5]
    values += [float("nan"), None, b"12", ["1"], {"id": 1}]
    for value in values:
        try:
            want: object = ("ok", _plain_id_number(value))
        except ValueError as exc:
            want = ("refused", str(exc))
        try:
            got: object = ("ok", _id_number(value))
        except ValueError as exc:
            got = ("refused", str(exc))
        assert got == want and type(got[1]) is type(want[1]), value
