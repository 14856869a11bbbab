"""The independent reader: a small model call reads the final reply into typed lines, compared
deterministically with the offer and the records.

It sees only the reply (quoted as data) and the offer, never the customer's message. A line whose
evidence is not words of the reply is dropped, so the reader can neither invent a rejection nor
be talked into one by the customer; a commitment no line covers (the rule of
``guards.commitments.covering``) or a deed the records do not show rejects the draft.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, Field

from baton_kafka.agents.asking import Review, ask
from baton_kafka.agents.guards import claims
from baton_kafka.agents.guards.clauses import readable
from baton_kafka.agents.guards.commitments import COVERED_BY, Promised, covering
from baton_kafka.agents.models.llm import (
    LLM,
    BudgetExceeded,
    ModelFailure,
    OutputInvalid,
    Prompt,
    Refused,
    SpendLimit,
    TimedOut,
    Unavailable,
)
from baton_kafka.agents.outcome import Asked, Failure
from baton_kafka.agents.policy import Policy
from baton_kafka.schemas.records import CallUsage, OfferLine, Order

READER = "reader"
PROMPT_FILE = Path(__file__).with_name("policy") / "reader.md"
# Where money goes, as lines name it; another word for it is not compared.
CHANNELS = frozenset({"original_payment", "store_credit", "voucher"})


class FoundLine(BaseModel):
    """One commitment or deed a reply states, as the reader reads it."""

    kind: str = Field(
        description="A commitment: refund, return, label, exchange, replacement, repair, "
        "cancellation, voucher, credit, compensation, callback, delivery_date, or an offer "
        "line's kind. A deed (done): refunded, shipped, delivered, cancelled, returned, "
        "repaired, replaced, credited."
    )
    done: bool = Field(
        default=False, description="True when the words say it was already done (a deed)."
    )
    evidence: str = Field(description="The reply's own words stating it, copied exactly.")
    order_id: str | None = Field(default=None, description="The order id the words name.")
    item: str | None = Field(default=None, description="The product the words name.")
    amount: float | None = Field(default=None, ge=0, description="Money the words promise.")
    currency: str | None = Field(default=None, description="ISO 4217 code of the amount.")
    channel: str | None = Field(
        default=None,
        description="Where the money goes, when the words say: original_payment, "
        "store_credit, voucher.",
    )


class ReaderFindings(BaseModel):
    """What a reply commits the shop to and says was already done."""

    lines: list[FoundLine] = Field(
        default_factory=list, description="Every commitment and deed the reply states, once."
    )


@functools.cache
def instructions() -> str:
    """The reader's system prompt (``agents/policy/reader.md``)."""
    return PROMPT_FILE.read_text("utf-8")


@functools.cache
def prompt_version() -> str:
    """The hash of the reader's prompt text (which ``instructions`` reads once)."""
    return "r-" + hashlib.sha256(instructions().encode()).hexdigest()[:10]


def context(reply: str, offer: Sequence[OfferLine], languages: Iterable[str]) -> str:
    """The reader's user message: the reply quoted as a JSON string, the offer, the languages."""
    data = {
        "reply": reply,
        "offer": [line.model_dump(mode="json", exclude_none=True) for line in offer],
        "languages": list(dict.fromkeys(languages)),
    }
    return orjson.dumps(data).decode()


def read_context(text: str) -> tuple[str, list[str]]:
    """The reply and languages of a reader's message (``context``, a re-ask's complaint after
    it); ``ValueError`` if it is not one."""
    try:
        data, _ = json.JSONDecoder().raw_decode(text.lstrip())
    except ValueError as exc:
        raise ValueError(f"not a reader's message: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("reply"), str):
        raise ValueError("not a reader's message: no reply")
    return data["reply"], [str(x) for x in data.get("languages") or []]


def known_kinds(policy: Policy) -> Any:
    """Rejects a finding whose kind is in neither vocabulary (nor the shop's remedies)."""

    def validate(found: ReaderFindings) -> None:
        wrong = [
            f"{line.kind!r} ({'deed' if line.done else 'commitment'})"
            for line in found.lines
            if not (
                line.kind in claims.KINDS
                if line.done
                else line.kind in COVERED_BY or policy.remedy(line.kind) is not None
            )
        ]
        if wrong:
            deeds, promises = ", ".join(claims.KINDS), ", ".join(COVERED_BY)
            raise OutputInvalid(
                f"unknown kinds {', '.join(wrong)}: a commitment is one of {promises} or an "
                f"offer line's kind; a deed one of {deeds}"
            )

    return validate


_SPACES = re.compile(r"\s+")


def _folded(text: str) -> str:
    return _SPACES.sub(" ", readable(text)).strip().casefold()


def occurs(words: str, reply: str) -> bool:
    """Whether ``words`` are words of ``reply`` as the packs read it (quoted words blanked)."""
    needle = _folded(words)
    return bool(needle) and needle in _folded(reply)


def problems(
    found: ReaderFindings,
    reply: str,
    promised: Promised,
    policy: Policy,
    order: Order | None,
    others: Sequence[Order] = (),
) -> tuple[list[str], list[FoundLine]]:
    """Every finding the offer or the records do not cover, as reasons; and the findings kept
    (those whose evidence is words of ``reply``)."""
    kept = [line for line in found.lines if occurs(line.evidence, reply)]
    reasons = [
        reason
        for line in kept
        if (
            reason := _deed(line, order, promised.earlier, others)
            if line.done
            else _commitment(line, reply, promised, policy, order)
        )
    ]
    return list(dict.fromkeys(reasons)), kept


def _commitment(
    line: FoundLine, reply: str, promised: Promised, policy: Policy, order: Order | None
) -> str | None:
    remedies = covering(line.kind, policy)
    if any(k in promised.earlier for k in remedies):
        return None  # restating what an earlier reply committed to
    if line.kind == "callback" and promised.needs_human:
        return None  # a person takes the ticket over and calls back
    said = f"{READER}: the reply promises {line.kind} ({line.evidence!r})"
    lines = [x for x in promised.lines if x.kind in remedies]
    if not lines:
        which = " or ".join(remedies) or "matching"
        where = f" for order {order.order_id}" if order else ""
        return f"{said} but the offer has no {which} line{where}: add the line or do not promise it"
    named = line.order_id and occurs(line.order_id, reply)
    if named and all(x.order_id != line.order_id for x in lines):
        return f"{said} for order {line.order_id}, which no line of that kind is for"
    if line.amount is not None:
        priced = [x for x in lines if x.amount is not None]
        if priced and not _same_money(line, priced):
            stated = ", ".join(f"{x.amount:g} {x.currency or ''}".strip() for x in priced)
            return f"{said} of {line.amount:g} {line.currency or ''} but its lines say {stated}"
    if line.channel in CHANNELS:
        paid = {x.channel for x in lines if x.channel in CHANNELS}
        if paid and line.channel not in paid:
            return f"{said} to {line.channel} but its line pays to {', '.join(sorted(paid))}"
    return None


def _same_money(line: FoundLine, priced: Sequence[OfferLine]) -> bool:
    assert line.amount is not None
    currency = (line.currency or "").upper()
    same = [x for x in priced if not currency or (x.currency or currency).upper() == currency]
    amounts = [x.amount or 0.0 for x in same]
    return any(abs(a - line.amount) <= 0.01 for a in (*amounts, sum(amounts)))


def _deed(
    line: FoundLine, order: Order | None, earlier: Iterable[str], others: Sequence[Order]
) -> str | None:
    if claims.shown(line.kind, order, earlier):
        return None
    for o in others:
        # A deed of another of the customer's orders, named by id, is held to that order.
        named = o.order_id == line.order_id or o.order_id in line.evidence
        if named and claims.shown(line.kind, o, ()):
            return None
    whose = f"order {order.order_id} ({order.status})" if order else "any matched order"
    return (
        f"{READER}: the reply says it was already {line.kind} ({line.evidence!r}), which the "
        f"records of {whose} do not show: say what will be done, never that it was done"
    )


async def read(
    llm: LLM,
    reply: str,
    offer: Sequence[OfferLine],
    policy: Policy,
    languages: Iterable[str],
    *,
    facts: Any = None,
    reask_limit: int = 1,
    tokens_left: int | None = None,
) -> Asked[ReaderFindings]:
    """Ask ``llm`` (the ``reader`` stage's model) what ``reply`` commits to and claims."""
    prompt = Prompt(
        stage=READER,
        system=instructions(),
        context=context(reply, offer, languages),
        output_type=ReaderFindings,
        # The strategy's facts: the call's time counts against the ticket's model budget.
        facts=facts,
        max_tokens=1024,
        version=prompt_version(),
    )
    return await ask(
        llm,
        prompt,
        validators=[known_kinds(policy)],
        reask_limit=reask_limit,
        tokens_left=tokens_left,
    )


_FAILURES: dict[str, type[ModelFailure]] = {
    "timeout": TimedOut,
    "budget_exceeded": BudgetExceeded,
    "spend_limit": SpendLimit,
    "model_refused": Refused,
}


def _unread(failure: Failure | None, calls: list[CallUsage]) -> ModelFailure:
    """The reader's failure as the strategy's: the draft is not sent unread."""
    reason = failure.reason if failure else "model_error"
    error = failure.error if failure else "no answer"
    kind = _FAILURES.get(reason, Unavailable)
    return kind(f"{READER} could not read the reply ({reason}): {error}", usage=calls)


def review(
    llm: LLM,
    policy: Policy,
    order: Order | None,
    others: Sequence[Order],
    earlier: frozenset[str],
    languages: Sequence[str],
    *,
    facts: Any = None,
    reask_limit: int = 1,
) -> Review[Any]:
    """The reader as a review of a strategy draft that passed the deterministic checks: it
    raises ``OutputInvalid`` with the reasons and the findings when the two layers disagree."""

    async def check(draft: Any, tokens_left: int | None) -> list[CallUsage]:
        asked = await read(
            llm,
            draft.reply,
            draft.offer,
            policy,
            languages,
            facts=facts,
            reask_limit=reask_limit,
            tokens_left=tokens_left,
        )
        if asked.value is None:
            raise _unread(asked.failure, asked.calls)
        promised = Promised(draft.offer, earlier, draft.needs_human)
        reasons, kept = problems(asked.value, draft.reply, promised, policy, order, others)
        if not reasons:
            return asked.calls
        found = orjson.dumps([x.model_dump(exclude_none=True) for x in kept]).decode()
        found_by = f"{READER} found ({prompt_version()}): {found}"
        raise OutputInvalid("; ".join([*reasons, found_by]), usage=asked.calls)

    return check
