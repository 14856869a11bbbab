"""The understand stage's cheaper readings against the plain ones, on every text the project
keeps in all six packs' languages: a spelling that fixed nothing is not searched again, and the
check of the model's product reads the product once for every source."""

from __future__ import annotations

import orjson
import pytest

from baton_kafka.agents.models.llm import OutputInvalid
from baton_kafka.agents.prompts import Facts
from baton_kafka.agents.rules.matching import normalize, product_score
from baton_kafka.agents.rules.typos import corrected
from baton_kafka.agents.stages.understand import rule
from baton_kafka.agents.stages.understand.rule import understand_rules
from baton_kafka.agents.stages.understand.validators import GROUNDED, grounded_in
from baton_kafka.agents.ticket_memo import TicketMemo, sharing
from baton_kafka.schemas.stages import Understanding
from tests.fixtures.paths import TEST_DATA
from tests.unit.agents.stages.understand.cases import cases, product_names
from tests.unit.agents.stages.understand.cases import facts as facts_of


def _understood(facts: Facts) -> str:
    with sharing(TicketMemo("t", "c", 0.0)):
        return understand_rules(facts).model_dump_json()


def test_the_rules_read_what_they_read_when_every_spelling_was_searched_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    every = cases(5)
    fast = [_understood(f) for f in every]
    # The plain reading: the spelling's answer always a new text, so it is always searched.
    monkeypatch.setattr(rule, "corrected", lambda text, names: "".join(corrected(text, names)))
    assert [_understood(f) for f in every] == fast
    fixed = [f for f in every if corrected(f.message, [n for o in f.orders for n in o.products()])
             != f.message]  # fmt: skip
    assert len(fixed) > 40  # misspellings the plain reading does search again


def _plain_grounded(facts: Facts, product: str | None) -> bool:
    """Whether the check lets ``product`` pass, each source scored as ``product_score`` does."""
    sources = [
        facts.message,
        facts.session.product or "",
        *facts.session.core_problems,
        *(o.product_name for o in facts.orders),
        *(e.product or "" for e in facts.earlier),
        *(h.product or "" for h in facts.history),
    ]
    if not product or normalize(product) in normalize(facts.message):
        return True
    if any(product_score(product, source) >= GROUNDED for source in sources if source):
        return True
    return product_score(product, corrected(facts.message, [product])) >= GROUNDED


def _passes(facts: Facts, value: Understanding) -> bool:
    try:
        grounded_in(facts)(value)
    except OutputInvalid:
        return False
    return True


def test_the_product_check_lets_pass_what_the_plain_check_does() -> None:
    names = product_names()
    base = Understanding(
        product=None, problem="x", demand="other", time_hint=None, keywords=[],
        core_problem="x", language="en", refers_to_earlier=False,
    )  # fmt: skip
    verdicts = set()
    asks = []
    for i, facts in enumerate(cases(7)):
        said = " ".join(facts.message.split()[: 1 + i % 3])  # the customer's own words
        # Its words as a name not written in the message ("... Pro"), another order's name.
        asks += [(facts, p) for p in (said, f"{said} Pro", names[i % len(names)], None)]
    for line in (TEST_DATA / "typo_corpus.jsonl").read_bytes().splitlines():
        case = orjson.loads(line) if line.strip() else {}
        if isinstance(case.get("mention"), str):  # a misspelled product none of the orders is
            asks += [(facts_of(case["mention"], []), n) for n in case["orders"]]
    for facts, product in asks:
        value = base.model_copy(update={"product": product})
        with sharing(TicketMemo("t", "c", 0.0)):
            verdict = _passes(facts, value)
        assert verdict == _plain_grounded(facts, product), (facts.message, product)
        verdicts.add(verdict)
    assert verdicts == {True, False}
