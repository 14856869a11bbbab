"""A local stand-in of the Anthropic Messages API: it echoes the prompt's facts and fails on demand.

A stage it has no rules for (a shop's own) gets a valid answer built from the JSON Schema of the
request's structured output, or of the prompt's answer format (``from_schema.answer_from_schema``).

A customer message may carry directives such as ``[[fault:429]]`` or
``[[fault:invalid_json:understand:2]]`` (fault, then optional stage and count, default any stage
and 1): the first ``count`` calls of each matching stage for that ticket fail, later ones behave.
Tests may instead queue rules through ``StandIn.add_faults`` or ``POST /_control/faults``.

Faults: ``invalid_json`` (not JSON), ``schema`` (a required field missing), ``rule`` (JSON the
wire schema accepts but the business rules do not, see ``RULE_BREAKS``), ``drift`` (strategy
only: a reply that names neither the order nor the product), ``max_tokens`` (cut-off JSON),
``refusal``, ``hang`` (no answer for ``hang_s``), ``429`` / ``529`` / ``500`` (API errors
advertising ``retry_after``) and ``spend_limit`` (a 429 that retrying cannot fix).

Message batches (``POST /v1/messages/batches``, its status and its JSONL results) answer each
request with the ``/v1/messages`` handler; a batch ends ``batch_delay_s`` after it was created.

Prompt caching follows the API: every system block with ``cache_control`` is a breakpoint; a
call reads the longest cached prefix and writes up to its last breakpoint, for prefixes of at
least ``min_cache_tokens`` (``None``: each model's documented minimum).

``POST /v1/messages/count_tokens`` answers with the token estimate of the system and message
text (deterministic), or a 500 while ``count_tokens_fails`` is set. With a ``rate_limit``
(``RateBudget``: requests, and optionally input tokens, per window) every answer carries the
``anthropic-ratelimit-*`` headers and a call past the budget gets a 429.

Besides ``/v1/messages`` it answers the same calls as Claude on Amazon Bedrock
(``/model/{model}/invoke``), on Vertex AI (``/projects/…/models/{model}:rawPredict``, and
``count-tokens:rawPredict``) and as an OpenAI-compatible server (``/v1/chat/completions``, with a
JSON-schema ``response_format``); each request's summary in ``stats()`` says which wire it came
on and how it authenticated. With a ``style`` (``WeakStyle``) it answers as a weak model does.
"""

from baton_kafka.agents.testing.standin.caching import PromptCache, estimate_tokens
from baton_kafka.agents.testing.standin.faults import FAULTS, RULE_BREAKS, FaultRule, directives
from baton_kafka.agents.testing.standin.messages import (
    Request,
    Responder,
    echo_responder,
    read_request,
)
from baton_kafka.agents.testing.standin.ratelimits import RateBudget
from baton_kafka.agents.testing.standin.server import StandIn, run_in_thread
from baton_kafka.agents.testing.standin.weak import WEAK, WeakStyle, near_miss

__all__ = [
    "FAULTS",
    "RULE_BREAKS",
    "WEAK",
    "FaultRule",
    "PromptCache",
    "RateBudget",
    "Request",
    "Responder",
    "StandIn",
    "WeakStyle",
    "directives",
    "echo_responder",
    "estimate_tokens",
    "near_miss",
    "read_request",
    "run_in_thread",
]
