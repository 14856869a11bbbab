"""A fresh worker, once warmed up, compiles no pattern while it answers tickets: a few hundred
tickets in every shipped language (the eval sets, the offline model's language corpora) go
through the pipeline and ``re`` compiles only what a new order's id shape needs."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from baton_kafka.agents import packs
from baton_kafka.schemas import Order, Ticket
from baton_kafka.streams.eval.run import load_cases, load_orders
from baton_kafka.streams.runtime import warm
from baton_kafka.streams.settings import Settings
from baton_kafka.streams.testing import TestPipeline
from tests.fixtures.paths import ROOT, TEST_DATA
from tests.fixtures.stores import sqlite_store
from tests.unit.agents.rules.test_offline_languages import _orders as case_orders

LANGUAGES = TEST_DATA / "offline_languages"
# The one pattern built from a ticket's data: the shape of an order id not seen before
# ("EV-101" -> ``EV-\d{1,5}``), compiled once per shape.
DATA_DEPENDENT = (("identifiers.py", "shape"),)


def _language_cases() -> tuple[list[Ticket], list[Order]]:
    tickets, orders = [], []
    for name in ("corpus.jsonl", "blind.jsonl", "blind2.jsonl"):
        for line in (LANGUAGES / name).read_bytes().splitlines():
            case = orjson.loads(line)
            tickets.append(
                Ticket(
                    ticket_id=case["id"],
                    session_id=f"S-{case['id']}",
                    customer_id=case["id"],
                    text=case["text"],
                )
            )
            orders.extend(case_orders(case))
    return tickets, orders


def _tickets() -> tuple[list[Ticket], list[Order]]:
    """English, Chinese, German, Spanish, French and Japanese tickets, and their orders."""
    tickets, orders = _language_cases()
    for name in ("eval_tickets.jsonl", "eval_holdout_tickets.jsonl"):
        tickets += [c.ticket for c in load_cases(TEST_DATA / name)]
    orders += load_orders(TEST_DATA / "eval_orders.jsonl")
    orders += load_orders(TEST_DATA / "eval_holdout_orders.jsonl")
    return tickets, list({o.order_id: o for o in orders}.values())


def _data_dependent(stack: list[traceback.FrameSummary]) -> bool:
    return any(
        Path(f.filename).name == file and f.name == name
        for f in stack
        for file, name in DATA_DEPENDENT
    )


async def _compiled_while_answering(folder: Path) -> dict[str, Any]:
    """The patterns compiled while a fresh pipeline answers ``_tickets()``, past its warm-up."""
    tickets, orders = _tickets()
    compiled: list[str] = []
    allowed: list[str] = []
    inner: Callable[..., Any] = re._compiler.compile  # type: ignore[attr-defined]

    def counted(pattern: Any, flags: int = 0) -> Any:
        stack = traceback.extract_stack()[:-1]
        (allowed if _data_dependent(stack) else compiled).append(
            f"{pattern!r:.120} from {' <- '.join(f.name for f in stack[-1:-5:-1])}"
        )
        return inner(pattern, flags)

    async with sqlite_store(folder / "orders.sqlite3", orders) as store:
        settings = Settings(
            namespace="warm", session_ttl_s=3600, policy_file=LANGUAGES / "policy.toml"
        )
        pipeline = TestPipeline(orders=store, settings=settings)  # warms up
        re._compiler.compile = counted  # type: ignore[attr-defined]
        try:
            replies = await pipeline.send(*tickets)
        finally:
            re._compiler.compile = inner  # type: ignore[attr-defined]
    languages = sorted({r.language for r in replies if r.language})
    return {
        "tickets": len(tickets),
        "languages": languages,
        "compiled": compiled,
        "allowed": allowed,
    }


def _in_fresh_process() -> dict[str, Any]:
    """``_compiled_while_answering`` in a new interpreter: nothing compiled or cached yet."""
    code = (
        "import asyncio, pathlib, sys, tempfile, orjson\n"
        "from tests.unit.streams.runtime import test_warm_tickets as t\n"
        "found = asyncio.run(t._compiled_while_answering(pathlib.Path(tempfile.mkdtemp())))\n"
        "sys.stdout.buffer.write(orjson.dumps(found))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, check=False
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    found: dict[str, Any] = orjson.loads(done.stdout.splitlines()[-1])
    return found


def test_a_warmed_up_worker_compiles_no_pattern_while_answering_tickets() -> None:
    found = _in_fresh_process()
    assert found["tickets"] >= 200
    assert set(found["languages"]) >= {"en", "zh", "de", "es", "fr", "ja"}
    assert found["compiled"] == []
    assert len(found["allowed"]) < 20  # a few id shapes, not one per order


def test_the_count_sees_the_patterns_a_cold_reading_compiles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(warm, "patterns", lambda *_: None)  # no warm-up
    packs.reset()  # every pack's builder made again, on first use
    re.purge()
    try:
        found = asyncio.run(_compiled_while_answering(tmp_path))
    finally:
        packs.reset()
    assert found["compiled"]
