"""The static instructions of every prompt: the shared handbook, then each stage's own part.

They come first in every request and never change between tickets, so the API can cache
them; the handbook alone is long enough to be cached on every default model, so stages on
the same model share its cache entry. The handbook is Markdown (``agents/policy/pipeline.md``):
its policy section is written from the shop's ``Policy``, its tone section is the shop's tone
file (``agents/policy/tone.md`` by default); the strategy's examples are those of
``agents/policy/strategy_examples.toml`` in the shop's languages; the prompt version is a hash
of the texts as rendered.
"""

from __future__ import annotations

import functools
from pathlib import Path

from baton_kafka.agents.languages import DEFAULT_LANGUAGES
from baton_kafka.agents.policy import Policy
from baton_kafka.agents.policy.load import DEFAULT_TONE_FILE, PIPELINE_FILE
from baton_kafka.agents.policy.render import render
from baton_kafka.agents.stages import lookup, strategy, understand
from baton_kafka.agents.stages.lookup import prompt as lookup_prompt
from baton_kafka.agents.stages.strategy import prompt as strategy_prompt
from baton_kafka.agents.stages.strategy.prompt import (
    EXAMPLE_ORDER_IDS,
    EXAMPLE_TRACKING_NUMBERS,
    strategy_examples,
)
from baton_kafka.agents.stages.understand import prompt as understand_prompt
from baton_kafka.schemas.records import StageName

__all__ = [
    "EXAMPLE_ORDER_IDS",
    "EXAMPLE_TRACKING_NUMBERS",
    "STAGE_TEXTS",
    "handbook",
    "stage_text",
    "strategy_examples",
    "tone",
]


def stage_text(stage: StageName, policy: Policy) -> str:
    """``stage``'s own instructions for ``policy``'s shop (the strategy's examples in its
    languages)."""
    if stage == strategy.NAME:
        return strategy_prompt.TEXT + strategy_examples(policy.languages)
    return STAGE_TEXTS[stage]


STAGE_TEXTS: dict[StageName, str] = {
    understand.NAME: understand_prompt.TEXT,
    lookup.NAME: lookup_prompt.TEXT,
    strategy.NAME: strategy_prompt.TEXT + strategy_examples(DEFAULT_LANGUAGES),
}


@functools.cache
def _text(path: str) -> str:
    return Path(path).read_text("utf-8")


def tone(policy: Policy) -> str:
    """The shop's language and tone section: its tone file's, or baton's default."""
    return policy.shop.tone_text or _text(str(DEFAULT_TONE_FILE)).strip()


@functools.cache
def handbook(policy: Policy) -> str:
    """The shared handbook with ``policy``'s section and the shop's tone written in."""
    template = _text(str(PIPELINE_FILE))
    return template.replace("{{POLICY}}", render(policy)).replace("{{TONE}}", tone(policy))
