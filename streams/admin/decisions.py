"""A person's decision as the desk sends it: built from what they entered, signed, on the
decisions topic (what ``baton decide|answer|…`` and the dashboard's queue both send)."""

from __future__ import annotations

import math
import uuid

from pydantic import ValidationError

from baton_kafka.schemas.decision import Decision
from baton_kafka.streams.settings import Settings

# How a refused field is named in the message: ids as the commands name them.
FIELD_NAMES = {"session_id": "invalid session id", "item": "invalid item"}


class BadDecision(ValueError):
    """What a person entered makes no valid decision: the message says why, in one line, and
    never repeats a refused id (it may hold control characters)."""


def build(
    action: str,
    session_id: str,
    *,
    item: str | None = None,
    amount: float | None = None,
    text: str = "",
    by: str | None = None,
    decision_id: str | None = None,
) -> Decision:
    """The ``Decision`` of ``action`` on ``session_id``; raise :class:`BadDecision` when the
    parts make none (an amount off an approval, a negative or infinite one, an empty answer)."""
    if amount is not None and (action != "approve" or not math.isfinite(amount) or amount < 0):
        raise BadDecision("the amount goes with approve, and is not negative")
    if action == "answer" and not text.strip():
        raise BadDecision("the answer's text is empty")
    try:
        return Decision(
            decision_id=decision_id or uuid.uuid4().hex,
            session_id=session_id,
            item=item,
            action=action,
            amount=amount,
            text=text,
            by=by,
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
    from baton_kafka.streams.runtime.signing import Signer

    topic = TopicNames.of(settings).decisions
    signer = Signer(settings.signing_keys)
    await publish(
        settings,
        topic,
        [(decision.session_id, dumps(decision))],
        headers_of=lambda key, value: signer.headers(topic, key, value),
    )
    return topic
