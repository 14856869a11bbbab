"""The web port's rules: loopback unless a token is set, Host and token checks, baton's views
only, security headers, readiness."""

from __future__ import annotations

import asyncio
import base64
import hashlib
from collections import Counter
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import ClientSession, CookieJar, web
from aiohttp.test_utils import TestServer
from faust.types import TP

from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.agents.rules.offline import OfflineLLM
from baton_kafka.streams.observe.guard import (
    UnsafeBind,
    bearer_auth,
    check_bind,
    host_name,
    is_loopback,
)
from baton_kafka.streams.observe.web import dashboard_page, readiness
from baton_kafka.streams.runtime.faust_app.app import create_app
from baton_kafka.streams.settings import Settings
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


DESK_TOKEN = "another-long-token-for-the-desk-4567"


async def test_every_path_needs_a_token_and_the_desk_the_desks() -> None:
    async def ok(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    tokens = {"metrics": TOKEN, "desk": DESK_TOKEN}
    desk_paths = {"/dashboard/queue.json"}
    app = web.Application(middlewares=[bearer_auth(tokens, desk_paths)])
    for path in ("/metrics", "/dashboard", "/dashboard/data.json", "/router/", *desk_paths):
        app.router.add_get(path, ok)
    async with TestServer(app) as server, ClientSession() as http:

        async def status(path: str, **headers: str) -> int:
            async with http.get(server.make_url(path), headers=headers) as r:
                return r.status

        good = {"Authorization": f"Bearer {TOKEN}"}
        desk = {"Authorization": f"Bearer {DESK_TOKEN}"}
        assert await status("/metrics") == 401
        assert await status("/metrics", Authorization="Bearer wrong-token") == 401
        assert await status("/metrics", Authorization=TOKEN) == 401
        assert await status("/metrics", **good) == 200
        assert await status("/metrics", **desk) == 200
        assert await status("/router/") == 401
        assert await status("/router/", **good) == 200
        # The page has no data: it opens without a token and its script signs in.
        assert await status("/dashboard") == 200
        assert await status("/dashboard/data.json", **good) == 200
        # A token in a URL counts for nothing, on every path.
        assert await status(f"/dashboard/data.json?token={TOKEN}") == 401
        assert await status(f"/metrics?token={TOKEN}") == 401
        # The metrics token reads; only the desk's decides.
        assert await status("/dashboard/queue.json", **good) == 403
        assert await status("/dashboard/queue.json", **desk) == 200
        assert await status("/dashboard/queue.json") == 401
        async with http.get(server.make_url("/metrics")) as r:
            assert r.headers["WWW-Authenticate"].startswith("Bearer")


def test_the_desks_token_must_differ_from_the_metrics_token() -> None:
    check_bind(Settings(web_token=TOKEN, desk_token=DESK_TOKEN))
    with pytest.raises(UnsafeBind, match="BATON_DESK_TOKEN is BATON_WEB_TOKEN"):
        check_bind(Settings(web_token=TOKEN, desk_token=TOKEN))


async def test_the_page_signs_in_to_a_session_cookie_never_a_url(
    tmp_path: Path, store: SQLiteOrderStore
) -> None:
    async with (
        worker_port(tmp_path, store, web_token=TOKEN, desk_token=DESK_TOKEN) as (server, _),
        ClientSession() as http,
    ):
        login = server.make_url("/dashboard/login")
        async with http.post(login, headers={"Authorization": "Bearer nope"}) as r:
            assert r.status == 401 and not r.cookies
        async with http.post(login.with_query(token=TOKEN)) as r:
            assert r.status == 401
        for token, scope in ((TOKEN, "metrics"), (DESK_TOKEN, "desk")):
            # A jar that keeps cookies of an IP address, as a browser's does.
            jar_http = ClientSession(cookie_jar=CookieJar(unsafe=True))
            async with jar_http:
                async with jar_http.post(login, headers={"Authorization": f"Bearer {token}"}) as r:
                    assert r.status == 200 and (await r.json()) == {"scope": scope}
                    cookie = r.headers["Set-Cookie"]
                    # Derived from the token, never the token; not for the page's script.
                    assert token not in cookie and "HttpOnly" in cookie
                    assert "SameSite=Strict" in cookie
                url = server.make_url("/dashboard/data.json")
                async with jar_http.get(url) as r:
                    data = await r.json()
                    assert r.status == 200 and data["ids_shown"] is (scope == "desk")
                async with jar_http.get(server.make_url("/dashboard/queue.json")) as r:
                    assert (r.status == 403) is (scope == "metrics")
                async with jar_http.post(server.make_url("/dashboard/logout")) as r:
                    assert r.status == 200
                async with jar_http.get(url) as r:
                    assert r.status == 401
    # The page's scripts read no token from the URL and send none in one.
    page = dashboard_page()
    assert "location.search" not in page and "token=" not in page


async def test_health_answers_without_the_token_but_without_details(
    tmp_path: Path, store: SQLiteOrderStore
) -> None:
    async with worker_port(tmp_path, store, web_token=TOKEN) as (server, _):
        # The app is not started, so the worker is not ready: a probe sees only that.
        status, _, body = await fetch(server, "/health")
        assert status == 503 and orjson.loads(body) == {"status": "not_ready"}
        status, _, body = await fetch(server, "/health", Authorization=f"Bearer {TOKEN}")
        assert status == 503 and orjson.loads(body)["reason"]
        assert (await fetch(server, "/metrics"))[0] == 401
        assert (await fetch(server, "/dashboard/data.json"))[0] == 401


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


@asynccontextmanager
async def worker_port(
    tmp_path: Path, store: SQLiteOrderStore, **settings: Any
) -> AsyncIterator[tuple[TestServer, Any]]:
    """The web port of a worker's real Faust app (not started), served on loopback."""
    s = Settings(data_dir=tmp_path, **settings)
    runtime = create_app(s, llm=OfflineLLM(), orders=store)
    runtime.app.web.init_server()
    async with TestServer(runtime.app.web.web_app, host="127.0.0.1") as server:
        yield server, runtime.app


async def fetch(
    server: TestServer, path: str, **headers: str
) -> tuple[int, Mapping[str, str], bytes]:
    async with ClientSession() as http, http.get(server.make_url(path), headers=headers) as r:
        return r.status, r.headers, await r.read()


async def raw(server: TestServer, request: bytes) -> tuple[int, bytes]:
    """Send ``request`` as written (no Host header added, any bytes); status and body."""
    reader, writer = await asyncio.open_connection(server.host, server.port)
    writer.write(request)
    await writer.drain()
    answer = await reader.read()
    writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


FAUST_PATHS = (
    "/",
    "/table/",
    "/table/batons/",
    "/table/batons/S1/",
    "/router/",
    "/router/topics",
    "/router/batons/S1/",
    "/graph/",
    "/stats/",
    "/assignment/",
    "/performance/",
)


async def test_only_batons_views_are_served(tmp_path: Path, store: SQLiteOrderStore) -> None:
    async with worker_port(tmp_path, store) as (server, app):
        routed = {r.resource.canonical for r in app.web.web_app.router.routes() if r.resource}
        assert not {p for p in routed if p.startswith(("/table", "/router", "/graph", "/stats"))}
        for path in FAUST_PATHS:
            status, _, body = await fetch(server, path)
            assert status == 404, path
            assert b"batons" not in body and b"baton-" not in body, path
        assert (await fetch(server, "/metrics"))[0] == 200
        assert (await fetch(server, "/health"))[0] == 503  # the app is not started
        assert (await fetch(server, "/dashboard"))[0] == 200
        assert (await fetch(server, "/dashboard/data.json"))[0] == 200


async def test_metrics_of_two_apps_in_one_process_each_carry_the_process_once(
    tmp_path: Path, store: SQLiteOrderStore
) -> None:
    for _ in range(2):
        async with worker_port(tmp_path, store) as (server, _):
            status, _, body = await fetch(server, "/metrics")
            text = body.decode()
            assert status == 200
            for name in ("process_resident_memory_bytes", "process_cpu_seconds_total"):
                assert text.count(f"\n{name} ") == 1, name
            # The lag gauge is there from the start; its samples come with the first assignment.
            assert "# TYPE baton_consumer_lag gauge" in text


@pytest.mark.parametrize(
    ("host", "served"),
    [
        ("127.0.0.1:6066", True),
        ("127.0.0.1", True),
        ("localhost:6066", True),
        ("LocalHost", True),
        ("[::1]:6066", True),
        ("evil.example:6066", False),
        ("evil.example", False),
        ("127.0.0.1.evil.example:6066", False),
        ("localhost.evil.example", False),
        ("0.0.0.0:6066", False),
        ("10.0.0.5:6066", False),
        ("127.0.0.1:6066@evil.example", False),
        ("[::1", False),
        ("", False),
    ],
)
async def test_on_loopback_an_unexpected_host_gets_421_and_no_data(
    tmp_path: Path, store: SQLiteOrderStore, host: str, served: bool
) -> None:
    async with worker_port(tmp_path, store) as (server, _):
        for path in ("/metrics", "/dashboard", "/dashboard/data.json", "/health"):
            status, headers, body = await fetch(server, path, Host=host)
            if served:
                assert status in (200, 503), (host, path)
            else:
                assert status == 421, (host, path)
                assert orjson.loads(body) == {"error": "unexpected Host header"}
                assert headers["X-Frame-Options"] == "DENY"


async def test_a_request_without_host_gets_421(tmp_path: Path, store: SQLiteOrderStore) -> None:
    async with worker_port(tmp_path, store) as (server, _):
        status, body = await raw(server, b"GET /metrics HTTP/1.0\r\n\r\n")
        assert status == 421 and b"baton_" not in body
        status, body = await raw(server, b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        assert status == 200 and b"baton_records_in_total" in body


async def test_the_host_check_holds_with_a_token_on_loopback_and_is_off_beyond(
    tmp_path: Path, store: SQLiteOrderStore
) -> None:
    good = {"Authorization": f"Bearer {TOKEN}"}
    async with worker_port(tmp_path, store, web_token=TOKEN) as (server, _):
        assert (await fetch(server, "/metrics", Host="evil.example", **good))[0] == 421
        assert (await fetch(server, "/metrics", **good))[0] == 200
    # Beyond loopback the names a worker is reached by are not known; the token is required.
    async with worker_port(tmp_path, store, web_bind="0.0.0.0", web_token=TOKEN) as (server, _):
        assert (await fetch(server, "/metrics", Host="worker-1.internal:6066", **good))[0] == 200
        assert (await fetch(server, "/metrics", Host="worker-1.internal:6066"))[0] == 401
        assert (await fetch(server, "/table/", **good))[0] == 404


@pytest.mark.parametrize(
    "request_line",
    [
        "GET /metrics HTTP/1.1\r\nAuthorization: Bearer t\u00f6k\u00e9n-\u00fcber\r\n",
        "GET /metrics HTTP/1.1\r\nAuthorization: Bearer \u4ee4\u724c\r\n",
        "GET /dashboard/data.json?token=t%C3%B6k%C3%A9n HTTP/1.1\r\n",
        "GET /dashboard/data.json?token=%FF%FE HTTP/1.1\r\n",
    ],
)
async def test_a_non_ascii_token_gets_401_not_500(
    tmp_path: Path, store: SQLiteOrderStore, request_line: str
) -> None:
    async with worker_port(tmp_path, store, web_token=TOKEN) as (server, _):
        request = f"{request_line}Host: 127.0.0.1\r\nConnection: close\r\n\r\n"
        status, body = await raw(server, request.encode("utf-8"))
        assert status == 401, body
        assert orjson.loads(body) == {"error": "unauthorized"}
        # Raw bytes that are not UTF-8 at all.
        latin = b"GET /metrics HTTP/1.1\r\nAuthorization: Bearer \xff\xfe\r\nHost: 127.0.0.1\r\n"
        assert (await raw(server, latin + b"Connection: close\r\n\r\n"))[0] == 401


class Inline(HTMLParser):
    """The text of each <script> and <style> element, and every attribute of the page."""

    def __init__(self) -> None:
        super().__init__()
        self.bodies: dict[str, list[str]] = {"script": [], "style": []}
        self.attributes: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.attributes += [name for name, _ in attrs]
        if tag in self.bodies:
            self._in = tag
            self.bodies[tag].append("")

    def handle_endtag(self, tag: str) -> None:
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in:
            self.bodies[self._in][-1] += data


def sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


async def test_every_answer_carries_the_security_headers(
    tmp_path: Path, store: SQLiteOrderStore
) -> None:
    async with worker_port(tmp_path, store, web_token=TOKEN) as (server, _):
        good = {"Authorization": f"Bearer {TOKEN}"}
        answers = [
            await fetch(server, "/metrics", **good),
            await fetch(server, "/health", **good),
            await fetch(server, "/dashboard/data.json", **good),
            await fetch(server, "/dashboard"),
            await fetch(server, "/metrics"),  # 401
            await fetch(server, "/table/", **good),  # 404
            await fetch(server, "/metrics", Host="evil.example", **good),  # 421
        ]
        assert [status for status, _, _ in answers] == [200, 503, 200, 200, 401, 404, 421]
        for _, headers, _ in answers:
            assert headers["X-Frame-Options"] == "DENY"
            assert headers["X-Content-Type-Options"] == "nosniff"
            assert headers["Referrer-Policy"] == "no-referrer"
            policy = headers["Content-Security-Policy"]
            assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
            assert "unsafe-inline" not in policy and "unsafe-eval" not in policy

        _, headers, page = answers[3]
        policy = {}
        for directive in headers["Content-Security-Policy"].split("; "):
            name, _, value = directive.partition(" ")
            policy[name] = value
        inline = Inline()
        inline.feed(page.decode())
        # The page's own script and style, by hash: the dashboard runs, nothing injected does.
        assert policy["script-src"] == " ".join(sha256(b) for b in inline.bodies["script"])
        assert policy["style-src"] == " ".join(sha256(b) for b in inline.bodies["style"])
        assert policy["connect-src"] == "'self'"


def test_the_dashboard_needs_no_inline_handler_or_style_attribute() -> None:
    inline = Inline()
    inline.feed(dashboard_page())
    assert len(inline.bodies["script"]) == len(inline.bodies["style"]) == 1
    # A hash policy allows <script> and <style> blocks only: these would be blocked.
    assert not [a for a in inline.attributes if a.startswith("on") or a == "style"]
    assert ".innerHTML" not in inline.bodies["script"][0]
    assert "javascript:" not in dashboard_page()


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ("127.0.0.1:6066", "127.0.0.1"),
        ("localhost", "localhost"),
        ("[::1]:80", "::1"),
        ("[::1]", "::1"),
        ("a:b", None),
        ("[::1]x", None),
        ("", None),
        (None, None),
    ],
)
def test_host_name(header: str | None, name: str | None) -> None:
    assert host_name(header) == name
