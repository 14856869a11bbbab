"""The look-up stage's checks of the model's choice: a candidate it was shown, as stored."""

from __future__ import annotations

from collections.abc import Callable

from baton_kafka.agents.asking import Validator
from baton_kafka.agents.guards.order_facts import near_miss_of
from baton_kafka.agents.models.llm import OutputInvalid
from baton_kafka.schemas.records import Order
from baton_kafka.schemas.stages import OrderChoice


def as_stored(candidates: list[Order]) -> Callable[[OrderChoice], OrderChoice]:
    """The choice with a near-miss of exactly one candidate's id ("O-1001", one character off)
    replaced by that id: the store's id, not the model's copy."""

    def amend(choice: OrderChoice) -> OrderChoice:
        oid = choice.order_id
        if oid is None or oid in {o.order_id for o in candidates}:
            return choice
        target = near_miss_of(oid, candidates)
        return choice.model_copy(update={"order_id": target}) if target else choice

    return amend


def among(candidates: list[Order]) -> Validator[OrderChoice]:
    """Rejects a chosen order id that is not one of the candidates shown to the model."""
    allowed = {o.order_id for o in candidates}

    def validate(choice: OrderChoice) -> None:
        if choice.order_id is not None and choice.order_id not in allowed:
            raise OutputInvalid(
                f"order_id {choice.order_id!r} is not one of the candidates {sorted(allowed)}"
            )

    return validate
