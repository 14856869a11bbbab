"""Model providers by name or dotted path, through the real SDKs against the stand-in over HTTP:
Bedrock's and Vertex AI's request shapes, an OpenAI-compatible server's chat completions, and
what each provider declares it can do."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest

from baton_kafka.agents.models import Capabilities, ModelOptions, ProviderError, open_llm
from baton_kafka.agents.models.capabilities import (
    BEDROCK,
    OPENAI_COMPATIBLE,
    VERTEX,
    capabilities_of,
    describe,
)
from baton_kafka.agents.models.claude import AnthropicLLM
from baton_kafka.agents.models.llm import SpendLimit, TimedOut, Unavailable
from baton_kafka.agents.models.openai_compat import message_of
from baton_kafka.agents.models.parsing import schema_instruction
from baton_kafka.agents.models.prices import PRICES, Price, cost, min_cacheable_tokens, price_for
from baton_kafka.agents.models.tokens import ApiCounter, Estimator
from baton_kafka.agents.testing import Request, Responder, StandIn
from baton_kafka.schemas import OrderChoice, UsageTotals
from baton_kafka.streams.kafka.embedded import free_port
from baton_kafka.streams.runtime.faust_app.llms import limits_line
from baton_kafka.streams.runtime.worker import build_llm, model_options
from baton_kafka.streams.settings import Settings, SettingsError, load
from tests.fixtures.agents import MODEL, ORDERS, prompt, respond
from tests.fixtures.paths import ROOT


@pytest.fixture
def responder() -> Responder:
    return respond


@pytest.fixture
def seen(own_standin: StandIn) -> list[Request]:
    """The requests the stand-in read, as its responder saw them."""
    got: list[Request] = []

    def record(request: Request) -> Any:
        got.append(request)
        return respond(request)

    own_standin.responder = record
    return got


def options(base_url: str, **changes: Any) -> ModelOptions:
    fields: dict[str, Any] = {"model": MODEL, "max_retries": 1, "timeout_s": 5.0, **changes}
    return ModelOptions(api_key="platform-key", base_url=base_url, **fields)


@pytest.fixture
def cloud_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The region and project the SDK's platform clients read from the environment."""
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("CLOUD_ML_REGION", "europe-west4")
    monkeypatch.setenv("ANTHROPIC_VERTEX_PROJECT_ID", "shop-support")


async def test_bedrock_sends_the_model_in_the_path_and_the_version_in_the_body(
    own_standin: StandIn, seen: list[Request], cloud_env: None
) -> None:
    llm = open_llm("bedrock", options(own_standin.base_url))
    try:
        answer = await llm.ask(prompt("lookup"))
        counted = await llm.count_tokens("lookup", "system", "context")  # type: ignore[attr-defined]
    finally:
        await llm.aclose()
    sent = own_standin.stats()["requests"][0]
    assert (sent["wire"], sent["model"], sent["auth"]) == ("bedrock", MODEL, "bearer")
    assert sent["version"]
    assert answer.value.order_id == ORDERS[0].order_id
    # Structured output and cache breakpoints are served on Bedrock; token counting is not.
    assert seen[0].schema["title"] == "OrderChoice" and seen[0].cache_system
    assert capabilities_of(llm) == BEDROCK and isinstance(llm.counter, Estimator)  # type: ignore[attr-defined]
    assert counted.method == "estimated" and own_standin.stats()["token_counts"] == 0
    assert answer.usage.cache_write_tokens > 0 and answer.usage.cost_usd


async def test_vertex_puts_project_region_and_model_in_the_path(
    own_standin: StandIn, seen: list[Request], cloud_env: None
) -> None:
    llm = open_llm("vertex", options(own_standin.base_url))
    try:
        answer = await llm.ask(prompt("lookup"))
        counted = await llm.count_tokens("lookup", "system", "context")  # type: ignore[attr-defined]
    finally:
        await llm.aclose()
    sent = own_standin.stats()["requests"][0]
    assert (sent["wire"], sent["project"], sent["region"]) == (
        "vertex",
        "shop-support",
        "europe-west4",
    )
    assert (sent["model"], sent["auth"]) == (MODEL, "bearer")
    # Off by default on Vertex AI: the schema went into the system prompt instead.
    assert seen[0].schema == {} and seen[0].system.endswith(schema_instruction(OrderChoice))
    assert answer.value.order_id == ORDERS[0].order_id
    assert isinstance(llm.counter, ApiCounter) and counted.method == "counted"  # type: ignore[attr-defined]
    assert own_standin.stats()["token_counts"] > 0 and capabilities_of(llm) == VERTEX


async def test_vertex_structured_output_can_be_turned_on(
    own_standin: StandIn, seen: list[Request], cloud_env: None
) -> None:
    llm = open_llm("vertex", options(own_standin.base_url, structured_output="on"))
    try:
        await llm.ask(prompt("lookup"))
    finally:
        await llm.aclose()
    assert seen[0].schema["title"] == "OrderChoice"
    assert not seen[0].system.endswith(schema_instruction(OrderChoice))


def test_a_platform_without_its_region_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "CLOUD_ML_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    for provider in ("bedrock", "vertex"):
        with pytest.raises(ProviderError) as caught:
            open_llm(provider, options("http://127.0.0.1:9"))
        assert str(caught.value).startswith(f"BATON_LLM={provider}: ")
        assert "\n" not in str(caught.value) and "platform-key" not in str(caught.value)


@pytest.fixture
async def chat(own_standin: StandIn) -> AsyncIterator[AnthropicLLM]:
    llm = open_llm("openai", options(own_standin.base_url + "/v1", model="qwen2.5-1.5b-instruct"))
    assert isinstance(llm, AnthropicLLM)
    yield llm
    await llm.aclose()


async def test_openai_compatible_chat_completions_with_a_json_schema(
    chat: AnthropicLLM, own_standin: StandIn, seen: list[Request]
) -> None:
    answer = await chat.ask(prompt("lookup"))
    sent = own_standin.stats()["requests"][0]
    assert (sent["wire"], sent["auth"], sent["schema"]) == ("chat", "bearer", True)
    assert sent["model"] == "qwen2.5-1.5b-instruct"
    assert seen[0].schema["title"] == "OrderChoice" and not seen[0].cache_system
    assert seen[0].facts is not None and seen[0].facts.ticket_id == "t-1"
    assert answer.value.order_id == ORDERS[0].order_id
    # The ledger: prompt tokens are input tokens, completion tokens output tokens.
    assert answer.usage.input_tokens == sent["input_tokens"] > 0
    assert answer.usage.output_tokens == sent["output_tokens"] > 0
    assert answer.usage.request_id == own_standin.stats()["request_ids"][0]
    assert capabilities_of(chat) == OPENAI_COMPATIBLE and isinstance(chat.counter, Estimator)


async def test_openai_compatible_failures_are_retried_or_not_like_the_api(
    chat: AnthropicLLM, own_standin: StandIn
) -> None:
    own_standin.add_faults([{"fault": "429"}])
    answer = await chat.ask(prompt("lookup"))
    assert answer.value.order_id and own_standin.stats()["calls"] == 2
    own_standin.add_faults([{"fault": "spend_limit"}])
    with pytest.raises(SpendLimit):
        await chat.ask(prompt("lookup"))
    assert own_standin.stats()["calls"] == 3


async def test_an_openai_compatible_call_that_hangs_times_out(own_standin: StandIn) -> None:
    own_standin.add_faults([{"fault": "hang", "times": 5}])
    llm = open_llm("openai", options(own_standin.base_url + "/v1", timeout_s=0.2, max_retries=1))
    try:
        with pytest.raises(TimedOut, match=r"did not answer within 0\.2 s"):
            await llm.ask(prompt("lookup"))
    finally:
        await llm.aclose()


async def test_only_our_settings_reach_an_openai_compatible_endpoint(
    own_standin: StandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The SDK's own variables would send an OpenAI key, organization and project along.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-must-not-leave")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-1")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-1")
    monkeypatch.setenv("OPENAI_CUSTOM_HEADERS", "Authorization: Bearer sk-custom-must-not-leave")
    for key in (None, "endpoint-key"):
        given = replace(options(own_standin.base_url + "/v1"), api_key=key)
        llm = open_llm("openai", given)
        try:
            await llm.ask(prompt("lookup"))
        finally:
            await llm.aclose()
    keyless, keyed = own_standin.stats()["requests"]
    assert keyless["auth"] is None and keyed["auth"] == "bearer"
    for sent in (keyless, keyed):
        assert not {"openai-organization", "openai-project"} & set(sent["headers"])


async def test_an_unreachable_openai_compatible_endpoint_is_retried_then_unavailable() -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    llm = open_llm("openai", options(dead, max_retries=1))
    try:
        with pytest.raises(Unavailable, match=r"unreachable: .*gave up after 2 attempts"):
            await llm.ask(prompt("lookup"))
    finally:
        await llm.aclose()


def test_a_chat_completion_maps_onto_the_ledger() -> None:
    completion = {
        "id": "c1",
        "model": "m",
        "choices": [{"message": {"content": "{}"}, "finish_reason": "length"}],
        "usage": {
            "prompt_tokens": 100,
            "completion_tokens": 7,
            "prompt_tokens_details": {"cached_tokens": 60},
        },
    }
    message = message_of(completion, "r-1")
    assert (message.usage.input_tokens, message.usage.cache_read_input_tokens) == (40, 60)
    assert message.usage.output_tokens == 7 and message.stop_reason == "max_tokens"
    assert message._request_id == "r-1"
    refused = {"choices": [{"message": {"content": None, "refusal": "no"}}]}
    assert message_of(refused, None).stop_reason == "refusal"
    for malformed in ({}, {"choices": []}, {"choices": [{"text": "x"}]}, []):
        with pytest.raises(ValueError, match="not a chat completion"):
            message_of(malformed, None)


async def test_a_model_by_dotted_path_is_the_shipped_example(own_standin: StandIn) -> None:
    env = {
        "BATON_LLM": "examples.gateway_model:make",
        "BATON_MODEL": "house-model-7b",
        "BATON_MODEL_URL": own_standin.base_url + "/v1",
        "BATON_MODEL_API_KEY": "gateway-key",
        "ANTHROPIC_API_KEY": "sk-ant-must-not-leave",
    }
    llm = build_llm(load(env))
    try:
        answer = await llm.ask(prompt("lookup"))
    finally:
        await llm.aclose()
    sent = own_standin.stats()["requests"][0]
    assert llm.name == "gateway" and answer.value.order_id == ORDERS[0].order_id
    assert sent["wire"] == "chat" and sent["schema"] is False and "x-tenant" in sent["headers"]
    assert capabilities_of(llm) == Capabilities(False, False, False, False)


def test_only_the_first_party_api_gets_the_anthropic_key() -> None:
    both = {"ANTHROPIC_API_KEY": "sk-ant-1", "BATON_MODEL_API_KEY": "other", "BATON_MODEL": "m"}
    assert model_options(load({**both, "BATON_LLM": "anthropic"})).api_key == "sk-ant-1"
    for name in ("bedrock", "vertex", "openai", "examples.gateway_model:make"):
        assert model_options(load({**both, "BATON_LLM": name})).api_key == "other"


@pytest.mark.parametrize(
    ("name", "complaint"),
    [
        ("no_such_module_x:make", "cannot import no_such_module_x"),
        ("examples.gateway_model:nothing", "has no callable 'nothing'"),
        ("json:dumps", "json:dumps: "),
    ],
)
def test_a_dotted_path_that_cannot_build_a_model_is_one_line(name: str, complaint: str) -> None:
    with pytest.raises(SettingsError) as caught:
        build_llm(load({"BATON_LLM": name}))
    assert complaint in str(caught.value) and "\n" not in str(caught.value)


def test_provider_names_and_their_settings() -> None:
    with pytest.raises(SettingsError, match="BATON_LLM must be one of anthropic, bedrock"):
        load({"BATON_LLM": "gpt"})
    with pytest.raises(SettingsError, match="BATON_LLM=openai needs BATON_MODEL"):
        load({"BATON_LLM": "openai"})
    with pytest.raises(SettingsError, match="BATON_MODEL_STRUCTURED_OUTPUT"):
        load({"BATON_MODEL_STRUCTURED_OUTPUT": "maybe"})
    slow = load({"BATON_LLM": "openai", "BATON_MODEL": "m"})
    assert (slow.model_timeout_s, slow.ticket_model_budget_s, slow.model_concurrency) == (
        300.0,
        1200.0,
        4,
    )
    assert slow.stage_models == {}
    given = load({"BATON_LLM": "openai", "BATON_MODEL": "m", "BATON_MODEL_TIMEOUT": "90"})
    assert given.model_timeout_s == 90.0
    assert load({"BATON_LLM": "anthropic"}).model_timeout_s == 60.0
    secret = load({"BATON_LLM": "openai", "BATON_MODEL": "m", "BATON_MODEL_API_KEY": "s3cret"})
    assert "s3cret" not in repr(secret) and load(secret.to_env()) == secret


HERE = "http://127.0.0.1:8080"
SONNET, HAIKU = "claude-sonnet-4-6", "claude-haiku-4-5"


@pytest.mark.parametrize(
    ("env", "understand", "lookup", "strategy"),
    [
        ({}, HAIKU, HAIKU, SONNET),
        ({"ANTHROPIC_BASE_URL": "https://api.anthropic.com"}, HAIKU, HAIKU, SONNET),
        ({"ANTHROPIC_BASE_URL": HERE}, SONNET, SONNET, SONNET),
        ({"ANTHROPIC_BASE_URL": HERE, "BATON_MODEL": "qwen"}, "qwen", "qwen", "qwen"),
        ({"ANTHROPIC_BASE_URL": HERE, "BATON_MODEL_LOOKUP": "small"}, SONNET, "small", SONNET),
    ],
)
def test_stage_model_defaults_follow_where_the_calls_go(
    env: dict[str, str], understand: str, lookup: str, strategy: str
) -> None:
    settings = load({"BATON_LLM": "anthropic", **env})
    llm = build_llm(settings)
    assert isinstance(llm, AnthropicLLM)
    stages = ("understand", "lookup", "strategy")
    assert tuple(llm.model_for(s) for s in stages) == (understand, lookup, strategy)
    assert load(settings.to_env()) == settings


async def test_a_self_hosted_model_costs_unknown_until_it_is_priced(own_standin: StandIn) -> None:
    url = own_standin.base_url + "/v1"
    unpriced = open_llm("openai", options(url, model="qwen2.5-1.5b-instruct"))
    priced = open_llm(
        "openai",
        options(
            url, model="qwen2.5-1.5b-instruct", prices={"qwen2.5-1.5b-instruct": Price.of(0.1, 0.2)}
        ),
    )
    try:
        unknown = (await unpriced.ask(prompt("lookup"))).usage
        known = (await priced.ask(prompt("lookup"))).usage
    finally:
        await unpriced.aclose()
        await priced.aclose()
    assert unknown.cost_usd is None and unpriced.unpriced == {"qwen2.5-1.5b-instruct"}  # type: ignore[attr-defined]
    assert known.cost_usd == cost(known, Price.of(0.1, 0.2)) > 0
    totals = UsageTotals().add(known).add(unknown)
    assert (totals.calls, totals.unpriced_calls, totals.cost_usd) == (2, 1, known.cost_usd)
    assert totals.merge(totals).unpriced_calls == 2


def test_cache_minimums_are_configurable_per_model() -> None:
    settings = load({"BATON_CACHE_MIN_TOKENS": '{"claude-haiku-4-5": 2048, "my-model": 512}'})
    table = settings.cache_min_tokens
    assert min_cacheable_tokens("claude-haiku-4-5", table) == 2048
    assert min_cacheable_tokens("us.anthropic.claude-haiku-4-5-20251001-v1:0", table) == 2048
    assert min_cacheable_tokens("my-model", table) == 512
    assert min_cacheable_tokens("claude-sonnet-4-5@20250929") == 1024
    assert load(settings.to_env()) == settings
    for bad in ("[1]", '{"m": -1}', '{"m": "x"}', "{"):
        with pytest.raises(SettingsError, match="BATON_CACHE_MIN_TOKENS"):
            load({"BATON_CACHE_MIN_TOKENS": bad})


@pytest.mark.parametrize(
    "name",
    [
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "anthropic.claude-sonnet-4-5-20250929-v1:0",
        "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "claude-sonnet-4-5@20250929",
        "claude-sonnet-4-5-latest",
    ],
)
def test_a_platform_model_name_finds_its_price(name: str) -> None:
    assert price_for(name, PRICES) == PRICES["claude-sonnet-4-5"]


def test_what_a_provider_serves_is_said_in_a_few_words() -> None:
    assert describe(OPENAI_COMPATIBLE) == "structured output; no caching, batches, token counting"
    assert describe(BEDROCK) == "structured output, caching; no batches, token counting"
    assert describe(Capabilities()) == "structured output, caching, batches, token counting"
    assert describe(Capabilities(False, False, False, False)).startswith("no structured output")


async def test_a_server_without_a_json_schema_mode_gets_the_schema_in_the_prompt(
    own_standin: StandIn, seen: list[Request], caplog: pytest.LogCaptureFixture
) -> None:
    own_standin.chat_json_schema = False
    llm = open_llm("openai", options(own_standin.base_url + "/v1", model="m"))
    try:
        first = await llm.ask(prompt("lookup"))
        second = await llm.ask(prompt("lookup", ticket_id="t-2"))
    finally:
        await llm.aclose()
    assert first.value.order_id == second.value.order_id == ORDERS[0].order_id
    stats = own_standin.stats()
    # One refusal, then every call with the schema in the system prompt instead.
    assert stats["by_fault"] == {"json_schema_refused": 1}
    assert [r["schema"] for r in stats["requests"]] == [False, False]
    assert all(r.system.endswith(schema_instruction(OrderChoice)) for r in seen)
    assert capabilities_of(llm).structured_output is False
    refused = [
        r.getMessage() for r in caplog.records if "refused the JSON-schema" in r.getMessage()
    ]
    assert len(refused) == 1 and "BATON_MODEL_STRUCTURED_OUTPUT=off" in refused[0]


def test_the_documented_model_example_is_the_shipped_one() -> None:
    doc = (ROOT / "docs" / "extending.md").read_text(encoding="utf-8")
    section = doc[doc.index("## A model") :]
    shown = section[section.index("```python\n") + len("```python\n") :]
    shown = shown[: shown.index("```")]
    assert shown.strip() in (ROOT / "examples" / "gateway_model.py").read_text(encoding="utf-8")


def _limits(settings: Settings) -> tuple[float, float, int]:
    return (settings.model_timeout_s, settings.ticket_model_budget_s, settings.model_concurrency)


@pytest.mark.parametrize(
    "base_url",
    ["http://127.0.0.1:8080", "https://llm.internal/anthropic", "http://api.anthropic.com.evil"],
)
def test_the_claude_api_at_another_address_gets_a_slow_servers_limits(base_url: str) -> None:
    env = {"BATON_LLM": "anthropic", "ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": base_url}
    slow = load(env)
    assert _limits(slow) == (300.0, 1200.0, 4)
    line = limits_line(slow)
    assert line.startswith("300 s per call, 1200 s per ticket, 4 calls in flight at most; ")
    assert "defaults: a self-hosted server's (ANTHROPIC_BASE_URL is " in line
    assert "not Anthropic's API" in line
    # The first-party API, by default or by its own address, keeps its defaults.
    for first_party in ({}, {"ANTHROPIC_BASE_URL": "https://api.anthropic.com"}):
        fast = load({"BATON_LLM": "anthropic", "ANTHROPIC_API_KEY": "k", **first_party})
        assert _limits(fast) == (60.0, 180.0, 256)
        assert limits_line(fast).endswith("; defaults: the Claude API's")


def test_explicit_limits_win_over_where_the_calls_go() -> None:
    env = {
        "BATON_LLM": "anthropic",
        "ANTHROPIC_API_KEY": "k",
        "ANTHROPIC_BASE_URL": "http://u:secret@127.0.0.1:8080",
        "BATON_MODEL_TIMEOUT": "45",
        "BATON_MODEL_CONCURRENCY": "2",
    }
    settings = load(env)
    assert _limits(settings) == (45.0, 1200.0, 2)
    line = limits_line(settings)
    assert line == (
        "45 s per call, 1200 s per ticket, 2 calls in flight at most; set: BATON_MODEL_TIMEOUT, "
        "BATON_MODEL_CONCURRENCY; the other defaults: a self-hosted server's "
        "(ANTHROPIC_BASE_URL is 127.0.0.1:8080, not Anthropic's API)"
    )
    assert "secret" not in line
    every = load({**env, "BATON_TICKET_MODEL_BUDGET": "90"})
    assert limits_line(every).endswith(
        "; set: BATON_MODEL_TIMEOUT, BATON_TICKET_MODEL_BUDGET, BATON_MODEL_CONCURRENCY"
    )
    assert load(settings.to_env()) == settings


def test_a_factory_declares_its_limits_or_gets_a_slow_servers() -> None:
    declared = load({"BATON_LLM": "examples.gateway_model:make"})
    assert _limits(declared) == (120.0, 600.0, 16)
    assert limits_line(declared).endswith("; defaults: declared by examples.gateway_model:make")
    silent = load({"BATON_LLM": "json:loads"})
    assert _limits(silent) == (300.0, 1200.0, 4)
    assert limits_line(silent).endswith(
        "defaults: a self-hosted server's (json:loads declares no limits)"
    )
    missing = load({"BATON_LLM": "no_such_module_x:make"})
    assert _limits(missing) == (300.0, 1200.0, 4)
    given = load({"BATON_LLM": "examples.gateway_model:make", "BATON_MODEL_TIMEOUT": "30"})
    assert _limits(given) == (30.0, 600.0, 16)


def test_baton_check_says_which_limits_apply_and_why() -> None:
    from baton_kafka.streams.cli.check import _limits as check_line

    env = {"BATON_LLM": "anthropic", "ANTHROPIC_API_KEY": "k"}
    slow = load({**env, "ANTHROPIC_BASE_URL": "http://127.0.0.1:8080"})
    status, what, detail = check_line(slow)
    assert (status.strip(), what) == ("ok", "model limits")
    assert detail == limits_line(slow) and "127.0.0.1:8080" in detail
