"""The strategy stage's examples: one per language of the shop, each a valid answer in its
language whose ids are the ones the checks read as placeholders."""

from __future__ import annotations

import tomllib

import orjson
import pytest

from baton_kafka.agents.guards.identifiers import identifiers
from baton_kafka.agents.guards.language import language_of
from baton_kafka.agents.instructions import (
    EXAMPLE_ORDER_IDS,
    EXAMPLE_TRACKING_NUMBERS,
    STAGE_TEXTS,
    strategy_examples,
)
from baton_kafka.agents.policy import default_policy, load
from baton_kafka.agents.policy.load import EXAMPLES_FILE
from baton_kafka.agents.prompts import PROMPT_VERSION, prompt_version, system_prompt
from baton_kafka.schemas import StrategyDraft
from tests.fixtures.paths import ROOT

EXAMPLES = tomllib.loads(EXAMPLES_FILE.read_text("utf-8"))
ALPINE = ROOT / "examples" / "shops" / "alpine" / "policy.toml"


def _shown(text: str) -> list[str]:
    """The languages whose example ``text`` shows, in order."""
    at = {lang: text.find(e["text"]) for lang, e in EXAMPLES.items() if e["text"] in text}
    return sorted(at, key=at.__getitem__)


@pytest.mark.parametrize("lang", list(EXAMPLES))
def test_each_example_is_a_valid_answer_in_its_language(lang: str) -> None:
    example = EXAMPLES[lang]
    facts, _, answer = example["text"].partition("->\n")
    # Wrapped to the prompt's width: a line break inside a string is a space.
    draft = StrategyDraft.model_validate(orjson.loads(answer.replace("\n", " ")))
    ids = {*example["order_ids"], *example["tracking_numbers"]}
    assert language_of(draft.reply, ids, tuple(EXAMPLES)) == lang
    # Every id the example shows is listed with it: the checks read each as a placeholder.
    found = {i.value for i in identifiers(example["text"])}
    assert found == ids
    assert set(example["order_ids"]) <= set(EXAMPLE_ORDER_IDS)
    assert set(example["tracking_numbers"]) <= set(EXAMPLE_TRACKING_NUMBERS)
    assert all(oid in facts for oid in example["order_ids"])


def test_the_examples_follow_the_shops_languages() -> None:
    alpine = load(ALPINE)
    assert alpine.languages == ("en", "de", "zh")
    assert _shown(system_prompt("strategy", alpine)) == ["en", "de", "zh"]
    assert _shown(system_prompt("strategy", default_policy())) == ["en", "zh"]
    assert _shown(STAGE_TEXTS["strategy"]) == ["en", "zh"]
    # By language subtag, each once; a shop whose languages have none gets the first one.
    assert _shown(strategy_examples(("de-CH", "de-AT", "zh-Hans"))) == ["de", "zh"]
    assert _shown(strategy_examples(("fr",))) == ["en"]
    # The demo shop's prompt (and its version the docs cite) is what it was; the alpine's moves.
    assert prompt_version() == PROMPT_VERSION == prompt_version(default_policy())
    assert prompt_version(alpine) != PROMPT_VERSION
