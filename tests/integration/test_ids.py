"""Ids as real systems send them, through a real worker on topics named by the shop: each
comes back exactly, keys its session, finds its customer's orders and can be traced."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from baton_kafka.agents.testing.standin import StandIn
from baton_kafka.schemas.records import MAX_ID_CHARS, DeadLetter, Reply
from baton_kafka.schemas.topics import ALL, ROLES
from baton_kafka.streams.kafka.connect import topic_partitions
from baton_kafka.streams.kafka.topics import changelogs
from baton_kafka.streams.observe.dashboard import trace_command
from baton_kafka.streams.settings import Settings
from tests.fixtures import delivery
from tests.fixtures.brokers import Broker
from tests.fixtures.data import KETTLE
from tests.fixtures.deployments import Deployment, open_deployment, settings_of

# name -> the id, as the producer writes it in JSON (a number stays a number).
SHAPES: dict[str, Any] = {
    "email with a plus": "ana.silva+orders@example.org",
    "Shopify global id": "gid://shopify/Customer/1029384756",
    "inner space": "ANA SILVA 01",
    "JSON number": 1029384756,
    "Latin ana": "ana",
    "Cyrillic lookalike": "аna",  # U+0430: another customer than "ana"
    "shell and quotes": "t'$(touch pwned)`id`\"; rm -rf ~",
    "path-like": "../../etc/passwd",
    "leading dash": "-rf",
    "Chinese": "客户-李",
    "200 characters": "c" * (MAX_ID_CHARS - 1) + "Z",
}
# The shop's own topic names, every one of them; the namespace still prefixes each.
CHOSEN = {f"BATON_TOPIC_{role.upper()}": f"prod.cs.{role.replace('_', '-')}.v1" for role in ROLES}
# The session asked again after a restart: its baton comes back from the changelog.
AGAIN = "ana.silva+orders@example.org"


def _order(n: int, customer: Any) -> dict[str, Any]:
    return {
        "order_id": f"O-{3000 + n}",
        "customer_id": customer,
        "product_name": KETTLE,
        "status": "delivered",
        "amount": 39.9,
        "currency": "USD",
        "ordered_at": "2026-10-02T10:00:00Z",
        "delivered_at": "2026-10-05T10:00:00Z",
    }


@dataclass
class Run:
    d: Deployment
    replies: list[tuple[bytes | None, Reply]]
    dead_letters: list[DeadLetter]
    topics: dict[str, list[int]]
    follow_up: Reply


async def _run(d: Deployment) -> Run:
    d.import_orders([_order(n, shape) for n, shape in enumerate(SHAPES.values())])
    worker = d.start_worker()
    records = [
        (
            str(shape),
            orjson.dumps(
                {
                    "ticket_id": shape,
                    "session_id": shape,
                    "customer_id": shape,
                    "text": "My kettle is leaking, I want a refund.",
                }
            ),
        )
        for shape in SHAPES.values()
    ]
    await d.publish(records)
    read = await delivery.drain(d, "support.replies", at_least=len(SHAPES), quiet=2)
    letters = await delivery.drain(d, "support.dead-letters", quiet=1)
    settings = settings_of(d)
    defaults = Settings(namespace=d.namespace)
    wanted = [settings.topic(name) for name in ALL] + [defaults.topic(name) for name in ALL]
    wanted += list(changelogs(settings))
    topics = await topic_partitions(settings, wanted)
    # A new worker on the renamed topics: the session's baton is read back.
    worker.stop()
    d.start_worker()
    again = {"ticket_id": f"{AGAIN}#2", "session_id": AGAIN, "customer_id": AGAIN}
    await d.publish([(AGAIN, orjson.dumps({**again, "text": "How long will that take?"}))])
    after = await delivery.drain(d, "support.replies", at_least=len(SHAPES) + 1, quiet=2)
    (follow_up,) = [
        Reply.model_validate_json(r.value)
        for r in after
        if Reply.model_validate_json(r.value).ticket_id == again["ticket_id"]
    ]
    return Run(
        d,
        [(r.key, Reply.model_validate_json(r.value)) for r in read],
        [DeadLetter.model_validate_json(r.value) for r in letters],
        topics,
        follow_up,
    )


@pytest.fixture(scope="module")
def shaped(
    broker: Broker, standin: StandIn, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Run]:
    """One worker on the shop's topic names; a ticket of every id shape; what came out."""
    data = tmp_path_factory.mktemp("ids")
    with open_deployment(broker, standin.base_url, data, **CHOSEN) as d:
        yield asyncio.run(_run(d))


@pytest.mark.timeout(300)
def test_every_topic_has_the_shops_name_under_the_namespace(shaped: Run) -> None:
    ns = shaped.d.namespace
    for role in ROLES:
        assert f"{ns}.prod.cs.{role.replace('_', '-')}.v1" in shaped.topics, role
    defaults = Settings(namespace=ns)
    assert not any(defaults.topic(name) in shaped.topics for name in ALL), shaped.topics
    # The tables' changelogs keep the names Faust gives them.
    assert set(changelogs(defaults)) <= set(shaped.topics)


@pytest.mark.timeout(300)
def test_a_restarted_worker_on_the_renamed_topics_reads_the_baton_back(
    shaped: Run,
) -> None:
    first = next(r for _, r in shaped.replies if r.session_id == AGAIN)
    again = shaped.follow_up
    assert again.session_id == AGAIN and again.customer_id == AGAIN
    assert again.order_id == first.order_id == "O-3000", again
    # The same baton, read back from its changelog, carried on: not a new one.
    assert again.baton_version > first.baton_version, (first, again)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", list(SHAPES))
def test_an_id_comes_back_exactly_keys_its_session_and_finds_its_orders(
    shaped: Run, name: str
) -> None:
    sent = str(SHAPES[name])
    mine = [(key, r) for key, r in shaped.replies if r.ticket_id == sent]
    assert len(mine) == 1, (name, [r.ticket_id for _, r in shaped.replies])
    key, reply = mine[0]
    assert (reply.session_id, reply.customer_id) == (sent, sent)
    assert key == sent.encode("utf-8")
    # The look-up found this customer's order, and no lookalike's.
    assert reply.order_id == f"O-{3000 + list(SHAPES).index(name)}", reply
    assert not shaped.dead_letters, shaped.dead_letters


def _baton_on_path(d: Deployment, cwd: Path) -> dict[str, str]:
    """This deployment's environment with the installed ``baton`` command on PATH."""
    env = d.env()
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return env


@pytest.mark.timeout(300)
# The shapes a shell reads specially; the others are the id round trip's (above).
@pytest.mark.parametrize("name", ["shell and quotes", "leading dash", "inner space"])
def test_the_dashboards_trace_command_traces_that_session_through_a_shell(
    shaped: Run, name: str, tmp_path: Path
) -> None:
    session = str(SHAPES[name])
    command = trace_command(session).replace("baton trace", "baton trace --json", 1)
    done = subprocess.run(
        ["sh", "-c", command],
        env=_baton_on_path(shaped.d, tmp_path),
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert not (tmp_path / "pwned").exists()
    doc = json.loads(done.stdout)
    assert doc["session_id"] == session and doc["found"]
    assert [t["ticket_id"] for t in doc["tickets"]] == [session]
    assert doc["tickets"][0]["reply"]["session_id"] == session
