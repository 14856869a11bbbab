"""Test doubles shipped as models: the Messages API stand-in and a scripted ``LLM``."""

from baton_kafka.agents.testing.scripted import Call, ScriptedLLM
from baton_kafka.agents.testing.standin import (
    FAULTS,
    FaultRule,
    PromptCache,
    Request,
    Responder,
    StandIn,
    directives,
    echo_responder,
    estimate_tokens,
    read_request,
    run_in_thread,
)

__all__ = [
    "FAULTS",
    "Call",
    "FaultRule",
    "PromptCache",
    "Request",
    "Responder",
    "ScriptedLLM",
    "StandIn",
    "directives",
    "echo_responder",
    "estimate_tokens",
    "read_request",
    "run_in_thread",
]
