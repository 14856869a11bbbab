"""Dead letters: read and filter them, and plan and send the re-drive of their tickets."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from baton_kafka.schemas.baton import MemoryIndex
from baton_kafka.schemas.codec import dumps, loads
from baton_kafka.schemas.records import DeadLetter, Ticket
from baton_kafka.streams.kafka.topics import CUSTOMER_TABLE, TopicNames, changelog_topic
from baton_kafka.streams.observe.shown import shown
from baton_kafka.streams.runtime.records.connect_letters import from_connect, is_connect
from baton_kafka.streams.settings import Settings

if TYPE_CHECKING:
    from baton_kafka.streams.kafka.client import Message

REQUEUED_FROM = "baton.requeued_from"
ATTEMPTS = "baton.attempts"
# The W3C trace context a dead letter carries: a re-driven ticket continues its trace.
TRACE_HEADERS = ("traceparent", "tracestate")


@dataclass(frozen=True)
class Letter:
    """A dead letter and where it is stored."""

    dl: DeadLetter
    message: Message

    @property
    def headers(self) -> dict[str, str]:
        return {k: v.decode("utf-8", "backslashreplace") for k, v in self.message.headers}


# A record to re-drive: its dead letter, key, value and the attempt it will be.
Planned = tuple[Letter, str | None, bytes, int]


@dataclass(frozen=True)
class Filters:
    """Which dead letters a command looks at; empty fields match everything."""

    reasons: frozenset[str] = frozenset()
    stages: frozenset[str] = frozenset()
    since: datetime | None = None
    ids: frozenset[str] = frozenset()

    @property
    def empty(self) -> bool:
        return not (self.reasons or self.stages or self.since or self.ids)

    def match(self, dl: DeadLetter) -> bool:
        return (
            (not self.reasons or dl.reason in self.reasons)
            and (not self.stages or dl.stage in self.stages)
            and (self.since is None or dl.failed_at >= self.since)
            and (not self.ids or dl.id in self.ids)
        )


def parse_time(value: str) -> datetime:
    """An RFC 3339 time (``Z`` or an offset; naive means UTC); raises ``ValueError``."""
    parsed = datetime.fromisoformat(value.strip())
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def read_letter(m: Message) -> DeadLetter | None:
    """The dead letter a record of the dead-letter topic holds, in either format, or None."""
    try:
        return DeadLetter.model_validate_json(m.value or b"")
    except ValidationError:
        where = f"{m.topic}-{m.partition}-{m.offset}"
        return from_connect(m.key, m.value, list(m.headers), m.timestamp, where)


def letters(messages: Iterable[Message]) -> list[Letter]:
    """The readable dead letters among ``messages``, in either format (others are skipped)."""
    return [Letter(dl, m) for m in messages if (dl := read_letter(m)) is not None]


def redrive(dl: DeadLetter) -> tuple[str | None, bytes] | None:
    """The ``(key, value)`` to publish to the tickets topic again, or None if there is none.

    A valid ticket is re-sent as such; a record rejected at intake is re-sent as its payload
    (invalid UTF-8 was stored escaped, so such bytes come back escaped).
    """
    if dl.ticket is not None:
        return dl.ticket.session_id, dumps(dl.ticket)
    if dl.stage == "intake":
        return dl.session_id, dl.payload.encode("utf-8")
    return None


def _identity(value: bytes | None) -> str | bytes:
    """What makes two records in the tickets topic the same ticket: its id, else its bytes."""
    try:
        return f"ticket:{Ticket.model_validate_json(value or b'').ticket_id}"
    except ValidationError:
        return value or b""


def previous_attempts(value: bytes, tickets: Iterable[Message]) -> int:
    """How many times this record was already driven: the highest ``baton.attempts`` seen."""
    me = _identity(value)
    seen = 0
    for m in tickets:
        if _identity(m.value) != me:
            continue
        header = dict(m.headers).get(ATTEMPTS)
        try:
            seen = max(seen, int(header) if header else 1)
        except ValueError:
            seen = max(seen, 1)
    return max(seen, 1)


def already_requeued(tickets: Iterable[Message]) -> set[str]:
    """Ids of dead letters whose record was re-driven before."""
    return {
        v.decode("utf-8", "replace") for m in tickets for k, v in m.headers if k == REQUEUED_FROM
    }


def line(letter: Letter) -> str:
    """One dead letter as one readable line."""
    dl = letter.dl
    at = dl.failed_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
    who = f"{shown(dl.ticket_id)} ({shown(dl.session_id)})"
    error = " ".join(dl.error.split())
    error = error if len(error) <= 90 else error[:89] + "…"
    return f"{at}  {dl.id}  {dl.stage:<10}  {dl.reason:<17}  {who}  x{dl.attempts}  {error}"


def described(letter: Letter) -> dict[str, Any]:
    """A dead letter with its location and headers, as ``dlq show`` prints it."""
    m = letter.message
    connect = in_connect_format(letter)
    return {
        "topic": m.topic,
        "partition": m.partition,
        "offset": m.offset,
        "timestamp": datetime.fromtimestamp(m.timestamp / 1000, UTC).isoformat(),
        "key": m.key.decode("utf-8", "backslashreplace") if m.key is not None else None,
        "headers": letter.headers,
        "format": "connect" if connect else "baton",
        "dead_letter": as_json(letter),
    }


def in_connect_format(letter: Letter) -> bool:
    """Whether the letter is the failed record with Connect's headers, not a DeadLetter."""
    try:
        DeadLetter.model_validate_json(letter.message.value or b"")
    except ValidationError:
        return is_connect(list(letter.message.headers))
    return False


def as_json(letter: Letter) -> Any:
    """The dead letter as JSON: the record as stored, or the one a Connect record stands for."""
    if in_connect_format(letter):
        return letter.dl.model_dump(mode="json")
    return loads(letter.message.value or b"{}")


async def _read(settings: Settings, *topics: str) -> dict[str, list[Message]]:
    from baton_kafka.streams.kafka.reader import read_topics

    return await read_topics(settings, list(topics))


async def _send(
    settings: Settings, topic: str, records: Sequence[tuple[str | None, bytes, dict[str, str]]]
) -> None:
    from baton_kafka.streams.kafka.connect import new_producer

    producer = new_producer(settings, acks="all")
    await producer.start()
    try:
        for key, value, headers in records:
            await producer.send_and_wait(
                topic,
                value,
                key=key.encode() if key is not None else None,
                headers=[(k, v.encode()) for k, v in headers.items()],
            )
    finally:
        await producer.stop()


def erasures(changelog: Iterable[Message]) -> dict[str, datetime]:
    """When each erased customer was erased, from the customer index's changelog."""
    latest: dict[bytes, bytes | None] = {}
    for m in changelog:
        if m.key is not None:
            latest[bytes(m.key)] = m.value
    found = {}
    for value in latest.values():
        try:
            index = MemoryIndex.model_validate_json(value) if value else None
        except ValidationError:
            continue
        if index is not None and index.erased_at is not None:
            found[index.key] = index.erased_at
    return found


# A ``customer_id`` member in a payload that is not valid JSON (cut short, a stray byte).
_CUSTOMER_FIELD = re.compile(r'"customer_id"\s*:\s*(?:"((?:[^"\\]|\\.){1,400})"|(-?\d{1,200}))')


def _customer_of(value: object) -> str | None:
    """The customer id a decoded ``customer_id`` member names (a number as its digits)."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    return str(value)


def customers(dl: DeadLetter) -> set[str]:
    """Every customer the dead letter may carry a record of: its ticket's, and whatever its
    payload names, whether the payload parses (a ticket, a stage record) or not."""
    found = {dl.ticket.customer_id} if dl.ticket and dl.ticket.customer_id else set()
    try:
        doc = loads(dl.payload)
    except ValueError:
        doc = None
    for part in (doc, doc.get("ticket") if isinstance(doc, dict) else None):
        if isinstance(part, dict) and (customer := _customer_of(part.get("customer_id"))):
            found.add(customer)
    for quoted, number in _CUSTOMER_FIELD.findall(dl.payload):
        if number:
            found.add(number)
            continue
        try:
            found.add(str(loads(f'"{quoted}"'.encode())))
        except ValueError:
            found.add(quoted)
    return found


def erased_after(dl: DeadLetter, erased: Mapping[str, datetime]) -> bool:
    """Whether a customer the dead letter carries was erased after it was written."""
    return any(
        (at := erased.get(customer)) is not None and dl.failed_at <= at
        for customer in customers(dl)
    )


def plan(
    chosen: Sequence[Letter],
    tickets: Sequence[Message],
    again: bool,
    erased: Mapping[str, datetime] | None = None,
) -> tuple[list[Planned], list[tuple[Letter, str]]]:
    """What to re-drive (letter, key, value, attempts) and what to skip, with why.

    A dead letter of a customer erased after it (``erased``: customer -> when) is never
    re-driven, whether its ticket was valid or only its payload names the customer: that would
    bring back what ``baton forget`` erased.
    """
    done = set() if again else already_requeued(tickets)
    todo: list[Planned] = []
    skipped: list[tuple[Letter, str]] = []
    seen: set[str | bytes] = set()
    for x in chosen:
        if erased_after(x.dl, erased or {}):
            skipped.append((x, "its customer was erased after it (baton forget)"))
            continue
        record = redrive(x.dl)
        if record is None:
            skipped.append((x, "no ticket to re-drive (the stage record itself was invalid)"))
            continue
        key, value = record
        if x.dl.id in done:
            skipped.append((x, "already requeued (use --again to requeue it anyway)"))
            continue
        identity = _identity(value)
        if identity in seen:
            skipped.append((x, "its ticket is already being requeued from another dead letter"))
            continue
        seen.add(identity)
        todo.append((x, key, value, previous_attempts(value, tickets) + 1))
    return todo, skipped


async def dead_letters(settings: Settings, filters: Filters) -> list[Letter]:
    """The readable dead letters of the namespace that ``filters`` match, in topic order."""
    topic = TopicNames.of(settings).dead_letters
    read = await _read(settings, topic)
    return [x for x in letters(read[topic]) if filters.match(x.dl)]


async def requeue_plan(
    settings: Settings, filters: Filters, again: bool
) -> tuple[list[Planned], list[tuple[Letter, str]]]:
    """:func:`plan` for the dead letters ``filters`` match, against the tickets topic."""
    names = TopicNames.of(settings)
    index = changelog_topic(settings, CUSTOMER_TABLE)
    read = await _read(settings, names.dead_letters, names.tickets, index)
    chosen = [x for x in letters(read[names.dead_letters]) if filters.match(x.dl)]
    return plan(chosen, read[names.tickets], again, erasures(read[index]))


def requeue_headers(letter: Letter, attempts: int) -> dict[str, str]:
    """The headers of a re-driven record: its dead letter's id, the attempt and its trace."""
    trace = {k: v for k, v in letter.headers.items() if k in TRACE_HEADERS}
    return {REQUEUED_FROM: letter.dl.id, ATTEMPTS: str(attempts), **trace}


async def requeue(settings: Settings, todo: Sequence[Planned]) -> None:
    """Publish each planned record to the tickets topic with its dead letter's id and attempt."""
    records = [(key, value, requeue_headers(x, attempts)) for x, key, value, attempts in todo]
    await _send(settings, TopicNames.of(settings).tickets, records)
