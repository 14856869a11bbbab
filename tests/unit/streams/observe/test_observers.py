"""An observer of the shop's own (the shipped example) given to the worker in code; and the
extending guide's examples are the shipped files."""

from __future__ import annotations

import io
import json
import logging
import re
from pathlib import Path

import pytest

from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.agents.rules.offline import OfflineLLM
from baton_kafka.schemas import Reply
from baton_kafka.streams.observe.observer import CountingObserver, Fanout, Guarded, QuietObserver
from baton_kafka.streams.runtime import create_app
from baton_kafka.streams.settings import Settings
from examples.observers.attention import Attention
from tests.fixtures.data import reply, ticket
from tests.fixtures.paths import ROOT
from tests.fixtures.pipelines import in_memory


async def test_create_app_adds_the_observer_to_batons_own(
    store: SQLiteOrderStore, tmp_path: Path
) -> None:
    out = io.StringIO()
    attention = Attention(out)
    runtime = create_app(
        Settings(namespace="obs", data_dir=tmp_path),
        llm=OfflineLLM(),
        orders=store,
        observers=[attention],
    )
    fanout = runtime.pipeline.observer
    assert isinstance(fanout, Fanout)
    assert [type(o).__name__ for o in fanout.observers] == [
        "CountingObserver",
        "PrometheusObserver",
        "LoggingObserver",
        "Recent",
        "TracingObserver",
        "Guarded",
    ]
    fanout.reply(reply("T-9", status="handoff"), 2.0)
    assert json.loads(out.getvalue())["ticket_id"] == "T-9"


async def test_the_example_writes_what_a_person_should_look_at(store: SQLiteOrderStore) -> None:
    out = io.StringIO()
    attention = Attention(out, slow_s=3600)
    observer = Fanout(CountingObserver(), Guarded(attention))
    p = in_memory(store, observer=observer)
    replies = await p.send(
        ticket("t1", "My kettle is leaking, I want a refund."),
        ticket("t2", "My kettle is leaking. Fix it or I will sue you in court.", session="S2"),
    )
    flagged = [json.loads(line) for line in out.getvalue().splitlines()]
    expected = [r.ticket_id for r in replies if r.status != "answered"]
    assert expected and [f["ticket_id"] for f in flagged] == expected
    assert {r.ticket_id: r.status for r in replies}["t1"] == "answered"
    attention.reply(reply("T-slow"), 7200.0)
    assert json.loads(out.getvalue().splitlines()[-1])["why"] == "slow"


def test_an_observer_that_raises_never_reaches_the_ticket(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Broken(QuietObserver):
        def reply(self, reply: Reply, end_to_end_s: float | None) -> None:
            raise RuntimeError("webhook down")

    guarded = Guarded(Broken())
    with caplog.at_level(logging.WARNING, "baton.observe"):
        guarded.reply(reply(), 1.0)
        guarded.reply(reply(), 1.0)
        guarded.stage_done("lookup", "ok", 0.1)
    failures = [r.getMessage() for r in caplog.records]
    assert failures == ["observer Broken failed on reply: RuntimeError: webhook down (logged once)"]


@pytest.mark.parametrize(
    ("heading", "example"),
    [
        ("A stage", "examples/stages/priority.py"),
        ("An observer", "examples/observers/attention.py"),
        ("Testing it in memory", "examples/stages/priority_check.py"),
    ],
)
def test_the_guides_examples_are_the_shipped_files(heading: str, example: str) -> None:
    guide = (ROOT / "docs" / "extending.md").read_text(encoding="utf-8")
    section = guide.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    first, *_ = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(first.splitlines()) > 15
    assert first in (ROOT / example).read_text(encoding="utf-8")
