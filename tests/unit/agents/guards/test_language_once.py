"""A reply's language is told once per ticket and what it was told among: the same answer as
telling it anew, for every text the project keeps, every pack's language, names and shops."""

from __future__ import annotations

from typing import Any

import pytest

from baton_kafka.agents import packs
from baton_kafka.agents.guards import language
from baton_kafka.agents.guards.language import language_of, language_problem
from baton_kafka.agents.languages import among
from baton_kafka.agents.ticket_memo import TicketMemo, sharing
from tests.unit.agents.rules.texts import every_text

# The shops' languages: the demo shop's, every pack's, and one per pack language with English.
SHOPS = [("en", "zh"), packs.LANGUAGES, *((lang, "en") for lang in packs.LANGUAGES)]


def test_a_language_kept_for_the_ticket_is_the_language_anew() -> None:
    told = 0
    for i, text in enumerate(every_text()[::4]):
        quoted = tuple(text.split()[:1])  # a name the text quotes, left out of the reading
        shops = [among(lang, SHOPS[(i + k) % len(SHOPS)]) for k, lang in enumerate(packs.LANGUAGES)]
        asks = [(names, shop) for shop in shops[:3] for names in ((), quoted)]
        anew = [language_of(text, names, shop) for names, shop in asks]
        with sharing(TicketMemo("t", "c", 0.0)):
            for _ in range(2):
                assert [language_of(text, n, s) for n, s in asks] == anew, text
                assert [language_of(text, iter(n), list(s)) for n, s in asks] == anew, text
        told += len({a for a in anew if a})
    assert told > 3000  # the texts are told apart, not all undecided


def test_the_problem_is_read_from_the_kept_language(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "Sehr geehrte Kundin, wir erstatten Ihnen den Betrag für die Bestellung."
    calls: list[tuple[Any, ...]] = []
    plain = language._language_of

    def counted(*args: Any) -> str | None:
        calls.append(args)
        return plain(*args)

    monkeypatch.setattr(language, "_language_of", counted)
    with sharing(TicketMemo("t", "c", 0.0)):
        first = language_problem(text, "en", ["Kettle"], ("en", "de"))
        again = language_problem(text, "en", ["Kettle"], ("en", "de"))
    assert first == again and first is not None and first.startswith("language:")
    assert len(calls) == 1
