"""What a model provider can do, and the limits that fit it, declared once per provider.

The pipeline adapts to the declaration: without structured output the answer's JSON Schema goes
into the prompt and the answer is read tolerantly; without caching no cache breakpoints are
sent; without batches ``--batch`` is refused; without token counting prompt sizes are estimated.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal
from urllib.parse import urlsplit

StructuredOutput = Literal["auto", "on", "off"]


@dataclass(frozen=True)
class Capabilities:
    """Which of the Messages API's features a provider serves."""

    structured_output: bool = True
    caching: bool = True
    batches: bool = True
    token_counting: bool = True

    def with_structured_output(self, choice: StructuredOutput) -> Capabilities:
        """These capabilities with the operator's choice of structured output (``auto``: as
        declared)."""
        if choice == "auto":
            return self
        return replace(self, structured_output=choice == "on")


@dataclass(frozen=True)
class Limits:
    """Per-provider defaults of the model time limits: seconds per request, seconds of model
    time per ticket, calls in flight per worker."""

    timeout_s: float = 60.0
    ticket_budget_s: float = 180.0
    concurrency: int = 256


FIRST_PARTY = Capabilities()
# Structured output is served on Bedrock; batches and token counting are not (the SDK refuses).
BEDROCK = Capabilities(batches=False, token_counting=False)
# Vertex AI serves structured output for some models only and off by default (an organization
# policy enables it): BATON_MODEL_STRUCTURED_OUTPUT=on turns it on.
VERTEX = Capabilities(structured_output=False, batches=False)
# A self-hosted server's JSON-schema mode is sent, but many accept it and ignore it, and a
# cache or a batch or a counting endpoint is not part of chat completions.
OPENAI_COMPATIBLE = Capabilities(
    structured_output=True, caching=False, batches=False, token_counting=False
)
OFFLINE = Capabilities(structured_output=True, caching=False, batches=False, token_counting=True)

CAPABILITIES: dict[str, Capabilities] = {
    "anthropic": FIRST_PARTY,
    "bedrock": BEDROCK,
    "vertex": VERTEX,
    "openai": OPENAI_COMPATIBLE,
    "offline": OFFLINE,
}

# A self-hosted model on a small server answers one call at a time, a long first prompt in
# minutes: the defaults must not time every ticket out.
SLOW_SERVER = Limits(timeout_s=300.0, ticket_budget_s=1200.0, concurrency=4)
LIMITS: dict[str, Limits] = {
    "anthropic": Limits(),
    "bedrock": Limits(),
    "vertex": Limits(),
    "openai": SLOW_SERVER,
    "offline": Limits(),
}


@dataclass(frozen=True)
class DefaultLimits:
    """The limits a run gets where none is set, and why: ``a self-hosted server's (…)``."""

    limits: Limits
    why: str


def is_anthropic_api(base_url: str | None) -> bool:
    """Whether ``base_url`` (none: the SDK's own) is Anthropic's API rather than another
    server that speaks it (a self-hosted model behind an adapter, a proxy)."""
    if not base_url:
        return True
    host = urlsplit(base_url if "//" in base_url else "//" + base_url).hostname or ""
    return host == "anthropic.com" or host.endswith(".anthropic.com")


def host_of(base_url: str) -> str:
    """``host[:port]`` of ``base_url``, never a password it carries."""
    parts = urlsplit(base_url if "//" in base_url else "//" + base_url)
    host = parts.hostname or "?"
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{host}:{port}" if port else host


def describe(caps: Capabilities) -> str:
    """What ``caps`` serve and not, in a few words: ``structured output, caching; no batches``."""
    names = {
        "structured output": caps.structured_output,
        "caching": caps.caching,
        "batches": caps.batches,
        "token counting": caps.token_counting,
    }
    served = [n for n, on in names.items() if on]
    missing = [n for n, on in names.items() if not on]
    parts = [", ".join(served)] if served else []
    if missing:
        parts.append("no " + ", ".join(missing))
    return "; ".join(parts)


def capabilities_of(llm: object) -> Capabilities:
    """What ``llm`` declares it can do; a model that declares nothing is taken as first-party."""
    declared = getattr(llm, "capabilities", None)
    return declared if isinstance(declared, Capabilities) else FIRST_PARTY
