"""The understand stage's rules: product, problem, demand and time read from the facts alone."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from typing import cast, get_args

from baton_kafka.agents import risk
from baton_kafka.agents.languages import DEFAULT_LANGUAGES, customer_language
from baton_kafka.agents.prompts import Facts, SessionTopic
from baton_kafka.agents.rules.matching import (
    content_words,
    distinct_name,
    find_product,
    mentioned_products,
    normalize,
    product_score,
    scorer,
)
from baton_kafka.agents.rules.phrases import (
    CLAUSE_EN,
    DEFAULT_DEMAND,
    NOUN,
    name_in,
    problem_key,
    problem_label,
    problem_predicate,
    reading,
    words,
    written_in,
)
from baton_kafka.agents.rules.recall import clues, known, resolve
from baton_kafka.agents.rules.time_hints import day_of, extract_time_hint
from baton_kafka.agents.rules.typos import corrected
from baton_kafka.schemas.baton import OrderMemory
from baton_kafka.schemas.records import Reason, utcnow
from baton_kafka.schemas.stages import Demand, Recall, Understanding

DEMAND_NAMES = frozenset(get_args(Demand))


def _core_problem(
    lang: str, product: str | None, problem: str, key: str | None, demand: str, previous: str | None
) -> str:
    """The understanding's one sentence in ``lang``: the product, its problem, the request."""
    pack = words(lang)
    core, clauses = pack["core"], pack["clauses"]
    clause = clauses[demand]
    if demand == "information" and previous in NOUN:
        clause = core["clause_how_long"].format(noun=pack["nouns"][previous])
    thing = name_in(product[:120] if product else core["order_word"], lang)
    if key == "general":
        return str(core["core_general"].format(thing=thing, clause=clause))
    if key:
        predicate = problem_predicate(key, lang)
        return str(core["core_known"].format(thing=thing, predicate=predicate, clause=clause))
    return str(
        core["core_unknown"].format(bare=thing.rstrip(), problem=problem[:120], clause=clause)
    )


# A product name that ends in a bare number ("Trail Boots 41") names its size so.
_LAST_NUMBER = re.compile(r"(?:^|\s)(\d{1,2})$")


def _sizes_of(name: str, size: re.Pattern[str]) -> set[str]:
    return {a or b for a, b in size.findall(name)} | set(_LAST_NUMBER.findall(name))


def _by_size(message: str, names: list[str], size: re.Pattern[str]) -> str | None:
    """The one order name with the size the message names ("size 9", "42码"), if only one."""
    sizes = {a or b for a, b in size.findall(normalize(message).replace(" s ", "s "))}
    if not sizes:
        return None
    fits = [n for n in names if sizes & _sizes_of(normalize(n), size)]
    return fits[0] if len(fits) == 1 else None


def _recall(facts: Facts) -> Recall | None:
    """The earlier order the message points back to by its clues, or None."""
    if not facts.orders or not clues(facts.message):
        return None  # what ``resolve`` answers first: the history need not be built for it
    history = [
        OrderMemory(
            order_id=h.order_id,
            product=h.product,
            demands=[d for d in h.asked if d in DEMAND_NAMES],
            decision=h.decided if h.decided in DEMAND_NAMES else None,
            problems=h.problems,
            session_id="",
            at=datetime.combine(date.fromisoformat(h.at), datetime.min.time(), UTC)
            if h.at
            else utcnow(),
        )
        for h in facts.history
    ]
    orders = [known(o.order_id, o.product_name, o.status, o.ordered_at) for o in facts.orders]
    now = day_of(facts.today)
    return resolve(facts.message, None, history, orders, current=facts.session.order_id, now=now)


def _discussed(facts: Facts, product: str | None) -> SessionTopic | None:
    """The order of an earlier session with this product, as a topic returned to."""
    for h in facts.history:
        if product and h.product == product and h.order_id != facts.session.order_id:
            agreed = [d for d in [*h.asked, h.decided] if d and d != "information"]
            demand = agreed[-1] if agreed else None
            named = [p for p in h.problems if problem_key(p) not in (None, "general")]
            problem = named[-1] if named else None
            return SessionTopic(
                order_id=h.order_id, product=h.product, demand=demand, problem=problem
            )
    return None


def _continued(facts: Facts, recalled: Recall) -> Demand:
    """A follow-up on an earlier order with no new request continues what was asked then."""
    entry = next((h for h in facts.history if h.order_id == recalled.order_id), None)
    asked = [d for d in ([entry.decided] if entry else []) + (entry.asked if entry else []) if d]
    return cast(Demand, asked[0]) if asked and asked[0] in DEMAND_NAMES else "information"


# Why a customer wants a remedy, by the problem read (a problem not named here says nothing
# about why): the windows and remedies a policy gives by reason then apply offline too.
REASON_OF: dict[str, Reason] = {
    **dict.fromkeys(
        (
            "fire",
            "shock",
            "overheat",
            "leaking",
            "display",
            "coming_apart",
            "missing_parts",
            "drifting",
            "noise",
            "battery",
            "no_heat",
            "broken",
            "quality",
        ),
        "defect",
    ),
    "damaged": "damaged_in_transit",
    "wrong_item": "not_as_described",
    "fit": "not_as_described",
    "unwanted": "change_of_mind",
}


def understand_rules(facts: Facts) -> Understanding:
    """Read product, problem, demand and time from the message, the session and the orders."""
    message, session = facts.message, facts.session
    norm, lang = normalize(message), written_in(message)
    read = reading(lang)
    names = list(dict.fromkeys(n for o in facts.orders for n in o.products()))
    said = message
    mentions = mentioned_products(said)
    product = find_product(said, names)
    if product is None and not mentions:
        # No product as written: a misspelled one ("my kettel leaks") may still be named.
        said = corrected(message, names)
        if said is not message:  # the same text finds the same nothing again
            mentions, product = mentioned_products(said), find_product(said, names)
    if product and mentions:
        score = scorer(said)
        best = score(product)
        rivals = [n for n in names if n != product and score(n) >= best - 0.05]
        if rivals:  # Several orders fit the words equally: keep the customer's own word.
            product = mentions[0]
    if product is None and not mentions:
        # A word only one of the customer's products has: "the Weber", "零食那单".
        product = distinct_name(said, names)
    elif product and mentions and names:
        score = scorer(said)
        fit = {n: score(n) for n in names}
        alike = [n for n in names if fit[n] >= max(fit.values()) - 0.05]
        if len(alike) > 1:  # "the black one": the word only one of the alike products has
            product = distinct_name(said, alike) or product
    sized = _by_size(message, names, read.size)
    if sized and (product is None or product_score(product, sized) >= 0.5):
        product = sized  # "the size 10s": the one variant of the product with that size
    named = product is not None or bool(mentions)
    recalled = None if named else _recall(facts)
    refers = not named and (recalled is not None or bool(read.earlier.search(norm)))
    past = next((e for e in facts.earlier if e.product), None) if refers else None
    if recalled is not None:
        past = None  # The clues chose an order; the latest session may be about another.
        if recalled.order_id:
            product = next(o.product_name for o in facts.orders if o.order_id == recalled.order_id)
    if product is None and mentions:
        current = session.product
        product = current if current and product_score(mentions[0], current) >= 0.5 else mentions[0]
    elif product is None and recalled is None:
        product = session.product or (past.product if past else None)
    same_topic = product == session.product
    # "Back to the blender": an earlier topic of the session, named again.
    returned = next(
        (t for t in session.topics if t.product == product and t.order_id != session.order_id),
        None,
    ) or _discussed(facts, product)
    # A problem is read without the product names: a "Spark" sleeping bag is no fire. The cut
    # text is the risk reading's, which the risks below are read from too.
    language = customer_language(message, DEFAULT_LANGUAGES)
    unnamed = normalize(risk.unnamed(message, language, names).replace(risk.CUT, " "))
    # Each problem's and demand's words in the message are read once: the problem, the demand
    # and the keywords are all drawn from these.
    said_problems, said_demands = read.said(norm)
    if unnamed == norm:  # no product name cut out: the problem is the first one said
        key = next((k for k, found in said_problems.items() if found), None)
    else:
        key = read.first_problem(unnamed)
    if key is None and past is not None and not session.problem:
        # "The order I asked about before" continues that session's problem.
        key = problem_key(past.core_problem)
    if key is None and recalled is not None and recalled.order_id:
        raised = next((h.problems for h in facts.history if h.order_id == recalled.order_id), [])
        # The last problem actually named; "needs help with an order" names none.
        keys = [k for k in map(problem_key, raised) if k and k != "general"]
        key = keys[-1] if keys else None
    if key:
        problem = problem_label(key, lang)
    elif session.problem and same_topic:
        problem, key = session.problem, problem_key(session.problem)
    elif returned is not None and returned.problem:
        # "Back to the blender": the problem raised about it then still stands.
        problem, key = returned.problem, problem_key(returned.problem)
    else:
        problem, key = problem_label("general", lang), "general"
    demands = [d for d, found in said_demands.items() if found]
    previous = session.previous_demand if session.previous_demand in CLAUSE_EN else None
    if not demands and past is not None:
        past_norm = normalize(past.core_problem)
        demands = read.demands_in(past_norm)
    # What was agreed on about this product: its own topic's, when the session returns to it.
    agreed = returned.demand if returned is not None else previous
    if (
        demands == ["refund"]
        and agreed in ("exchange", "repair")
        and read.return_logistics.search(norm)
    ):
        # Shipping an item back is part of the exchange or repair already agreed on.
        demands = [cast(Demand, agreed)]
    if "information" in demands and previous in demands and previous != "information":
        # "How long will the repair take?" asks about the process already agreed on.
        demands = ["information"]
    demand: Demand = (
        demands[0]
        if demands
        else _continued(facts, recalled)
        if recalled is not None
        else cast(Demand, returned.demand)
        if returned is not None and returned.demand in DEMAND_NAMES
        else cast(Demand, previous)
        if previous and (same_topic or not session.product)
        else DEFAULT_DEMAND.get(key or "", "information" if read.news.search(norm) else "other")
    )
    time_hint = extract_time_hint(message, lang)
    keywords: list[str] = [*mentions]
    for found in (*said_problems.values(), *said_demands.values()):
        keywords += found
    keywords += [time_hint] if time_hint else []
    keywords += content_words(message)
    return Understanding(
        product=product,
        problem=problem,
        demand=demand,
        time_hint=time_hint,
        keywords=list(dict.fromkeys(keywords))[:8],
        language=language,
        reason=REASON_OF.get(key or ""),
        core_problem=_core_problem(lang, product, problem, key, demand, previous)[:400],
        refers_to_earlier=refers,
        risks=risk.scan(message, language, names),
    )
