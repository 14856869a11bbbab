"""Daily caps: how much money (per currency) and how many actions a day the shop and each
customer may have carried out, counted from the durable ledger before an action is sent."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date

from baton_kafka.schemas.action import Action, LedgerEntry

ANY = "*"
# Money is compared to the cent: a cap of 500.00 lets exactly 500.00 through.
CENT = 0.005


def day_of(action: Action) -> date:
    """The UTC day an action counts against: when the reply that promised it was written
    (the same on every retry, whichever worker carries it out)."""
    return action.requested_at.date()


def counts(entry: LedgerEntry) -> bool:
    """Whether an entry uses a cap: anything sent, in flight, waiting to be, with a person or
    done; not one refused before it was sent (forged, over the order or a cap) nor failed."""
    if entry.state == "failed":
        return False
    return entry.handoff != "action_over_cap" and not entry.dropped


@dataclass(frozen=True)
class Cap:
    """One scope's daily cap: money per currency (``*``: any currency not named; a currency
    with no cap and no ``*`` is refused while money caps are set) and a count; empty: none."""

    money: Mapping[str, float] = field(default_factory=dict)
    actions: int = 0

    def over(self, action: Action, used: Iterable[LedgerEntry], share: float = 1.0) -> str | None:
        """Why ``action`` would take the day past this cap (``share`` of it), or None."""
        day = day_of(action)
        same = [
            e
            for e in used
            if counts(e) and day_of(e.action) == day and e.idempotency_key != action.idempotency_key
        ]
        if self.actions:
            allowed = int(self.actions * share)
            if len(same) + 1 > allowed:
                return f"{len(same)} actions already on {day}, the cap allows {allowed}"
        if self.money and action.amount:
            currency = (action.currency or "").upper()
            cap = self.money.get(currency, self.money.get(ANY))
            if cap is None:
                return f"no daily cap is set for the currency {currency or '(none)'}"
            spent = sum(
                e.action.amount or 0.0
                for e in same
                if (e.action.currency or "").upper() == currency
            )
            allowed_money = cap * share
            if spent + action.amount > allowed_money + CENT:
                return (
                    f"{action.amount:.2f} {currency} on top of {spent:.2f} already on {day} is "
                    f"over the cap of {allowed_money:.2f}"
                )
        return None

    @property
    def set(self) -> bool:
        return bool(self.money or self.actions)


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

    def over(
        self,
        action: Action,
        rows: Iterable[tuple[str, list[LedgerEntry]]],
        partition_of: Mapping[str, int] | None = None,
    ) -> str | None:
        """Why ``action`` is over a daily cap, or None. ``rows``: the ledger's rows this worker
        holds (session, entries); ``partition_of``: each session's partition."""
        if not (self.shop.set or self.customer.set):
            return None
        rows = list(rows)
        where = dict(partition_of or {})
        mine = where.get(action.session_id, 0)
        if self.shop.set:
            local = [e for s, es in rows if where.get(s, 0) == mine for e in es]
            share = 1.0 / self.partitions
            if (why := self.shop.over(action, local, share)) is not None:
                return f"the shop's daily cap (this partition's share): {why}"
        if self.customer.set:
            who = action.customer_id or action.session_id
            theirs = [e for _, es in rows for e in es if (e.action.customer_id or s_id(e)) == who]
            if (why := self.customer.over(action, theirs)) is not None:
                return f"customer {who}'s daily cap: {why}"
        return None


def s_id(entry: LedgerEntry) -> str:
    """Who an entry counts for when its action names no customer: its session."""
    return entry.action.session_id
