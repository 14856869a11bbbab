"""Hand-off packets as the desk reads them: from the handoffs topic, once each, oldest first."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from pydantic import ValidationError

from baton_kafka.schemas.handoff import HandoffPacket
from baton_kafka.schemas.records import utcnow
from baton_kafka.streams.kafka.client import Message
from baton_kafka.streams.kafka.topics import TopicNames
from baton_kafka.streams.settings import Settings

CORE_PROBLEM_CHARS = 70


def packets(messages: Iterable[Message]) -> list[HandoffPacket]:
    """The readable packets among ``messages``, a packet seen twice kept once, oldest first."""
    seen: set[str] = set()
    out: list[HandoffPacket] = []
    for m in messages:
        try:
            packet = HandoffPacket.model_validate_json(m.value or b"")
        except ValidationError:
            continue  # not a packet: a consumer skips it, as the docs say
        if packet.packet_id not in seen:
            seen.add(packet.packet_id)
            out.append(packet)
    out.sort(key=lambda p: (p.handed_off_at, p.packet_id))
    return out


async def read_packets(settings: Settings) -> list[HandoffPacket]:
    """Every packet of the namespace's handoffs topic, oldest first."""
    from baton_kafka.streams.kafka.reader import read_topics

    topic = TopicNames.of(settings).handoffs
    return packets((await read_topics(settings, [topic]))[topic])


def _clock(deadline: datetime, now: datetime) -> str:
    seconds = int((deadline - now).total_seconds())
    left = abs(seconds)
    span = f"{left // 3600}h{left % 3600 // 60:02d}m" if left >= 3600 else f"{left // 60}m"
    return f"in {span}" if seconds >= 0 else f"{span} overdue"


def line(packet: HandoffPacket, now: datetime | None = None) -> str:
    """One packet as one line: when, deadline, reason, urgency, session, ticket, problem."""
    now = now or utcnow()
    at = packet.handed_off_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
    due = packet.deadline.astimezone(UTC).strftime("%Y-%m-%d %H:%M")
    problem = " ".join((packet.core_problem or packet.text).split())
    if len(problem) > CORE_PROBLEM_CHARS:
        problem = problem[: CORE_PROBLEM_CHARS - 1] + "…"
    return (
        f"{at}  due {due} ({_clock(packet.deadline, now)})  {packet.reason:<17}  "
        f"{packet.urgency:<6}  {packet.session_id}  {packet.ticket_id}  {problem}"
    )
