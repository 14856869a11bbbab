"""The strategy agent: solution and reply from baton, ticket, understanding and order."""

from __future__ import annotations

import re
from dataclasses import replace

from agents import prompts
from agents.asking import Validator, ask
from agents.models.llm import LLM, OutputInvalid
from agents.outcome import Outcome
from agents.rules.matching import normalize, product_score
from agents.rules.reply import strategy_rules
from schemas.baton import Baton
from schemas.records import Ticket
from schemas.stages import OrderMatch, StrategyDraft, Understanding

DRIFT = "drift"
_AMOUNT = re.compile(r"(?<![\w.])(\d{1,3}(?:[,，]\d{3})+|\d+)(?:\.\d+)?")
_MONEY_WORDS = ("refund", "compensat", "退款", "赔偿", "补偿", "退还", "$", "¥", "元", "cny", "usd")


def covers_core_problem(draft: StrategyDraft, u: Understanding, match: OrderMatch) -> list[str]:
    """Drift problems: the reply must name the matched order and address the product."""
    problems = []
    text = f"{draft.reply}\n{draft.solution}"
    if match.order_id and match.order_id not in draft.reply:
        problems.append(f"{DRIFT}: the reply must name order {match.order_id}")
    product = match.order.product_name if match.order else u.product
    if (
        product
        and product_score(product, text) < 0.35
        and normalize(product) not in normalize(text)
    ):
        problems.append(f"{DRIFT}: the reply must address the core problem about {product}")
    return problems


def policy_problems(draft: StrategyDraft, match: OrderMatch) -> list[str]:
    """Business rules the schema cannot state: no money beyond the order, none without one."""
    text = f"{draft.reply}\n{draft.solution}".lower()
    if not any(word in text for word in _MONEY_WORDS):
        return []
    order = match.order
    if order is not None:
        # Model numbers in the product's name ("WH-1000XM5") are not amounts of money.
        # Whole tokens only: the "2" of "AirPods Pro 2" must not eat the "2" of "O-6002".
        for token in order.product_name.lower().split():
            if any(ch.isdigit() for ch in token):
                text = re.sub(rf"(?<![0-9a-z]){re.escape(token)}(?![0-9a-z])", " ", text)
    amounts = [float(m.group(0).replace(",", "").replace("，", "")) for m in _AMOUNT.finditer(text)]
    ids = set(re.findall(r"\d+", match.order_id or ""))
    amounts = [a for a in amounts if str(int(a)) not in ids and not 1900 <= a <= 2100]
    if order is None:
        return [f"promises money ({amounts[0]:g}) without a known order"] if amounts else []
    too_high = [a for a in amounts if a > order.amount + 0.005]
    if too_high:
        return [f"amount {too_high[0]:g} exceeds the order amount {order.amount:g}"]
    return []


def on_topic(u: Understanding, match: OrderMatch) -> Validator[StrategyDraft]:
    """Rejects a draft that drifts from the matched order or the customer's product."""

    def validate(draft: StrategyDraft) -> None:
        if problems := covers_core_problem(draft, u, match):
            raise OutputInvalid("; ".join(problems))

    return validate


def within_policy(match: OrderMatch) -> Validator[StrategyDraft]:
    """Rejects a draft that promises money the order does not allow."""

    def validate(draft: StrategyDraft) -> None:
        if problems := policy_problems(draft, match):
            raise OutputInvalid("; ".join(problems))

    return validate


def holding_reply(u: Understanding, match: OrderMatch) -> StrategyDraft:
    """A safe hand-off reply when no valid strategy could be produced."""
    order = f" ({match.order_id})" if match.order_id else ""
    if u.language == "zh":
        reply = f"您好，关于您的问题「{u.core_problem}」{order}，我们已转交人工客服，会尽快联系您。"
    else:
        reply = (
            f"Thank you for your message about: {u.core_problem}{order}. A member of our support "
            "team will take over and get back to you shortly."
        )
    return StrategyDraft(
        solution="Hand over to a human agent.",
        reply=reply,
        internal_note="No valid model strategy; see the dead letter for the model's output.",
        confidence=0.0,
        needs_human=True,
    )


async def decide(
    ticket: Ticket,
    baton: Baton,
    understanding: Understanding,
    match: OrderMatch,
    llm: LLM,
    *,
    reask_limit: int = 1,
    tokens_left: int | None = None,
) -> Outcome[StrategyDraft]:
    """Write solution, reply, note and confidence; re-ask on drift or broken rules."""
    prompt = prompts.build(
        "strategy",
        StrategyDraft,
        ticket=ticket,
        baton=baton,
        orders=[match.order] if match.order else [],
        understanding=understanding,
        match=match,
    )
    asked = await ask(
        llm,
        prompt,
        validators=[on_topic(understanding, match), within_policy(match)],
        reask_limit=reask_limit,
        tokens_left=tokens_left,
    )
    if asked.value is not None:
        return Outcome(asked.value, calls=asked.calls)
    failure = asked.failure
    assert failure is not None
    errors = failure.error.split("; ")
    if failure.reason == "validation_failed" and all(e.startswith(DRIFT) for e in errors):
        failure = replace(failure, reason="drift")
    if failure.reason in ("drift", "model_error", "timeout"):
        draft = strategy_rules(prompt.facts)
        return Outcome(draft, calls=asked.calls, failure=failure, degraded=True)
    failure = replace(failure, handoff=True)
    return Outcome(holding_reply(understanding, match), asked.calls, failure, degraded=True)
