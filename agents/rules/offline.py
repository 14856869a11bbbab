"""The deterministic rule-based model: answers every stage from the prompt's facts alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from pydantic import BaseModel

from baton_kafka.agents.models.capabilities import OFFLINE
from baton_kafka.agents.models.llm import Answer, OutputInvalid, Prompt, T
from baton_kafka.agents.policy.render import read_back
from baton_kafka.agents.prompts import Facts, parse_context
from baton_kafka.agents.reader import ReaderFindings
from baton_kafka.agents.rules.reading import reader_rules
from baton_kafka.agents.stages.lookup.rule import choose_rules
from baton_kafka.agents.stages.strategy.rule import strategy_rules
from baton_kafka.agents.stages.understand.rule import understand_rules
from baton_kafka.schemas.records import CallUsage, StageName
from baton_kafka.schemas.stages import OrderChoice, StrategyDraft, Understanding

MODEL = "offline-rules"


class OfflineLLM:
    """The rule-based model behind the ``LLM`` protocol: free, instant and deterministic."""

    name = "offline"
    capabilities = OFFLINE

    def model_for(self, stage: StageName) -> str:
        """Name of the model used for ``stage``."""
        return MODEL

    async def ask(
        self, prompt: Prompt[T], *, feedback: str | None = None, max_tokens: int | None = None
    ) -> Answer[T]:
        """Answer from the prompt's facts; raise ``OutputInvalid`` when the rules cannot."""
        rules: dict[type[BaseModel], Callable[[Facts], BaseModel]] = {
            Understanding: understand_rules,
            OrderChoice: choose_rules,
            StrategyDraft: strategy_rules,
        }
        rule = rules.get(prompt.output_type)
        if prompt.output_type is ReaderFindings:
            # The pipeline never asks the offline model to read, but a model built on it may.
            value: BaseModel = reader_rules(prompt.context)
            usage = CallUsage(stage=prompt.stage, model=MODEL)
            return Answer(value=cast(T, value), usage=usage, raw=value.model_dump_json())
        if rule is None:
            raise OutputInvalid(f"offline model cannot produce {prompt.output_type.__name__}")
        try:
            facts = prompt.facts
            facts = facts if isinstance(facts, Facts) else parse_context(prompt.context)
            # The strategy rules decide by the policy the prompt was written from.
            policy = read_back(prompt.system)
            value = strategy_rules(facts, policy) if rule is strategy_rules else rule(facts)
        except ValueError as exc:  # also pydantic's ValidationError
            raise OutputInvalid(f"offline rules failed: {exc}") from exc
        usage = CallUsage(stage=prompt.stage, model=MODEL)
        return Answer(value=cast(T, value), usage=usage, raw=value.model_dump_json())

    async def aclose(self) -> None:
        """Nothing to release."""
