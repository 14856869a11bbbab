"""Claude on Amazon Bedrock and Google Vertex AI, through the SDK's own clients.

Both clients speak the Messages API with the model in the URL and ``anthropic_version`` in the
body; everything else (structured output, retries, pacing, the ledger) is ``AnthropicLLM``'s.
Neither serves the Message Batches API, and Bedrock has no token counting (see
``agents.models.capabilities``); neither sends ``anthropic-ratelimit-*`` headers, so the
rate-limit pacer never holds a call and only the adaptive limit reacts to 429s.

Credentials are the SDK's: Bedrock signs with the AWS credential chain (needs ``boto3``) unless
an API key (bearer token) is given; Vertex AI uses Google's default credentials (needs
``google-auth``) unless an access token is given.
"""

from __future__ import annotations

import os
from typing import Any

import anthropic

from baton_kafka.agents.models.capabilities import BEDROCK, VERTEX, Capabilities
from baton_kafka.agents.models.claude import AnthropicLLM


class BedrockLLM(AnthropicLLM):
    """Claude on Amazon Bedrock: ``AsyncAnthropicBedrock`` in ``region``."""

    name = "bedrock"
    provider = "aws.bedrock"
    capabilities: Capabilities = BEDROCK
    typed_requests = True

    def __init__(self, *, region: str | None = None, **options: Any) -> None:
        self.region = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        super().__init__(**options)

    def _make_client(self, **options: Any) -> anthropic.AsyncAnthropic:
        api_key = options.pop("api_key", None) or os.environ.get("AWS_BEARER_TOKEN_BEDROCK")
        client = anthropic.AsyncAnthropicBedrock(api_key=api_key, aws_region=self.region, **options)
        return client  # type: ignore[return-value]


class VertexLLM(AnthropicLLM):
    """Claude on Google Vertex AI: ``AsyncAnthropicVertex`` in ``region`` of ``project``."""

    name = "vertex"
    provider = "gcp.vertex_ai"
    capabilities: Capabilities = VERTEX
    typed_requests = True

    def __init__(
        self, *, region: str | None = None, project: str | None = None, **options: Any
    ) -> None:
        self.region = region or os.environ.get("CLOUD_ML_REGION")
        self.project = project or os.environ.get("ANTHROPIC_VERTEX_PROJECT_ID")
        if options.get("api_key") and not self.project:
            # Google's default credentials may name a project; an access token does not.
            raise ValueError("Vertex AI with an access token needs ANTHROPIC_VERTEX_PROJECT_ID")
        super().__init__(**options)

    def _make_client(self, **options: Any) -> anthropic.AsyncAnthropic:
        access_token = options.pop("api_key", None)
        kwargs: dict[str, Any] = {}
        if self.region:
            kwargs["region"] = self.region
        if self.project:
            kwargs["project_id"] = self.project
        client = anthropic.AsyncAnthropicVertex(access_token=access_token, **kwargs, **options)
        return client  # type: ignore[return-value]
