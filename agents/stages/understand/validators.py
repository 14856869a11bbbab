"""The understand stage's check of the model's answer: a product the customer's context names."""

from __future__ import annotations

from baton_kafka.agents.asking import Validator
from baton_kafka.agents.models.llm import OutputInvalid
from baton_kafka.agents.prompts import Facts
from baton_kafka.agents.rules.matching import normalize, scorer
from baton_kafka.agents.rules.typos import corrected
from baton_kafka.schemas.stages import Understanding

GROUNDED = 0.35


def grounded_in(facts: Facts) -> Validator[Understanding]:
    """Rejects a product named neither in the message, the session nor the customer's orders."""
    sources = [
        facts.message,
        facts.session.product or "",
        *facts.session.core_problems,
        *(o.product_name for o in facts.orders),
        *(e.product or "" for e in facts.earlier),
        *(h.product or "" for h in facts.history),
    ]

    def grounded(value: Understanding) -> None:
        product = value.product
        if not product or normalize(product) in normalize(facts.message):
            return
        score = scorer(product)  # ``product_score(product, ·)``, the product read once
        if any(score(source) >= GROUNDED for source in sources if source):
            return
        if score(corrected(facts.message, [product])) >= GROUNDED:
            return  # the customer misspelled it ("kettel"), the model did not
        raise OutputInvalid(
            f"product: {product!r} is named neither in the message, the session nor the "
            "customer's orders; use the customer's words, an order's product_name, or null"
        )

    return grounded
