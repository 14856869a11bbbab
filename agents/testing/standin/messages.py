"""A Messages API request as the stand-in reads it, and the default answer to one."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from baton_kafka.agents.policy.render import read_back
from baton_kafka.agents.prompts import Facts, parse_context
from baton_kafka.agents.rules.reading import reader_rules
from baton_kafka.agents.stages import lookup, strategy, understand
from baton_kafka.agents.stages.lookup.rule import choose_rules
from baton_kafka.agents.stages.strategy.rule import strategy_rules
from baton_kafka.agents.stages.understand.rule import understand_rules
from baton_kafka.agents.testing.standin.from_schema import answer_from_schema
from baton_kafka.agents.testing.standin.judge import judge_block, judge_responder

# Where ``schema_text`` puts the answer's schema in a system prompt.
ANSWER_FORMAT = "# Answer format\n"
STAGE_OF_TITLE = {
    "Understanding": understand.NAME,
    "OrderChoice": lookup.NAME,
    "StrategyDraft": strategy.NAME,
    "JudgeVerdict": "judge",
    "ReaderFindings": "reader",
}
_RULES: dict[str, Callable[[Facts], BaseModel]] = {
    understand.NAME: understand_rules,
    lookup.NAME: choose_rules,
    strategy.NAME: strategy_rules,
}


@dataclass(frozen=True)
class Request:
    """One Messages call as the stand-in read it; what a responder answers."""

    stage: str
    model: str
    max_tokens: int
    system: str
    cache_breaks: tuple[int, ...]
    text: str
    schema: dict[str, Any]
    facts: Facts | None
    facts_error: str = ""

    @property
    def cache_system(self) -> bool:
        """Whether any system block asked to be cached."""
        return bool(self.cache_breaks)


Responder = Callable[[Request], BaseModel | Mapping[str, Any] | str]


def echo_responder(request: Request) -> BaseModel | Mapping[str, Any]:
    """Answer with the offline rules over the facts in the prompt, so it can only repeat them;
    a judge's prompt with a verdict by fixed rules over its facts; the reader's with the reply
    read by the language packs; a stage without rules (a shop's own) with a valid answer built
    from the JSON Schema the request carries."""
    judged = judge_block(request.text) if request.stage == "judge" else None
    if judged is not None:
        return judge_responder(judged, read_back(request.system))
    if request.stage == "reader":
        return reader_rules(request.text)
    # The structured output's schema, or the one the prompt states when the provider has none.
    schema = request.schema or answer_format(request.system)
    if request.stage not in _RULES and schema:
        answer: Mapping[str, Any] = answer_from_schema(schema)
        return answer
    if request.facts is None:
        raise ValueError(f"cannot read the prompt's facts: {request.facts_error}")
    if request.stage not in _RULES:
        raise ValueError(f"no rules for stage {request.stage!r}")
    if request.stage == strategy.NAME:  # decided by the policy the system prompt states
        return strategy_rules(request.facts, read_back(request.system))
    return _RULES[request.stage](request.facts)


def _cache_breaks(system: Any) -> tuple[int, ...]:
    """Where, in the joined system text, each block marked ``cache_control`` ends."""
    if not isinstance(system, list):
        return ()
    ends, at = [], 0
    for block in system:
        if isinstance(block, dict) and block.get("type") == "text":
            at += len(str(block.get("text", "")))
            if block.get("cache_control"):
                ends.append(at)
    return tuple(ends)


def _text(content: Any, what: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(b, dict) for b in content):
        return "".join(str(b.get("text", "")) for b in content if b.get("type") == "text")
    raise ValueError(f"{what}: expected a string or a list of content blocks")


def answer_format(system: str) -> dict[str, Any]:
    """The JSON Schema a system prompt states when the provider cannot constrain the answer
    (see ``schema_text``), or ``{}``."""
    _, marker, rest = system.rpartition(ANSWER_FORMAT)
    start = rest.find("{")
    if not marker or start < 0:
        return {}
    try:
        found, _ = json.JSONDecoder().raw_decode(rest, start)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def read_request(body: Any) -> Request:
    """Validate a Messages request body; raise ``ValueError`` saying what is malformed."""
    if not isinstance(body, dict):
        raise ValueError("body: expected a JSON object")
    model, max_tokens, messages = body.get("model"), body.get("max_tokens"), body.get("messages")
    if not isinstance(model, str) or not model:
        raise ValueError("model: Field required")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise ValueError("max_tokens: Field required (a positive integer)")
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        raise ValueError("messages: Field required (a non-empty list)")
    if messages[-1].get("role") != "user":
        raise ValueError("messages: the last message must have role 'user'")
    text = _text(messages[-1].get("content"), "messages.content")
    system = body.get("system", "")
    config = body.get("output_config")
    fmt = config.get("format") if isinstance(config, dict) else None
    schema = (
        fmt.get("schema") if isinstance(fmt, dict) and fmt.get("type") == "json_schema" else None
    )
    facts: Facts | None = None
    facts_error = ""
    try:
        facts = parse_context(text)
    except ValueError as exc:
        facts_error = str(exc)
    schema = schema if isinstance(schema, dict) else {}
    stage = STAGE_OF_TITLE.get(str(schema.get("title")), facts.stage if facts else "other")
    return Request(
        stage=stage,
        model=model,
        max_tokens=max_tokens,
        system=_text(system, "system"),
        cache_breaks=_cache_breaks(system),
        text=text,
        schema=schema,
        facts=facts,
        facts_error=facts_error,
    )


def read_count_request(body: Any) -> tuple[str, str]:
    """The system and message text of a token-counting request; ``ValueError`` if malformed."""
    if not isinstance(body, dict):
        raise ValueError("body: expected a JSON object")
    model, messages = body.get("model"), body.get("messages")
    if not isinstance(model, str) or not model:
        raise ValueError("model: Field required")
    if not isinstance(messages, list) or not messages:
        raise ValueError("messages: Field required (a non-empty list)")
    if not all(isinstance(m, dict) for m in messages):
        raise ValueError("messages: expected objects")
    text = "".join(_text(m.get("content"), "messages.content") for m in messages)
    return _text(body.get("system", ""), "system"), text


_CHAT_STOP = {"end_turn": "stop", "max_tokens": "length", "refusal": "content_filter"}


def messages_of_chat(body: Any) -> dict[str, Any]:
    """A chat completions request as the Messages request it stands for; ``ValueError`` if
    malformed (system messages become the system prompt, a JSON-schema ``response_format`` the
    structured output)."""
    if not isinstance(body, dict):
        raise ValueError("body: expected a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValueError("messages: Field required (a non-empty list)")
    if not all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in messages):
        raise ValueError("messages: expected objects with a string content")
    system = [m["content"] for m in messages if m.get("role") in ("system", "developer")]
    rest = [
        {"role": m.get("role"), "content": m["content"]}
        for m in messages
        if m.get("role") not in ("system", "developer")
    ]
    out: dict[str, Any] = {
        "model": body.get("model"),
        "max_tokens": body.get("max_tokens") or body.get("max_completion_tokens") or 1024,
        "messages": rest,
        "system": "\n".join(system),
    }
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        spec = fmt.get("json_schema")
        if not isinstance(spec, dict) or not isinstance(spec.get("schema"), dict):
            raise ValueError("response_format.json_schema.schema: Field required")
        if not isinstance(spec.get("name"), str) or not spec["name"]:
            raise ValueError("response_format.json_schema.name: Field required")
        out["output_config"] = {"format": {"type": "json_schema", "schema": spec["schema"]}}
    return out


def chat_of_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A Messages answer as the chat completion an OpenAI-compatible server sends."""
    text = "".join(b.get("text", "") for b in message.get("content", []) if b.get("type") == "text")
    usage = message.get("usage") or {}
    read = int(usage.get("cache_read_input_tokens") or 0)
    prompt = int(usage.get("input_tokens") or 0) + read
    prompt += int(usage.get("cache_creation_input_tokens") or 0)
    output = int(usage.get("output_tokens") or 0)
    stop = str(message.get("stop_reason") or "end_turn")
    return {
        "id": "chatcmpl-" + str(message.get("id", "")).removeprefix("msg_"),
        "object": "chat.completion",
        "model": message.get("model"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text or None},
                "finish_reason": _CHAT_STOP.get(stop, "stop"),
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": output,
            "total_tokens": prompt + output,
            "prompt_tokens_details": {"cached_tokens": read},
        },
    }
