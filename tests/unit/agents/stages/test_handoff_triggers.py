"""The strategy reads a ticket's hand-off triggers twice; the second reading is the first's only
when everything it is read from is the same."""

from __future__ import annotations

import itertools

from baton_kafka.agents import prompts
from baton_kafka.agents.policy import Policy, default_policy
from baton_kafka.agents.prompts import Facts
from baton_kafka.agents.rules.understanding import understand_rules
from baton_kafka.agents.stages.strategy import rule
from baton_kafka.schemas.baton import Baton
from baton_kafka.schemas.stages import RiskFlag, StrategyDraft, Understanding
from tests.fixtures import data

# Each input below changes the answer for some of the others: the memo must see every one.
_CHOICES: list[list[object]] = [
    [  # the message
        "My Fire TV Stick caught fire, I will call my lawyer.",
        "My Fire TV Stick stopped working.",
        "我的电视棒冒烟了",
    ],
    [("Fire TV Stick",), ("TV Stick", "Desk Lamp")],  # the orders' products
    [None, "caught fire"],  # the session's problem
    ["caught fire", "stopped working"],  # the understanding's problem
    [0, 3],  # the session's tickets about it
    [(), (("en", "legal", "stopped working"),)],  # the shop's own triggers
    [(), (("self_harm", "stopped"),)],  # the model's risk flags
]


def _inputs(choice: tuple[object, ...]) -> tuple[Facts, Understanding, Policy]:
    text, names, problem, understood, repeats, triggers, flags = choice
    orders = [
        data.order(f"O-{i}", product_name=str(n), status="delivered")
        for i, n in enumerate(names)  # type: ignore[call-overload]
    ]
    baton = Baton(session_id="S1", customer_id="C1", problem=problem)  # type: ignore[arg-type]
    ticket = data.ticket("T1", str(text))  # one ticket id throughout: only the inputs differ
    built = prompts.build("understand", Understanding, ticket=ticket, baton=baton, orders=orders)
    u = understand_rules(built.facts).model_copy(
        update={
            "language": "en",
            "problem": understood,
            "risks": [RiskFlag(kind=k, evidence=e) for k, e in flags],  # type: ignore[attr-defined]
        }
    )
    facts = prompts.build(
        "strategy", StrategyDraft, ticket=ticket, baton=baton, orders=orders, understanding=u
    ).facts
    facts.session.repeats = repeats  # type: ignore[assignment]
    shop = {lang: {kind: (words,)} for lang, kind, words in triggers}  # type: ignore[attr-defined]
    policy = default_policy()
    handoff = policy.handoff.model_copy(update={"triggers": shop, "repeated_contact": 2})
    return facts, u, policy.model_copy(update={"handoff": handoff})


def test_a_reading_after_another_is_the_fresh_one_whichever_input_changed() -> None:
    choices = list(itertools.product(*_CHOICES))
    inputs = {c: _inputs(c) for c in choices}
    stale = set()
    for before, after in itertools.product(choices, repeat=2):
        if sum(a != b for a, b in zip(before, after, strict=True)) != 1:
            continue  # one input differs: the one the memo must see
        first = rule.handoff_triggers(*inputs[before])
        got = rule.handoff_triggers(*inputs[after])
        again = rule.handoff_triggers(*inputs[after])
        rule._last_triggers = None
        fresh = rule.handoff_triggers(*inputs[after])
        assert got == again == fresh, (before, after)
        if fresh != first:
            stale.add(next(i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b))
    # Every input, changed alone, changes the answer somewhere: a memo blind to one would fail.
    assert stale == set(range(len(_CHOICES)))


def test_the_reading_handed_back_is_the_callers_own() -> None:
    facts, u, policy = _inputs(tuple(c[0] for c in _CHOICES))
    first = rule.handoff_triggers(facts, u, policy)
    first.append("changed by the caller")
    assert "changed by the caller" not in rule.handoff_triggers(facts, u, policy)
