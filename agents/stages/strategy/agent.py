"""The strategy stage's function: solution and reply from the baton, ticket and stored order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from baton_kafka.agents import prompts, reader
from baton_kafka.agents.articles import Article, search
from baton_kafka.agents.asking import ask
from baton_kafka.agents.fixed_texts import fixed
from baton_kafka.agents.guards import DRIFT, CustomerOrders, check, cited, product_names
from baton_kafka.agents.guards.language import LANGUAGE, feedback_note, language_problem
from baton_kafka.agents.guards.order_facts import FACTS, corrected
from baton_kafka.agents.history import offered_by_kind
from baton_kafka.agents.models.llm import LLM
from baton_kafka.agents.orders import OrderStore
from baton_kafka.agents.outcome import Failure, Outcome
from baton_kafka.agents.policy import Policy, default_policy
from baton_kafka.agents.policy.offer import settle
from baton_kafka.agents.stages.strategy import NAME
from baton_kafka.agents.stages.strategy.rule import handoff_triggers, strategy_rules
from baton_kafka.agents.stages.strategy.validators import (
    cites_its_facts,
    in_language,
    keeps_its_word,
    on_topic,
    true_to_store,
    within_policy,
)
from baton_kafka.schemas.baton import Baton, OrderMemory
from baton_kafka.schemas.records import Order, Ticket
from baton_kafka.schemas.stages import OrderMatch, StrategyDraft, Understanding


def earlier_remedies(
    baton: Baton, order: Order | None, already: Mapping[str, float]
) -> frozenset[str]:
    """The remedies the session's answered replies committed to for ``order``, money or not,
    and those the customer's other sessions offered money by (``already``)."""
    if order is None:
        return frozenset()
    lines = (line for t in baton.tickets for line in t.offer)
    return frozenset({*(x.kind for x in lines if x.order_id == order.order_id), *already})


def holding_reply(
    u: Understanding, match: OrderMatch, languages: Sequence[str] = ()
) -> StrategyDraft:
    """A safe hand-off reply when no valid strategy could be produced.

    It names the order, never the understood core problem: that is the internal summary for the
    shop's people ("The customer needs help with: ..."), not words for the customer.
    """
    # The order's product as the store names it, never the customer's words about it.
    named = [match.order_id, match.order.product_name if match.order else None]
    order = f" ({', '.join(n for n in named if n)})" if match.order_id else ""
    default = languages[0] if languages else "en"
    about = fixed("holding_about_request", u.language, default, order=order)
    reply = fixed("holding", u.language, default, about=about)
    return StrategyDraft(
        solution="Hand over to a human agent.",
        reply=reply,
        internal_note="No valid model strategy; see the dead letter for the model's output.",
        confidence=0.0,
        needs_human=True,
    )


def awaiting_approval(u: Understanding, draft: StrategyDraft) -> StrategyDraft:
    """The draft an offer above the approval threshold becomes: a person approves it first.

    The reply promises nothing; the proposed lines stay on the draft for the person to see.
    """
    reply = fixed("awaiting_approval", u.language)
    proposed = "; ".join(
        f"{line.kind} {line.amount or ''} {line.currency or ''}".strip() for line in draft.offer
    )
    return draft.model_copy(
        update={
            "reply": reply,
            "solution": "A colleague reviews the proposed offer before anything is promised.",
            "internal_note": f"Needs approval: {proposed}. {draft.internal_note}",
            "needs_human": True,
            "confidence": min(draft.confidence, 0.5),
        }
    )


def already_offered(
    baton: Baton, order: Order | None, history: Sequence[OrderMemory] = ()
) -> dict[str, float]:
    """Money offered for ``order`` in earlier answered replies, by remedy: the session's and the
    customer's other sessions' (from the index)."""
    if order is None:
        return {}
    earlier = [h.offered for h in history if h.order_id == order.order_id]
    return offered_by_kind(baton.offered.get(order.order_id, {}), *earlier)


def asked_about(match: OrderMatch, orders: list[Order]) -> list[Order]:
    """The customer's orders a reference fits equally, to ask which one (the store's copies)."""
    if match.recall is None or match.recall.method != "ask":
        return []
    fitting = {c.order_id for c in match.recall.candidates}
    return [o for o in orders if o.order_id in fitting]


def fitting_articles(
    policy: Policy, ticket: Ticket, u: Understanding, order: Order | None
) -> list[Article]:
    """The shop's help articles that fit the ticket: scored from the customer's words and the
    understood product and problem (none when the shop has no articles)."""
    if not policy.shop.articles_dir:
        return []
    words = [ticket.text, u.product or "", u.problem, u.core_problem, *u.keywords]
    words.append(order.product_name if order else "")
    return search(policy.shop.articles_dir, "\n".join(words), policy.shop.articles_shown)


async def decide(
    ticket: Ticket,
    baton: Baton,
    understanding: Understanding,
    match: OrderMatch,
    store: OrderStore,
    llm: LLM,
    *,
    reask_limit: int = 1,
    tokens_left: int | None = None,
    policy: Policy | None = None,
    history: Sequence[OrderMemory] = (),
    stages: Mapping[str, Any] | None = None,
    read: bool = False,
) -> Outcome[StrategyDraft]:
    """Write solution, reply, note, confidence and offer; re-ask on drift or broken rules.

    The offer is held to ``policy`` (the demo shop's when none is given); one above its
    approval threshold is not promised: the ticket goes to a person with the offer proposed.

    The matched order is re-read from ``store``: a record's order that the store does not hold
    for this customer, unchanged, is not used (the draft is written as if none matched) and is
    reported as ``untrusted_record``.

    ``stages`` are the results of the shop's own earlier stages, by name: the prompt shows them
    as data (``prompts.StageResult``).

    With ``read``, a draft that passed the deterministic checks is read again by the
    independent reader (``agents.reader``, a model call of its own); the offline model, whose
    texts are rendered from lines, is never read.
    """
    checked = await check(ticket, match, store)
    match = checked.match
    order = match.order
    policy = policy or default_policy()
    choices = [] if order else asked_about(match, checked.orders)
    books = CustomerOrders.of(
        order,
        checked.orders,
        baton,
        ticket,
        policy=policy,
        demand=understanding.demand,
        reason=understanding.reason,
        already=(already := already_offered(baton, order, history)),
        choices=choices,
    )
    if order is not None and already:
        # The prompt states what was offered for the order before, in any of its sessions.
        baton = baton.model_copy(update={"offered": {**baton.offered, order.order_id: already}})
    names = product_names(order, understanding, baton, ticket.text)
    prompt = prompts.build(
        NAME,
        StrategyDraft,
        ticket=ticket,
        baton=baton,
        orders=[order] if order else choices,
        understanding=understanding,
        match=match,
        policy=policy,
        stages=stages,
        articles=fitting_articles(policy, ticket, understanding, order),
    )
    shown = [f"{a.title}\n{a.text}" for a in prompt.facts.articles]
    # A price or fee the shop's own reference states may be quoted, never promised.
    books = replace(books, quoted=cited.quoted_prices(policy, shown))
    # What the store knows is never left to the model's copy: near-miss ids are corrected.
    products = (n for o in books.own for n in o.products())
    quoted = [*names, *products, *(o.carrier or "" for o in books.own)]
    earlier = earlier_remedies(baton, order, already)
    languages = (understanding.language, *policy.languages)
    review = None
    if read and llm.name != "offline":
        review = reader.review(
            llm,
            policy,
            order,
            books.own,
            earlier,
            languages,
            facts=prompt.facts,
            reask_limit=reask_limit,
        )
    asked = await ask(
        llm,
        prompt,
        validators=[
            on_topic(names, match),
            within_policy(books),
            true_to_store(books),
            in_language(understanding.language, quoted, policy.languages),
            keeps_its_word(books, earlier, languages),
            cites_its_facts(books, shown),
        ],
        reask_limit=reask_limit,
        tokens_left=tokens_left,
        amend=lambda draft: corrected(draft, books, understanding.language, names)[0],
        feedback_note=feedback_note(understanding.language, match.order_id),
        review=review,
    )
    found = handoff_triggers(prompt.facts, understanding, policy)
    reasons: tuple[str, ...] = tuple(found)
    if asked.value is not None:
        draft = asked.value
        if found and not draft.needs_human:
            # The policy's triggers hand the ticket to a person whatever the model wrote.
            note = f"{draft.internal_note} Handed to a person by policy: {', '.join(found)}."
            draft = draft.model_copy(update={"needs_human": True, "internal_note": note.strip()})
        draft, reasons = _approved_first(draft, understanding, policy, order, reasons)
        outcome = Outcome(draft, calls=asked.calls, handoff_reasons=reasons)
    else:
        failure = asked.failure
        assert failure is not None
        errors = failure.error.split("; ")
        # Off topic, the wrong language or a fact the store contradicts: the rules answer from
        # the store in the customer's language instead.
        if failure.reason == "validation_failed" and all(
            e.startswith((DRIFT, LANGUAGE, FACTS)) for e in errors
        ):
            failure = replace(failure, reason="drift")
        if failure.reason in ("drift", "model_error", "timeout"):
            draft = strategy_rules(prompt.facts, policy)
            draft, reasons = _approved_first(draft, understanding, policy, order, reasons)
            outcome = Outcome(draft, asked.calls, failure, degraded=True, handoff_reasons=reasons)
        else:
            failure = replace(failure, handoff=True)
            held = holding_reply(understanding, match, policy.languages)
            outcome = Outcome(held, asked.calls, failure, degraded=True, handoff_reasons=reasons)
    passed = asked.value.reply if asked.value is not None else None  # read by in_language
    outcome = _in_their_language(outcome, understanding, match, quoted, policy.languages, passed)
    return replace(_reporting(outcome, checked.failure), verified=order)


def _approved_first(
    draft: StrategyDraft,
    u: Understanding,
    policy: Policy,
    order: Order | None,
    reasons: tuple[str, ...],
) -> tuple[StrategyDraft, tuple[str, ...]]:
    """``draft``, promising nothing when its offer is above the approval threshold, whichever
    path wrote it; the reasons then name the approval."""
    offer = settle(draft.offer, policy, order, u.reason)
    if offer is None or offer.state != "needs_approval":
        return draft, reasons
    return awaiting_approval(u, draft), (*reasons, "approval")


def _in_their_language(
    outcome: Outcome[StrategyDraft],
    u: Understanding,
    match: OrderMatch,
    names: Sequence[str],
    languages: Sequence[str],
    passed: str | None = None,
) -> Outcome[StrategyDraft]:
    """The outcome, its reply held to the customer's language whichever path wrote it
    (``passed``: a reply ``in_language`` found in it, with these ``names`` and ``languages``)."""
    draft = outcome.value
    # The draft checks read that reply so (they read among en and zh when the shop lists none).
    if languages and draft.reply == passed:
        return outcome
    if language_problem(draft.reply, u.language, names, languages) is None:
        return outcome
    return replace(outcome, value=holding_reply(u, match, languages), degraded=True)


def _reporting(outcome: Outcome[StrategyDraft], distrust: Failure | None) -> Outcome[StrategyDraft]:
    """The outcome, reporting why the record's order was not used ahead of any model failure."""
    if distrust is None:
        return outcome
    later = outcome.failure
    if later is None:
        return replace(outcome, failure=distrust, degraded=True)
    error = f"{distrust.error}; then the model failed too ({later.reason}: {later.error})"
    combined = replace(later, reason=distrust.reason, error=error, payload=distrust.payload)
    return replace(outcome, failure=combined, degraded=True)
