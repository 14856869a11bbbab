"""OAUTHBEARER settings and token providers: one source of token, checked at start; a fixed
token, a client-credentials flow (against a local token endpoint) and a provider of one's own."""

from __future__ import annotations

import asyncio
import socket

import pytest
from aiokafka.abc import AbstractTokenProvider
from faust.auth import OAuthCredentials

from baton_kafka.streams.kafka.connect import security_options
from baton_kafka.streams.kafka.faust_auth import broker_credentials
from baton_kafka.streams.kafka.oauth import (
    ClientCredentials,
    Dotted,
    StaticToken,
    TokenUnavailable,
    token_provider,
)
from baton_kafka.streams.settings import SettingsError, load
from tests.fixtures.oauth_kafka import CLIENT_ID, CLIENT_SECRET, token_endpoint

OAUTH = {"BATON_KAFKA_SECURITY_PROTOCOL": "SASL_SSL", "BATON_KAFKA_SASL_MECHANISM": "OAUTHBEARER"}


def msk_style() -> tuple[str, int]:
    """What AWS's MSK IAM signer's ``generate_auth_token`` returns: a token and its expiry."""
    return "signed-token", 1_900_000_000_000


async def async_token() -> str:
    return "async-token"


class OwnProvider(AbstractTokenProvider):
    async def token(self) -> str:
        return "own-token"

    def extensions(self) -> dict[str, str]:
        return {"logicalCluster": "lkc-1"}


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "needs exactly one of BATON_KAFKA_OAUTH_TOKEN"),
        (
            {"BATON_KAFKA_OAUTH_TOKEN": "t", "BATON_KAFKA_OAUTH_PROVIDER": "m:f"},
            "got BATON_KAFKA_OAUTH_TOKEN, BATON_KAFKA_OAUTH_PROVIDER",
        ),
        ({"BATON_KAFKA_OAUTH_TOKEN_URL": "https://idp/token"}, "needs BATON_KAFKA_OAUTH_CLIENT_ID"),
        ({"BATON_KAFKA_OAUTH_TOKEN_URL": "idp/token"}, "must be an http(s):// URL"),
        (
            {"BATON_KAFKA_OAUTH_TOKEN": "t", "BATON_KAFKA_OAUTH_CLIENT_ID": "c"},
            "belong to BATON_KAFKA_OAUTH_TOKEN_URL",
        ),
        (
            {"BATON_KAFKA_OAUTH_TOKEN": "t", "BATON_KAFKA_USERNAME": "u"},
            "logs in with a token, not BATON_KAFKA_USERNAME",
        ),
        ({"BATON_KAFKA_OAUTH_PROVIDER": "no-colon"}, "must be module.path:callable"),
        ({"BATON_KAFKA_OAUTH_TOKEN": "t", "BATON_KAFKA_OAUTH_EXTENSIONS": "x"}, "key=value"),
    ],
)
def test_an_oauthbearer_login_needs_exactly_one_source_of_token(
    env: dict[str, str], message: str
) -> None:
    with pytest.raises(SettingsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load({**OAUTH, **env})


def test_oauth_settings_without_oauthbearer_are_refused() -> None:
    with pytest.raises(SettingsError, match="need BATON_KAFKA_SASL_MECHANISM=OAUTHBEARER"):
        load({"BATON_KAFKA_OAUTH_TOKEN": "t"})


def test_the_token_and_client_secret_are_never_shown_and_survive_the_round_trip() -> None:
    s = load(
        {
            **OAUTH,
            "BATON_KAFKA_OAUTH_TOKEN_URL": "https://idp.example/token",
            "BATON_KAFKA_OAUTH_CLIENT_ID": "svc",
            "BATON_KAFKA_OAUTH_CLIENT_SECRET": "client-secret-81f2",
            "BATON_KAFKA_OAUTH_SCOPE": "kafka",
            "BATON_KAFKA_OAUTH_EXTENSIONS": "logicalCluster=lkc-1,identityPoolId=pool-2",
        }
    )
    assert "client-secret-81f2" not in repr(s)
    assert load(s.to_env()) == s
    assert s.kafka.oauth_extensions == (("logicalCluster", "lkc-1"), ("identityPoolId", "pool-2"))
    fixed = load({**OAUTH, "BATON_KAFKA_OAUTH_TOKEN": "eyJ-secret-token"})
    assert "eyJ-secret-token" not in repr(fixed)


def test_every_client_and_faust_log_in_with_the_provider_not_a_password() -> None:
    s = load({**OAUTH, "BATON_KAFKA_OAUTH_TOKEN": "tok"})
    options = security_options(s.kafka)
    assert options["sasl_mechanism"] == "OAUTHBEARER"
    assert options["sasl_oauth_token_provider"] is token_provider(s.kafka)
    assert "sasl_plain_password" not in options
    credentials = broker_credentials(s)
    assert isinstance(credentials, OAuthCredentials)
    assert credentials.oauth_cb is token_provider(s.kafka)


async def test_a_fixed_token_is_sent_with_its_extensions() -> None:
    provider = StaticToken("tok", (("logicalCluster", "lkc-1"),))
    assert await provider.token() == "tok"
    assert provider.extensions() == {"logicalCluster": "lkc-1"}


@pytest.mark.parametrize(
    ("path", "token"),
    [
        ("tests.unit.streams.kafka.test_oauth:msk_style", "signed-token"),
        ("tests.unit.streams.kafka.test_oauth:async_token", "async-token"),
        ("tests.unit.streams.kafka.test_oauth:OwnProvider", "own-token"),
    ],
)
async def test_a_provider_of_one_s_own_by_dotted_path(path: str, token: str) -> None:
    provider = Dotted(path)
    assert await provider.token() == token


def test_a_dotted_path_that_does_not_import_is_one_line() -> None:
    with pytest.raises(SettingsError, match="cannot import no_such_module_x"):
        Dotted("no_such_module_x:f")
    with pytest.raises(SettingsError, match="has no nothing_here"):
        Dotted("tests.unit.streams.kafka.test_oauth:nothing_here")


async def test_client_credentials_asks_once_and_keeps_the_token() -> None:
    with token_endpoint() as endpoint:
        provider = ClientCredentials(endpoint.url, CLIENT_ID, CLIENT_SECRET, "kafka")
        first = await provider.token()
        assert await provider.token() == first
        assert endpoint.requests == [
            {"grant_type": "client_credentials", "scope": "kafka", "authenticated": True}
        ]
        refused = ClientCredentials(endpoint.url, CLIENT_ID, "wrong")
        with pytest.raises(TokenUnavailable, match="answered 401"):
            await refused.token()


async def test_client_credentials_asks_again_once_the_token_nears_its_expiry() -> None:
    with token_endpoint() as endpoint:
        # Shorter than REFRESH_EARLY_S: kept for half its lifetime.
        endpoint.lifetime_s = 1
        provider = ClientCredentials(endpoint.url, CLIENT_ID, CLIENT_SECRET)
        await provider.token()
        await provider.token()
        assert len(endpoint.requests) == 1
        await asyncio.sleep(0.6)
        await provider.token()
        assert len(endpoint.requests) == 2


async def test_concurrent_logins_share_one_token_request() -> None:
    with token_endpoint() as endpoint:
        provider = ClientCredentials(endpoint.url, CLIENT_ID, CLIENT_SECRET)
        tokens = await asyncio.gather(*(provider.token() for _ in range(5)))
        assert len(set(tokens)) == 1 and len(endpoint.requests) == 1


def test_a_client_credentials_provider_outlives_its_event_loop() -> None:
    with token_endpoint() as endpoint:
        provider = ClientCredentials(endpoint.url, CLIENT_ID, CLIENT_SECRET)
        first = asyncio.run(provider.token())
        assert asyncio.run(provider.token()) == first and len(endpoint.requests) == 1


async def test_an_id_and_secret_with_reserved_characters_are_form_encoded() -> None:
    with token_endpoint() as endpoint:
        endpoint.client = ("svc:kafka/1", "p@ss:w%rd+ é")
        provider = ClientCredentials(endpoint.url, *endpoint.client)
        assert await provider.token()
        assert endpoint.requests[0]["authenticated"] is True


async def test_a_refused_client_is_one_line_without_the_secret() -> None:
    with token_endpoint() as endpoint:
        refused = ClientCredentials(endpoint.url, CLIENT_ID, "wrong-secret-5b0e")
        with pytest.raises(TokenUnavailable) as caught:
            await refused.token()
    message = str(caught.value)
    assert message == (
        f"the token endpoint {endpoint.url} answered 401: check BATON_KAFKA_OAUTH_CLIENT_ID "
        "and BATON_KAFKA_OAUTH_CLIENT_SECRET"
    )


async def test_an_unreachable_token_url_is_one_line_with_its_password_masked() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://svc:url-pw-3e1@127.0.0.1:{port}/oauth2/token"
    provider = ClientCredentials(url, CLIENT_ID, CLIENT_SECRET, timeout_s=2)
    with pytest.raises(TokenUnavailable) as caught:
        await provider.token()
    message = str(caught.value)
    assert message.startswith(f"no token from http://svc:***@127.0.0.1:{port}/oauth2/token: ")
    assert len(message.splitlines()) == 1
    assert "url-pw-3e1" not in message and CLIENT_SECRET not in message
