"""``baton decide|answer|takeover|handback|close``: a person's decision, signed, on the
decisions topic (a helpdesk sends the same record with any Kafka client)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass
from typing import Any

from baton_kafka.streams.cli.errors import UsageError
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
            p.add_argument(
                "item",
                help="the ticket id of the offer waiting for approval, or the idempotency key "
                "of the action waiting for a person (done, failed)",
            )
            p.add_argument("verdict", choices=("approve", "deny", "done", "failed"))
            p.add_argument("--amount", type=float, help="approve this amount instead")
            p.add_argument(
                "--reference", help="done: the shop's system's reference of what was done"
            )
        if self.name == "answer":
            p.add_argument("text", help="what the customer is sent")
            p.add_argument(
                "--offer",
                action="append",
                default=[],
                metavar="KIND:AMOUNT[:CHANNEL]",
                help="what the text promises, one remedy a flag (refund:40:original_payment), "
                "for the session's order; held to the policy and counted in its ledger",
            )
        else:
            p.add_argument("--note", default="", help="a note kept in the session's context")
        if self.name in ("decide", "answer"):
            p.add_argument(
                "--override",
                metavar="ROLE",
                help="promise past the policy's money limits, as far as the policy's "
                "[people] overrides let ROLE (approve and answer; needs --reason)",
            )
            p.add_argument("--reason", default="", help="why the override (kept and logged)")
        p.add_argument("--by", help="who decides (the desk's user id)")
        p.add_argument("--id", dest="decision_id", help="the decision's id (default: a new one)")
        return p

    def run(self, args: argparse.Namespace, settings: Settings) -> int:
        from baton_kafka.agents.policy import PolicyError, load
        from baton_kafka.streams.admin.decisions import send

        try:
            policy = load(settings.policy_file) if self.name == "answer" else None
        except PolicyError as exc:
            raise UsageError(f"baton {self.name}: {exc}") from None
        hosts = policy.links.allowed_hosts if policy is not None else None
        decision = decision_of(self.name, args, hosts)
        topic = asyncio.run(send(settings, decision))
        what = decision.action + (f" of ticket {decision.item}" if decision.item else "")
        print(
            f"baton: decision {decision.decision_id} ({what}) sent to {topic} for session "
            f"{decision.session_id}",
            file=sys.stderr,
        )
        return 0


def offer_lines(specs: list[str]) -> list[Any]:
    """``--offer`` flags as offer lines for the session's order; a bad one is a ``BadDecision``."""
    from baton_kafka.schemas.records import OfferLine
    from baton_kafka.streams.admin.decisions import BadDecision, bounded

    lines = []
    for spec in specs:
        kind, _, rest = spec.partition(":")
        amount, _, channel = rest.partition(":")
        try:
            value = float(amount) if amount else None
        except ValueError:
            value = -1.0
        if not kind or (value is not None and not bounded(value)):
            raise BadDecision(f"--offer {spec!r}: KIND:AMOUNT[:CHANNEL], an amount from 0 to 1e9")
        lines.append(OfferLine(kind=kind, order_id="", amount=value, channel=channel or None))
    return lines


def override_of(args: argparse.Namespace) -> tuple[str, str] | None:
    """``--override ROLE --reason TEXT`` as (role, reason); a reason alone is a ``BadDecision``."""
    from baton_kafka.streams.admin.decisions import BadDecision

    role, reason = getattr(args, "override", None), getattr(args, "reason", "")
    if role is None and reason:
        raise BadDecision("--reason goes with --override")
    if role is not None and not reason.strip():
        raise BadDecision("--override needs --reason (why the promise goes past the policy)")
    return (role, reason) if role is not None else None


def decision_of(name: str, args: argparse.Namespace, hosts: Any = None) -> Any:
    """The ``Decision`` the command's arguments make (an answer's links checked against
    ``hosts``, when known); a bad one is a one-line ``UsageError``."""
    from baton_kafka.streams.admin.decisions import BadDecision, build

    try:
        return build(
            args.verdict if name == "decide" else name,
            args.session_id,
            item=args.item if name == "decide" else None,
            amount=getattr(args, "amount", None),
            text=args.text if name == "answer" else args.note,
            by=args.by,
            decision_id=args.decision_id,
            offer=offer_lines(getattr(args, "offer", [])),
            allowed_hosts=hosts,
            override=override_of(args),
            reference=getattr(args, "reference", None),
        )
    except BadDecision as exc:
        raise UsageError(f"baton {name}: {exc}") from None


COMMANDS = (
    PersonCommand(
        "decide",
        "approve or deny the offer a session waits on; done or failed for an action a person "
        "was handed",
    ),
    PersonCommand("answer", "send the customer a person's written answer"),
    PersonCommand("takeover", "take a session over: the agents stay silent"),
    PersonCommand("handback", "hand a taken-over session back to the agents"),
    PersonCommand("close", "close a session's case"),
)
