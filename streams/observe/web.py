"""The worker's HTTP views: /metrics, /health, /dashboard; bearer-token auth off loopback."""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web as aioweb
from prometheus_client import generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4

from streams.observe.dashboard import Recent, summary
from streams.observe.metrics import PrometheusObserver
from streams.settings import Settings

ASSETS = Path(__file__).with_name("static")
LOOPBACK_NAMES = frozenset({"localhost", "ip6-localhost"})


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


def authorized(request: Any, token: str) -> bool:
    """A matching ``Authorization: Bearer`` header, or ``?token=`` on the dashboard page."""
    header = request.headers.get("Authorization", "")
    scheme, _, given = header.partition(" ")
    if scheme.lower() == "bearer" and hmac.compare_digest(given.strip(), token):
        return True
    query = request.query.get("token")
    return request.path == "/dashboard" and query is not None and hmac.compare_digest(query, token)


def bearer_auth(token: str) -> Callable[..., Awaitable[Any]]:
    """aiohttp middleware: 401 for every request without the token (Faust's own views too)."""

    @aioweb.middleware
    async def middleware(request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        if authorized(request, token):
            return await handler(request)
        return aioweb.json_response(
            {"error": "unauthorized"},
            status=401,
            headers={"WWW-Authenticate": 'Bearer realm="baton"'},
        )

    return middleware


def readiness(app: Any) -> tuple[bool, str]:
    """Ready once partitions are assigned and the tables recovered; else why not."""
    recovery = app.tables.recovery
    if not recovery.completed.is_set():
        return False, "waiting for partition assignment and table recovery"
    if app.rebalancing:
        return False, "rebalancing"
    if recovery.in_recovery:
        left = recovery.active_remaining_total()
        return False, f"recovering tables ({left} changelog records left)"
    return True, "ready"


def dashboard_page() -> str:
    """The dashboard as one HTML document, its CSS and script inlined (one request, no CDN)."""
    html = (ASSETS / "dashboard.html").read_text(encoding="utf-8")
    css = (ASSETS / "dashboard.css").read_text(encoding="utf-8")
    js = (ASSETS / "dashboard.js").read_text(encoding="utf-8")
    return html.replace("/*{{css}}*/", css).replace("/*{{js}}*/", js)


def _json(data: Mapping[str, Any], status: int = 200) -> Any:
    return aioweb.Response(
        body=orjson.dumps(data),
        status=status,
        content_type="application/json",
        headers={"Cache-Control": "no-store"},
    )


def register(app: Any, settings: Settings, metrics: PrometheusObserver, recent: Recent) -> None:
    """Add the views (and the token check when a token is set) to the Faust app's web server."""
    check_bind(settings)
    if settings.web_token:
        app.web.web_app.middlewares.append(bearer_auth(settings.web_token))
    page = dashboard_page()

    async def metrics_view(view: Any, request: Any) -> Any:
        return aioweb.Response(
            body=generate_latest(metrics.registry),
            headers={"Content-Type": CONTENT_TYPE_PLAIN_0_0_4},
        )

    async def health_view(view: Any, request: Any) -> Any:
        try:
            ready, reason = readiness(app)
        except Exception as exc:
            ready, reason = False, f"starting ({type(exc).__name__})"
        if ready:
            return _json({"status": "ready"})
        return _json({"status": "not_ready", "reason": reason}, status=503)

    async def dashboard_view(view: Any, request: Any) -> Any:
        return aioweb.Response(
            text=page, content_type="text/html", headers={"Cache-Control": "no-store"}
        )

    async def dashboard_data_view(view: Any, request: Any) -> Any:
        try:
            ready, reason = readiness(app)
        except Exception as exc:
            ready, reason = False, f"starting ({type(exc).__name__})"
        data = summary(metrics.values(), recent)
        data["health"] = {"ready": ready, "reason": reason}
        data["worker"] = {"app_id": settings.app_id, "llm": settings.llm}
        data["generated_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        return _json(data)

    app.page("/metrics")(metrics_view)
    app.page("/health")(health_view)
    app.page("/dashboard")(dashboard_view)
    app.page("/dashboard/data.json")(dashboard_data_view)
