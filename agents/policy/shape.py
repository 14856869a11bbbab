"""The parts of a policy beyond its remedies' limits: conditions a line carries, approval per
currency, return shipping and duties by country or region, and the shop's own money channels."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from baton_kafka.schemas.records import LineCondition, Reason

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2000)]
_NAME = re.compile(r"[a-z][a-z0-9_]*")
_COUNTRY = re.compile(r"[A-Z]{2}")


class Condition(BaseModel):
    """Something a remedy's line requires or promises that the reply must state."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str = Field(
        description="Its name in the conditions language pack: photo_first, item_back, "
        "voucher_valid, or a shop's own (with its words in the shop's packs)."
    )
    days: int | None = Field(
        default=None, ge=1, le=3650, description="A number of days the reply must state."
    )
    years: int | None = Field(
        default=None, ge=1, le=100, description="A number of years the reply must state."
    )
    reasons: tuple[Reason, ...] = Field(
        default=(), description="Only for lines of these reasons; empty: every line."
    )

    @field_validator("kind")
    @classmethod
    def _a_name(cls, kind: str) -> str:
        if not _NAME.fullmatch(kind):
            raise ValueError(f"{kind!r}: a condition's kind is a lower-case word")
        return kind

    def applies(self, reason: str | None) -> bool:
        """Whether a line of ``reason`` carries it: one with ``reasons`` only a line of them."""
        return not self.reasons or reason in self.reasons

    def line(self) -> LineCondition:
        """The condition as an offer line carries it."""
        return LineCondition(kind=self.kind, days=self.days, years=self.years)


class Approval(BaseModel):
    """When an offer waits for a person: per currency, on the offer's or the order's amount."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    basis: Literal["offer", "order"] = Field(
        default="offer",
        description="offer: the money the offer states; order: the order's amount (any offer "
        "for an order above it waits).",
    )
    above: dict[str, float] = Field(
        default_factory=dict,
        description="currency -> the amount above which an offer waits for a person; a "
        "currency not named falls back to money.approval_above, else always waits.",
    )

    @field_validator("above")
    @classmethod
    def _currencies(cls, above: dict[str, float]) -> dict[str, float]:
        for currency, amount in above.items():
            if not re.fullmatch(r"[A-Z]{3}", currency):
                raise ValueError(f"{currency!r} is not an ISO 4217 currency code (EUR, USD, ...)")
            if amount < 0:
                raise ValueError(f"{currency}: a threshold is 0 or more")
        return above


class ReturnTerms(BaseModel):
    """Who pays to send an item back from a country or region, and its duties."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    payer: Literal["shop", "customer"] = Field(description="Who pays the return shipping.")
    cost: float = Field(
        default=0.0, ge=0, description="What the customer pays for it (0 when the shop pays)."
    )
    currency: str | None = Field(default=None, description="The cost's currency (ISO 4217).")
    duties: Literal["none", "shop", "customer"] = Field(
        default="none", description="Who pays customs duties on the return: none, shop, customer."
    )

    @field_validator("currency")
    @classmethod
    def _iso(cls, currency: str | None) -> str | None:
        if currency is not None and not re.fullmatch(r"[A-Z]{3}", currency):
            raise ValueError(f"{currency!r} is not an ISO 4217 currency code (EUR, USD, ...)")
        return currency


class Shipping(BaseModel):
    """Return shipping and duties by country (ISO 3166 code) or by a region the shop names."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    regions: dict[str, tuple[str, ...]] = Field(
        default_factory=dict, description="region name -> its countries (ISO 3166 codes)."
    )
    returns: dict[str, ReturnTerms] = Field(
        default_factory=dict,
        description="country code, region name or `other` -> who pays a return, and duties.",
    )

    @field_validator("regions")
    @classmethod
    def _countries(cls, regions: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        for name, countries in regions.items():
            if _COUNTRY.fullmatch(name):
                raise ValueError(f"region {name!r}: a region's name is not a country code")
            for country in countries:
                if not _COUNTRY.fullmatch(country):
                    raise ValueError(f"region {name}: {country!r} is not an ISO 3166 code (DE)")
        return regions

    def terms(self, country: str) -> ReturnTerms | None:
        """The return terms for ``country``: its own, its region's, else ``other``'s."""
        country = country.upper()
        if country in self.returns:
            return self.returns[country]
        for region, countries in self.regions.items():
            if country in countries and region in self.returns:
                return self.returns[region]
        return self.returns.get("other")


class Channel(BaseModel):
    """A money channel of the shop's own: its words per language, as a reply names it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = Field(default="", max_length=500, description="What it is, told to the model.")
    words: dict[str, tuple[Text, ...]] = Field(
        description="language -> the words a reply names it by (regular expressions, case "
        "ignored): every served language needs some."
    )

    @field_validator("words")
    @classmethod
    def _compiles(cls, words: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        for language, entries in words.items():
            for entry in entries:
                try:
                    re.compile(entry)
                except re.error as exc:
                    msg = f"{language}: {entry!r} is not a regular expression ({exc})"
                    raise ValueError(msg) from None
        return words
