"""Message batches: the stand-in's batch endpoints, ``BatchLLM`` (staging, fallbacks, cost,
resuming) and the batched pipeline run, all through the real SDK."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anthropic
import pytest

from baton_kafka.agents.asking import ask
from baton_kafka.agents.models.batch_journal import BatchJournal, JournalMismatch, digest
from baton_kafka.agents.models.batches import BatchLLM, BatchSender, run_batched
from baton_kafka.agents.models.llm import Prompt
from baton_kafka.agents.models.prices import PRICES, batch_price, cost
from baton_kafka.agents.orders import open_store
from baton_kafka.agents.testing import StandIn, run_in_thread
from baton_kafka.schemas.records import Ticket
from baton_kafka.streams.batched import answer_in_batches, cost_line, waves
from baton_kafka.streams.cli.main import main
from baton_kafka.streams.eval.run import age_days, load_cases, load_orders
from baton_kafka.streams.settings import Settings
from baton_kafka.streams.testing import TestPipeline
from tests.fixtures.agents import MODEL, client, prompt
from tests.fixtures.paths import ROOT, TEST_DATA

KETTLE = "My Midea kettle ORD-1001 leaks, I want a refund."


def llm_on(standin: StandIn, path: Path, run: str = "run-1", **options: Any) -> BatchLLM:
    lines: list[str] = options.pop("lines", [])
    say = options.pop("say", lines.append)
    sender = BatchSender(api_key="test-key", base_url=standin.base_url, model=MODEL)
    journal = BatchJournal.open(path, run)
    return BatchLLM(client(standin), sender, journal, poll_s=0.05, say=say, **options)


def request_of(p: Prompt[Any]) -> dict[str, Any]:
    """The Messages request body of ``p``, as the stages' client sends it."""
    return {
        "model": MODEL,
        "max_tokens": p.max_tokens,
        "system": [{"type": "text", "text": p.system, "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": p.context}],
        "output_config": {
            "format": {"type": "json_schema", "schema": anthropic.transform_schema(p.output_type)}
        },
    }


def params(text: str, custom_id: str) -> dict[str, Any]:
    return {
        "custom_id": custom_id,
        "params": {
            "model": MODEL,
            "max_tokens": 256,
            "messages": [{"role": "user", "content": text}],
        },
    }


async def test_standin_batch_stays_in_progress_for_its_delay_then_gives_one_result_each() -> None:
    async with StandIn(batch_delay_s=0.5, batch_expire_s=0.3) as standin:
        sdk = anthropic.AsyncAnthropic(api_key="k", base_url=standin.base_url, max_retries=0)
        good = request_of(prompt("understand", KETTLE, ticket_id="t-1"))
        busy = request_of(prompt("understand", KETTLE + " [[fault:529]]", ticket_id="t-2"))
        lost = request_of(prompt("understand", KETTLE + " [[fault:hang]]", ticket_id="t-3"))
        created = await sdk.messages.batches.create(
            requests=[
                {"custom_id": "a", "params": good},  # type: ignore[typeddict-item]
                {"custom_id": "b", "params": busy},  # type: ignore[typeddict-item]
                {"custom_id": "c", "params": lost},  # type: ignore[typeddict-item]
            ]
        )
        assert created.processing_status == "in_progress"
        assert created.request_counts.processing == 3 and created.results_url is None
        with pytest.raises(anthropic.AnthropicError, match="finished processing"):
            await sdk.messages.batches.results(created.id)
        await asyncio.sleep(0.6)
        ended = await sdk.messages.batches.retrieve(created.id)
        assert ended.processing_status == "ended"
        counts = ended.request_counts
        assert (counts.processing, counts.succeeded, counts.errored, counts.expired) == (0, 1, 1, 1)
        results = {
            r.custom_id: r.result async for r in await sdk.messages.batches.results(ended.id)
        }
        assert results["a"].type == "succeeded"
        assert '"product"' in results["a"].message.content[0].text  # type: ignore[union-attr]
        assert results["b"].type == "errored"
        assert results["b"].error.error.type == "overloaded_error"  # type: ignore[union-attr]
        assert results["c"].type == "expired"
        stats = standin.stats()
        assert (stats["batches"], stats["batch_requests"], stats["calls"]) == (1, 3, 0)
        assert stats["by_stage"] == {"understand": 3}
        with pytest.raises(anthropic.BadRequestError, match="custom_id"):
            await sdk.messages.batches.create(
                requests=[params("hi", "x"), params("hi", "x")]  # type: ignore[list-item]
            )
        with pytest.raises(anthropic.NotFoundError):
            await sdk.messages.batches.retrieve("msgbatch_nope")
        await sdk.close()


async def test_one_batch_per_step_answers_as_live_calls_do_at_half_the_price(
    tmp_path: Path,
) -> None:
    async with StandIn(batch_delay_s=0.2) as standin:
        live = client(standin)
        expected = [
            await live.ask(prompt("understand", KETTLE, ticket_id=f"t-{i}")) for i in range(3)
        ]
        lines: list[str] = []
        llm = llm_on(standin, tmp_path / "state.json", lines=lines)
        answers = await run_batched(
            llm, [llm.ask(prompt("understand", KETTLE, ticket_id=f"t-{i}")) for i in range(3)]
        )
        assert [a.value for a in answers] == [a.value for a in expected]
        stats = standin.stats()
        assert (stats["batches"], stats["batch_requests"], stats["calls"]) == (1, 3, 3)
        price = PRICES[MODEL]
        for got in answers:
            assert got.usage.cost_usd == cost(got.usage, batch_price(price)) > 0
            assert got.usage.cost_usd == pytest.approx(cost(got.usage, price) / 2, abs=1e-8)
        figures = llm.tally.as_dict()
        assert figures["batches"] == figures["created"] == 1
        assert (figures["batched_requests"], figures["succeeded"], figures["live_calls"]) == (
            3,
            3,
            0,
        )
        assert figures["cost_usd"] == pytest.approx(figures["live_run_cost_usd"] / 2)
        assert "saved" in cost_line(figures) and "50.0%" in cost_line(figures)
        assert any("in_progress: processing 3, succeeded 0" in line for line in lines)
        assert any("ended: processing 0, succeeded 3, errored 0, expired 0" in x for x in lines)
        await live.aclose()
        await llm.aclose()


async def test_what_a_batch_leaves_goes_live_as_a_live_failure_would(tmp_path: Path) -> None:
    async with StandIn(batch_delay_s=0.0, batch_expire_s=0.3) as standin:
        llm = llm_on(standin, tmp_path / "state.json")
        texts = {
            "ok": KETTLE,
            "invalid": KETTLE + " [[fault:schema:understand]]",
            "busy": KETTLE + " [[fault:529]]",
            "lost": KETTLE + " [[fault:hang]]",
        }
        asked = await run_batched(
            llm,
            [ask(llm, prompt("understand", text, ticket_id=name)) for name, text in texts.items()],
        )
        # Every ticket ends with a valid answer: the invalid one after a live re-ask with the
        # validation errors, the errored and expired ones after one live call each.
        assert all(a.value is not None and a.failure is None for a in asked)
        assert [a.attempts for a in asked] == [1, 2, 1, 1]
        tally = llm.tally
        assert (tally.succeeded, tally.errored, tally.expired, tally.live) == (2, 1, 1, 3)
        stats = standin.stats()
        assert (stats["batches"], stats["batch_requests"], stats["calls"]) == (1, 4, 3)
        asked_for = sorted(r["ticket_id"] for r in stats["requests"])
        assert asked_for == ["busy", "busy", "invalid", "invalid", "lost", "lost", "ok"]
        # The invalid answer was paid at the batch price, its re-ask at the live one.
        ok, invalid, busy, lost = asked
        assert invalid.calls[0].cost_usd == cost(invalid.calls[0], batch_price(PRICES[MODEL]))
        assert invalid.calls[1].cost_usd == cost(invalid.calls[1], PRICES[MODEL])
        assert ok.calls[0].cost_usd == cost(ok.calls[0], batch_price(PRICES[MODEL]))
        live_calls = [invalid.calls[1], busy.calls[0], lost.calls[0]]
        assert tally.live_cost_usd == pytest.approx(sum(c.cost_usd for c in live_calls))
        await llm.aclose()


class Stop(Exception):
    """Stands for the command being interrupted while it polls."""


async def test_an_interrupted_run_resumes_its_batch_instead_of_sending_another(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.json"
    prompts = [prompt("understand", KETTLE, ticket_id=f"t-{i}") for i in range(2)]

    def interrupt(line: str) -> None:
        if "in_progress" in line:
            raise Stop(line)

    async with StandIn(batch_delay_s=0.5) as standin:
        first = llm_on(standin, path, say=interrupt)
        with pytest.raises(Stop):
            await run_batched(first, [first.ask(p) for p in prompts])
        saved = BatchJournal.open(path, "run-1").batches
        assert len(saved) == 1 and len(saved[0].requests) == 2

        lines: list[str] = []
        again = llm_on(standin, path, lines=lines)
        answers = await run_batched(again, [again.ask(p) for p in prompts])
        assert all(a.value.product for a in answers)
        assert standin.stats()["batches"] == 1
        assert (again.tally.created, again.tally.resumed, again.tally.live) == (0, 1, 0)
        assert lines[0] == f"batch {saved[0].id}: resumed (2 of 2 request(s) in it)"
        await first.aclose()
        await again.aclose()

        # A request built differently now than when the batch was sent is asked live.
        changed = prompt("understand", KETTLE + " Also the lid.", ticket_id="t-1")
        third = llm_on(standin, path)
        answers = await run_batched(third, [third.ask(prompts[0]), third.ask(changed)])
        assert (third.tally.rebuilt, third.tally.live, standin.stats()["batches"]) == (1, 1, 1)
        await third.aclose()

        with pytest.raises(JournalMismatch, match="another run"):
            BatchJournal.open(path, "run-2")
        BatchJournal.open(path, "run-1").remove()
        assert not path.exists()


def test_the_journal_key_is_stable_and_order_free() -> None:
    assert digest({"a": 1, "b": [1, 2]}) == digest({"b": [1, 2], "a": 1})
    assert digest({"a": 1}) != digest({"a": 2})


def test_waves_keep_each_sessions_order() -> None:
    def t(tid: str, session: str) -> Ticket:
        return Ticket(ticket_id=tid, session_id=session, customer_id="c", text="hi")

    tickets = [t("a1", "A"), t("b1", "B"), t("a2", "A"), t("c1", "C"), t("a3", "A"), t("b2", "B")]
    assert [[x.ticket_id for x in w] for w in waves(tickets)] == [
        ["a1", "b1", "c1"],
        ["a2", "b2"],
        ["a3"],
    ]
    assert waves([]) == []


async def _live_replies(settings: Settings, tickets: list[Ticket], llm: Any, store: Any) -> Any:
    """The pipeline as the worker runs it, one ticket at a time through every stage."""
    return {
        r.ticket_id: r
        for r in await TestPipeline(orders=store, settings=settings, llm=llm).send(*tickets)
    }


async def test_the_batched_pipeline_replies_as_the_live_one_on_the_eval_set(
    tmp_path: Path,
) -> None:
    cases = load_cases(TEST_DATA / "eval_tickets.jsonl")
    # Both runs read the set's times as written, not each against its own clock's week.
    age = age_days(cases, datetime.now(UTC))
    settings = Settings(
        namespace="b", data_dir=tmp_path, session_ttl_s=3600, ticket_max_age_days=age
    )
    store = open_store(f"sqlite:///{tmp_path / 'orders.sqlite3'}")
    await store.upsert(load_orders(TEST_DATA / "eval_orders.jsonl"))
    phases = sorted({c.label.phase for c in cases})
    groups = [[c.ticket for c in cases if c.label.phase == p] for p in phases]
    in_order = [t for g in groups for t in g]
    try:
        async with StandIn(batch_delay_s=0.0) as standin:
            one_by_one = client(standin)
            live = await _live_replies(settings, in_order, one_by_one, store)
            await one_by_one.aclose()
            assert standin.stats()["batches"] == 0
            standin.reset()
            llm = llm_on(standin, tmp_path / "state.json")
            batched = (await answer_in_batches(settings, groups, llm, store)).replies
            stats = standin.stats()
            await llm.aclose()
    finally:
        await store.close()
    assert batched.keys() == live.keys() == {c.ticket.ticket_id for c in cases}
    for tid, reply in live.items():
        got = batched[tid]
        assert (got.status, got.order_id, got.solution, got.reply) == (
            reply.status,
            reply.order_id,
            reply.solution,
            reply.reply,
        ), tid
    # Staged: at most four batches (understand, lookup, strategy, the reader) per wave, no live
    # call.
    depth = sum(len(waves(g)) for g in groups)
    assert stats["calls"] == 0 and llm.tally.live == 0
    assert depth * 2 <= stats["batches"] == llm.tally.created <= depth * 4
    assert stats["batch_requests"] == llm.tally.batched == llm.tally.succeeded
    # The reply's usage is the batch price.
    assert sum(r.usage.cost_usd for r in batched.values()) == pytest.approx(
        sum(r.usage.cost_usd for r in live.values()) / 2, rel=1e-6
    )


def _baton(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "baton_kafka.streams", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), **env},
        cwd=ROOT,
    )


@pytest.mark.timeout(240)
def test_eval_batch_killed_while_polling_resumes_its_batch_and_scores_as_echo(
    tmp_path: Path,
) -> None:
    tickets = str(TEST_DATA / "eval_tickets.jsonl")
    with run_in_thread(batch_delay_s=0.5) as standin:
        env = {
            "BATON_DATA_DIR": str(tmp_path),
            "ANTHROPIC_API_KEY": "sk-test-not-a-key",
            "ANTHROPIC_BASE_URL": standin.base_url,
        }
        args = ("eval", "--llm", "anthropic", "--batch", "--batch-poll", "0.1", "--json", tickets)
        first = _baton(*args, env=env)
        assert first.stderr is not None
        seen = []
        for line in first.stderr:
            seen.append(line)
            if "in_progress" in line:
                first.kill()
                break
        first.wait(timeout=30)
        first.stderr.close()
        assert first.stdout is not None
        first.stdout.close()
        created = [x for x in seen if "created with" in x]
        assert len(created) == 1, seen
        batch_id = created[0].split("batch ", 1)[1].split(":", 1)[0]
        assert standin.stats()["batches"] == 1
        state = tmp_path / "eval" / "eval_tickets-batch.json"
        assert batch_id in state.read_text()

        second = _baton(*args, env=env)
        out, err = second.communicate(timeout=200)
        assert second.returncode == 0, err[-2000:]
        assert f"batch {batch_id}: resumed" in err
        report = json.loads(out)
        figures = report["batch"]
        # One batch was sent by the killed run and resumed; the others by this one, once each.
        assert (figures["resumed"], figures["created"]) == (1, figures["batches"] - 1)
        assert standin.stats()["batches"] == figures["batches"]
        assert figures["live_calls"] == 0 and figures["cost_usd"] < figures["live_run_cost_usd"]
        assert not state.exists()

    echo = _baton(
        "eval", "--llm", "echo", "--batch", "--batch-poll", "0.1", "--json", tickets, env={}
    )
    out, err = echo.communicate(timeout=200)
    assert echo.returncode == 0, err[-2000:]
    same = json.loads(out)
    assert same["summary"] == report["summary"]
    assert same["tickets"] == report["tickets"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("eval", "--batch", "--llm", "offline", "F"), "--batch needs --llm anthropic or echo"),
        (("eval", "--batch", "--batch-poll", "0", "--llm", "echo", "F"), "--batch-poll must be"),
        (("eval", "--batch-state", "x.json", "--llm", "echo", "F"), "--batch-state needs --batch"),
        (("eval", "--batch", "--batch-poll", "soon", "F"), "invalid float value"),
        (("replay", "--batch", "--no-worker"), "cannot be used with --no-worker"),
        (("replay", "--batch", "--batch-poll", "-1"), "--batch-poll must be"),
        (("replay", "--batch"), "--batch needs ANTHROPIC_API_KEY"),
    ],
)
def test_a_bad_batch_option_gives_one_line(
    args: tuple[str, ...],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("BATON_LLM", "offline")
    assert main(list(args)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def test_a_batch_that_cannot_be_sent_gives_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BATON_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")  # nothing listens there
    tickets = str(TEST_DATA / "eval_tickets.jsonl")
    assert main(["eval", "--llm", "anthropic", "--batch", tickets]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith("baton: eval: cannot create batch 1: "), err
    assert not (tmp_path / "eval" / "eval_tickets-batch.json").exists()


async def test_output_still_invalid_after_the_live_reask_fails_as_a_live_run_does(
    tmp_path: Path,
) -> None:
    text = KETTLE + " [[fault:schema:understand:2]]"
    async with StandIn(batch_delay_s=0.0) as standin:
        live = client(standin)
        expected = await ask(live, prompt("understand", text, ticket_id="live"))
        llm = llm_on(standin, tmp_path / "state.json")
        [got] = await run_batched(llm, [ask(llm, prompt("understand", text, ticket_id="batch"))])
        await live.aclose()
        await llm.aclose()
    assert expected.failure is not None and got.failure is not None
    assert (got.value, got.attempts, got.failure.reason) == (None, 2, "validation_failed")
    assert (expected.attempts, expected.failure.reason) == (2, "validation_failed")
    assert got.failure.error == expected.failure.error
