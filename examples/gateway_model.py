"""A model provider of your own, chosen by dotted path: ``BATON_LLM=examples.gateway_model:make``.

This one reaches a company's model gateway that speaks OpenAI-compatible chat completions but
wants its own tenant header and does not enforce a JSON schema: it declares that, so baton puts
the answer's schema into the prompt and reads the JSON out of whatever text comes back.
Everything else (retries, time budgets, the usage ledger, re-asks) is baton's.
"""

from __future__ import annotations

import os
from typing import Any

from baton_kafka.agents.models import Capabilities, Limits, ModelOptions
from baton_kafka.agents.models.openai_compat import OpenAICompatibleLLM


class GatewayLLM(OpenAICompatibleLLM):
    """The gateway: chat completions with a tenant header, no structured output."""

    name = "gateway"
    provider = "company.gateway"
    capabilities = Capabilities(
        structured_output=False, caching=False, batches=False, token_counting=False
    )

    def __init__(self, *, tenant: str, **options: Any) -> None:
        self.tenant = tenant
        super().__init__(**options)

    def _make_client(self, **options: Any) -> Any:
        client = super()._make_client(**options)
        client.headers["x-tenant"] = self.tenant
        return client


def make(options: ModelOptions) -> GatewayLLM:
    """The factory baton calls with the run's model options (endpoint, key, limits, prices)."""
    tenant = os.environ.get("GATEWAY_TENANT", "support")
    return GatewayLLM(tenant=tenant, **options.client_options())


# The gateway answers within two minutes, sixteen calls at a time: what a worker waits for
# unless BATON_MODEL_TIMEOUT, BATON_TICKET_MODEL_BUDGET or BATON_MODEL_CONCURRENCY says otherwise.
make.limits = Limits(timeout_s=120.0, ticket_budget_s=600.0, concurrency=16)  # type: ignore[attr-defined]
