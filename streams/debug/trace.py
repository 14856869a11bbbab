"""One session's timeline: everything the topics recorded about it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from baton_kafka.agents.stages import lookup, understand
from baton_kafka.schemas.baton import Baton
from baton_kafka.schemas.codec import dumps, loads
from baton_kafka.schemas.handoff import HandoffPacket
from baton_kafka.schemas.records import Reply, Ticket, UsageTotals
from baton_kafka.schemas.stages import StageRecord
from baton_kafka.streams.debug.dlq import read_letter
from baton_kafka.streams.kafka.topics import TopicNames, changelog_topic
from baton_kafka.streams.observe.shown import shown
from baton_kafka.streams.observe.tracing import trace_id_of
from baton_kafka.streams.runtime.chain import BUILTIN, Chain
from baton_kafka.streams.settings import Settings

if TYPE_CHECKING:
    from baton_kafka.streams.kafka.client import Message


# Tie-break for events with the same timestamp: the order the pipeline writes them in (a
# stage's dead letter is acknowledged before its output is sent).
def _ranks(chain: Chain) -> dict[str, int]:
    """Each kind of event's place: published, intake, dead letter, the chain's forwarding
    stages in order, then the reply, its hand-off packet and the baton."""
    kinds = ["published", "intake", "dead_letter", *(s.name for s in chain if not s.answers)]
    return {k: i for i, k in enumerate([*kinds, "reply", "handoff", "baton"])}


def _at(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


def _model(model: type[BaseModel], value: bytes | None) -> Any:
    try:
        return model.model_validate_json(value or b"")
    except ValidationError:
        return None


def _json(value: bytes | None) -> Any:
    try:
        return loads(value or b"")
    except ValueError:
        return None


def _excerpt(text: str, limit: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _usage_text(u: UsageTotals) -> str:
    unknown = f" (+ {u.unpriced_calls} of unknown cost)" if u.unpriced_calls else ""
    return f"{u.calls} call(s), {u.total_tokens} tokens, ${u.cost_usd:.4f}{unknown}"


@dataclass
class _Collector:
    session_id: str
    events: list[dict[str, Any]]

    def add(self, m: Message, kind: str, ticket_id: str | None, decision: str, **data: Any) -> None:
        self.events.append(
            {
                "at": _at(m.timestamp),
                "kind": kind,
                "ticket_id": ticket_id,
                "decision": decision,
                "topic": m.topic,
                "partition": m.partition,
                "offset": m.offset,
                **data,
            }
        )


def _belongs(session_id: str, m: Message) -> bool:
    value = _json(m.value)
    if isinstance(value, dict) and isinstance(value.get("session_id"), str):
        return bool(value["session_id"] == session_id)
    if m.key is None:
        return False
    # Faust writes a table's str keys as JSON strings.
    return m.key in (session_id.encode(), dumps(session_id))


def build(
    session_id: str,
    names: TopicNames,
    changelog: str,
    records: Mapping[str, list[Message]],
    chain: Chain = BUILTIN,
) -> dict[str, Any]:
    """The trace document of one session from every record of the session's topics."""
    c = _Collector(session_id, [])
    tickets: dict[str, dict[str, Any]] = {}
    sources: set[tuple[str, int, int]] = set()

    def ticket_entry(ticket_id: str) -> dict[str, Any]:
        return tickets.setdefault(
            ticket_id,
            {
                "ticket_id": ticket_id,
                "stages": {},
                "reply": None,
                "dead_letters": [],
                "trace_ids": [],
            },
        )

    def traced(ticket_id: str, m: Message) -> None:
        """Note the trace the record's ``traceparent`` names (a requeue may start another)."""
        found = trace_id_of(list(m.headers))
        ids = ticket_entry(ticket_id)["trace_ids"]
        if found is not None and found not in ids:
            ids.append(found)

    refused = _refused(session_id, records.get(names.dead_letters, []))
    for m in records.get(names.tickets, []):
        if not _belongs(session_id, m):
            continue
        sources.add((m.topic, m.partition, m.offset))
        headers = {k: v.decode("utf-8", "replace") for k, v in m.headers}
        ticket = _model(Ticket, m.value)
        if ticket is None:
            c.add(m, "published", None, "invalid record (see its dead letter)")
            continue
        if ticket.ticket_id in refused:
            # Another sender's ticket: the session's history does not show what they wrote.
            c.add(m, "published", None, "a ticket this session refused (another sender's)")
            continue
        entry = ticket_entry(ticket.ticket_id)
        entry.setdefault("published", []).append(
            {"at": _at(m.timestamp), "partition": m.partition, "offset": m.offset, **headers}
        )
        entry["text"] = ticket.text
        traced(ticket.ticket_id, m)
        decision = f'"{_excerpt(ticket.text)}"'
        if "baton.requeued_from" in headers:
            decision += (
                f" (requeued from dead letter {headers['baton.requeued_from']}, "
                f"attempt {headers.get('baton.attempts', '?')})"
            )
        c.add(m, "published", ticket.ticket_id, decision)

    # Each forwarding stage's output topic, and the intake's.
    stage_topics = [(names.sessions, "intake")] + [
        (names.role(s.target_role), s.name) for s in chain if not s.answers
    ]
    for topic, stage in stage_topics:
        for m in records.get(topic, []):
            record = _model(StageRecord, m.value)
            if record is None or record.ticket.session_id != session_id:
                continue
            if record.ticket.ticket_id in refused:
                continue
            tid = record.ticket.ticket_id
            decision, detail = _stage_decision(stage, record)
            entry = ticket_entry(tid)
            again = stage in entry["stages"]
            entry["stages"][stage] = detail
            traced(tid, m)
            c.add(m, stage, tid, decision + (" (again: redelivered or requeued)" if again else ""))

    for m in records.get(names.replies, []):
        reply = _model(Reply, m.value)
        if reply is None or reply.session_id != session_id:
            continue
        entry = ticket_entry(reply.ticket_id)
        again = entry["reply"] is not None
        entry["reply"] = reply.model_dump(mode="json")
        traced(reply.ticket_id, m)
        e2e = reply.timings_ms.get("end_to_end")
        decision = (
            f"{reply.status}, order {reply.order_id or '-'}, confidence {reply.confidence:.2f}; "
            f"{_usage_text(reply.usage)}"
            + (f"; {e2e:.0f} ms end to end" if e2e is not None else "")
            + (" (DUPLICATE reply)" if again else "")
        )
        c.add(m, "reply", reply.ticket_id, decision, status=reply.status)

    packets = []
    for m in records.get(names.handoffs, []):
        packet = _model(HandoffPacket, m.value)
        if packet is None or packet.session_id != session_id:
            continue
        packets.append(packet.model_dump(mode="json"))
        due = packet.deadline.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
        decision = f"to a person: {packet.reason}, {packet.urgency} urgency, due {due}"
        c.add(m, "handoff", packet.ticket_id, decision, reason=packet.reason)

    letters = []
    for m in records.get(names.dead_letters, []):
        dl = read_letter(m)
        if dl is None:
            continue
        mine = dl.session_id == session_id or (
            dl.session_id is None
            and (dl.source_topic, dl.source_partition, dl.source_offset) in sources
        )
        if not mine:
            continue
        letters.append(dl.model_dump(mode="json"))
        if dl.ticket_id:
            ticket_entry(dl.ticket_id)["dead_letters"].append(dl.id)
            traced(dl.ticket_id, m)
        decision = f"{dl.reason} at {dl.stage} (id {dl.id}, attempts {dl.attempts}): "
        c.add(m, "dead_letter", dl.ticket_id, decision + _excerpt(dl.error, 100), stage=dl.stage)

    batons = []
    for m in records.get(changelog, []):
        if not _belongs(session_id, m):
            continue
        if m.value is None:
            batons.append({"at": _at(m.timestamp), "deleted": True})
            c.add(m, "baton", None, "deleted (session expired)")
            continue
        baton = _model(Baton, m.value)
        if baton is None:
            continue
        batons.append(_baton_summary(m, baton))
        last = baton.chain[-1] if baton.chain else None
        ticket_id = last.ticket_id if last else None
        what = f"{last.stage} {last.decision}" if last else "created"
        if baton.in_flight is not None and baton.in_flight.pending:
            ticket_id = baton.in_flight.ticket_id
            what = "reply pending (recorded before it is sent)"
        flags = f"; flags: {', '.join(baton.flags)}" if baton.flags else ""
        c.add(m, "baton", ticket_id, f"v{baton.version}: {what}{flags}")

    rank = _ranks(chain)
    c.events.sort(key=lambda e: (e["at"], rank.get(e["kind"], len(rank))))
    return {
        "session_id": session_id,
        "found": bool(c.events),
        "tickets": list(tickets.values()),
        "events": c.events,
        "batons": batons,
        "dead_letters": letters,
        "handoffs": packets,
        "usage": _session_usage(tickets.values()).model_dump(mode="json"),
    }


def _refused(session_id: str, letters: list[Message]) -> set[str]:
    """The tickets of other senders that ``session_id`` refused (filed under their sender)."""
    found = set()
    for m in letters:
        dl = read_letter(m)
        if dl is None or dl.reason != "session_conflict" or dl.ticket is None:
            continue
        if dl.ticket.session_id == session_id:
            found.add(dl.ticket.ticket_id)
    return found


def _stage_decision(stage: str, record: StageRecord) -> tuple[str, dict[str, Any]]:
    timing = record.timings_ms.get(stage)
    took = f" ({timing:.0f} ms)" if timing is not None else ""
    if stage == understand.NAME and record.understanding is not None:
        u = record.understanding
        return (
            f"{u.demand}, product {u.product or '-'}, {u.language}: "
            f'"{_excerpt(u.core_problem, 80)}"{took}',
            {"understanding": u.model_dump(mode="json"), "timing_ms": timing},
        )
    if stage == lookup.NAME and record.match is not None:
        match = record.match
        recalled = ""
        if match.recall is not None:
            words = ", ".join(repr(w) for w in match.recall.evidence)
            how = "ask which of " if match.recall.method == "ask" else "recalled by "
            what = (
                ", ".join(c.order_id for c in match.recall.candidates)
                if match.recall.method == "ask"
                else match.recall.method
            )
            recalled = f"; {how}{what} from {words}"
        return (
            f"order {match.order_id or '-'} by {match.method}, "
            f"confidence {match.confidence:.2f}{recalled}{took}",
            {"match": match.model_dump(mode="json", exclude={"candidates"}), "timing_ms": timing},
        )
    if stage in record.results:
        result = record.results[stage]
        shown = ", ".join(f"{k} {_excerpt(str(v), 40)}" for k, v in result.items())
        return (f"{shown}{took}", {stage: result, "timing_ms": timing})
    return ("accepted, re-keyed by session", {"baton_version": record.baton_version})


def _baton_summary(m: Message, baton: Baton) -> dict[str, Any]:
    return {
        "at": _at(m.timestamp),
        "version": baton.version,
        "tickets": [t.ticket_id for t in baton.tickets],
        "product": baton.product,
        "problem": baton.problem,
        "order_id": baton.order_id,
        "flags": baton.flags,
        "usage": baton.usage.model_dump(mode="json"),
        "in_flight": (
            {"ticket_id": baton.in_flight.ticket_id, "stage": baton.in_flight.stage}
            if baton.in_flight is not None
            else None
        ),
    }


def _session_usage(tickets: Any) -> UsageTotals:
    total = UsageTotals()
    for t in tickets:
        if t["reply"] is not None:
            total = total.merge(UsageTotals.model_validate(t["reply"]["usage"]))
    return total


def render(doc: Mapping[str, Any]) -> list[str]:
    """The trace as readable lines: a header, one line per event, then totals."""
    sid = shown(doc["session_id"])
    if not doc["found"]:
        return [f"session {sid}: nothing recorded in any topic"]
    replies = [t["reply"] for t in doc["tickets"] if t["reply"] is not None]
    statuses: dict[str, int] = {}
    for r in replies:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    status_text = ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
    version = max((b.get("version", 0) for b in doc["batons"]), default=0)
    lines = [
        f"session {sid}: {len(doc['tickets'])} ticket(s), {len(replies)} reply(ies)"
        + (f" ({status_text})" if status_text else "")
        + f", {len(doc['dead_letters'])} dead letter(s), baton v{version}"
    ]
    for t in doc["tickets"]:
        if t.get("trace_ids"):
            lines.append(f"trace of {shown(t['ticket_id'])}: {', '.join(t['trace_ids'])}")
    width = max((len(shown(e["ticket_id"])) for e in doc["events"]), default=1)
    for e in doc["events"]:
        at = e["at"].replace("T", " ").removesuffix("+00:00")
        who = shown(e["ticket_id"])
        lines.append(f"{at}  {who:<{width}}  {e['kind']:<11}  {e['decision']}")
    usage = UsageTotals.model_validate(doc["usage"])
    by_stage = ", ".join(f"{s} {n}" for s, n in sorted(usage.by_stage.items()))
    lines.append(f"usage: {_usage_text(usage)}" + (f" (calls: {by_stage})" if by_stage else ""))
    missing = [t["ticket_id"] for t in doc["tickets"] if t["reply"] is None]
    if missing:
        lines.append(f"no reply yet: {', '.join(shown(m) for m in missing)}")
    return lines


async def collect(
    settings: Settings, session_id: str, chain: Chain | None = None
) -> dict[str, Any]:
    """Read the session's topics (``chain``'s; None: the one ``BATON_STAGES`` names) and
    build its trace."""
    from baton_kafka.streams.kafka.reader import read_topics
    from baton_kafka.streams.runtime.own_stages import configured_chain

    if chain is None:
        chain = configured_chain(settings)

    names = TopicNames.of(settings, chain)
    changelog = changelog_topic(settings)
    topics = [
        names.tickets,
        names.sessions,
        *(names.role(s.target_role) for s in chain),
        names.dead_letters,
        names.handoffs,
        changelog,
    ]
    records = await read_topics(settings, topics)
    return build(session_id, names, changelog, records, chain)
