"""OAUTHBEARER tokens for every Kafka client baton makes: a fixed token, an OIDC
client-credentials flow, or a ``module:callable`` of one's own (a cloud signer, say).

A provider is built once per process and per settings; the client asks it for a token at each
login, and the client-credentials provider keeps a token until shortly before it expires.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import inspect
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx2
from aiokafka.abc import AbstractTokenProvider
from authlib.integrations.httpx_client import OAuth2Client, OAuthError

from baton_kafka.agents.dsn import mask_dsn
from baton_kafka.streams.settings import KafkaSecurity, SettingsError

# A token is fetched again this long before the expiry its endpoint gave.
REFRESH_EARLY_S = 60.0


class TokenUnavailable(RuntimeError):
    """The token endpoint or provider gave no token."""


class _Provider(AbstractTokenProvider):
    def __init__(self, extensions: tuple[tuple[str, str], ...]) -> None:
        self._extensions = dict(extensions)

    def extensions(self) -> dict[str, str]:
        return dict(self._extensions)


class StaticToken(_Provider):
    """The token given in ``BATON_KAFKA_OAUTH_TOKEN``, at every login."""

    def __init__(self, token: str, extensions: tuple[tuple[str, str], ...] = ()) -> None:
        super().__init__(extensions)
        self._token = token

    async def token(self) -> str:
        return self._token


class ClientCredentials(_Provider):
    """OAuth 2.0 client credentials (RFC 6749 4.4) at ``url``, the client authenticated with
    HTTP basic auth; the access token is kept until ``REFRESH_EARLY_S`` before it expires."""

    def __init__(
        self,
        url: str,
        client_id: str,
        client_secret: str,
        scope: str = "",
        extensions: tuple[tuple[str, str], ...] = (),
        timeout_s: float = 10.0,
    ) -> None:
        super().__init__(extensions)
        self.url = url
        self.scope = scope
        self.timeout_s = timeout_s
        # RFC 6749 2.3.1 form-encodes both before basic auth; authlib sends them as given.
        self._client = (quote(client_id), quote(client_secret))
        self._cached: tuple[str, float] | None = None
        # A thread lock and a client per request: the provider outlives event loops (each
        # command runs its own).
        self._lock = threading.Lock()

    async def token(self) -> str:
        return await asyncio.to_thread(self._current)

    def _current(self) -> str:
        with self._lock:
            if self._cached is None or time.monotonic() >= self._cached[1]:
                self._cached = self._fetch()
            return self._cached[0]

    def _fetch(self) -> tuple[str, float]:
        where = mask_dsn(self.url)

        def refused(response: httpx2.Response) -> httpx2.Response:
            if not response.is_success:
                raise TokenUnavailable(
                    f"the token endpoint {where} answered {response.status_code}: check "
                    "BATON_KAFKA_OAUTH_CLIENT_ID and BATON_KAFKA_OAUTH_CLIENT_SECRET"
                )
            return response

        client_id, secret = self._client
        options = {"scope": self.scope or None, "timeout": self.timeout_s}
        try:
            with OAuth2Client(client_id, secret, **options) as client:
                client.register_compliance_hook("access_token_response", refused)
                answer = client.fetch_token(self.url, grant_type="client_credentials")
            lifetime = float(answer.get("expires_in") or 300)
        except OAuthError as exc:
            raise TokenUnavailable(f"the token endpoint {where} answered {exc.error}") from None
        except (httpx2.HTTPError, OSError, ValueError, TypeError) as exc:
            # One line, and a password in a URL the client quotes stays masked.
            reason = mask_dsn(" ".join(str(exc).split()) or type(exc).__name__)
            raise TokenUnavailable(f"no token from {where}: {reason}") from None
        token = answer.get("access_token")
        if not isinstance(token, str) or not token:
            raise TokenUnavailable(f"the token endpoint {where} answered without access_token")
        return token, time.monotonic() + max(lifetime - REFRESH_EARLY_S, lifetime / 2)


class Dotted(_Provider):
    """A token from ``module:callable``: a token provider (an instance, or a class taking no
    arguments), or a function taking no arguments and returning the token, or ``(token,
    expiry)`` as AWS's MSK IAM signer does; sync functions run in a thread."""

    def __init__(self, path: str, extensions: tuple[tuple[str, str], ...] = ()) -> None:
        super().__init__(extensions)
        self.path = path
        target = _load(path)
        if inspect.isclass(target) and issubclass(target, AbstractTokenProvider):
            target = target()
        self._provider = target if isinstance(target, AbstractTokenProvider) else None
        if self._provider is None and not callable(target):
            raise SettingsError(f"BATON_KAFKA_OAUTH_PROVIDER {path} is not callable")
        self._call: Callable[[], Any] = target

    async def token(self) -> str:
        if self._provider is not None:
            return str(await self._provider.token())
        if inspect.iscoroutinefunction(self._call):
            got = await self._call()
        else:
            got = await asyncio.to_thread(self._call)
        token = got[0] if isinstance(got, tuple) else got
        if not isinstance(token, str) or not token:
            raise TokenUnavailable(f"BATON_KAFKA_OAUTH_PROVIDER {self.path} returned no token")
        return token

    def extensions(self) -> dict[str, str]:
        own = self._provider.extensions() if self._provider is not None else {}
        return {**super().extensions(), **own}


def _load(path: str) -> Any:
    module_name, _, attr = path.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise SettingsError(
            f"BATON_KAFKA_OAUTH_PROVIDER: cannot import {module_name} ({exc})"
        ) from None
    for part in attr.split("."):
        if not hasattr(target, part):
            raise SettingsError(f"BATON_KAFKA_OAUTH_PROVIDER: {module_name} has no {attr}")
        target = getattr(target, part)
    return target


@functools.cache
def token_provider(security: KafkaSecurity) -> AbstractTokenProvider:
    """The token provider of OAUTHBEARER ``security``, one per process and settings."""
    ext = security.oauth_extensions
    if security.oauth_token:
        return StaticToken(security.oauth_token, ext)
    if security.oauth_token_url:
        return ClientCredentials(
            security.oauth_token_url,
            security.oauth_client_id,
            security.oauth_client_secret,
            security.oauth_scope,
            ext,
        )
    return Dotted(security.oauth_provider, ext)
