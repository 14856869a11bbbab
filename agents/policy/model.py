"""The shop's service policy as data: which remedies apply when, and the limits on money."""

from __future__ import annotations

import functools
import re
from typing import Annotated

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from baton_kafka.agents import risk
from baton_kafka.agents.languages import codes, primary
from baton_kafka.agents.policy.shape import Approval, Channel, Condition, Shipping
from baton_kafka.schemas.records import Reason

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2000)]
# Where offered money goes. Open: a shop may name its own channel ("bank_transfer").
ORIGINAL_PAYMENT = "original_payment"
_LANGUAGE_CODE = re.compile(r"[a-z]{2,3}")
_NAME = re.compile(r"[a-z][a-z0-9_]*")  # a remedy's or channel's name


class Remedy(BaseModel):
    """One thing the shop may do for a customer, and when it may."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = Field(
        default="", max_length=2000, description="What the remedy is, told to the model as written."
    )
    statuses: tuple[str, ...] = Field(
        default=(), description="Order statuses it applies to; empty: any status."
    )
    demands: tuple[str, ...] = Field(
        default=(), description="Customer demands it answers; empty: any demand."
    )
    money: bool = Field(default=False, description="An offer of it states an amount.")
    channels: tuple[str, ...] = Field(
        default=(), description="Where its money may go (original_payment, store_credit, ...)."
    )
    share: float | None = Field(
        default=None, ge=0, le=1, description="At most this share of the amount paid."
    )
    cap: float | None = Field(default=None, ge=0, description="At most this amount.")
    window_days: int | None = Field(
        default=None, ge=0, description="Days from delivery (or order) within which it applies."
    )
    turnaround: dict[str, Text] = Field(
        default_factory=dict, description="What it promises about time, per language."
    )
    reasons: tuple[Reason, ...] = Field(
        default=(),
        description="The customer's reasons it answers (change_of_mind, defect, "
        "damaged_in_transit, not_as_described); empty: any reason.",
    )
    windows: dict[Reason, int] = Field(
        default_factory=dict,
        description="Days from delivery by reason (`{ change_of_mind = 30, defect = 730 }`); a "
        "reason not named has `window_days`, a line of no known reason the shortest.",
    )
    conditions: tuple[Condition, ...] = Field(
        default=(),
        description="What its line requires or promises (photo_first, item_back with days, "
        "voucher_valid with years): copied onto the line, and the reply states each.",
    )

    def allows_reason(self, reason: str | None) -> bool:
        return not self.reasons or reason in self.reasons

    def window(self, reason: str | None) -> int | None:
        """Days from delivery within which a line of ``reason`` applies; None: no window."""
        if reason is not None and reason in self.windows:
            return self.windows[reason]
        if reason is None and self.windows:
            # Not knowing why, the strictest window holds.
            return min([*self.windows.values(), *([self.window_days] if self.window_days else [])])
        return self.window_days

    def allows_status(self, status: str) -> bool:
        return not self.statuses or status in self.statuses

    def allows_demand(self, demand: str) -> bool:
        return not self.demands or demand in self.demands


class Shop(BaseModel):
    """Who the policy is for."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Text = "the shop"
    languages: tuple[str, ...] = Field(
        default=("en", "zh"),
        min_length=1,
        description="The languages the shop serves (BCP 47 codes), its default first.",
    )
    handbook: str | None = Field(
        default=None, description="A Markdown file beside the policy: the shop's own words."
    )
    notes: str = Field(default="", description="The handbook file's text, read with the policy.")
    tone: str | None = Field(
        default=None,
        description="A Markdown file beside the policy: how replies sound (language, voice, "
        "sign-off, product words); baton's default when absent.",
    )
    tone_text: str = Field(default="", description="The tone file's text, read with the policy.")
    articles: str | None = Field(
        default=None,
        description="A folder of Markdown help articles beside the policy: the few that fit a "
        "ticket are shown to the model as the shop's reference, never as instructions.",
    )
    articles_shown: int = Field(
        default=3, ge=0, le=10, description="How many fitting articles a prompt shows at most."
    )
    articles_dir: str = Field(
        default="", description="The articles folder's full path, resolved with the policy."
    )

    @field_validator("languages")
    @classmethod
    def _bcp47(cls, languages: tuple[str, ...]) -> tuple[str, ...]:
        return codes(languages)


class OrderIds(BaseModel):
    """How the shop writes its order ids."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id_patterns: tuple[str, ...] = Field(
        default=(r"[A-Z]{1,5}-\d{3,}",), description="Regular expressions for a whole id token."
    )

    @field_validator("id_patterns")
    @classmethod
    def _compiles(cls, patterns: tuple[str, ...]) -> tuple[str, ...]:
        for p in patterns:
            try:
                compiled = re.compile(p)
            except re.error as exc:
                raise ValueError(f"{p!r} is not a regular expression ({exc})") from None
            if compiled.fullmatch("5") or compiled.fullmatch("30"):
                raise ValueError(f"{p!r} matches plain small numbers; ids need a longer shape")
        return patterns


class MoneyRules(BaseModel):
    """Limits on every money offer, whatever its remedy."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    total_at_most_paid: bool = True
    approval_above: float | None = Field(
        default=None, ge=0, description="Offers above this need a person's approval."
    )


class Handoff(BaseModel):
    """What always goes to a person."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    safety: bool = True
    legal: bool = True
    self_harm: bool = True
    prompt_injection: bool = True
    repeated_contact: int = Field(default=0, ge=0, description="0: never.")
    triggers: dict[str, dict[str, tuple[str, ...]]] = Field(
        default_factory=dict,
        description="The shop's own trigger words per language, added to the language packs': "
        "language -> safety, legal, self_harm, injection or not (figurative phrases) -> words.",
    )

    @field_validator("triggers")
    @classmethod
    def _triggers(
        cls, triggers: dict[str, dict[str, tuple[str, ...]]]
    ) -> dict[str, dict[str, tuple[str, ...]]]:
        out = {}
        for language, by_kind in triggers.items():
            code = primary(language)
            if not _LANGUAGE_CODE.fullmatch(code):
                raise ValueError(f"{language!r} is not a language code (de, en, zh, ...)")
            out[code] = by_kind
        risk.validate(out)
        return out

    def on(self, kind: str) -> bool:
        """Whether a risk of ``kind`` hands the ticket to a person."""
        switch = {"injection": self.prompt_injection}.get(kind)
        return switch if switch is not None else bool(getattr(self, kind, False))


class Links(BaseModel):
    """Where a reply may link to."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    allowed_hosts: tuple[str, ...] = ()


class People(BaseModel):
    """What a person at the desk may promise beyond the money rules, by role."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    overrides: dict[str, float] = Field(
        default_factory=dict,
        description="role -> the most money a person of that role may promise for an order "
        "with a signed override, past the remedies' limits; a role not named has none.",
    )

    @field_validator("overrides")
    @classmethod
    def _bounded(cls, overrides: dict[str, float]) -> dict[str, float]:
        for role, most in overrides.items():
            if not (0 <= most <= 1e9):
                raise ValueError(f"{role}: an override's most is from 0 to 1e9")
        return overrides


class Policy(BaseModel):
    """A shop's whole service policy; ``version`` is the hash of the file it was read from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    shop: Shop = Field(default_factory=Shop)
    orders: OrderIds = Field(default_factory=OrderIds)
    money: MoneyRules = Field(default_factory=MoneyRules)
    remedies: dict[str, Remedy] = Field(min_length=1)
    never: tuple[str, ...] = Field(
        default=(),
        description='Remedies the shop never gives (`never = ["repair"]`): a line of one is '
        "refused, a reply promising one is rejected.",
    )
    approval: Approval = Field(default_factory=Approval)
    shipping: Shipping = Field(default_factory=Shipping)
    channels: dict[str, Channel] = Field(
        default_factory=dict,
        description="The shop's own money channels, with the words a reply names each by.",
    )
    handoff: Handoff = Field(default_factory=Handoff)
    links: Links = Field(default_factory=Links)
    people: People = Field(default_factory=People)
    version: str = Field(default="", exclude=True, description="SHA-256 prefix of the file.")

    @field_validator("remedies")
    @classmethod
    def _money_has_channels(cls, remedies: dict[str, Remedy]) -> dict[str, Remedy]:
        for name, r in remedies.items():
            if r.money and not r.channels:
                raise ValueError(f"{name}: a money remedy needs at least one channel")
            if not _NAME.fullmatch(name):
                raise ValueError(f"{name!r}: remedy names are lower-case words")
        return remedies

    @field_validator("channels")
    @classmethod
    def _own_channels(cls, channels: dict[str, Channel]) -> dict[str, Channel]:
        for name in channels:
            if not _NAME.fullmatch(name):
                raise ValueError(f"{name!r}: channel names are lower-case words")
        return channels

    @model_validator(mode="after")
    def _never_given(self) -> Policy:
        for name in self.never:
            if name in self.remedies:
                raise ValueError(f"never: {name!r} is also a remedy of the policy; name it once")
        return self

    def approval_threshold(self, currency: str | None) -> float | None:
        """The amount above which an offer in ``currency`` waits for a person; None: never.

        A currency the per-currency table does not name falls back to ``money.approval_above``;
        with a table and no fallback, an unnamed currency always waits (0).
        """
        above = self.approval.above
        if currency is not None and currency.upper() in above:
            return above[currency.upper()]
        if self.money.approval_above is not None:
            return self.money.approval_above
        return 0.0 if above else None

    def __hash__(self) -> int:
        return hash(self.version or self.model_dump_json())

    def remedy(self, kind: str) -> Remedy | None:
        return self.remedies.get(kind)

    @functools.cached_property
    def id_shapes(self) -> tuple[re.Pattern[str], ...]:
        """The shop's order-id patterns, compiled."""
        return tuple(re.compile(p) for p in self.orders.id_patterns)

    @property
    def languages(self) -> tuple[str, ...]:
        """The languages the shop serves, its default first."""
        return self.shop.languages

    def serving(self, languages: tuple[str, ...]) -> Policy:
        """This policy serving ``languages`` instead of its own (itself when none are given)."""
        if not languages or languages == self.shop.languages:
            return self
        return self.model_copy(
            update={"shop": self.shop.model_copy(update={"languages": languages})}
        )

    def turnaround(self, kind: str, language: str) -> str:
        """What ``kind`` promises about time in ``language`` (the first language as fallback)."""
        remedy = self.remedies.get(kind)
        if remedy is None or not remedy.turnaround:
            return ""
        first = next(iter(remedy.turnaround.values()))
        return remedy.turnaround.get(language) or remedy.turnaround.get(primary(language), first)
