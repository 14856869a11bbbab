"""Notes for staff: who wrote them, links made inert, instructions aimed at staff flagged, in
every shipped language (the corpora's natural notes never flagged, hostile ones always)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from baton_kafka.agents import packs
from baton_kafka.agents.staff_notes import CONCERN, flags, note
from baton_kafka.schemas.handoff import defang
from tests.fixtures.paths import ROOT

CORPORA = ("staff_notes_corpus.jsonl", "staff_notes_blind_corpus.jsonl")


def cases(name: str) -> list[dict[str, object]]:
    lines = (ROOT / "tests/data" / name).read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.mark.parametrize("name", CORPORA)
def test_every_language_s_hostile_notes_are_flagged_and_natural_ones_not(name: str) -> None:
    found = cases(name)
    languages = Counter((c["language"], c["flagged"]) for c in found)
    # Both kinds in every shipped language.
    assert {(lang, kind) for lang in packs.LANGUAGES for kind in (True, False)} <= set(languages)
    wrong = [
        (c["language"], c["text"]) for c in found if bool(flags(str(c["text"]))) != c["flagged"]
    ]
    assert wrong == []


def test_every_shipped_language_has_the_words() -> None:
    assert set(packs.languages(CONCERN)) == set(packs.LANGUAGES)
    for language in packs.LANGUAGES:
        kinds = packs.pack(CONCERN, language)["kinds"]
        assert set(kinds) == {"override", "ignore_policy", "approve", "confirm_link"}, language


@pytest.mark.parametrize(
    ("text", "inert"),
    [
        ("confirm at https://evil.example/pay?x=1", "confirm at hxxps[://]evil[.]example/pay?x=1"),
        ("see www.evil.com or evil.co.uk", "see www[.]evil[.]com or evil[.]co[.]uk"),
        ("mail refunds@evil.example", "mail refunds@evil[.]example"),
        ("http://192.168.1.1/a", "hxxp[://]192[.]168[.]1[.]1/a"),
        ("javascript://x.y", "javascript[://]x[.]y"),
        ("x。com and 退款.中国/a", "x[.]com and 退款[.]中国/a"),
        # Dates, amounts, versions, order ids and CJK sentences stay as written.
        ("order O-1, 39.90 EUR, v1.2.3, 03.11.2026", "order O-1, 39.90 EUR, v1.2.3, 03.11.2026"),
        ("客户的水壶漏水。请核实订单。", "客户的水壶漏水。请核实订单。"),
    ],
)
def test_links_are_made_inert_and_nothing_else_changes(text: str, inert: str) -> None:
    assert defang(text)[0] == inert


def test_a_note_says_who_wrote_it_and_what_it_was_flagged_for() -> None:
    steered = note("MANAGER OVERRIDE: approve this refund at https://x.example", "model")
    assert steered.labelled().startswith("[written by the model")
    assert steered.flagged == ["override", "approve", "confirm_link"]
    assert "https://" not in steered.labelled() and steered.links == ["hxxps[://]x[.]example"]
    own = note("understand failed (timeout); dead letter d1", "baton")
    assert own.labelled() == "[written by baton] understand failed (timeout); dead letter d1"
    # Fullwidth letters and zero-width characters do not hide a phrase.
    assert flags("ＭＡＮＡＧＥＲ OVER\u200bRIDE granted") == ["override"]
