"""Who may use the web port and what every answer carries: bind, Host, token, paths, headers."""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable, Collection, Mapping
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
    """Raise ``UnsafeBind`` when the port binds beyond loopback and no token is configured, or
    when the desk's token is the metrics token (one secret would hold both scopes)."""
    if not is_loopback(settings.web_bind) and not settings.web_token:
        raise UnsafeBind(
            f"refusing to serve the web port on {settings.web_bind} without a token: "
            "set BATON_WEB_TOKEN or bind to 127.0.0.1 (BATON_WEB_BIND)"
        )
    if (
        settings.desk_token
        and settings.web_token
        and _same(settings.desk_token, settings.web_token)
    ):
        raise UnsafeBind(
            "BATON_DESK_TOKEN is BATON_WEB_TOKEN: whoever scrapes metrics could decide; "
            "give the desk a token of its own"
        )


# What a token lets a request do: read the port (metrics, figures) or also decide at the desk.
METRICS, DESK = "metrics", "desk"
SESSION_COOKIE = "baton-session"
# A browser keeps the session cookie for at most this long, then signs in again.
SESSION_MAX_AGE_S = 12 * 3600


def tokens(settings: Settings) -> dict[str, str]:
    """The configured tokens by scope (none: the port is loopback-only and open)."""
    found = {METRICS: settings.web_token, DESK: settings.desk_token}
    return {scope: token for scope, token in found.items() if token}


def session_value(scope: str, token: str) -> str:
    """The dashboard's session cookie for ``token``: derived from it, never the token itself."""
    mac = hmac.new(token.encode("utf-8", "surrogateescape"), b"baton dashboard session", "sha256")
    return f"{scope}.{mac.hexdigest()}"


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


def bearer_scope(request: Any, tokens: Mapping[str, str]) -> str | None:
    """The scope of the ``Authorization: Bearer`` header's token, if it is one of ``tokens``."""
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer":
        return None
    return next((s for s, token in tokens.items() if _same(given.strip(), token)), None)


def scope_of(request: Any, tokens: Mapping[str, str]) -> str | None:
    """What the request may do: the scope of its bearer token or of its session cookie (a
    token in a URL counts for nothing: URLs end up in logs, histories and referrers)."""
    scope = bearer_scope(request, tokens)
    if scope is not None:
        return scope
    cookie = request.cookies.get(SESSION_COOKIE, "")
    return next((s for s, t in tokens.items() if _same(cookie, session_value(s, t))), None)


# Answered without a token too: a liveness probe (status only), the dashboard's page (no data;
# its script signs in) and the sign-in itself, which checks the token it is given.
LOGIN_PATH = "/dashboard/login"
LOGOUT_PATH = "/dashboard/logout"
# The shop's system reports actions here; each request is signed with a secret of its own.
ACTION_WEBHOOK_PATH = "/actions/webhook"
OPEN_PATHS = frozenset({"/health", "/dashboard", LOGIN_PATH, LOGOUT_PATH, ACTION_WEBHOOK_PATH})
# Set on every request: whether it may see details (no token configured, or a right one), and
# with which scope (None when no token is configured).
AUTHORIZED = aioweb.RequestKey("baton.authorized", bool)
SCOPE = aioweb.RequestKey("baton.scope", str)


def bearer_auth(
    tokens: Mapping[str, str], desk_paths: Collection[str] = ()
) -> Callable[..., Awaitable[Any]]:
    """aiohttp middleware: 401 for every request without a token but ``OPEN_PATHS``; 403 for
    ``desk_paths`` without the desk's token (a metrics token never decides)."""

    @aioweb.middleware
    async def middleware(request: Any, handler: Handler) -> Any:
        scope = scope_of(request, tokens)
        request[AUTHORIZED] = scope is not None
        request[SCOPE] = scope or ""
        if request.path in desk_paths and scope is not None and scope != DESK:
            return aioweb.json_response(
                {"error": "this token may read, not decide: the desk needs BATON_DESK_TOKEN"},
                status=403,
            )
        if scope is not None or request.path in OPEN_PATHS:
            return await handler(request)
        return aioweb.json_response(
            {"error": "unauthorized"},
            status=401,
            headers={"WWW-Authenticate": 'Bearer realm="baton"'},
        )

    return middleware


async def login(request: Any, tokens: Mapping[str, str]) -> aioweb.Response:
    """POST with ``Authorization: Bearer <token>``: the session cookie of the token's scope
    (HttpOnly, SameSite=Strict: the page's script never holds it, no other site sends it)."""
    scope = bearer_scope(request, tokens)
    if scope is None:
        return aioweb.json_response({"error": "unauthorized"}, status=401)
    response = aioweb.json_response({"scope": scope}, headers={"Cache-Control": "no-store"})
    response.set_cookie(
        SESSION_COOKIE,
        session_value(scope, tokens[scope]),
        path="/",
        max_age=SESSION_MAX_AGE_S,
        httponly=True,
        samesite="Strict",
        secure=request.secure,
    )
    return response


async def logout(request: Any) -> aioweb.Response:
    """POST: the session cookie dropped."""
    response = aioweb.json_response({}, headers={"Cache-Control": "no-store"})
    response.del_cookie(SESSION_COOKIE, path="/")
    return response


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


def guard(
    web_app: Any, settings: Settings, paths: Collection[str], desk_paths: Collection[str] = ()
) -> None:
    """Install the checks on an aiohttp application, outermost first: Host, token and its
    scope (``desk_paths`` need the desk's), paths."""
    check_bind(settings)
    if is_loopback(settings.web_bind):
        web_app.middlewares.append(host_check())
    if found := tokens(settings):
        web_app.middlewares.append(bearer_auth(found, frozenset(desk_paths)))
    web_app.middlewares.append(only(frozenset(paths)))
    web_app.on_response_prepare.append(security_headers)
