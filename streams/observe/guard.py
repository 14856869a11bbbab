"""Who may use the web port and what every answer carries: bind, Host, token, paths, headers."""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable, Collection
from typing import Any

from aiohttp import web as aioweb

from baton_kafka.streams.settings import Settings

Handler = Callable[[Any], Awaitable[Any]]

LOOPBACK_NAMES = frozenset({"localhost", "ip6-localhost"})
SECURITY_HEADERS = {
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
# For answers that are data, not pages: nothing may load, nothing may frame them.
DATA_POLICY = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"


class UnsafeBind(ValueError):
    """The web port would listen beyond loopback without a token: the worker does not start."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) only accepts local connections."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(settings: Settings) -> None:
    """Raise ``UnsafeBind`` when the port binds beyond loopback and no token is configured."""
    if not is_loopback(settings.web_bind) and not settings.web_token:
        raise UnsafeBind(
            f"refusing to serve the web port on {settings.web_bind} without a token: "
            "set BATON_WEB_TOKEN or bind to 127.0.0.1 (BATON_WEB_BIND)"
        )


def host_name(header: str | None) -> str | None:
    """The host of a ``Host`` header (``name``, ``name:port``, ``[v6]:port``); None if malformed."""
    if not header:
        return None
    if header.startswith("["):
        name, bracket, port = header[1:].partition("]")
        if not bracket or (port and not (port[:1] == ":" and port[1:].isdigit())):
            return None
        return name
    name, colon, port = header.partition(":")
    if colon and not port.isdigit():
        return None
    return name or None


def host_check() -> Callable[..., Awaitable[Any]]:
    """aiohttp middleware: 421 unless the ``Host`` header names this machine's loopback.

    A page on another site can point its own name at 127.0.0.1 (DNS rebinding) and read a
    loopback port without a token; its requests still carry that name in ``Host``.
    """

    @aioweb.middleware
    async def middleware(request: Any, handler: Handler) -> Any:
        name = host_name(request.headers.get("Host"))
        if name is not None and is_loopback(name):
            return await handler(request)
        return aioweb.json_response({"error": "unexpected Host header"}, status=421)

    return middleware


def _same(given: str, token: str) -> bool:
    # As bytes: compare_digest refuses str with non-ASCII characters (a 500, not a 401).
    return hmac.compare_digest(
        given.encode("utf-8", "surrogateescape"), token.encode("utf-8", "surrogateescape")
    )


def authorized(request: Any, token: str) -> bool:
    """A matching ``Authorization: Bearer`` header, or ``?token=`` on the dashboard page."""
    header = request.headers.get("Authorization", "")
    scheme, _, given = header.partition(" ")
    if scheme.lower() == "bearer" and _same(given.strip(), token):
        return True
    query = request.query.get("token")
    return request.path == "/dashboard" and query is not None and _same(query, token)


# Answered without the token too, but without details: a liveness probe carries no secret.
OPEN_PATHS = frozenset({"/health"})
# Set on every request: whether it may see details (no token configured, or the right one).
AUTHORIZED = aioweb.RequestKey("baton.authorized", bool)


def bearer_auth(token: str) -> Callable[..., Awaitable[Any]]:
    """aiohttp middleware: 401 for every request without the token, but ``OPEN_PATHS``."""

    @aioweb.middleware
    async def middleware(request: Any, handler: Handler) -> Any:
        if authorized(request, token):
            request[AUTHORIZED] = True
            return await handler(request)
        if request.path in OPEN_PATHS:
            request[AUTHORIZED] = False
            return await handler(request)
        return aioweb.json_response(
            {"error": "unauthorized"},
            status=401,
            headers={"WWW-Authenticate": 'Bearer realm="baton"'},
        )

    return middleware


def only(paths: Collection[str]) -> Callable[..., Awaitable[Any]]:
    """aiohttp middleware: 404 for every path but ``paths``, whatever else is routed."""

    @aioweb.middleware
    async def middleware(request: Any, handler: Handler) -> Any:
        if request.path in paths:
            return await handler(request)
        return aioweb.json_response({"error": "not found"}, status=404)

    return middleware


async def security_headers(request: Any, response: Any) -> None:
    """``on_response_prepare`` signal: the security headers on every answer, errors too."""
    response.headers.update(SECURITY_HEADERS)
    response.headers.setdefault("Content-Security-Policy", DATA_POLICY)


def guard(web_app: Any, settings: Settings, paths: Collection[str]) -> None:
    """Install the checks on an aiohttp application, outermost first: Host, token, paths."""
    check_bind(settings)
    if is_loopback(settings.web_bind):
        web_app.middlewares.append(host_check())
    if settings.web_token:
        web_app.middlewares.append(bearer_auth(settings.web_token))
    web_app.middlewares.append(only(frozenset(paths)))
    web_app.on_response_prepare.append(security_headers)
