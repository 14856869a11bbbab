"""The model settings: provider, models, keys, time limits, token budgets, prices."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from baton_kafka.agents.models.capabilities import StructuredOutput
from baton_kafka.agents.models.prices import Price
from baton_kafka.streams.config import values as v
from baton_kafka.streams.config.spec import (
    choice,
    fraction,
    integer,
    positive,
    setting,
)

# A provider's name (agents.models.providers.PROVIDERS) or package.module:factory.
LLMKind = str


@dataclass(frozen=True)
class ModelSettings:
    """Which models answer, how they are reached, and what they may spend."""

    anthropic_api_key: str | None = setting(
        "ANTHROPIC_API_KEY",
        "the Claude API key (the SDK's own variable)",
        None,
        secret=True,
    )
    anthropic_base_url: str | None = setting(
        "ANTHROPIC_BASE_URL",
        "the Claude API's address (the SDK's own variable)",
        None,
    )
    llm: LLMKind = setting(
        "BATON_LLM",
        "model provider: `anthropic`, `bedrock`, `vertex`, `openai` (OpenAI-compatible, "
        "self-hosted), `offline`, or `package.module:factory` ([model providers](models.md))",
        "offline",
        parse=v.llm,
        derived=v.default_llm,
        shown="`anthropic` if `ANTHROPIC_API_KEY` is set, else `offline`",
    )
    model: str = setting(
        "BATON_MODEL",
        "one model for every stage (required with `bedrock`, `vertex` and `openai`: the "
        "model's name there)",
        "claude-sonnet-4-6",
        shown="`claude-sonnet-4-6` (strategy), `claude-haiku-4-5` (understand, look-up, reader) at "
        "Anthropic's API; elsewhere every stage gets `BATON_MODEL`",
    )
    stage_models: Mapping[str, str] = setting(
        "BATON_MODEL_<STAGE>",
        "per-stage model: `BATON_MODEL_UNDERSTAND`, `_LOOKUP`, `_STRATEGY`, `_READER` (the "
        "independent reader of each final reply)",
        factory=dict,
        read=v.read_stage_models,
        write=v.write_stage_models,
        shown="see `BATON_MODEL`",
        also=tuple(f"BATON_MODEL_{s.upper()}" for s in v.STAGES),
    )
    reader: str = setting(
        "BATON_READER",
        "`on` or `off`: the independent reader, a model call of its own that reads each final "
        "reply into typed lines held to the offer (never with the offline model)",
        "on",
        parse=choice("on", "off"),
    )
    # The endpoint and key of a provider other than the first-party API (Bedrock's bearer
    # key, Vertex AI's access token, a self-hosted server's key).
    model_url: str | None = setting(
        "BATON_MODEL_URL",
        "endpoint of a provider other than the Claude API",
        None,
    )
    model_api_key: str | None = setting(
        "BATON_MODEL_API_KEY",
        "key of a provider other than the Claude API (an Anthropic key never goes elsewhere)",
        None,
        secret=True,
    )
    # auto: as the provider declares; off: the schema goes into the prompt instead.
    model_structured_output: StructuredOutput = setting(
        "BATON_MODEL_STRUCTURED_OUTPUT",
        "`auto` (as the provider declares), `on`, or `off`: the answer's schema goes into "
        "the prompt instead",
        "auto",
        parse=choice("auto", "on", "off"),
    )
    model_timeout_s: float = setting(
        "BATON_MODEL_TIMEOUT",
        "seconds per model request",
        60.0,
        parse=positive,
        derived=v.limit("timeout_s"),
        shown="`60`; `300` where the calls go to a self-hosted server",
    )
    model_max_retries: int = setting(
        "BATON_MODEL_MAX_RETRIES",
        "retries of one call after a transient failure",
        4,
        parse=integer(0),
    )
    model_concurrency: int = setting(
        "BATON_MODEL_CONCURRENCY",
        "ceiling of model calls in flight per worker (adaptive below it)",
        256,
        parse=integer(1),
        derived=v.limit("concurrency"),
        shown="`256`; `4` where the calls go to a self-hosted server",
    )
    ticket_model_budget_s: float = setting(
        "BATON_TICKET_MODEL_BUDGET",
        "seconds of model time per ticket, retries and waiting included",
        180.0,
        parse=positive,
        derived=v.limit("ticket_budget_s"),
        shown="`180`; `1200` where the calls go to a self-hosted server",
    )
    # Share of each API rate limit kept back, and the longest one call waits for a reset.
    model_ratelimit_reserve: float = setting(
        "BATON_MODEL_RATELIMIT_RESERVE",
        "share of a model's rate-limit budget kept in reserve: at or under it, new calls "
        "wait for the window's reset instead of meeting a 429",
        0.05,
        parse=fraction,
    )
    model_ratelimit_wait_s: float = setting(
        "BATON_MODEL_RATELIMIT_WAIT",
        "longest wait of one call for a rate-limit reset (never past the ticket's budget)",
        30.0,
        parse=positive,
    )
    reask_limit: int = setting(
        "BATON_REASK_LIMIT", "re-asks after an invalid model output", 1, parse=integer(0)
    )
    session_token_budget: int = setting(
        "BATON_SESSION_TOKEN_BUDGET",
        "tokens per session before hand-off",
        200_000,
        parse=integer(1),
    )
    # Per customer and per worker process (a customer's sessions may live on several workers);
    # 0 turns it off.
    customer_token_budget: int = setting(
        "BATON_CUSTOMER_TOKEN_BUDGET",
        "tokens per customer and window before hand-off, counted per worker process; `0` "
        "turns it off",
        2_000_000,
        parse=integer(0),
    )
    customer_budget_window_s: float = setting(
        "BATON_CUSTOMER_BUDGET_WINDOW_S",
        "the sliding window of the customer token budget, in seconds",
        3600.0,
        parse=positive,
    )
    prices: Mapping[str, Price] = setting(
        "BATON_PRICES",
        'JSON `{"model": [input, output, cache_write, cache_read]}`, USD per million tokens',
        factory=dict,
        parse=v.prices,
        render=v.render_prices,
        shown="built in",
    )
    cache_min_tokens: Mapping[str, int] = setting(
        "BATON_CACHE_MIN_TOKENS",
        'JSON `{"model": tokens}`: the shortest prefix each model caches',
        factory=dict,
        parse=v.cache_minimums,
        render=v.render_json,
        shown="built in",
    )
