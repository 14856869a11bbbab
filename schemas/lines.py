"""The items of a multi-item order: one line per product, with its quantity and its price."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

MAX_LINES = 200
# Lines are summed in cents; each may round by half a cent either way.
ROUNDING = 0.005


def to_cents(value: float) -> float:
    """``value`` rounded half up to the cent."""
    return float(int(value * 100 + 0.5 + 1e-9)) / 100


class OrderLine(BaseModel):
    """One item of an order: a product, how many, and what was paid for it."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    product_name: Annotated[str, StringConstraints(min_length=1, max_length=500)] = Field(
        description="The product as the shop names it (matched against the customer's words)."
    )
    quantity: int = Field(default=1, ge=1, description="How many of the product; at least 1.")
    unit_price: float | None = Field(
        default=None, ge=0, description="The price of one, in the order's currency."
    )
    amount: float | None = Field(
        default=None,
        ge=0,
        description="What was paid for the line, in the order's currency; when null, "
        "quantity times unit_price.",
    )
    sku: Annotated[str, StringConstraints(min_length=1, max_length=100)] | None = Field(
        default=None, description="The shop's article number, when it has one."
    )

    @model_validator(mode="after")
    def _priced(self) -> OrderLine:
        if self.amount is None and self.unit_price is None:
            raise ValueError("an order line needs its unit_price or its amount")
        return self

    @property
    def total(self) -> float:
        """What was paid for the line: ``amount``, else quantity times unit price, in cents."""
        if self.amount is not None:
            return to_cents(self.amount)
        return to_cents(self.quantity * (self.unit_price or 0.0))


def lines_problem(lines: tuple[OrderLine, ...], amount: float) -> str | None:
    """Why ``lines`` cannot belong to an order of ``amount`` paid, or None when they can."""
    total = to_cents(sum(line.total for line in lines))
    if total > amount + ROUNDING * max(1, len(lines)):
        return f"the order's lines add up to {total:.2f}, more than the order's amount {amount:.2f}"
    return None
