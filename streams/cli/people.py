"""``baton decide|answer|takeover|handback|close``: a person's decision, signed, on the
decisions topic (a helpdesk sends the same record with any Kafka client)."""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from dataclasses import dataclass
from typing import Any

from baton_kafka.streams.cli.errors import UsageError, checked_id
from baton_kafka.streams.settings import Settings


@dataclass(frozen=True)
class PersonCommand:
    """One command that sends one ``Decision`` of a fixed kind."""

    name: str
    help: str

    def add_parser(self, sub: Any) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = sub.add_parser(self.name, help=self.help)
        p.add_argument("session_id")
        if self.name == "decide":
            p.add_argument("item", help="the ticket id of the offer waiting for approval")
            p.add_argument("verdict", choices=("approve", "deny"))
            p.add_argument("--amount", type=float, help="approve this amount instead")
        if self.name == "answer":
            p.add_argument("text", help="what the customer is sent")
        else:
            p.add_argument("--note", default="", help="a note kept in the session's context")
        p.add_argument("--by", help="who decides (the desk's user id)")
        p.add_argument("--id", dest="decision_id", help="the decision's id (default: a new one)")
        return p

    def run(self, args: argparse.Namespace, settings: Settings) -> int:
        from baton_kafka.schemas.codec import dumps
        from baton_kafka.streams.kafka.client import publish
        from baton_kafka.streams.kafka.topics import TopicNames
        from baton_kafka.streams.runtime.signing import Signer

        decision = decision_of(self.name, args)
        topic = TopicNames.of(settings).decisions
        signer = Signer(settings.signing_keys)
        asyncio.run(
            publish(
                settings,
                topic,
                [(decision.session_id, dumps(decision))],
                headers_of=lambda key, value: signer.headers(topic, key, value),
            )
        )
        what = decision.action + (f" of ticket {decision.item}" if decision.item else "")
        print(
            f"baton: decision {decision.decision_id} ({what}) sent to {topic} for session "
            f"{decision.session_id}",
            file=sys.stderr,
        )
        return 0


def decision_of(name: str, args: argparse.Namespace) -> Any:
    """The ``Decision`` the command's arguments make; a bad one is a one-line ``UsageError``."""
    from pydantic import ValidationError

    from baton_kafka.schemas.decision import Decision

    where = f"baton {name}"
    session = checked_id(args.session_id, f"{where}: invalid session id")
    action = args.verdict if name == "decide" else name
    item = checked_id(args.item, f"{where}: invalid item") if name == "decide" else None
    amount = getattr(args, "amount", None)
    if amount is not None and (action != "approve" or amount < 0):
        raise UsageError(f"{where}: --amount goes with approve, and is not negative")
    text = args.text if name == "answer" else args.note
    if name == "answer" and not text.strip():
        raise UsageError(f"{where}: the answer's text is empty")
    try:
        return Decision(
            decision_id=args.decision_id or uuid.uuid4().hex,
            session_id=session,
            item=item,
            action=action,
            amount=amount,
            text=text,
            by=args.by,
        )
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        field = ".".join(str(p) for p in error["loc"])
        raise UsageError(f"{where}: {field}: {error['msg']}") from None


COMMANDS = (
    PersonCommand("decide", "approve or deny the offer a session waits on"),
    PersonCommand("answer", "send the customer a person's written answer"),
    PersonCommand("takeover", "take a session over: the agents stay silent"),
    PersonCommand("handback", "hand a taken-over session back to the agents"),
    PersonCommand("close", "close a session's case"),
)
