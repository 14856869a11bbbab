"""The strategy reads its final reply's language once when the draft checks already read that
reply: the shortcut answers as the plain reading does, over the language corpora."""

from __future__ import annotations

import itertools

from baton_kafka.agents.models.llm import OutputInvalid
from baton_kafka.agents.outcome import Outcome
from baton_kafka.agents.policy import default_policy
from baton_kafka.agents.stages.strategy.agent import _in_their_language
from baton_kafka.agents.stages.strategy.validators import in_language
from baton_kafka.schemas.stages import OrderMatch, StrategyDraft, Understanding
from tests.fixtures.paths import data_rows

_ROWS = [
    row
    for name in ("language_corpus.jsonl", "language_sample.jsonl", "multilingual_corpus.jsonl")
    for row in data_rows(name)
    if isinstance(row.get("text"), str) and isinstance(row.get("language"), str)
]
_NAMES = ["Midea Electric Kettle 1.7L", "JD Logistics", "美的电热水壶 1.7L", "UPS"]
_MATCH = OrderMatch(order_id="G-3002", method="deterministic", confidence=1.0, reason="")


def _draft(text: str) -> StrategyDraft:
    return StrategyDraft(
        solution="s", reply=text, internal_note="", confidence=0.9, needs_human=False
    )


def _passes(text: str, language: str, languages: tuple[str, ...]) -> bool:
    try:
        in_language(language, _NAMES, languages)(_draft(text))
    except OutputInvalid:
        return False
    return True


def test_the_corpora_hold_replies_in_several_languages_that_pass_and_fail() -> None:
    languages = tuple(default_policy().languages)
    assert len({r["language"] for r in _ROWS}) >= 3
    verdicts = {_passes(r["text"], lang, languages) for r in _ROWS for lang in ("en", "zh")}
    assert verdicts == {True, False}


def test_a_reply_the_checks_passed_is_not_read_again_and_answers_the_same() -> None:
    checked = 0
    for languages in (tuple(default_policy().languages), ("en", "zh", "de", "ja"), ()):
        for language in sorted({r["language"] for r in _ROWS}):
            u = Understanding.model_construct(language=language)
            passed = [r["text"] for r in _ROWS if _passes(r["text"], language, languages)]
            finals = [r["text"] for r in _ROWS[::2]]
            for was, final in itertools.product(passed[::3], finals):
                outcome = Outcome(_draft(final))
                plain = _in_their_language(outcome, u, _MATCH, _NAMES, languages)
                once = _in_their_language(outcome, u, _MATCH, _NAMES, languages, was)
                assert once == plain, (languages, language, was, final)
                checked += 1
    assert checked > 500
