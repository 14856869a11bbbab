"""OAUTHBEARER to a real Apache Kafka (its unsecured JWS validator): a worker logs in with a
client-credentials token from an OIDC endpoint; publish and tail with a fixed token and with a
``module:callable`` provider; a refused client or token is one line, with no secret shown."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from baton_kafka.schemas.records import Reply
from tests.fixtures.brokers import Broker
from tests.fixtures.data import ORDERS, ticket_record
from tests.fixtures.deployments import Deployment
from tests.fixtures.oauth_kafka import (
    CLIENT_ID,
    CLIENT_SECRET,
    TokenEndpoint,
    oauth_kafka,
    token_endpoint,
    unsecured_jws,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    with oauth_kafka(tmp_path_factory.mktemp("oauth-kafka")) as broker:
        yield broker


@pytest.fixture(scope="module")
def endpoint() -> Iterator[TokenEndpoint]:
    with token_endpoint() as seen:
        yield seen


def on(kafka: Broker, data_dir: Path, namespace: str, **env: str) -> Deployment:
    """A namespace on the OAUTHBEARER broker with the offline model and ``env``'s login."""
    return Deployment(
        broker=kafka,
        namespace=namespace,
        data_dir=data_dir,
        env_extra={"BATON_LLM": "offline", **env},
    )


def oidc(endpoint: TokenEndpoint, secret: str = CLIENT_SECRET) -> dict[str, str]:
    return {
        "BATON_KAFKA_OAUTH_TOKEN_URL": endpoint.url,
        "BATON_KAFKA_OAUTH_CLIENT_ID": CLIENT_ID,
        "BATON_KAFKA_OAUTH_CLIENT_SECRET": secret,
        "BATON_KAFKA_OAUTH_SCOPE": "kafka",
    }


def publish_and_tail(d: Deployment, tmp_path: Path, tid: str) -> list[dict]:
    tickets = tmp_path / f"{tid}.jsonl"
    tickets.write_bytes(orjson.dumps(ticket_record(tid, f"s-{tid}", "c-ana", "Hello")) + b"\n")
    published = d.baton("publish", str(tickets))
    assert published.returncode == 0, published.stderr.decode()
    tailed = d.baton("tail", d.topic("support.tickets"), "--from-beginning", "--limit", "1")
    assert tailed.returncode == 0, tailed.stderr.decode()
    return [orjson.loads(line) for line in tailed.stdout.splitlines()]


def test_a_worker_answers_with_client_credentials_tokens(
    kafka: Broker, endpoint: TokenEndpoint, tmp_path: Path, namespace: str
) -> None:
    d = on(kafka, tmp_path, namespace, **oidc(endpoint))
    try:
        d.import_orders(ORDERS)
        worker = d.start_worker()
        tickets = tmp_path / "tickets.jsonl"
        ticket = ticket_record("oa-1", "s-oa", "c-ana", "My kettle is leaking, I want a refund.")
        tickets.write_bytes(orjson.dumps(ticket) + b"\n")
        published = d.baton("publish", str(tickets))
        assert published.returncode == 0, published.stderr.decode()
        tailed = d.baton(
            "tail", d.topic("support.replies"), "--from-beginning", "--limit", "1", timeout=120
        )
        assert tailed.returncode == 0, tailed.stderr.decode() + worker.tail_log()
        reply = Reply.model_validate_json(tailed.stdout.decode().strip())
        assert reply.ticket_id == "oa-1" and reply.status == "answered"
    finally:
        d.stop()
    assert endpoint.requests, "no token was asked for"
    assert all(
        r == {"grant_type": "client_credentials", "scope": "kafka", "authenticated": True}
        for r in endpoint.requests
    )
    assert CLIENT_SECRET not in worker.log.read_text(errors="replace")


def test_a_fixed_token_and_a_provider_of_one_s_own_log_in(
    kafka: Broker, tmp_path: Path, namespace: str
) -> None:
    fixed = on(kafka, tmp_path, namespace, BATON_KAFKA_OAUTH_TOKEN=unsecured_jws())
    assert [t["ticket_id"] for t in publish_and_tail(fixed, tmp_path, "fixed-1")] == ["fixed-1"]
    own = on(
        kafka,
        tmp_path,
        namespace + "p",
        BATON_KAFKA_OAUTH_PROVIDER="tests.fixtures.oauth_kafka:token",
    )
    assert [t["ticket_id"] for t in publish_and_tail(own, tmp_path, "own-1")] == ["own-1"]


def one_line(done: subprocess.CompletedProcess[bytes], elapsed: float, *expected: str) -> str:
    stderr = done.stderr.decode()
    assert done.returncode == 1, stderr
    assert elapsed < 20, f"took {elapsed:.1f}s"
    assert len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr, stderr
    for text in expected:
        assert text in stderr, stderr
    return stderr


def test_a_refused_client_is_one_line_naming_the_endpoint_not_the_secret(
    kafka: Broker, endpoint: TokenEndpoint, tmp_path: Path, namespace: str
) -> None:
    d = on(kafka, tmp_path, namespace, **oidc(endpoint, secret="wrong-secret-0c1d"))
    started = time.monotonic()
    done = d.baton("tail", "anything", "--limit", "1")
    line = one_line(done, time.monotonic() - started, "cannot authenticate", endpoint.url, "401")
    assert "wrong-secret-0c1d" not in line and CLIENT_SECRET not in line


def test_a_token_the_broker_rejects_is_one_line(
    kafka: Broker, tmp_path: Path, namespace: str
) -> None:
    expired = unsecured_jws(lifetime_s=-600)
    d = on(kafka, tmp_path, namespace, BATON_KAFKA_OAUTH_TOKEN=expired)
    started = time.monotonic()
    done = d.baton("tail", "anything", "--limit", "1")
    line = one_line(done, time.monotonic() - started, "cannot authenticate", "OAUTHBEARER")
    assert "BATON_KAFKA_OAUTH_TOKEN" in line and expired not in line
