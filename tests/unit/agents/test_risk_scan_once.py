"""A ticket's risk scan is made once per ticket and what it was scanned with: the same flags as
a scan anew, for every text the project keeps, every language pack, names and a shop's words."""

from __future__ import annotations

from baton_kafka.agents import packs, risk
from baton_kafka.agents.ticket_memo import TicketMemo, sharing
from baton_kafka.schemas.stages import RiskFlag
from tests.unit.agents.rules.texts import every_text

# A shop's own words, in two languages: a reading with them finds more than one without.
EXTRA: risk.Triggers = {"en": {"legal": ["kettle", "refund"]}, "de": {"safety": ["kaputt"]}}


def _names(text: str) -> tuple[str, ...]:
    """A product name the text quotes (its first words), so the scan has a name to cut out."""
    return (" ".join(text.split()[:2]).title(),) if text.strip() else ()


def test_a_scan_kept_for_the_ticket_is_the_scan_anew() -> None:
    languages = packs.languages(risk.CONCERN)
    checked = 0
    for i, text in enumerate(every_text()[::6]):
        # Two languages per text, every pack's in turn, each with and without names and words.
        langs = (languages[i % len(languages)], languages[(i + 1) % len(languages)])
        asks = [
            (lang, names, extra)
            for lang in langs
            for names in ((), _names(text))
            for extra in (risk.NONE, EXTRA)
        ]
        anew = [risk.scan(text, lang, names, extra) for lang, names, extra in asks]
        with sharing(TicketMemo("t", "c", 0.0)):
            for _ in range(2):
                kept = [risk.scan(text, lang, names, extra) for lang, names, extra in asks]
                assert kept == anew, text
                kept[0].append(RiskFlag(kind="legal", evidence="x"))  # the caller's list
        checked += sum(map(len, anew))
    assert checked > 500  # the texts do raise risks
