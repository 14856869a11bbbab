"""The final-state label of an eval ticket: the actions its reply should leave for the shop."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ExpectedAction(BaseModel):
    """One action the shop's systems should hold after a ticket, as baton would write it."""

    model_config = ConfigDict(extra="forbid")

    kind: str = Field(
        min_length=1,
        description="The remedy as the shop's policy names it: refund, exchange, repair, "
        "cancellation, compensation, investigation, ...",
    )
    order_id: str = Field(min_length=1, description="The order it is for.")
    item: str | None = Field(
        default=None,
        description="The item of a multi-item order it is for (its product_name); null: the "
        "whole order.",
    )
    amount: float | None = Field(
        default=None,
        ge=0,
        description="The money (refund, compensation), compared to the cent; null for an "
        "action without money (exchange, repair, cancellation).",
    )
    currency: str | None = Field(
        default=None, description="The amount's currency (the order's); null without an amount."
    )
