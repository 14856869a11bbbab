"""A reply's actions onto ``support.actions``: written with the reply, before its offset commits."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from baton_kafka.schemas.action import Action, actions_of
from baton_kafka.schemas.codec import dumps
from baton_kafka.schemas.records import Reply
from baton_kafka.streams.runtime.records.sink import Sink


def _is(action: Action) -> Callable[[bytes], bool]:
    marker = f'"idempotency_key":{dumps(action.idempotency_key).decode()}'.encode()

    def found(value: bytes) -> bool:
        return (
            marker in value
            and Action.model_validate_json(value).idempotency_key == action.idempotency_key
        )

    return found


async def publish(
    sink: Sink, topic: str, reply: Reply, resumed_since: datetime | None = None
) -> list[Action]:
    """Send one action per line of the reply's approved offer (none when ``topic`` is empty).

    ``resumed_since``: the reply is resent after a crash, so an action the topic holds since
    then is not sent again (a copy would be harmless, its key is the same, but one is clearer).
    """
    if not topic:
        return []
    actions = actions_of(reply)
    for action in actions:
        if resumed_since is not None and await sink.contains(
            topic, action.session_id, resumed_since, _is(action)
        ):
            continue
        await sink.send(topic, action.session_id, dumps(action))
    return actions
