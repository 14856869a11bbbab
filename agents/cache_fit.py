"""Whether each stage's static prompt is long enough for its model to cache, in numbers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from baton_kafka.agents.models.prices import min_cacheable_tokens
from baton_kafka.agents.models.tokens import estimate_tokens
from baton_kafka.agents.policy import Policy
from baton_kafka.agents.prompts import system_prompt
from baton_kafka.agents.stages import ORDER
from baton_kafka.schemas.records import StageName

STAGES: tuple[StageName, ...] = ORDER


@dataclass(frozen=True)
class CacheFit:
    """One stage's static prompt against its model's shortest cacheable prefix."""

    stage: StageName
    model: str
    tokens: int
    minimum: int

    @property
    def cached(self) -> bool:
        return self.tokens >= self.minimum

    def line(self) -> str:
        """One line saying whether it is cached, with the numbers."""
        if self.cached:
            return (
                f"{self.stage} on {self.model}: static prompt about {self.tokens} tokens, "
                f"cached (the model caches {self.minimum} or more)"
            )
        return (
            f"{self.stage} on {self.model}: static prompt about {self.tokens} tokens, below the "
            f"{self.minimum} the model caches: every call pays it in full; add about "
            f"{self.minimum - self.tokens} tokens to the handbook or tone file, or choose a model "
            "with a lower minimum"
        )


def cache_fits(
    policy: Policy, models: Mapping[Any, str], overrides: Mapping[str, int] | None = None
) -> list[CacheFit]:
    """Each stage's fit on ``models[stage]`` (token counts estimated, rough by ~10%)."""
    return [
        CacheFit(
            stage,
            models[stage],
            estimate_tokens(system_prompt(stage, policy)),
            min_cacheable_tokens(models[stage], overrides),
        )
        for stage in STAGES
    ]
