"""The web port's rules: loopback unless a token is set, the token check, readiness."""

from __future__ import annotations

from collections import Counter

import pytest
from aiohttp import ClientSession, web
from aiohttp.test_utils import TestServer
from faust.types import TP

from streams.observe.web import (
    UnsafeBind,
    bearer_auth,
    check_bind,
    dashboard_page,
    is_loopback,
    readiness,
)
from streams.settings import Settings
from tests.fixtures.faust_app import FakeApp, FakeEvent, FakeRecovery, FakeTables

TOKEN = "a-long-enough-token-0123"


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.53", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.1.2.3", False),
        ("worker-1.internal", False),
    ],
)
def test_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_binding_beyond_loopback_needs_a_token() -> None:
    check_bind(Settings(web_bind="127.0.0.1"))
    check_bind(Settings(web_bind="0.0.0.0", web_token=TOKEN))
    with pytest.raises(UnsafeBind, match="BATON_WEB_TOKEN"):
        check_bind(Settings(web_bind="0.0.0.0"))
    with pytest.raises(UnsafeBind):
        check_bind(Settings(web_bind="192.168.1.5", web_token=""))


async def test_every_path_needs_the_token() -> None:
    async def ok(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application(middlewares=[bearer_auth(TOKEN)])
    for path in ("/metrics", "/dashboard", "/dashboard/data.json", "/router/"):
        app.router.add_get(path, ok)
    async with TestServer(app) as server, ClientSession() as http:

        async def status(path: str, **headers: str) -> int:
            async with http.get(server.make_url(path), headers=headers) as r:
                return r.status

        good = {"Authorization": f"Bearer {TOKEN}"}
        assert await status("/metrics") == 401
        assert await status("/metrics", Authorization="Bearer wrong-token") == 401
        assert await status("/metrics", Authorization=TOKEN) == 401
        assert await status("/metrics", **good) == 200
        assert await status("/router/") == 401
        assert await status("/router/", **good) == 200
        # ?token= opens the dashboard page only; its script sends the header for the data.
        assert await status(f"/dashboard?token={TOKEN}") == 200
        assert await status("/dashboard?token=nope") == 401
        assert await status(f"/dashboard/data.json?token={TOKEN}") == 401
        assert await status("/dashboard/data.json", **good) == 200
        async with http.get(server.make_url("/metrics")) as r:
            assert r.headers["WWW-Authenticate"].startswith("Bearer")


def fake_app(completed: bool, rebalancing: bool = False, in_recovery: bool = False) -> FakeApp:
    """An app with seven changelog records left to recover, over two partitions."""
    recovery = FakeRecovery(
        completed=FakeEvent(completed),
        in_recovery=in_recovery,
        active=Counter({TP("c", 0): 3, TP("c", 1): 4}),
    )
    return FakeApp(FakeTables(recovery), rebalancing=rebalancing)


def test_readiness() -> None:
    assert readiness(fake_app(False)) == (
        False,
        "waiting for partition assignment and table recovery",
    )
    assert readiness(fake_app(True, rebalancing=True)) == (False, "rebalancing")
    assert readiness(fake_app(True, in_recovery=True)) == (
        False,
        "recovering tables (7 changelog records left)",
    )
    assert readiness(fake_app(True)) == (True, "ready")


def test_dashboard_is_one_self_contained_page() -> None:
    page = dashboard_page()
    assert "{{" not in page
    assert "function render(" in page and "--accent" in page
    # No CDN: nothing is loaded from another origin.
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in page
