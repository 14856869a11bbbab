"""The understand stage's rules: product, problem, demand and time read from the facts alone."""

from __future__ import annotations

from typing import cast

from agents.prompts import Facts
from agents.rules.matching import (
    content_words,
    find_product,
    mentioned_products,
    normalize,
    product_score,
)
from agents.rules.phrases import (
    CLAUSE_EN,
    CLAUSE_ZH,
    DEFAULT_DEMAND,
    DEMANDS,
    EARLIER,
    GENERAL,
    NOUN,
    PROBLEM_RX,
    PROBLEMS,
    RETURN_LOGISTICS,
    hits,
    is_chinese,
    pad,
    problem_key,
)
from agents.rules.time_hints import extract_time_hint
from agents.rules.typos import corrected
from schemas.stages import Demand, Understanding


def _core_problem(
    zh: bool, product: str | None, problem: str, key: str | None, demand: str, previous: str | None
) -> str:
    name = product[:120] if product else None
    if zh:
        clause = CLAUSE_ZH[demand]
        if demand == "information" and previous in NOUN:
            clause = f"想知道{NOUN[previous][1]}需要多久"
        subject = name or "订单"
        if key == "general":
            return f"客户需要{pad(subject)}方面的帮助，{clause}。"
        if key:
            return f"客户的{pad(subject)}{PROBLEMS[key][4]}，{clause}。"
        return f"客户的{pad(subject).rstrip()}出现问题（{problem[:120]}），{clause}。"
    clause = CLAUSE_EN[demand]
    if demand == "information" and previous in NOUN:
        clause = f"they want to know how long the {NOUN[previous][0]} will take"
    subject = f"Customer's {name}" if name else "Customer's order"
    if key == "general":
        return f"Customer needs help with their {name or 'order'} and {clause}."
    if key:
        return f"{subject} {PROBLEMS[key][3]} and {clause}."
    return f"{subject} has a problem ({problem[:120]}) and {clause}."


def understand_rules(facts: Facts) -> Understanding:
    """Read product, problem, demand and time from the message, the session and the orders."""
    message, session = facts.message, facts.session
    norm, zh = normalize(message), is_chinese(message)
    names = list(dict.fromkeys(o.product_name for o in facts.orders))
    said = message
    mentions = mentioned_products(said)
    product = find_product(said, names)
    if product is None and not mentions:
        # No product as written: a misspelled one ("my kettel leaks") may still be named.
        said = corrected(message, names)
        mentions, product = mentioned_products(said), find_product(said, names)
    if product and mentions:
        best = product_score(said, product)
        rivals = [n for n in names if n != product and product_score(said, n) >= best - 0.05]
        if rivals:  # Several orders fit the words equally: keep the customer's own word.
            product = mentions[0]
    named = product is not None or bool(mentions)
    refers = not named and bool(EARLIER.search(norm))
    past = next((e for e in facts.earlier if e.product), None) if refers else None
    if product is None and mentions:
        current = session.product
        product = current if current and product_score(mentions[0], current) >= 0.5 else mentions[0]
    elif product is None:
        product = session.product or (past.product if past else None)
    same_topic = product == session.product
    key = next((k for k, rx in PROBLEM_RX.items() if hits(rx, norm)), None)
    if key is None and past is not None and not session.problem:
        # "The order I asked about before" continues that session's problem.
        key = problem_key(past.core_problem)
    if key:
        problem = PROBLEMS[key][4] if zh else PROBLEMS[key][2]
    elif session.problem and same_topic:
        problem, key = session.problem, problem_key(session.problem)
    else:
        problem, key = GENERAL[zh], "general"
    demands = [d for d, rx in DEMANDS.items() if hits(rx, norm)]
    previous = session.previous_demand if session.previous_demand in CLAUSE_EN else None
    if not demands and past is not None:
        demands = [d for d, rx in DEMANDS.items() if hits(rx, normalize(past.core_problem))]
    if (
        demands == ["refund"]
        and previous in ("exchange", "repair")
        and RETURN_LOGISTICS.search(norm)
    ):
        # Shipping an item back is part of the exchange or repair already agreed on.
        demands = [cast(Demand, previous)]
    if "information" in demands and previous in demands:
        # "How long will the repair take?" asks about the process already agreed on.
        demands = ["information"]
    demand: Demand = (
        demands[0]
        if demands
        else cast(Demand, previous)
        if previous and same_topic
        else DEFAULT_DEMAND.get(key or "", "other")
    )
    time_hint = extract_time_hint(message)
    keywords: list[str] = [*mentions]
    for rx in (*PROBLEM_RX.values(), *DEMANDS.values()):
        keywords += hits(rx, norm)
    keywords += [time_hint] if time_hint else []
    keywords += content_words(message)
    return Understanding(
        product=product,
        problem=problem,
        demand=demand,
        time_hint=time_hint,
        keywords=list(dict.fromkeys(keywords))[:8],
        language="zh" if zh else "en",
        core_problem=_core_problem(zh, product, problem, key, demand, previous)[:400],
        refers_to_earlier=refers,
    )
