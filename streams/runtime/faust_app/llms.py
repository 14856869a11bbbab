"""The model provider of a run, from the settings: its options and the built provider."""

from __future__ import annotations

from typing import Any

from baton_kafka.agents.models.llm import LLM
from baton_kafka.agents.models.providers import (
    ModelOptions,
    ProviderError,
    default_limits,
    open_llm,
)
from baton_kafka.streams.settings import Settings, SettingsError


def model_options(settings: Settings) -> ModelOptions:
    """What a model provider of a run is built from: endpoint, key, models, limits, prices.

    The first-party API's key and address are ``ANTHROPIC_*``; every other provider's are
    ``BATON_MODEL_URL`` and ``BATON_MODEL_API_KEY`` (an Anthropic key never goes elsewhere).
    """
    first_party = settings.llm == "anthropic"
    return ModelOptions(
        model=settings.model,
        stage_models=dict(settings.stage_models),
        api_key=settings.anthropic_api_key if first_party else settings.model_api_key,
        base_url=settings.anthropic_base_url if first_party else settings.model_url,
        timeout_s=settings.model_timeout_s,
        max_retries=settings.model_max_retries,
        concurrency=settings.model_concurrency,
        ticket_budget_s=settings.ticket_model_budget_s,
        prices=dict(settings.prices),
        cache_min_tokens=dict(settings.cache_min_tokens),
        structured_output=settings.model_structured_output,
        ratelimit_reserve=settings.model_ratelimit_reserve,
        ratelimit_max_wait_s=settings.model_ratelimit_wait_s,
    )


def client_options(settings: Settings) -> dict[str, Any]:
    """What every Claude client of a run takes from the settings: key, endpoint, models,
    timeout, prices."""
    return {
        "api_key": settings.anthropic_api_key,
        "base_url": settings.anthropic_base_url,
        "model": settings.model,
        "stage_models": dict(settings.stage_models),
        "timeout_s": settings.model_timeout_s,
        "prices": settings.prices,
        "cache_min_tokens": settings.cache_min_tokens,
    }


def build_llm(settings: Settings) -> LLM:
    """The configured model provider (``BATON_LLM``); ``SettingsError`` if it cannot be built."""
    try:
        return open_llm(settings.llm, model_options(settings))
    except ProviderError as exc:
        raise SettingsError(str(exc)) from None


def limits_line(settings: Settings) -> str:
    """Which model time limits apply and why: ``300 s per call, 1200 s per ticket, 4 calls in
    flight at most; set: …; defaults: a self-hosted server's (…)``."""
    found = default_limits(settings.llm, settings.anthropic_base_url)
    limits = found.limits
    given = [
        variable
        for variable, value, default in (
            ("BATON_MODEL_TIMEOUT", settings.model_timeout_s, limits.timeout_s),
            ("BATON_TICKET_MODEL_BUDGET", settings.ticket_model_budget_s, limits.ticket_budget_s),
            ("BATON_MODEL_CONCURRENCY", settings.model_concurrency, limits.concurrency),
        )
        if value != default
    ]
    line = (
        f"{settings.model_timeout_s:g} s per call, {settings.ticket_model_budget_s:g} s per "
        f"ticket, {settings.model_concurrency} calls in flight at most"
    )
    if given:
        line += f"; set: {', '.join(given)}"
    if len(given) < 3:
        line += f"; {'the other ' if given else ''}defaults: {found.why}"
    return line
