"""The detector's faster readings: the wanted languages looked up in the ranking, a text with no
digit not scanned for tokens with one, and a customer's language kept per text, each the same as
the plain reading on the corpora and texts generated in every shipped language."""

from __future__ import annotations

import math
from collections.abc import Sequence

from baton_kafka.agents import languages
from baton_kafka.agents.languages import (
    _CJK_CHAR,
    _CJK_LANGUAGES,
    _KANA_RE,
    _LETTER,
    _SURE,
    _WITH_DIGIT,
    _main_script,
    _rank,
    _scores,
    customer_language,
    detect,
    primary,
)
from baton_kafka.agents.ticket_memo import TicketMemo, sharing
from tests.unit.agents.rules.texts import every_text

SETS: tuple[tuple[str, ...], ...] = (
    ("en", "zh"),
    ("en", "de", "es", "fr"),
    ("zh", "ja", "en", "de", "es"),
    ("de", "en", "zh"),
    ("en-GB", "de-CH", "zh-Hans", "ja", "fr", "es"),
    ("fr",),
)


def _plain_scores(text: str, wanted_languages: Sequence[str]) -> list[tuple[str, float]]:
    """``_scores`` as it read before: the whole ranking walked for the wanted languages."""
    wanted = {primary(lang): lang for lang in wanted_languages}
    ranked = [(wanted[lab], score) for lab, score in _rank(text) if lab in wanted]
    if not ranked:
        return []
    top = ranked[0][1]
    total = sum(math.exp(score - top) for _, score in ranked)
    return [(lang, math.exp(score - top) / total) for lang, score in ranked]


def _plain_detect(text: str, langs: Sequence[str], sure: float = _SURE) -> str | None:
    """``detect`` as it read before: every text scanned for tokens with a digit."""
    text = _WITH_DIGIT.sub(" ", text)
    if not _LETTER.search(text):
        return None
    text = _main_script(text)
    cjk = bool(_CJK_CHAR.search(text))
    written = [lang for lang in langs if (primary(lang) in _CJK_LANGUAGES) == cjk]
    if cjk and _KANA_RE.search(text):
        written = [lang for lang in written if primary(lang) == "ja"]
    if not written:
        return ("ja" if _KANA_RE.search(text) else "zh") if cjk else None
    if len(written) == 1:
        return written[0]
    scores = _plain_scores(text, written)
    if not scores or scores[0][1] < sure:
        return None
    return scores[0][0]


# Digits that are not ASCII (Arabic-Indic, full-width, Devanagari) are digits to the scan too.
OTHER_DIGITS = ["ab١٢cd", "ＡＢ１２", "xy٣", "order x٣y", "५५ kettle", "mein Ｗasser７", "٣"]


def _texts() -> list[str]:
    # Every third text: the ranking is the costly part, and the readings differ by text kind,
    # not by count.
    texts = list(every_text()[::3])
    return [
        *OTHER_DIGITS,
        *texts,
        *(f"{t} {d}" for t, d in zip(texts[::50], OTHER_DIGITS * 99, strict=False)),
    ]


def test_the_wanted_languages_looked_up_score_as_the_ranking_walked() -> None:
    for text in _texts():
        for langs in SETS:
            assert _scores(text, langs) == _plain_scores(text, langs), (text, langs)


def test_a_text_with_no_digit_is_detected_as_when_it_was_scanned() -> None:
    decided = 0
    for text in _texts():
        for langs in SETS:
            found = detect(text, langs)
            assert found == _plain_detect(text, langs), (text, langs)
            assert detect(text, langs, sure=0.0) == _plain_detect(text, langs, sure=0.0)
            decided += found is not None
    assert decided > 1000


def test_the_customer_language_kept_per_ticket_is_the_one_told_anew() -> None:
    plain = languages._customer_language
    for text in _texts():
        with sharing(TicketMemo("T-1", None, 0.0)):
            for langs in SETS:
                assert customer_language(text, langs) == plain(text, langs), (text, langs)
                assert customer_language(text, list(langs)) == plain(text, langs)
