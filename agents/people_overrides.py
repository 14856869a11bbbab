"""A person's signed override: the policy's money limits lifted to what their role may promise."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from baton_kafka.agents.policy import Policy
from baton_kafka.agents.policy.offer import OfferContext, problems
from baton_kafka.schemas.decision import Decision
from baton_kafka.schemas.records import OfferLine

log = logging.getLogger("baton.decisions")


def lifted(policy: Policy) -> Policy:
    """``policy`` without the limits an override lifts: each remedy's statuses, demands,
    window, share and cap, and the total held to what was paid. What stays: the remedies
    themselves, their channels and which carry money, the order and currency of each line."""
    remedies = {
        name: r.model_copy(
            update={"statuses": (), "demands": (), "window_days": None, "share": None, "cap": None}
        )
        for name, r in policy.remedies.items()
    }
    money = policy.money.model_copy(update={"total_at_most_paid": False})
    return policy.model_copy(update={"remedies": remedies, "money": money})


def offer_problems(
    decision: Decision, lines: Sequence[OfferLine], policy: Policy, ctx: OfferContext
) -> list[str]:
    """Every way ``lines`` break ``policy`` for ``ctx``, as the decision's override leaves
    them: none overridden without one; with one, the lifted limits checked against what the
    policy lets its role promise for the order (all of it, with what was offered before)."""
    if decision.override is None:
        return problems(lines, policy, ctx)
    role = decision.override.role
    most = policy.people.overrides.get(role)
    if most is None:
        allowed = ", ".join(sorted(policy.people.overrides)) or "none"
        return [f"role {role} may not override the policy (roles that may: {allowed})"]
    found = problems(lines, lifted(policy), ctx)
    committed = ctx.committed(lines)
    if committed > most + 0.005:
        found.append(
            f"the override of role {role} allows at most {most:.2f} for the order; with what "
            f"was offered before the lines bring it to {committed:.2f}"
        )
    if not found:
        waived = problems(lines, policy, ctx)
        log.warning(
            "decision %s: override by %s as %s (%s) waives: %s",
            decision.decision_id,
            decision.by or "a person",
            role,
            decision.override.reason,
            "; ".join(waived) or "nothing",
        )
    return found
