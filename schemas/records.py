"""Records on baton's public topics: what users publish and what they consume."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from baton_kafka.schemas.lines import MAX_LINES, OrderLine, lines_problem

SCHEMA_VERSION = 3
MAX_TEXT_CHARS = 20_000

ReplyStatus = Literal[
    "answered",
    "degraded",
    "handoff",
    "taken_over",
    "holding",
    "coalesced",
    "action_confirmed",
    "action_failed",
]
# Why the customer wants a remedy: a shop's windows and remedies may depend on it.
Reason = Literal["change_of_mind", "defect", "damaged_in_transit", "not_as_described"]
OrderStatus = Literal[
    "pending", "paid", "shipped", "delivered", "cancelled", "refunded", "returned", "lost"
]
DeadLetterReason = Literal[
    "invalid_input",
    "validation_failed",
    "model_error",
    "model_refused",
    "max_tokens",
    "timeout",
    "budget_exceeded",
    "spend_limit",
    "context_broken",
    "order_store_unavailable",
    "stage_error",
    "drift",
    "session_conflict",
    "untrusted_record",
    "session_flood",
    # a person's decision that cannot be applied: nothing of the session is changed
    "decision_not_pending",
    "decision_replayed",
    "decision_invalid",
]
# A stage's name: ``intake`` or one the chain declares (streams.runtime.stages); open, so a
# stage of the shop's own needs no schema edit.
StageName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,39}$")]

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# Ids are the shop's own (an email, a platform's global id, a number): any printable text is
# taken as it is and compared exactly. Where an id reaches a shell command, a log line, a file
# name, a URL or a label, that place quotes or escapes it (streams.observe.shown).
MAX_ID_CHARS = 200
ID_RULE = (
    f"1 to {MAX_ID_CHARS} printable characters (no control or invisible characters), "
    "no whitespace at either end"
)
# The rule for consumers of the JSON Schema, in a pattern every regex engine reads (ECMA-262
# without flags, Python's re, Java's): no control, format or separator character of the Basic
# Multilingual Plane, the space only inside. Unicode property escapes (\p{C}) would state it
# whole, but Python's jsonschema (and so Confluent's serializers) cannot compile them; the
# validator refuses the rest (unassigned, private-use and astral format characters) too.
ID_REFUSED = (
    r"\u0000-\u001f\u007f-\u00a0\u00ad\u0600-\u0605\u061c\u06dd\u070f"
    r"\u0890-\u0891\u08e2\u1680\u180e\u2000-\u200f\u2028-\u202f\u205f-\u2064\u2066-\u206f\u3000\ufeff\ufff9-\ufffb"
)
ID_PATTERN = rf"^[^{ID_REFUSED} ](?:[^{ID_REFUSED}]*[^{ID_REFUSED} ])?$"


def utcnow() -> datetime:
    """Return the current time, timezone-aware UTC."""
    return datetime.now(UTC)


def _clean_text(value: str) -> str:
    cleaned = _CONTROL.sub("", value)
    if not cleaned.strip():
        raise ValueError("text is blank")
    return cleaned


def _describe(char: str) -> str:
    code = f"U+{ord(char):04X}"
    if unicodedata.category(char) == "Cc":
        return f"a control character ({code})"
    return f"an invisible character ({code}, {unicodedata.category(char)})"


# The integers both of baton's JSON readers take exactly (64 bits): orjson reads a larger one as
# a float, so it is refused whichever reader read it.
_JSON_INT_MIN, _JSON_INT_MAX = -(1 << 63), (1 << 64) - 1


def _id_number(value: object) -> object:
    """A JSON integer sent as an id becomes its digits; a fraction is refused, never rounded."""
    if type(value) is str:
        return value  # nearly every id: every record a stage reads validates several
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and _JSON_INT_MIN <= value <= _JSON_INT_MAX
    ):
        return str(value)
    if isinstance(value, float | int) and not isinstance(value, bool):
        # A fraction, or an integer too large for the JSON reader (read as a float).
        raise ValueError(f"is the number {value!r}: send an id as a string or a whole number")
    return value


def _safe_id(value: str) -> str:
    if value.isprintable() and value.strip() == value:
        return value
    if not value.strip():
        raise ValueError(f"is blank: an id is {ID_RULE}")
    bad = next((c for c in value if not c.isprintable()), None)
    if bad is not None:
        raise ValueError(f"holds {_describe(bad)}: an id is {ID_RULE}")
    end = "starts" if value[0].isspace() else "ends"
    raise ValueError(f"{end} with a space: an id is {ID_RULE}")


_ID_STRING = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_ID_CHARS,
    "pattern": ID_PATTERN,
    "description": f"{ID_RULE}.",
}
_ID_NUMBER = {"type": "integer", "description": "Taken as its decimal digits."}
Identifier = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_ID_CHARS),
    BeforeValidator(_id_number),
    AfterValidator(_safe_id),
    # What the validator checks, stated for consumers of the JSON Schema: records written to
    # baton may carry a number, records baton writes always carry the string.
    WithJsonSchema({"anyOf": [_ID_STRING, _ID_NUMBER]}, mode="validation"),
    WithJsonSchema(_ID_STRING, mode="serialization"),
]


LANGUAGE_PATTERN = r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$"


def _language_code(value: object) -> object:
    """``ZH``, ``de_CH``: the primary subtag lower-cased and ``_`` read as ``-``."""
    if not isinstance(value, str):
        return value
    head, _, rest = value.strip().replace("_", "-").partition("-")
    return f"{head.lower()}-{rest}" if rest else head.lower()


# A BCP 47 language code: zh, ja, en, de, es, zh-Hans, de-CH, ...
LanguageCode = Annotated[
    str,
    BeforeValidator(_language_code),
    StringConstraints(pattern=LANGUAGE_PATTERN, max_length=35),
]


class Ticket(BaseModel):
    """A customer message, as published to ``support.tickets``."""

    model_config = ConfigDict(extra="ignore", strict=False, frozen=True)

    schema_version: int = Field(default=SCHEMA_VERSION, description="Record layout version.")
    ticket_id: Identifier = Field(description="Unique id of this message.")
    session_id: Identifier = Field(description="Conversation the message belongs to.")
    customer_id: Identifier | None = Field(default=None, description="Customer, if known.")
    text: Annotated[
        str, StringConstraints(max_length=MAX_TEXT_CHARS), AfterValidator(_clean_text)
    ] = Field(description="What the customer wrote; control characters are removed.")
    created_at: datetime | None = Field(default=None, description="RFC 3339 time of writing.")
    guest_id: Identifier | None = Field(
        default=None,
        description=(
            "For a ticket without a customer: an id the producer issues to the anonymous "
            "visitor and keeps for them (a random value in their browser, say); the session "
            "of their first ticket then takes only tickets with the same guest id. Ignored "
            "when customer_id is set."
        ),
    )

    def guest(self) -> str | None:
        """The anonymous principal of a ticket without a customer: a digest of its guest id
        (none for a customer's ticket or a guest without an id)."""
        if self.customer_id is not None or self.guest_id is None:
            return None
        return hashlib.sha256(b"baton-guest\0" + self.guest_id.encode()).hexdigest()[:32]

    def written_at(self, now: datetime | None = None) -> datetime:
        """When the customer wrote it: ``created_at``, never later than now (a producer's
        clock is not trusted to be ahead), or now when it is unknown."""
        now = now or utcnow()
        if self.created_at is None:
            return now
        at = self.created_at if self.created_at.tzinfo else self.created_at.replace(tzinfo=UTC)
        return min(at, now)


class Order(BaseModel):
    """One order in the order store (also the line format of ``baton orders import``).

    A one-item order is its ``product_name`` and ``amount`` and leaves ``items`` empty. An
    order of several items lists them in ``items``; its ``product_name`` may then summarise
    ("Kitchen set: kettle, blender"), and ``amount`` stays what the customer paid for the whole
    order (the lines, plus shipping or minus discounts), which the lines never exceed.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    order_id: Identifier
    customer_id: Identifier
    product_name: Annotated[str, StringConstraints(min_length=1, max_length=500)]
    status: OrderStatus | str = Field(description="paid, shipped, delivered, cancelled, ...")
    amount: float = Field(ge=0)
    currency: Annotated[str, StringConstraints(min_length=1, max_length=8)] = "CNY"
    ordered_at: datetime
    delivered_at: datetime | None = None
    carrier: str | None = None
    tracking_no: str | None = None
    refunded: float = Field(
        default=0.0,
        ge=0,
        description="What the shop has already refunded on the order outside baton, in the "
        "order's currency; at most its amount. It counts against what may still be offered.",
    )
    items: tuple[OrderLine, ...] = Field(
        default=(),
        max_length=MAX_LINES,
        description="The order's items when it holds several; empty: the order is its "
        "product_name. Their amounts add up to at most the order's amount.",
    )

    @field_validator("refunded", mode="before")
    @classmethod
    def _an_amount(cls, value: Any) -> Any:
        # A yes/no flag read as money would be 1.0 refunded: refuse it rather than guess.
        if isinstance(value, bool):
            raise ValueError("refunded is the amount refunded, not yes or no")
        return value

    @model_validator(mode="after")
    def _lines_fit(self) -> Order:
        if self.items and (problem := lines_problem(self.items, self.amount)):
            raise ValueError(problem)
        if self.refunded > self.amount + 0.005:
            raise ValueError(
                f"refunded ({self.refunded:.2f}) is more than the order's amount "
                f"({self.amount:.2f})"
            )
        return self

    def products(self) -> list[str]:
        """Every product name the order answers to: its product_name, then each line's."""
        if not self.items:
            return [self.product_name]  # most orders: the guards and stages ask many times
        return list(dict.fromkeys([self.product_name, *[i.product_name for i in self.items]]))

    def line(self, name: str) -> OrderLine | None:
        """The line whose product name or sku is ``name`` (case, width and spacing aside), or
        None; a one-item order's only line is its product_name at its amount."""
        want = _folded(name)
        for item in self.lines():
            if want in {_folded(item.product_name), _folded(item.sku or "")}:
                return item
        return None

    def lines(self) -> tuple[OrderLine, ...]:
        """Every line of the order: its items, or for a one-item order the order itself."""
        if self.items:
            return self.items
        return (OrderLine(product_name=self.product_name, amount=self.amount),)


def _folded(name: str) -> str:
    """``name`` as lines are compared: NFKC, case-folded, runs of spaces as one."""
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


class CallUsage(BaseModel):
    """Tokens and cost of one model call."""

    stage: StageName
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = Field(
        default=0.0,
        description="USD; null when the model has no known price (unknown, not free).",
    )
    request_id: str | None = Field(
        default=None, description="The API's request-id of the call, when it sent one."
    )


class UsageTotals(BaseModel):
    """Summed model usage (of a ticket or a session)."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    by_stage: dict[str, int] = Field(default_factory=dict, description="Model calls per stage.")
    unpriced_calls: int = Field(
        default=0, description="Calls of models with no known price: cost_usd leaves them out."
    )

    def add(self, call: CallUsage) -> UsageTotals:
        """Return a new total including ``call``."""
        by_stage = dict(self.by_stage)
        by_stage[call.stage] = by_stage.get(call.stage, 0) + 1
        return UsageTotals(
            calls=self.calls + 1,
            input_tokens=self.input_tokens + call.input_tokens,
            output_tokens=self.output_tokens + call.output_tokens,
            cache_read_tokens=self.cache_read_tokens + call.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + call.cache_write_tokens,
            cost_usd=round(self.cost_usd + (call.cost_usd or 0.0), 8),
            by_stage=by_stage,
            unpriced_calls=self.unpriced_calls + (call.cost_usd is None),
        )

    def merge(self, other: UsageTotals) -> UsageTotals:
        """Return the sum of two totals."""
        by_stage = dict(self.by_stage)
        for stage, n in other.by_stage.items():
            by_stage[stage] = by_stage.get(stage, 0) + n
        return UsageTotals(
            calls=self.calls + other.calls,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            cost_usd=round(self.cost_usd + other.cost_usd, 8),
            by_stage=by_stage,
            unpriced_calls=self.unpriced_calls + other.unpriced_calls,
        )

    @property
    def total_tokens(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
        )


class LineCondition(BaseModel):
    """A condition of an offer line that the reply must state, as the policy types it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str = Field(
        description="photo_first (a photo before anything is done), item_back (the item sent "
        "back within ``days``), voucher_valid (valid ``years``), or a shop's own kind."
    )
    days: int | None = Field(default=None, ge=1, le=3650, description="Within this many days.")
    years: int | None = Field(default=None, ge=1, le=100, description="Valid this many years.")


class OfferLine(BaseModel):
    """One thing a reply commits the shop to, as a typed line a rule can check."""

    model_config = ConfigDict(extra="forbid")

    kind: str = Field(
        description="The remedy, as the shop's policy names it: refund, compensation, exchange, "
        "repair, cancellation, investigation, escalation, ..."
    )
    order_id: str = Field(description="The order it is for: the matched order's id.")
    item: str | None = Field(
        default=None,
        description="For one item of a multi-item order: that line's product_name (or sku); "
        "its money is then capped by that line's amount. Null: the whole order.",
    )
    amount: float | None = Field(
        default=None, ge=0, description="The money offered (refund, compensation); else null."
    )
    currency: str | None = Field(
        default=None, description="The order's currency, for a line with an amount."
    )
    channel: str | None = Field(
        default=None,
        description="Where the money goes: original_payment, store_credit, voucher, ...; "
        "null for a line without an amount.",
    )
    reason: Reason | None = Field(
        default=None,
        description="Why the customer wants it: change_of_mind, defect, damaged_in_transit or "
        "not_as_described; the policy's window and remedies for that reason apply. Null: the "
        "understood reason of the ticket, if any.",
    )
    conditions: list[LineCondition] = Field(
        default_factory=list,
        description="What the customer must do or know for it (a photo first, the item back "
        "within N days, a voucher valid N years), copied by baton from the policy; the reply "
        "states each. Leave empty: it is filled in.",
    )


OfferState = Literal["approved", "needs_approval"]


class Offer(BaseModel):
    """What a reply commits the shop to, checked against the policy, the order and the ledger."""

    state: OfferState = Field(
        description="approved: within the policy, sent to the customer; needs_approval: above "
        "the policy's approval threshold, proposed to a person and not promised."
    )
    lines: list[OfferLine] = Field(description="The validated lines.")
    total: float = Field(default=0.0, description="The money of all lines, in ``currency``.")
    currency: str | None = None
    restated: list[int] = Field(
        default_factory=list,
        description="The places in ``lines`` (from 0) of lines that restate a line an earlier "
        "reply already agreed for the customer (same kind, order and item; money not above "
        "what was agreed): no action is written for them, the earlier action stands.",
    )


class Reply(BaseModel):
    """The answer to one ticket, as published to ``support.replies`` (key: session_id)."""

    model_config = ConfigDict(extra="ignore")

    schema_version: int = SCHEMA_VERSION
    ticket_id: str
    session_id: str
    customer_id: str | None
    status: ReplyStatus = Field(
        description="answered, degraded (fallback path), handoff, taken_over (a person has "
        "the session: no agent answered, the reply text is empty), or holding (the ticket's "
        "first-reply deadline passed: a fixed text that promises nothing, sent at most once; "
        "the ticket's own reply follows and is the one that counts), or coalesced (the ticket "
        "was answered together with the earlier tickets of its burst by the reply to "
        "answered_by: the reply text is empty), or action_confirmed / action_failed (a "
        "follow-up: the shop's system carried out an action of the ticket's approved offer, "
        "with its reference, or did not, an apology that promises nothing new while a person "
        "takes it over)."
    )
    reply: str = Field(description="Customer-facing text.")
    solution: str = Field(description="What will be done.")
    internal_note: str = Field(description="For the support team, never shown to the customer.")
    confidence: float = Field(ge=0, le=1)
    order_id: str | None = Field(description="The order the lookup found, or null.")
    product: str | None = None
    language: LanguageCode = Field(
        default="en", description="The customer's language, a BCP 47 code (zh, ja, en, de, ...)."
    )
    baton_version: int = 0
    llm: str = Field(default="", description="Model implementation that produced the reply.")
    offer: Offer | None = Field(
        default=None,
        description="What the reply commits the shop to, validated against the policy; null "
        "when it commits to nothing.",
    )
    policy_version: str | None = Field(
        default=None, description="Hash of the policy file the reply was checked against."
    )
    decision_id: str | None = Field(
        default=None,
        description="The person's decision this reply carries out (approve, deny, answer); "
        "null for an agent's reply.",
    )
    ticket_ids: list[str] = Field(
        default_factory=list,
        description="Every ticket this reply answers, oldest first: [ticket_id] for a reply to "
        "one ticket; for a burst of the session's tickets answered together as one turn, all of "
        "them (ticket_id, the first, included). Each other ticket of the burst gets a record of "
        "its own, status coalesced.",
    )
    answered_by: str | None = Field(
        default=None,
        description="For a coalesced record: the ticket_id of the reply that answered this "
        "ticket together with the others of its burst; null otherwise.",
    )
    usage: UsageTotals = Field(default_factory=UsageTotals)
    timings_ms: dict[str, float] = Field(default_factory=dict)
    stages: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="The results of the stages beyond understand, lookup and strategy, keyed by "
        "stage name (each as its stage declares it).",
    )
    replied_at: datetime = Field(default_factory=utcnow)

    @model_validator(mode="after")
    def _answers_its_ticket(self) -> Reply:
        # A reply written before the field (or by a path that answers one ticket) answers its own.
        if not self.ticket_ids:
            self.ticket_ids = [self.ticket_id]
        return self


class DeadLetter(BaseModel):
    """Something that could not be processed normally, with what is needed to re-drive it."""

    model_config = ConfigDict(extra="ignore")

    schema_version: int = SCHEMA_VERSION
    id: str = Field(description="Unique id of this dead letter.")
    ticket_id: str | None
    session_id: str | None
    stage: StageName
    reason: DeadLetterReason | str
    error: str = Field(description="Readable explanation.")
    payload: str = Field(description="The original record, or the raw model output.")
    attempts: int = 1
    failed_at: datetime = Field(default_factory=utcnow)
    source_topic: str | None = None
    source_partition: int | None = None
    source_offset: int | None = None
    model: str | None = None
    prompt_version: str | None = None
    policy_version: str | None = Field(
        default=None, description="Hash of the policy file in force when it was written."
    )
    request_id: str | None = Field(
        default=None,
        description="The API's request-id of the last model call behind a model failure.",
    )
    ticket: Ticket | None = Field(default=None, description="The ticket, when it was valid.")
