"""A scripted model for unit tests of stage functions: answers or failures, in order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from baton_kafka.agents.models.llm import Answer, ModelFailure, Prompt, T
from baton_kafka.schemas.records import CallUsage, StageName


@dataclass
class Call:
    prompt: Prompt[Any]
    feedback: str | None
    max_tokens: int | None


@dataclass
class ScriptedLLM:
    """Pops one scripted item per call: a model instance, a dict, or a ``ModelFailure``."""

    script: list[BaseModel | dict[str, Any] | ModelFailure] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    name: str = "scripted"

    def model_for(self, stage: StageName) -> str:
        return f"scripted-{stage}"

    async def ask(
        self, prompt: Prompt[T], *, feedback: str | None = None, max_tokens: int | None = None
    ) -> Answer[T]:
        self.calls.append(Call(prompt, feedback, max_tokens))
        if not self.script:
            raise AssertionError(f"unexpected model call for {prompt.stage}")
        item = self.script.pop(0)
        if isinstance(item, ModelFailure):
            raise item
        value = prompt.output_type.model_validate(
            item.model_dump() if isinstance(item, BaseModel) else item
        )
        usage = CallUsage(
            stage=prompt.stage,
            model=self.model_for(prompt.stage),
            input_tokens=100,
            output_tokens=20,
        )
        return Answer(value=value, usage=usage, raw=value.model_dump_json())

    async def aclose(self) -> None:
        return None
