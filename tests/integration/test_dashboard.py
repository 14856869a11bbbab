"""The dashboard in headless Chromium shows the figures /metrics reports after a known run."""

from __future__ import annotations

import asyncio
import struct
import subprocess
from collections import defaultdict
from html.parser import HTMLParser
from pathlib import Path

import aiohttp
import pytest

from baton_kafka.agents.testing.standin import StandIn
from tests.fixtures.browser import CHROMIUM, HEADLESS, needs_chromium
from tests.fixtures.data import ORDERS_HEADPHONES_SHIPPED, ticket_record
from tests.fixtures.deployments import Deployment, WorkerProcess
from tests.fixtures.observability import (
    by_label,
    health_until_ready,
    known_run,
    scrape_settled,
    total,
)
from tests.fixtures.paths import ARTIFACTS

# What the dashboard shows does not depend on the broker: one leg is enough.
pytestmark = [pytest.mark.integration, pytest.mark.one_broker]

# The committed docs/dashboard.png is refreshed by hand from this file (see docs/observability.md).
SCREENSHOT = ARTIFACTS / "dashboard.png"
MORE = [
    ("s5", "c-ana", "The kettle lid does not close properly, can you send a replacement?"),
    ("s6", "c-li", "耳机什么时候到？"),
    ("s7", None, "What is your return policy for opened items?"),
    ("s8", "c-ana", "I was charged twice for my headphones order."),
    ("s9", "c-li", "电热水壶有异味，正常吗？"),
]


class Figures(HTMLParser):
    """Text of every ``data-k`` element, the ticket rows and the stage rows of the page."""

    def __init__(self) -> None:
        super().__init__()
        self.values: dict[str, str] = {}
        self.tickets: list[str] = []
        self.loaded = False
        self._open: list[tuple[str, str | None]] = []
        self._text: dict[str, list[str]] = defaultdict(list)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "body" and a.get("data-loaded") == "1":
            self.loaded = True
        if a.get("data-ticket"):
            self.tickets.append(str(a["data-ticket"]))
        self._open.append((tag, a.get("data-k")))

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            open_tag, key = self._open.pop()
            if key is not None:
                self.values[key] = "".join(self._text.pop(key, [])).strip()
            if open_tag == tag:
                break

    def handle_data(self, data: str) -> None:
        for _, key in self._open:
            if key is not None:
                self._text[key].append(data)


def number(text: str) -> float:
    return float(text.replace(",", "").replace("$", "").strip())


def chromium(url: str, out: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    assert CHROMIUM is not None
    profile = out / "profile"
    return subprocess.run(
        [
            CHROMIUM,
            *HEADLESS,
            f"--user-data-dir={profile}",
            "--virtual-time-budget=5000",
            *args,
            url,
        ],
        capture_output=True,
        timeout=90,
        cwd=out,
    )


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


@needs_chromium
@pytest.mark.timeout(300)
async def test_dashboard_shows_what_metrics_report(
    deployment: Deployment, standin: StandIn, namespace: str, tmp_path: Path
) -> None:
    deployment.import_orders(ORDERS_HEADPHONES_SHIPPED)
    worker: WorkerProcess = deployment.start_worker()
    await health_until_ready(worker)
    run = await known_run(deployment, standin, namespace)
    more = [
        ticket_record(f"{namespace}-{i + 6}", f"{namespace}-{s}", c, text)
        for i, (s, c, text) in enumerate(MORE)
    ]
    await deployment.publish_tickets(more)
    replies = await deployment.replies(len(run.replies) + len(MORE), timeout=120)
    samples = await scrape_settled(worker, len(replies))
    assert total(samples, "baton_replies_total") == len(replies)

    url = f"http://127.0.0.1:{worker.web_port}/dashboard"
    dumped = await asyncio.to_thread(chromium, url, tmp_path, "--dump-dom")
    assert dumped.returncode == 0, dumped.stderr.decode()[-2000:]
    page = Figures()
    page.feed(dumped.stdout.decode())
    assert page.loaded, dumped.stdout.decode()[:2000]
    # It ran under its Content-Security-Policy: its own script and style allowed by hash only.
    async with aiohttp.ClientSession() as http, http.get(url) as r:
        policy = r.headers["Content-Security-Policy"]
        assert r.headers["X-Frame-Options"] == "DENY"
    assert "script-src 'sha256-" in policy and "style-src 'sha256-" in policy
    assert "unsafe-inline" not in policy and "default-src 'none'" in policy
    shown = page.values

    assert number(shown["records_in.intake"]) == total(
        samples, "baton_records_in_total", stage="intake"
    )
    for status, n in by_label(samples, "baton_replies_total", "status").items():
        assert number(shown[f"replies.{status}"]) == n, status
    assert number(shown["replies.total"]) == len(replies)
    for reason, n in by_label(samples, "baton_dead_letters_total", "reason").items():
        assert number(shown[f"dead_letters.{reason}"]) == n, reason
    assert number(shown["dead_letters.total"]) == total(samples, "baton_dead_letters_total")
    assert number(shown["model_calls"]) == total(samples, "baton_model_calls_total")
    assert number(shown["retries.total"]) == total(samples, "baton_model_retries_total") == 3
    assert number(shown["holding"]) == total(samples, "baton_holding_replies_total")
    assert number(shown["past_deadline"]) == total(samples, "baton_tickets_past_deadline") == 0
    assert number(shown["open.total"]) == total(samples, "baton_open_tickets") == 0
    for kind in ("input", "output", "cache_read", "cache_write"):
        assert number(shown[f"tokens.{kind}"]) == total(
            samples, "baton_model_tokens_total", kind=kind
        ), kind
    assert number(shown["tokens.input"]) > 0
    for level, n in by_label(samples, "baton_context_recoveries_total", "level").items():
        assert number(shown[f"context.{level}"]) == n, level
    for stage in ("intake", "understand", "lookup", "strategy"):
        done = total(samples, "baton_stage_outputs_total", stage=stage)
        assert number(shown[f"stage.{stage}.done"]) == done, stage
        judged = sum(
            total(samples, "baton_stage_outputs_total", stage=stage, outcome=o)
            for o in ("ok", "degraded", "failed", "invalid")
        )
        ok = total(samples, "baton_stage_outputs_total", stage=stage, outcome="ok")
        assert shown[f"stage.{stage}.success"] == f"{100 * ok / judged:.1f}%", stage
    # Without a web token the data names no ticket or session (a guest's session id is a
    # bearer secret): the rows are there, their ids are not.
    assert page.tickets == []

    SCREENSHOT.parent.mkdir(exist_ok=True)
    SCREENSHOT.unlink(missing_ok=True)
    shot = await asyncio.to_thread(
        chromium,
        url,
        tmp_path,
        f"--screenshot={SCREENSHOT}",
        "--window-size=1280,900",
        "--hide-scrollbars",
    )
    assert shot.returncode == 0, shot.stderr.decode()[-2000:]
    assert png_size(SCREENSHOT) == (1280, 900)
    assert SCREENSHOT.stat().st_size > 20_000
