"""The API's request-id of a model call: in its dead letter and in the log lines of its call."""

from __future__ import annotations

import logging

import orjson
import pytest

from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.agents.testing.standin import StandIn
from baton_kafka.schemas.records import DeadLetter
from baton_kafka.streams.observe.logs import JsonFormatter, LoggingObserver
from baton_kafka.streams.settings import Settings
from baton_kafka.streams.testing import TestPipeline
from tests.fixtures.agents import client
from tests.fixtures.data import ticket


async def _through_standin(
    store: SQLiteOrderStore, text: str, **options: object
) -> tuple[list[DeadLetter], list[str]]:
    async with StandIn() as standin:
        llm = client(standin, max_retries=0, **options)
        p = TestPipeline(
            orders=store, settings=Settings(namespace="u"), llm=llm, observers=(LoggingObserver(),)
        )
        try:
            await p.send(ticket("t1", text))
        finally:
            await llm.aclose()
        return p.dead_letters, standin.stats()["request_ids"]


async def test_a_model_error_dead_letter_carries_the_request_id_of_the_failed_call(
    store: SQLiteOrderStore,
) -> None:
    letters, sent = await _through_standin(store, "My kettle is leaking. [[fault:500:understand]]")
    (letter,) = [d for d in letters if d.stage == "understand"]
    assert letter.reason == "model_error"
    assert letter.request_id is not None and letter.request_id.startswith("req_standin_")
    # The first call the stand-in answered was the understand call that failed.
    assert letter.request_id == sent[0]


async def test_an_invalid_output_dead_letter_carries_the_last_calls_request_id(
    store: SQLiteOrderStore,
) -> None:
    letters, sent = await _through_standin(
        store, "My kettle is leaking. [[fault:invalid_json:understand:2]]"
    )
    (letter,) = [d for d in letters if d.stage == "understand"]
    assert letter.reason == "validation_failed"
    # Asked, then re-asked once: the dead letter names the re-ask.
    assert letter.request_id == sent[1] != sent[0]


async def test_every_model_call_and_model_error_logs_its_request_id(
    store: SQLiteOrderStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    _, sent = await _through_standin(store, "My kettle is leaking. [[fault:500:understand]]")
    lines = [orjson.loads(JsonFormatter().format(r)) for r in caplog.records]
    logged = {line["request_id"]: line for line in lines if "request_id" in line}
    # The failed understand call (its error line), then lookup and strategy (their call lines).
    assert set(sent) <= set(logged)
    error = logged[sent[0]]
    assert error["level"] == "warning" and "500" in error["msg"]
    calls = [line for line in lines if line["msg"].startswith("model call")]
    assert {line["request_id"] for line in calls} == set(sent[1:])
    # Like every event line, a model call's has a stage and an outcome.
    assert calls and all(line["outcome"] == "model_call" and line["stage"] for line in calls)
