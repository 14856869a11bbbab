"""The Messages request of a prompt: what is made once per system prompt or output type is shared
across calls, and no call can change what the next one sends."""

from __future__ import annotations

import copy
import random

import orjson
import pytest

from baton_kafka.agents import reader
from baton_kafka.agents.models.capabilities import FIRST_PARTY
from baton_kafka.agents.models.openai_compat import chat_body, without_schema
from baton_kafka.agents.models.request_shape import cache_blocks, messages_request
from baton_kafka.agents.prompts import split_shared, system_prompt
from baton_kafka.agents.testing.standin import StandIn
from baton_kafka.schemas.records import StageName
from tests.fixtures.agents import client, prompt

STAGES: tuple[StageName, ...] = ("understand", "lookup", "strategy")
MARK = "\n# Your task: "


def _texts() -> list[str]:
    """The stages' system prompts, the reader's, and generated texts around the stage mark."""
    rng = random.Random(7)
    words = ["", "a", "é", MARK, "\n", "# Your task:", "handbook ", "x" * 50]
    generated = ["".join(rng.choice(words) for _ in range(rng.randint(0, 12))) for _ in range(300)]
    return [*(system_prompt(s) for s in STAGES), reader.instructions(), *generated]


def test_the_system_blocks_split_each_text_as_split_shared_does() -> None:
    for text in _texts():
        for _ in range(2):  # the second time from the memo
            blocks = cache_blocks(text)
            assert [b["text"] for b in blocks] == split_shared(text)
            assert all(b["cache_control"] == {"type": "ephemeral"} for b in blocks)


@pytest.mark.parametrize("stage", STAGES)
def test_a_call_changing_its_request_does_not_change_the_next_calls(stage: StageName) -> None:
    p = prompt(stage)
    first = messages_request(p, "m", None, 512, FIRST_PARTY)
    pristine = copy.deepcopy(first)
    first["system"][0]["text"] = "changed"
    first["system"][0]["cache_control"]["type"] = "changed"
    first["system"].append({"type": "text", "text": "more"})
    first["messages"][0]["content"] = "changed"
    first["output_config"]["format"] = {"type": "changed"}
    del first["output_config"]
    assert messages_request(p, "m", None, 512, FIRST_PARTY) == pristine


@pytest.mark.parametrize("stage", STAGES)
def test_the_shared_schema_is_left_as_it_was_by_the_other_wires(stage: StageName) -> None:
    p = prompt(stage)
    request = messages_request(p, "m", "bad", 512, FIRST_PARTY)
    pristine = orjson.dumps(request)
    chat_body(request)
    without_schema(request)
    assert orjson.dumps(messages_request(p, "m", "bad", 512, FIRST_PARTY)) == pristine
    assert orjson.dumps(request) == pristine


async def test_asking_twice_sends_the_same_request_and_leaves_the_shared_parts_alone() -> None:
    p = prompt("strategy")
    pristine = orjson.dumps(messages_request(p, "m", None, p.max_tokens, FIRST_PARTY))
    async with StandIn() as standin:
        llm = client(standin, max_retries=0)
        try:
            first = await llm.ask(p)
            second = await llm.ask(p)
        finally:
            await llm.aclose()
    assert first.value == second.value
    assert orjson.dumps(messages_request(p, "m", None, p.max_tokens, FIRST_PARTY)) == pristine


def test_the_reader_prompt_version_is_the_hash_of_its_instructions() -> None:
    import hashlib

    text = reader.instructions()
    assert reader.prompt_version() == "r-" + hashlib.sha256(text.encode()).hexdigest()[:10]
