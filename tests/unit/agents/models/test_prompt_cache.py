"""Prompt layout for caching: static instructions first, long enough for each model to cache."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from baton_kafka.agents.models.prices import (
    CACHE_MIN_TOKENS,
    CACHE_MIN_UNKNOWN,
    min_cacheable_tokens,
)
from baton_kafka.agents.models.request_shape import cache_blocks
from baton_kafka.agents.prompts import PROMPT_VERSION, SHARED_PREFIX, build, system_prompt
from baton_kafka.agents.testing import estimate_tokens
from baton_kafka.schemas import Baton, Order, OrderChoice, StrategyDraft, Ticket, Understanding
from baton_kafka.schemas.records import StageName
from baton_kafka.streams.settings import DEFAULT_STAGE_MODELS, load

STAGES: tuple[StageName, ...] = ("understand", "lookup", "strategy")
# The estimator is rough (four characters a token); demand a margin above each minimum.
MARGIN = 1.1


def test_the_minimum_table_knows_the_default_models_and_dated_names() -> None:
    defaults = load({})
    for stage in STAGES:
        assert defaults.model_for(stage) in CACHE_MIN_TOKENS
    assert set(DEFAULT_STAGE_MODELS.values()) <= set(CACHE_MIN_TOKENS)
    assert min_cacheable_tokens("claude-haiku-4-5") == 4096
    assert min_cacheable_tokens("claude-sonnet-4-5-20250929") == 1024
    assert min_cacheable_tokens("claude-3-5-haiku-latest") == 2048
    assert (
        min_cacheable_tokens("claude-next-1") == CACHE_MIN_UNKNOWN == max(CACHE_MIN_TOKENS.values())
    )


@pytest.mark.parametrize("stage", STAGES)
def test_each_stage_static_prefix_is_above_its_default_model_minimum(stage: StageName) -> None:
    model = load({}).model_for(stage)
    tokens = estimate_tokens(system_prompt(stage))
    assert tokens >= MARGIN * min_cacheable_tokens(model), (stage, model, tokens)


def test_the_shared_handbook_alone_is_cacheable_on_every_default_model() -> None:
    """So a rarely called stage reads the handbook a busy stage on the same model wrote."""
    defaults = load({})
    strictest = max(min_cacheable_tokens(defaults.model_for(s)) for s in STAGES)
    assert estimate_tokens(SHARED_PREFIX) >= MARGIN * strictest


def test_static_instructions_come_first_and_the_ticket_only_in_the_context() -> None:
    order = Order(
        order_id="ORD-77",
        customer_id="c-1",
        product_name="Zephyr Blender",
        status="delivered",
        amount=80.0,
        ordered_at=datetime(2026, 1, 2, tzinfo=UTC),
    )
    ticket = Ticket(ticket_id="t-42", session_id="s-1", customer_id="c-1", text="Blender broke!")
    baton = Baton(session_id="s-1", product="Zephyr Blender", problem="broken")
    outputs = {"understand": Understanding, "lookup": OrderChoice, "strategy": StrategyDraft}
    systems = []
    for stage in STAGES:
        prompt = build(stage, outputs[stage], ticket=ticket, baton=baton, orders=[order])
        assert prompt.system == system_prompt(stage) and prompt.version == PROMPT_VERSION
        assert prompt.system.startswith(SHARED_PREFIX)
        assert outputs[stage].__name__ in prompt.system  # the output schema is static too
        for dynamic in ("t-42", "ORD-77", "Blender broke!", "Zephyr Blender"):
            assert dynamic not in prompt.system and dynamic in prompt.context
        blocks = cache_blocks(prompt.system)
        assert [b["text"] for b in blocks] == [SHARED_PREFIX, prompt.system[len(SHARED_PREFIX) :]]
        assert all(b.get("cache_control") == {"type": "ephemeral"} for b in blocks)
        systems.append(prompt.system)
    assert len(set(systems)) == 3


def test_a_system_prompt_without_the_handbook_is_one_cached_block() -> None:
    assert cache_blocks("short instructions") == [
        {"type": "text", "text": "short instructions", "cache_control": {"type": "ephemeral"}}
    ]
