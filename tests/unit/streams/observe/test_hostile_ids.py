"""Every place an id is shown, logged, put in a command or a label stays safe with any id."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.agents.rules.offline import OfflineLLM
from baton_kafka.schemas.codec import dumps
from baton_kafka.schemas.records import MAX_ID_CHARS, DeadLetter
from baton_kafka.streams.admin.forget import Forgotten
from baton_kafka.streams.cli.forget import _lines
from baton_kafka.streams.cli.main import parser
from baton_kafka.streams.debug import dlq, trace
from baton_kafka.streams.debug.replay_plan import diff_line
from baton_kafka.streams.kafka.client import Message
from baton_kafka.streams.kafka.topics import TopicNames, changelog_topic
from baton_kafka.streams.observe.dashboard import Recent, trace_command
from baton_kafka.streams.observe.metrics import PrometheusObserver
from baton_kafka.streams.observe.shown import shown
from baton_kafka.streams.settings import Settings
from baton_kafka.streams.testing import TestPipeline
from tests.fixtures.data import reply, ticket

# Valid ids a hostile or careless producer may send.
HOSTILE = [
    "t'$(touch /tmp/pwned)`id`\"; rm -rf ~",
    "$HOME ${PATH} %s %n {0}",
    "../../etc/passwd",
    "-rf --help",
    "a b\\c",
    "аna",  # Cyrillic а: looks like "ana"
    "🫖-1",
    "x" * MAX_ID_CHARS,
]
# What only an invalid record (or a forged dead letter) carries: never valid ids.
UNPRINTABLE = ["a\nb", "a\x1b[2Jb", "a\u202eb", "a\x00b", "y" * 5000]


def _one_safe_line(text: str) -> None:
    assert "\n" not in text and "\r" not in text
    assert all(c.isprintable() for c in text), repr(text)


@pytest.mark.parametrize("value", HOSTILE + UNPRINTABLE)
def test_shown_is_one_printable_bounded_field(value: str) -> None:
    text = shown(value)
    _one_safe_line(text)
    assert len(text) <= 2 + 6 * MAX_ID_CHARS
    if value.isprintable() and len(value) <= MAX_ID_CHARS:
        # Unambiguous: read back as JSON when quoted, as it is when bare.
        assert (json.loads(text) if text.startswith('"') else text) == value
    assert shown("ana") != shown("аna")


@pytest.fixture
def fake_baton(tmp_path: Path) -> dict[str, str]:
    """A ``baton`` on PATH that prints the arguments a real shell handed it."""
    script = tmp_path / "baton"
    script.write_text(f"#!{sys.executable}\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    script.chmod(0o755)
    return {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}


@pytest.mark.parametrize("session", HOSTILE)
def test_the_dashboards_trace_command_gives_baton_the_id_through_a_real_shell(
    session: str, fake_baton: dict[str, str], tmp_path: Path
) -> None:
    command = trace_command(session)
    _one_safe_line(command)
    done = subprocess.run(
        ["sh", "-c", command], env=fake_baton, cwd=tmp_path, capture_output=True, timeout=10
    )
    assert done.returncode == 0, done.stderr
    argv = json.loads(done.stdout)
    assert argv[0] == "trace" and argv[-1] == session
    assert not (tmp_path.parent / "pwned").exists() and not Path("/tmp/pwned").exists()
    # baton's own parser reads it as the session, never as an option.
    assert parser().parse_args(argv).session_id == session


def test_the_dashboard_keeps_the_id_exactly_and_quotes_only_the_command() -> None:
    recent = Recent()
    for session in HOSTILE:
        recent.reply(reply(tid=session, session=session), 1.0)
    shown_rows = list(recent.tickets)
    assert [r["session_id"] for r in reversed(shown_rows)] == HOSTILE
    assert all(r["trace"] == trace_command(r["session_id"]) for r in shown_rows)


def _msg(topic: str, value: bytes, key: str | None, offset: int) -> Message:
    ts = int(datetime(2026, 11, 1, 12, tzinfo=UTC).timestamp() * 1000)
    return Message(topic, 0, offset, ts, key.encode() if key else None, value, ())


def test_a_trace_holds_only_its_own_session_and_prints_any_id_on_one_line() -> None:
    settings = Settings()
    names = TopicNames.of(settings)
    records: dict[str, list[Message]] = {name: [] for name in names.all()}
    changelog = changelog_topic(settings)
    records[changelog] = []
    for i, session in enumerate(["ana", "аna"]):
        t = ticket(f"{session}-t", "My kettle leaks.", session=session)
        records[names.tickets].append(_msg(names.tickets, dumps(t), session, i))
    forged = DeadLetter(
        id="d1",
        ticket_id="a\nforged line\x1b[2J",
        session_id="аna",
        stage="intake",
        reason="invalid_input",
        error="bad",
        payload="x",
    )
    records[names.dead_letters].append(_msg(names.dead_letters, dumps(forged), "аna", 0))
    latin = trace.build("ana", names, changelog, records)
    assert [t["ticket_id"] for t in latin["tickets"]] == ["ana-t"] and not latin["dead_letters"]
    cyrillic = trace.build("аna", names, changelog, records)
    assert [t["ticket_id"] for t in cyrillic["tickets"]] == ["аna-t", forged.ticket_id]
    assert len(cyrillic["dead_letters"]) == 1
    for line in trace.render(cyrillic):
        _one_safe_line(line)
    assert any('"a\\u000aforged line\\u001b[2J"' in line for line in trace.render(cyrillic))


@pytest.mark.parametrize("value", HOSTILE + UNPRINTABLE)
def test_dead_letter_replay_and_forget_lines_are_one_line(value: str) -> None:
    letter = DeadLetter(
        id="d1",
        ticket_id=value,
        session_id=value,
        stage="intake",
        reason="invalid_input",
        error="bad",
        payload="x",
    )
    message = _msg("support.dead-letters", dumps(letter), None, 0)
    _one_safe_line(dlq.line(dlq.Letter(letter, message)))
    entry = {"result": "failed", "ticket_id": value, "session_id": value}
    _one_safe_line(diff_line(entry))

    done = Forgotten(value, "r1", sessions=[value], index_sessions=[value], erased_sessions=[value])
    for line in _lines(done, {"support.tickets": 7.0}):
        _one_safe_line(line)


async def test_no_metric_label_carries_an_id(store: SQLiteOrderStore) -> None:
    metrics = PrometheusObserver()
    pipeline = TestPipeline(
        orders=store,
        settings=Settings(namespace="u", session_ttl_s=3600),
        llm=OfflineLLM(),
        observers=(metrics,),
    )
    tickets = [ticket(v, "My kettle is leaking.", session=v, customer=v) for v in HOSTILE]
    replies = await pipeline.send(*tickets)
    assert [r.session_id for r in replies] == HOSTILE
    exposition = generate_latest(metrics.registry).decode()
    assert "baton_replies_total" in exposition
    for value in HOSTILE:
        assert value not in exposition and json.dumps(value) not in exposition
