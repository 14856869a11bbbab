"""A person's decision as the desk sends it: built from what they entered, signed, on the
decisions topic (what ``baton decide|answer|…`` and the dashboard's queue both send)."""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable, Sequence

from pydantic import ValidationError

from baton_kafka.agents.guards import reading
from baton_kafka.schemas.decision import MAX_AMOUNT, Decision, Override
from baton_kafka.schemas.records import OfferLine
from baton_kafka.streams.settings import Settings

# How a refused field is named in the message: ids as the commands name them.
FIELD_NAMES = {"session_id": "invalid session id", "item": "invalid item"}


class BadDecision(ValueError):
    """What a person entered makes no valid decision: the message says why, in one line, and
    never repeats a refused id (it may hold control characters)."""


def bounded(amount: float) -> bool:
    """Whether ``amount`` is money a decision may name: finite, from 0 to ``MAX_AMOUNT``."""
    return math.isfinite(amount) and 0 <= amount <= MAX_AMOUNT


def unsendable(text: str, allowed_hosts: Iterable[str] | None) -> str | None:
    """Why an answer's text may not go to a customer whatever the session, as the worker's
    audit finds it too: a link to a host the shop does not allow (when ``allowed_hosts`` is
    known), a request for card data, codes or passwords; None: the worker judges the rest."""
    plain = reading.normalise(text)
    if allowed_hosts is not None:
        hosts = tuple(allowed_hosts)
        for host in reading.hosts(plain):
            if not reading.allowed(host, hosts):
                return f"the answer links to {host}, which is not a host the shop allows"
    for secret in reading.asks_for_secrets(plain):
        return f"the answer asks for {secret}: never ask a customer for card data or passwords"
    return None


def build(
    action: str,
    session_id: str,
    *,
    item: str | None = None,
    amount: float | None = None,
    text: str = "",
    by: str | None = None,
    decision_id: str | None = None,
    offer: Sequence[OfferLine] = (),
    allowed_hosts: Iterable[str] | None = None,
    override: tuple[str, str] | None = None,
    reference: str | None = None,
) -> Decision:
    """The ``Decision`` of ``action`` on ``session_id``; raise :class:`BadDecision` when the
    parts make none (an amount off an approval, a negative, infinite or too large one, an
    empty answer, one the worker's audit refuses whatever the session)."""
    if amount is not None and (action != "approve" or not bounded(amount)):
        raise BadDecision(f"the amount goes with approve, from 0 to {MAX_AMOUNT:.0f}")
    if offer and action != "answer":
        raise BadDecision("offer lines go with an answer")
    if override is not None and action not in ("answer", "approve"):
        raise BadDecision("an override goes with an answer or an approval")
    if action == "answer" and not text.strip():
        raise BadDecision("the answer's text is empty")
    if action == "done" and not reference:
        raise BadDecision("done needs --reference, the system's reference of what was done")
    if reference is not None and action != "done":
        raise BadDecision("a reference goes with done only")
    if action == "answer" and (why := unsendable(text, allowed_hosts)) is not None:
        raise BadDecision(why)
    try:
        return Decision(
            decision_id=decision_id or uuid.uuid4().hex,
            session_id=session_id,
            item=item,
            action=action,
            amount=amount,
            text=text,
            by=by,
            offer=list(offer),
            override=Override(role=override[0], reason=override[1]) if override else None,
            reference=reference,
        )
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        field = ".".join(str(p) for p in error["loc"])
        raise BadDecision(f"{FIELD_NAMES.get(field, field)}: {error['msg']}") from None


async def send(settings: Settings, decision: Decision) -> str:
    """Publish ``decision`` on the namespace's decisions topic, keyed and signed by session;
    the topic's name once the broker acknowledged it."""
    from baton_kafka.schemas.codec import dumps
    from baton_kafka.streams.kafka.client import publish
    from baton_kafka.streams.kafka.topics import TopicNames
    from baton_kafka.streams.runtime.records.signing import Signer

    topic = TopicNames.of(settings).decisions
    signer = Signer(settings.signing_keys)
    await publish(
        settings,
        topic,
        [(decision.session_id, dumps(decision))],
        headers_of=lambda key, value: signer.headers(topic, key, value),
    )
    return topic
