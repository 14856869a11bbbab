"""Worker logs: JSON shape, text format, redaction of keys and prompts, the logging observer."""

from __future__ import annotations

import io
import logging
import subprocess
import sys
import weakref
from collections.abc import Iterator
from datetime import datetime
from types import SimpleNamespace

import orjson
import pytest
from pydantic import ValidationError

from baton_kafka.agents.models.llm import Prompt
from baton_kafka.schemas.codec import dumps
from baton_kafka.schemas.records import Reply, Ticket
from baton_kafka.schemas.stages import StageRecord
from baton_kafka.streams.observe.logs import (
    JsonFormatter,
    LoggingObserver,
    TextFormatter,
    current_ids,
    faust_loglevel,
    lean_records,
    logging_config,
)
from baton_kafka.streams.observe.redaction import RedactFilter, describe
from baton_kafka.streams.settings import Settings

API_KEY = "sk-ant-api03-Zx9_secretSECRETsecret-0123456789abcdef"
ENV_KEY = "sk-test-a-key-of-another-shape-42"
SYSTEM_PROMPT = "You are the support agent of ACME. CONFIDENTIAL-INSTRUCTIONS follow"


@pytest.fixture
def capture() -> Iterator[tuple[logging.Logger, io.StringIO, logging.Handler]]:
    """A logger writing through the worker's filter into a buffer (JSON unless changed)."""
    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RedactFilter([ENV_KEY]))
    logger = logging.getLogger("baton.test-logs")
    logger.handlers[:] = [handler]
    logger.propagate = False
    logger.setLevel(logging.INFO)
    yield logger, buf, handler
    logger.handlers.clear()
    logger.propagate = True


def lines(buf: io.StringIO) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in buf.getvalue().splitlines() if line.strip()]


def test_json_line_shape(capture: tuple[logging.Logger, io.StringIO, logging.Handler]) -> None:
    logger, buf, _ = capture
    logger.info(
        "understand %s",
        "ok",
        extra={"ticket_id": "T-1", "session_id": "S-1", "stage": "understand", "duration_ms": 12.5},
    )
    logger.warning("plain")
    first, second = lines(buf)
    assert list(first)[:4] == ["ts", "level", "logger", "msg"]
    assert first["level"] == "info"
    assert first["logger"] == "baton.test-logs"
    assert first["msg"] == "understand ok"
    assert first["ticket_id"] == "T-1"
    assert first["session_id"] == "S-1"
    assert first["stage"] == "understand"
    assert first["duration_ms"] == 12.5
    assert "outcome" not in first
    assert datetime.fromisoformat(str(first["ts"]).replace("Z", "+00:00")).tzinfo is not None
    assert set(second) == {"ts", "level", "logger", "msg"}
    assert second["level"] == "warning"


def test_exceptions_are_one_json_line(
    capture: tuple[logging.Logger, io.StringIO, logging.Handler],
) -> None:
    logger, buf, _ = capture
    try:
        raise RuntimeError(f"boom with {API_KEY}")
    except RuntimeError:
        logger.exception("stage failed")
    assert len(buf.getvalue().splitlines()) == 1
    (line,) = lines(buf)
    assert line["level"] == "error"
    assert "RuntimeError: boom" in str(line["exc"])
    assert API_KEY not in buf.getvalue()


def test_text_format(capture: tuple[logging.Logger, io.StringIO, logging.Handler]) -> None:
    logger, buf, handler = capture
    handler.setFormatter(TextFormatter())
    logger.info("reply %s", "answered", extra={"ticket_id": "T-9", "outcome": "answered"})
    text = buf.getvalue().strip()
    stamp, *rest = text.split()
    assert datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    assert rest == [
        "INFO",
        "baton.test-logs:",
        "reply",
        "answered",
        "ticket_id=T-9",
        "outcome=answered",
    ]
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(text)


def test_keys_and_prompts_are_redacted(
    capture: tuple[logging.Logger, io.StringIO, logging.Handler],
) -> None:
    logger, buf, _ = capture
    prompt = Prompt(
        stage="understand",
        system=SYSTEM_PROMPT,
        context="customer: my kettle",
        output_type=Ticket,
        facts=None,
    )
    logger.info("calling with key %s", API_KEY)
    logger.info("configured key %s", ENV_KEY)
    logger.info("headers {'x-api-key': '%s'} Authorization: Bearer abc.def-123", "opaque-value-1")
    logger.info("request %s", {"model": "m", "system": SYSTEM_PROMPT, "messages": [{"x": 1}]})
    logger.info("asking %r", prompt)
    logger.info('raw body {"model": "m", "system": "%s", "max_tokens": 5}', SYSTEM_PROMPT)
    logger.info("prompt", extra={"prompt": SYSTEM_PROMPT})
    out = buf.getvalue()
    for secret in (API_KEY, ENV_KEY, "opaque-value-1", "abc.def-123", "CONFIDENTIAL"):
        assert secret not in out, secret
    msgs = [str(line["msg"]) for line in lines(buf)]
    assert msgs[0] == "calling with key sk-ant-[redacted]"
    assert msgs[1] == "configured key [redacted]"
    assert "Bearer [redacted]" in msgs[2]
    assert "'system': [redacted]" in msgs[3] and "'model': 'm'" in msgs[3]
    assert msgs[4] == "asking <Prompt [redacted]>"
    assert '"system": [redacted]' in msgs[5] and '"max_tokens": 5' in msgs[5]


def test_worker_configuration_redacts_the_configured_key() -> None:
    """The dictConfig the worker hands to Faust: JSON on stderr, the env key redacted."""
    code = (
        "import logging, logging.config, os\n"
        "from streams.observe.logs import logging_config\n"
        "from streams.settings import load\n"
        "logging.config.dictConfig(logging_config(load()))\n"
        "logging.getLogger('anthropic').info('key=%s', os.environ['ANTHROPIC_API_KEY'])\n"
        "logging.getLogger('baton.x').debug('hidden at info')\n"
        "logging.getLogger('httpx').info('HTTP Request: POST /v1/messages')\n"
        "logging.getLogger('httpx2').info('HTTP Request: POST /v1/messages')\n"
    )
    env = {"ANTHROPIC_API_KEY": ENV_KEY, "BATON_LOG_LEVEL": "info", "PYTHONPATH": "."}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, timeout=60, check=True
    )
    assert done.stdout == b""
    (line,) = [orjson.loads(x) for x in done.stderr.splitlines()]
    assert line["logger"] == "anthropic"
    assert line["msg"] == "key=[redacted]"
    text_env = {**env, "BATON_LOG_FORMAT": "text"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=text_env, capture_output=True, timeout=60, check=True
    )
    assert done.stderr.decode().strip().endswith("INFO    anthropic: key=[redacted]")


def test_faust_never_runs_at_warn() -> None:
    assert faust_loglevel(Settings(log_level="warning")) == "info"
    assert faust_loglevel(Settings(log_level="error")) == "info"
    assert faust_loglevel(Settings(log_level="debug")) == "debug"
    config = logging_config(Settings(log_level="warning"))
    assert config["root"]["level"] == logging.WARNING


def test_observer_logs_one_event_per_outcome(
    capture: tuple[logging.Logger, io.StringIO, logging.Handler],
) -> None:
    logger, buf, _ = capture
    observer = LoggingObserver(logger)
    observer.record_in("understand")
    observer.stage_done("understand", "ok", 0.25)
    observer.stage_done("lookup", "degraded", 1.0)
    observer.stage_done("strategy", "reused", 0.0)
    observer.dead_letter("lookup", "model_error")
    observer.context("strategy", "full")
    observer.context("strategy", "partial")
    observer.reply(
        Reply(
            ticket_id="T-7",
            session_id="S-7",
            customer_id=None,
            order_id=None,
            status="handoff",
            reply="r",
            solution="s",
            internal_note="",
            confidence=0.2,
            llm="offline",
        ),
        3.5,
    )
    got = lines(buf)
    assert [(g["stage"], g.get("outcome"), g["level"]) for g in got] == [
        ("understand", "ok", "info"),
        ("lookup", "degraded", "warning"),
        ("strategy", "reused", "info"),
        ("lookup", "dead_letter", "warning"),
        ("strategy", "context_partial", "info"),
        ("reply", "handoff", "warning"),
    ]
    assert got[0]["duration_ms"] == 250.0
    assert "duration_ms" not in got[2]
    assert "model_error" in str(got[3]["msg"])
    assert (got[5]["ticket_id"], got[5]["session_id"], got[5]["duration_ms"]) == (
        "T-7",
        "S-7",
        3500.0,
    )


class FakeEvent:
    """What ``faust.current_event()`` returns, as far as the logs read it."""

    def __init__(self, message: SimpleNamespace) -> None:
        self.message = message


def test_ids_come_from_the_record_being_processed() -> None:
    from faust.streams import _current_event

    ticket = Ticket(ticket_id="T-42", session_id="S-42", text="hello " * 500)
    record = StageRecord(ticket=ticket)
    event = FakeEvent(SimpleNamespace(value=dumps(record)))
    token = _current_event.set(weakref.ref(event))  # type: ignore[arg-type]
    try:
        assert current_ids() == {"ticket_id": "T-42", "session_id": "S-42"}
        event.message.value = b"not json at all"
        assert current_ids() == {}
        raw = {"text": "x", "session_id": "S-1", "ticket_id": "T-1"}
        event.message.value = orjson.dumps(raw)
        assert current_ids() == {"ticket_id": "T-1", "session_id": "S-1"}
        # An invalid record is read as it is, escaped quotes included.
        event.message.value = orjson.dumps({**raw, "ticket_id": 'T-"42"'})
        assert current_ids() == {"ticket_id": 'T-"42"', "session_id": "S-1"}
        # A number is its digits; a hostile id is escaped and cut, never a second line.
        event.message.value = orjson.dumps({**raw, "ticket_id": 1029384756})
        assert current_ids()["ticket_id"] == "1029384756"
        event.message.value = orjson.dumps({**raw, "ticket_id": "a\nlevel=error\u202e"})
        assert current_ids()["ticket_id"] == '"a\\u000alevel=error\\u202e"'
        event.message.value = orjson.dumps({**raw, "session_id": "s" * 390})
        assert current_ids()["session_id"] == "s" * 199 + "…"
        event.message.value = orjson.dumps({**raw, "session_id": "ana.silva+orders@example.org"})
        assert current_ids()["session_id"] == "ana.silva+orders@example.org"
    finally:
        _current_event.reset(token)
    assert current_ids() == {}


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("T-9", "T-9"),
        ("ana.silva+orders@example.org", "ana.silva+orders@example.org"),
        ("gid://shopify/Customer/1", "gid://shopify/Customer/1"),
        ("ANA SILVA 01", '"ANA SILVA 01"'),
        ("x outcome=forged", '"x outcome=forged"'),
        ('t"$(id)', '"t\\"$(id)"'),
        ("a\nINFO forged line", '"a\\u000aINFO forged line"'),
        ("аna", "аna"),
    ],
)
def test_a_text_log_line_keeps_every_id_one_field(
    capture: tuple[logging.Logger, io.StringIO, logging.Handler], value: str, written: str
) -> None:
    logger, buf, handler = capture
    handler.setFormatter(TextFormatter())
    logger.info("reply", extra={"ticket_id": value, "outcome": "answered"})
    (text,) = buf.getvalue().splitlines()
    assert text.endswith(f" ticket_id={written} outcome=answered"), text


def test_worker_log_format_option_reaches_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    import baton_kafka.streams.runtime.worker as worker
    from baton_kafka.streams.cli.main import main

    started: list[Settings] = []
    monkeypatch.setattr(worker, "run", started.append)
    monkeypatch.setenv("BATON_LOG_FORMAT", "json")
    assert main(["worker", "--log-format", "text"]) == 0
    assert main(["worker"]) == 0
    assert [s.log_format for s in started] == ["text", "json"]
    assert main(["worker", "--log-format", "xml"]) == 2


def test_an_exception_is_its_type_and_a_short_message_without_a_traceback(
    capture: tuple[logging.Logger, io.StringIO, logging.Handler],
) -> None:
    logger, buf, _ = capture
    try:
        Ticket.model_validate({"ticket_id": "t", "session_id": "s", "text": 42, "secret": 1})
    except ValidationError:
        logger.exception("understand gave up")
    try:
        raise RuntimeError("x" * 500 + " postgresql://shop:hunter2hunter2@db/orders")
    except RuntimeError:
        logger.exception("store failed")
    first, second = lines(buf)
    assert first["exc"] == "ValidationError: 1 validation error(s): text: string_type"
    assert str(second["exc"]).startswith("RuntimeError: xxx") and len(str(second["exc"])) < 200
    # The timestamp may contain "42"; the input value must not appear in what was logged.
    assert "Traceback" not in buf.getvalue()
    assert all("42" not in str(v) for line in (first, second) for k, v in line.items() if k != "ts")


def test_tracebacks_are_logged_at_debug_level_only() -> None:
    debug, info = (
        logging_config(Settings(log_level=level))["filters"]["redact"]["tracebacks"]
        for level in ("debug", "info")
    )
    assert debug is True and info is False
    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    handler.setFormatter(TextFormatter())
    handler.addFilter(RedactFilter(tracebacks=True))
    logger = logging.getLogger("baton.test-debug")
    logger.handlers[:] = [handler]
    logger.propagate = False
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logger.exception("failed")
    logger.handlers.clear()
    assert "Traceback (most recent call last)" in buf.getvalue()


def test_describe_masks_passwords_and_never_quotes_validation_input() -> None:
    assert describe(RuntimeError("to kafka://u:s3cretpw@h:9092 failed")) == (
        "RuntimeError: to kafka://u:***@h:9092 failed"
    )
    assert describe(KeyError()) == "KeyError"


def test_lean_records_skip_the_lookups_and_leave_every_line_the_same(
    capture: tuple[logging.Logger, io.StringIO, logging.Handler], monkeypatch: pytest.MonkeyPatch
) -> None:
    logger, buf, handler = capture
    for name in ("_srcfile", "logThreads", "logProcesses", "logMultiprocessing"):
        monkeypatch.setattr(logging, name, getattr(logging, name))  # put back after the test
    seen: list[logging.LogRecord] = []

    def keep(record: logging.LogRecord) -> bool:
        seen.append(record)
        return True

    handler.addFilter(keep)
    extra = {"ticket_id": "T-1", "session_id": "S-1", "stage": "draft", "outcome": "ok"}

    def written() -> list[str]:
        buf.seek(0)
        buf.truncate()
        for formatter in (JsonFormatter(), TextFormatter()):
            handler.setFormatter(formatter)
            logger.info("draft %s", "ok", extra=extra)
            try:
                raise ValueError("no such order")
            except ValueError:
                logger.exception("stage failed", extra=extra)
        # The stamps differ between two runs: every other part of each line must not.
        return [line.split("Z", 1)[1] for line in buf.getvalue().splitlines() if "Z" in line]

    before = written()
    assert seen[-1].funcName == "written" and seen[-1].process is not None
    lean_records()
    assert written() == before
    assert seen[-1].funcName == "(unknown function)"
    assert seen[-1].process is None and seen[-1].thread is None
