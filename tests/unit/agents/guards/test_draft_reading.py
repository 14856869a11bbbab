"""A draft's texts read once where their checks meet: each shared reading (a language's contrast
cut of the text's plain split, an offer check's sentences kept for the ticket, a text's clauses
kept for its facts) is the reading made anew, over the corpora and every language pack."""

from __future__ import annotations

import random

from baton_kafka.agents import packs
from baton_kafka.agents.guards import clauses, facts, offered
from baton_kafka.agents.guards.books import CustomerOrders
from baton_kafka.agents.guards.clauses import Sentence
from baton_kafka.agents.guards.numbers import all_numbers
from baton_kafka.agents.ticket_memo import TicketMemo, sharing
from baton_kafka.schemas.records import OfferLine, Order
from tests.fixtures.paths import data_rows
from tests.unit.agents.guards.test_led_reading import _texts

# Sentences the offer check's words find: multiplied, recurring and "grand" money.
MONEY = [
    "We will refund you 20 USD every month.",
    "We refund twice the 20 USD you paid.",
    "You get a grand back.",
    "We will refund 59 EUR.",
    "Thank you, we will refund you monthly.",
    "Your 40 USD refund was processed.",
    "Your 900 USD arrives monthly.",
]


def _plain(text: str, contrast: clauses.re.Pattern[str] | None) -> tuple[Sentence, ...]:
    """The sentences and clauses of ``text``, split for one language from the text itself."""
    found = []
    for sentence in clauses._split(clauses._SENTENCE_END, text):
        parts = clauses._split(clauses._CLAUSE_END, sentence)
        if contrast is not None:
            parts = [c for part in parts for c in clauses._before(contrast, part)]
        found.append(Sentence(sentence, tuple(parts)))
    return tuple(found)


def test_each_languages_contrast_cut_of_the_shared_split_is_its_own_split() -> None:
    cut = 0
    for language in packs.languages("commitments"):
        marks = clauses.marks("commitments", language, "kinds")
        contrast = marks.markers.get("contrast") if marks is not None else None
        if contrast is None:
            continue
        for text in _texts():
            text = clauses.readable(text)
            want = _plain(text, contrast)
            assert clauses._sentences(text, contrast, None) == want, (language, text)
            cut += want != _plain(text, None)
    assert cut > 20  # the contrast words did cut clauses of the corpora


def _drafts() -> list[tuple[str, str]]:
    """Corpus texts and money sentences, each with some of its own sentences (as a draft's
    solution repeats its reply's) and with another text."""
    rng = random.Random(48)
    texts = [*_texts()[::4], *MONEY, " ".join(MONEY), " ".join(MONEY[::-1])]
    drafts = []
    for text in texts:
        said = offered.sentences(text)
        part = " ".join(text[a:b] for a, b in said if rng.random() < 0.5) or text
        drafts += [(text, part), (text, rng.choice(texts))]
    return drafts


LINES = [
    [],
    [OfferLine(kind="refund", order_id="O-1", amount=20.0, currency="USD")],
    [OfferLine(kind="refund", order_id="O-1", amount=59.0, currency="EUR", channel="voucher")],
]


def test_an_offer_checks_sentences_read_with_a_tickets_memo_are_read_as_anew() -> None:
    told = 0
    for i, (reply, solution) in enumerate(_drafts()):
        lines = LINES[i % len(LINES)]

        def check(text: str, skip: list[tuple[int, int]], lines: list[OfferLine]) -> list[str]:
            return list(offered.problems(text, lines, None, (20.0,), skip))

        # The reply again with its numbers left out (as ids): its sentences then hold no money.
        unread = [(n.start, n.end) for n in all_numbers(reply, [])]
        texts = [(t, skip, lines) for t, skip in ((reply, []), (solution, []), (reply, unread))]
        want = [check(*t) for t in texts]
        with sharing(TicketMemo("t", "c", 0.0)):
            got = [check(*t) for t in texts]
        assert got == want, (reply, solution, lines)
        sentence_checks = ("multiplies", "promises money repeatedly")
        told += sum(1 for found in want for p in found if p.startswith(sentence_checks))
    assert told > 10  # the sentences' own checks did find something


def test_a_texts_kinds_read_with_its_clauses_kept_are_those_read_anew() -> None:
    read = 0
    for text in _texts()[::3]:
        kept = facts._Kinds(text)
        for at in range(0, len(text) + 1, 3):
            assert kept.at(at) == facts.kinds_at(text, at), (text, at)
            read += 1
    assert read > 10_000


def _orders() -> list[Order]:
    """Every order of the test data, and copies named with other digits ("²", "١٢٣", "42171")."""
    rows = [
        r
        for f in ("eval_orders.jsonl", "lines_orders.jsonl", "guard_orders.jsonl")
        for r in data_rows(f)
    ]
    orders = [Order.model_validate(r) for r in rows]
    rng = random.Random(48)
    odd = ["2²", "١٢٣", "42171", "Pro 3", "X1 Carbon", "7", "v2.0", "³"]
    return orders + [
        o.model_copy(update={"product_name": f"{o.product_name} {rng.choice(odd)}", "items": []})
        for o in orders
    ]


def _plain_name_phrases(books: CustomerOrders) -> list[str]:
    """The talked-about products' name phrases, in the order the audit reads them."""
    talked = [o for o in books.own if o is books.matched or o.order_id in books.discussed]
    phrases: set[str] = set()
    for name in (n.casefold() for o in talked for n in o.products()):
        words = name.split()
        phrases.add(name)
        for i, w in enumerate(words):
            if any(c.isdigit() for c in w):
                phrases.update(" ".join(words[j : j + 2]) for j in (i - 1, i) if j >= 0)
        phrases.update(w for w in words if w.isdigit() and len(w) >= 4)
    return [p for p in phrases if len(p) > 2 and any(c.isdigit() for c in p)]


def test_a_customers_name_phrases_are_read_as_plainly() -> None:
    orders = _orders()
    rng = random.Random(48)
    found = 0
    for _ in range(1500):
        own = rng.sample(orders, rng.randrange(1, 5))
        discussed = frozenset(o.order_id for o in own if rng.random() < 0.5)
        books = CustomerOrders(matched=rng.choice([None, own[0]]), orders=own, discussed=discussed)
        want = _plain_name_phrases(books)
        assert list(books.name_phrases) == want, [o.product_name for o in own]
        found += len(want)
    assert found > 1000
