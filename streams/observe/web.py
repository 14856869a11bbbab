"""The worker's HTTP views: /metrics, /health, /dashboard and its desk (and the actions' webhook,
routed with the executor); nothing else on the port."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web as aioweb
from prometheus_client.exposition import choose_encoder

from baton_kafka.streams.observe import desk
from baton_kafka.streams.observe.dashboard import Recent, summary
from baton_kafka.streams.observe.guard import (
    ACTION_WEBHOOK_PATH,
    AUTHORIZED,
    DESK,
    LOGIN_PATH,
    LOGOUT_PATH,
    SCOPE,
    guard,
    login,
    logout,
    tokens,
)
from baton_kafka.streams.observe.handoff_queue import HandoffQueue
from baton_kafka.streams.observe.metrics import PrometheusObserver
from baton_kafka.streams.settings import Settings

ASSETS = Path(__file__).with_name("static")
PATHS = (
    "/metrics",
    "/health",
    "/dashboard",
    "/dashboard/data.json",
    LOGIN_PATH,
    LOGOUT_PATH,
    ACTION_WEBHOOK_PATH,
    *desk.PATHS,
)
# Faust's built-in views: tables read key by key (a whole baton, ticket text included), the
# cluster's routing, sensor statistics, the service graph. baton serves none of them.
FAUST_VIEWS_OFF = {
    "web_tables_enabled": False,
    "web_router_enabled": False,
    "web_stats_enabled": False,
    "web_graph_enabled": False,
    "web_metrics_enabled": False,
}
_INLINE = re.compile(r"<(script|style)>(.*?)</\1>", re.DOTALL)


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
    # The desk's script after the figures' (it uses their helpers): one script, one hash.
    js = "".join(
        (ASSETS / name).read_text(encoding="utf-8") for name in ("dashboard.js", "desk.js")
    )
    return html.replace("/*{{css}}*/", css).replace("/*{{js}}*/", js)


def page_policy(page: str) -> str:
    """A Content-Security-Policy allowing ``page``'s own inline script and style, by hash, and
    requests to its own origin; nothing else (no other script, no framing, no forms)."""
    hashes: dict[str, list[str]] = {"script": [], "style": []}
    for tag, body in _INLINE.findall(page):
        digest = base64.b64encode(hashlib.sha256(body.encode("utf-8")).digest()).decode()
        hashes[tag].append(f"'sha256-{digest}'")
    scripts = " ".join(hashes["script"]) or "'none'"
    styles = " ".join(hashes["style"]) or "'none'"
    return (
        f"default-src 'none'; script-src {scripts}; style-src {styles}; connect-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )


def _json(data: Mapping[str, Any], status: int = 200) -> Any:
    return aioweb.Response(
        body=orjson.dumps(data),
        status=status,
        content_type="application/json",
        headers={"Cache-Control": "no-store"},
    )


def register(app: Any, settings: Settings, metrics: PrometheusObserver, recent: Recent) -> None:
    """Add the views, and the checks of ``streams.observe.guard``, to the Faust app's web port.

    The app must be built with ``FAUST_VIEWS_OFF``; any view of Faust's still routed answers
    404 all the same.
    """
    guard(app.web.web_app, settings, PATHS, desk.PATHS)
    scoped = tokens(settings)
    page = dashboard_page()
    page_headers = {"Cache-Control": "no-store", "Content-Security-Policy": page_policy(page)}

    async def metrics_view(view: Any, request: Any) -> Any:
        # The Prometheus client's own negotiation: OpenMetrics (with the latency histograms'
        # trace exemplars) when the scraper asks for it, the 0.0.4 text format otherwise.
        encode, content_type = choose_encoder(request.headers.get("Accept", ""))
        return aioweb.Response(
            body=encode(metrics.registry), headers={"Content-Type": content_type}
        )

    async def health_view(view: Any, request: Any) -> Any:
        try:
            ready, reason = readiness(app)
        except Exception as exc:
            ready, reason = False, f"starting ({type(exc).__name__})"
        if ready:
            return _json({"status": "ready"})
        if not request.get(AUTHORIZED, True):
            return _json({"status": "not_ready"}, status=503)
        return _json({"status": "not_ready", "reason": reason}, status=503)

    async def dashboard_view(view: Any, request: Any) -> Any:
        return aioweb.Response(text=page, content_type="text/html", headers=page_headers)

    async def dashboard_data_view(view: Any, request: Any) -> Any:
        try:
            ready, reason = readiness(app)
        except Exception as exc:
            ready, reason = False, f"starting ({type(exc).__name__})"
        # Ids name sessions (a guest's session id is all it takes to use it): the desk's only.
        data = summary(metrics.values(), recent, ids=request.get(SCOPE) == DESK)
        data["health"] = {"ready": ready, "reason": reason}
        data["worker"] = {"app_id": settings.app_id, "llm": settings.llm}
        data["generated_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        return _json(data)

    async def login_view(view: Any, request: Any) -> Any:
        if not scoped:
            return _json({"error": "no token is configured: nothing to sign in to"}, status=404)
        return await login(request, scoped)

    async def logout_view(view: Any, request: Any) -> Any:
        return await logout(request)

    app.page("/metrics")(metrics_view)
    app.page("/health")(health_view)
    app.page("/dashboard")(dashboard_view)
    app.page("/dashboard/data.json")(dashboard_data_view)
    from faust.web import View

    for path, view in ((LOGIN_PATH, login_view), (LOGOUT_PATH, logout_view)):
        app.page(path)(type(path, (View,), {"post": view}))

    the_desk = desk.Desk(settings, HandoffQueue(settings))
    for method, path, handler in desk.routes(the_desk):
        # A view answers its one method; any other gets Faust's 405.
        app.page(path)(type(path, (View,), {method.lower(): _bound(handler)}))


def _bound(handler: Any) -> Any:
    async def view(view: Any, request: Any) -> Any:
        return await handler(request)

    return view
