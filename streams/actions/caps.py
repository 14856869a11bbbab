"""Daily caps: how much money (per currency) and how many actions a day the shop and each
customer may have carried out, counted from the durable ledger before an action is sent."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from baton_kafka.schemas.action import Action, LedgerEntry

ANY = "*"
# Money is compared to the cent: a cap of 500.00 lets exactly 500.00 through.
CENT = 0.005


def day_of(at: datetime) -> date:
    """The UTC day an action counts against: when the reply that promised it was written
    (the same on every retry, whichever worker carries it out)."""
    return at.astimezone(UTC).date() if at.tzinfo is not None else at.date()


@dataclass(frozen=True)
class Use:
    """What one ledger entry takes from the caps (read without validating the whole entry:
    every row a worker holds is read for each check)."""

    key: str
    session_id: str
    customer: str
    day: date
    amount: float
    currency: str

    @classmethod
    def of(cls, entry: LedgerEntry) -> Use | None:
        """The entry's use, or None when it takes nothing (see ``uses``)."""
        return _use(entry.model_dump(mode="json"))


def _day(stamp: str) -> date:
    # Written by the ledger in UTC ("...Z"): its date is its first ten characters.
    if stamp.endswith("Z"):
        return date.fromisoformat(stamp[:10])
    return day_of(datetime.fromisoformat(stamp))


def _use(raw: Any, day: date | None = None) -> Use | None:
    """An entry as the ledger stores it, as a use (of ``day`` only, when given): None when it
    fails, or was refused before it was sent (forged, over its order: no person asked; over a
    cap). Anything sent, in flight, waiting to be sent or with a person counts: the money may
    still move."""
    a = raw["action"]
    at = _day(a["requested_at"])
    if day is not None and at != day:
        return None
    state, handoff = raw.get("state"), raw.get("handoff")
    if state == "failed" or handoff == "action_over_cap":
        return None
    if state == "needs_person" and not raw.get("attempts") and handoff is None:
        return None
    return Use(
        key=a["idempotency_key"],
        session_id=a["session_id"],
        customer=a.get("customer_id") or a["session_id"],
        day=at,
        amount=float(a.get("amount") or 0.0),
        currency=(a.get("currency") or "").upper(),
    )


def uses(rows: Iterable[Mapping[str, Any]], day: date | None = None) -> list[Use]:
    """The uses of the ledger's rows (each a row's entries by key, as stored), of ``day``."""
    return [u for row in rows for raw in row.values() if (u := _use(raw, day)) is not None]


@dataclass(frozen=True)
class Cap:
    """One scope's daily cap: money per currency (``*``: any currency not named; a currency
    with no cap and no ``*`` is refused while money caps are set) and a count; empty: none."""

    money: Mapping[str, float] = field(default_factory=dict)
    actions: int = 0

    @property
    def set(self) -> bool:
        return bool(self.money or self.actions)

    def over(self, action: Action, used: Iterable[Use], share: float = 1.0) -> str | None:
        """Why ``action`` would take the day past this cap (``share`` of it), or None."""
        day = day_of(action.requested_at)
        same = [u for u in used if u.day == day and u.key != action.idempotency_key]
        if self.actions:
            allowed = int(self.actions * share)
            if len(same) + 1 > allowed:
                return f"{len(same)} actions already on {day}, the cap allows {allowed}"
        if self.money and action.amount:
            currency = (action.currency or "").upper()
            cap = self.money.get(currency, self.money.get(ANY))
            if cap is None:
                return f"no daily cap is set for the currency {currency or '(none)'}"
            spent = sum(u.amount for u in same if u.currency == currency)
            allowed_money = cap * share
            if spent + action.amount > allowed_money + CENT:
                return (
                    f"{action.amount:.2f} {currency} on top of {spent:.2f} already on {day} is "
                    f"over the cap of {allowed_money:.2f}"
                )
        return None


@dataclass(frozen=True)
class DailyCaps:
    """The shop's cap and each customer's cap, checked against the ledger a worker holds.

    The shop's is split evenly between the partitions (each partition may use its share, and
    the ledger rows of one partition are held by one worker at a time), so the shop's total is
    never over it. A customer's is counted over every ledger row this worker holds: exact for
    the customer's sessions on this worker's partitions."""

    shop: Cap = field(default_factory=Cap)
    customer: Cap = field(default_factory=Cap)
    partitions: int = 1

    @property
    def set(self) -> bool:
        return self.shop.set or self.customer.set

    def over(
        self, action: Action, used: Iterable[Use], partition_of: Mapping[str, int]
    ) -> str | None:
        """Why ``action`` is over a daily cap, or None. ``used``: the uses of the ledger rows
        this worker holds; ``partition_of``: each session's partition."""
        used = list(used)
        if self.shop.set:
            mine = partition_of.get(action.session_id, 0)
            local = [u for u in used if partition_of.get(u.session_id, 0) == mine]
            if (why := self.shop.over(action, local, 1.0 / self.partitions)) is not None:
                return f"the shop's daily cap (this partition's share): {why}"
        if self.customer.set:
            who = action.customer_id or action.session_id
            theirs = [u for u in used if u.customer == who]
            if (why := self.customer.over(action, theirs)) is not None:
                return f"customer {who}'s daily cap: {why}"
        return None
