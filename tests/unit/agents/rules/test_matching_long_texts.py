"""A long text's units, kinds and terms, kept for the ticket while its stages score it: what
reading them anew gives, for every text of the corpora and the packs made long."""

from __future__ import annotations

from baton_kafka.agents.rules import matching
from baton_kafka.agents.rules.matching import (
    CACHED_CHARS,
    _found_terms,
    _kinds,
    _units,
    mentioned_products,
    product_score,
    scorer,
)
from baton_kafka.agents.ticket_memo import TicketMemo, sharing
from tests.unit.agents.rules.texts import every_text, generated, plain_mentions


def _plain_units(text: str) -> frozenset[str]:
    return _units.__wrapped__(text)  # type: ignore[attr-defined,no-any-return]


def _plain_kinds(text: str) -> frozenset[str]:
    return frozenset(term.kind for _, term in _found_terms(text))


def _long_texts() -> list[str]:
    pool = list(every_text())
    made = [" ".join(generated(pool, 6, seed=seed)) for seed in range(400)]
    return [t for t in dict.fromkeys([*made, *pool]) if len(t) > CACHED_CHARS][:800]


def _names() -> list[str]:
    return [*(group[0] for group in matching.KINDS[:40]), "Midea Electric Kettle 1.7L", ""]


def test_a_long_text_read_for_the_ticket_reads_as_anew() -> None:
    texts, names = _long_texts(), _names()
    assert len(texts) > 300
    mentioned = 0
    for n, text in enumerate(texts):
        with sharing(TicketMemo(f"t{n}", None, 0.0)):
            # Each asked twice, in both orders, as the stages of one ticket do.
            for _ in range(2):
                assert _kinds(text) == _plain_kinds(text)
                assert _units(text) == _plain_units(text)
                assert mentioned_products(text) == plain_mentions(text)
            score = scorer(text)
            found = [score(name) for name in names]
            as_name = [product_score(name, text) for name in names]
        assert found == [scorer(text)(name) for name in names]
        assert as_name == [product_score(name, text) for name in names]
        mentioned += bool(plain_mentions(text))
    assert mentioned > 100  # the texts do name products
