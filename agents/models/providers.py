"""Model providers by name (``anthropic``, ``bedrock``, ``vertex``, ``openai``, ``offline``) or by
dotted path (``package.module:factory``), each built from one ``ModelOptions``.

A factory takes the options and returns an ``LLM``; it may declare ``capabilities``
(``agents.models.capabilities.Capabilities``) on what it returns, or be taken as first-party,
and ``limits`` (``agents.models.capabilities.Limits``) on itself, or get a slow server's.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from baton_kafka.agents.models.capabilities import (
    CAPABILITIES,
    LIMITS,
    SLOW_SERVER,
    DefaultLimits,
    Limits,
    StructuredOutput,
    host_of,
    is_anthropic_api,
)
from baton_kafka.agents.models.llm import LLM
from baton_kafka.agents.models.prices import Price

Factory = Callable[["ModelOptions"], LLM]


@dataclass(frozen=True)
class ModelOptions:
    """Everything a provider is built from: endpoint, key, models, limits, prices."""

    model: str = "claude-sonnet-4-6"
    stage_models: Mapping[str, str] = field(default_factory=dict)
    api_key: str | None = None
    base_url: str | None = None
    timeout_s: float = 60.0
    max_retries: int = 4
    concurrency: int = 256
    ticket_budget_s: float = 180.0
    prices: Mapping[str, Price] = field(default_factory=dict)
    cache_min_tokens: Mapping[str, int] = field(default_factory=dict)
    structured_output: StructuredOutput = "auto"
    ratelimit_reserve: float = 0.05
    ratelimit_max_wait_s: float = 30.0

    def __repr__(self) -> str:
        return f"ModelOptions(model={self.model!r}, base_url={self.base_url!r}, api_key=***)"

    def client_options(self) -> dict[str, Any]:
        """The options as ``AnthropicLLM`` and its subclasses take them."""
        return {
            "api_key": self.api_key,
            "base_url": self.base_url,
            "model": self.model,
            "stage_models": dict(self.stage_models),
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
            "concurrency": self.concurrency,
            "ticket_budget_s": self.ticket_budget_s,
            "prices": dict(self.prices),
            "cache_min_tokens": dict(self.cache_min_tokens),
            "structured_output": self.structured_output,
            "ratelimit_reserve": self.ratelimit_reserve,
            "ratelimit_max_wait_s": self.ratelimit_max_wait_s,
        }


class ProviderError(ValueError):
    """A provider that cannot be found or built: one line saying why."""


def _anthropic(options: ModelOptions) -> LLM:
    from baton_kafka.agents.models.claude import AnthropicLLM

    return AnthropicLLM(**options.client_options())


def _bedrock(options: ModelOptions) -> LLM:
    from baton_kafka.agents.models.platforms import BedrockLLM

    return BedrockLLM(**options.client_options())


def _vertex(options: ModelOptions) -> LLM:
    from baton_kafka.agents.models.platforms import VertexLLM

    return VertexLLM(**options.client_options())


def _openai(options: ModelOptions) -> LLM:
    from baton_kafka.agents.models.openai_compat import OpenAICompatibleLLM

    return OpenAICompatibleLLM(**options.client_options())


def _offline(options: ModelOptions) -> LLM:
    from baton_kafka.agents.rules.offline import OfflineLLM

    return OfflineLLM()


PROVIDERS: dict[str, Factory] = {
    "anthropic": _anthropic,
    "bedrock": _bedrock,
    "vertex": _vertex,
    "openai": _openai,
    "offline": _offline,
}
assert set(PROVIDERS) == set(CAPABILITIES)


def is_dotted(name: str) -> bool:
    """Whether ``name`` looks like ``package.module:factory``."""
    module, sep, attr = name.partition(":")
    return bool(sep and module and attr.isidentifier())


def check_name(name: str) -> str:
    """``name`` if it is a provider's name or a dotted path, else ``ProviderError``."""
    if name in PROVIDERS or is_dotted(name):
        return name
    raise ProviderError(
        f"BATON_LLM must be one of {', '.join(PROVIDERS)} or package.module:factory, got {name!r}"
    )


def factory_of(name: str) -> Factory:
    """The factory of a provider's name or dotted path; ``ProviderError`` saying what is
    missing."""
    if name in PROVIDERS:
        return PROVIDERS[name]
    module_name, _, attr = check_name(name).partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ProviderError(f"BATON_LLM={name}: cannot import {module_name}: {exc}") from None
    found = getattr(module, attr, None)
    if not callable(found):
        raise ProviderError(f"BATON_LLM={name}: {module_name} has no callable {attr!r}")
    return found


def default_limits(name: str, base_url: str | None = None) -> DefaultLimits:
    """The limits provider ``name`` gets where none is set, and why: they follow where the calls
    go, so the Claude API at another ``base_url`` and a factory that declares no ``limits`` get
    a slow self-hosted server's."""
    if name == "anthropic" and not is_anthropic_api(base_url):
        assert base_url is not None
        where = f"ANTHROPIC_BASE_URL is {host_of(base_url)}, not Anthropic's API"
        return DefaultLimits(SLOW_SERVER, f"a self-hosted server's ({where})")
    if name == "openai":
        return DefaultLimits(SLOW_SERVER, "a self-hosted server's (BATON_LLM=openai)")
    if name == "anthropic":
        return DefaultLimits(LIMITS[name], "the Claude API's")
    if name in LIMITS:
        return DefaultLimits(LIMITS[name], f"{name}'s")
    try:
        factory = factory_of(name)
    except ProviderError:
        # Building the provider says why it cannot be imported.
        return DefaultLimits(SLOW_SERVER, f"a self-hosted server's ({name} cannot be imported)")
    declared = getattr(factory, "limits", None)
    if isinstance(declared, Limits):
        return DefaultLimits(declared, f"declared by {name}")
    return DefaultLimits(SLOW_SERVER, f"a self-hosted server's ({name} declares no limits)")


def open_llm(name: str, options: ModelOptions) -> LLM:
    """The model of provider ``name`` built from ``options``; ``ProviderError`` if it cannot be."""
    factory = factory_of(name)
    try:
        llm = factory(options)
    except (ValueError, TypeError, ImportError) as exc:
        raise ProviderError(f"BATON_LLM={name}: {exc}") from None
    for needed in ("ask", "model_for", "aclose"):
        if not callable(getattr(llm, needed, None)):
            raise ProviderError(f"BATON_LLM={name}: what {name} returned has no {needed}()")
    if not isinstance(getattr(llm, "name", None), str):
        raise ProviderError(f"BATON_LLM={name}: what {name} returned has no name")
    return llm
