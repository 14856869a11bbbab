"""Every model failure path end to end: what reaches support.replies and support.dead-letters.

One worker handles one ticket per path (each in its own session) against the Messages-API
stand-in, whose fault directives make the model misbehave; two more deployments cover the
session token budget, per-stage models and a slow call.
"""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer

from baton_kafka.agents.models.prices import PRICES, cost, price_for
from baton_kafka.agents.prompts import PROMPT_VERSION
from baton_kafka.schemas import Baton, CallUsage, DeadLetter, Reply
from baton_kafka.schemas.records import UsageTotals
from tests.fixtures import delivery
from tests.fixtures.brokers import Broker
from tests.fixtures.data import ORDERS_TWO_KETTLES, ticket_record
from tests.fixtures.deployments import Deployment, open_deployment

# How model faults are handled does not depend on the broker: one leg is enough.
pytestmark = [pytest.mark.integration, pytest.mark.one_broker]

LEAK = "My kettle is leaking, I want a refund."
AMBIGUOUS = "My electric kettle is leaking, please help."
# name: (customer, text); the ticket id is "<namespace>-<name>", the session "<id>-s".
PATHS: dict[str, tuple[str, str]] = {
    "ok": ("c-ana", LEAK),
    "json": ("c-ana", f"{LEAK} [[fault:invalid_json:understand:9]]"),
    "schema": ("c-ana", f"{LEAK} [[fault:schema:strategy:9]]"),
    "rule-understand": ("c-ana", f"{LEAK} [[fault:rule:understand:9]]"),
    "rule-lookup": ("c-kim", f"{AMBIGUOUS} [[fault:rule:lookup:9]]"),
    "rule-strategy": ("c-ana", f"{LEAK} [[fault:rule:strategy:9]]"),
    "rule-fixed": ("c-ana", f"{LEAK} [[fault:rule:strategy:1]]"),
    "429": ("c-ana", f"{LEAK} [[fault:429:understand:1]]"),
    "529": ("c-ana", f"{LEAK} [[fault:529:strategy:1]]"),
    "529-always": ("c-ana", f"{LEAK} [[fault:529:strategy:9]]"),
    "500": ("c-ana", f"{LEAK} [[fault:500:understand:1]]"),
    "500-always": ("c-ana", f"{LEAK} [[fault:500:understand:9]]"),
    "hang": ("c-ana", f"{LEAK} [[fault:hang:understand:1]]"),
    "hang-always": ("c-ana", f"{LEAK} [[fault:hang:9]]"),
    "max-tokens": ("c-ana", f"{LEAK} [[fault:max_tokens:strategy:1]]"),
    "max-tokens-always": ("c-ana", f"{LEAK} [[fault:max_tokens:understand:9]]"),
    "refusal": ("c-ana", f"{LEAK} [[fault:refusal:strategy]]"),
    "spend": ("c-ana", f"{LEAK} [[fault:spend_limit:9]]"),
    "spend-again": ("c-ana", f"{LEAK} [[fault:spend_limit:9]]"),
    "drift": ("c-ana", f"{LEAK} [[fault:drift:strategy:1]]"),
    "drift-always": ("c-ana", f"{LEAK} [[fault:drift:strategy:2]]"),
}
LEDGER = ["My kettle is leaking, I want a refund.", "Can it be repaired?", "How long?"]
TIMEOUT_S, RETRIES, TICKET_BUDGET_S = 2, 2, 6


@dataclass
class Run:
    """What one deployment produced, by ticket."""

    deployment: Deployment
    prefix: str
    replies: list[Reply]
    letters: list[DeadLetter]
    requests: list[dict[str, Any]]
    batons: dict[str, Baton]
    log: str

    def tid(self, name: str) -> str:
        return f"{self.prefix}-{name}"

    def reply(self, name: str) -> Reply:
        (reply,) = [r for r in self.replies if r.ticket_id == self.tid(name)]
        return reply

    def dead(self, name: str) -> list[tuple[str, str]]:
        """(stage, reason) of the ticket's dead letters, in pipeline order."""
        order = {"intake": 0, "understand": 1, "lookup": 2, "strategy": 3}
        found = [(d.stage, d.reason) for d in self.letters if d.ticket_id == self.tid(name)]
        return sorted(found, key=lambda sr: order[sr[0]])

    def letter(self, name: str, stage: str) -> DeadLetter:
        (dl,) = [d for d in self.letters if d.ticket_id == self.tid(name) and d.stage == stage]
        return dl

    def calls(self, name: str, stage: str | None = None) -> list[dict[str, Any]]:
        return [
            r
            for r in self.requests
            if r["ticket_id"] == self.tid(name) and stage in (None, r["stage"])
        ]


def _ticket(prefix: str, name: str, customer: str, text: str, session: str = "") -> dict:
    """The ticket of a path: id ``<prefix>-<name>``, in a session of its own unless given."""
    tid = f"{prefix}-{name}"
    return ticket_record(tid, session or f"{tid}-s", customer, text)


async def _batons(deployment: Deployment) -> dict[str, Baton]:
    """The newest baton of every session, from the table's changelog."""
    consumer = AIOKafkaConsumer(
        f"baton-{deployment.namespace}-batons-changelog",
        bootstrap_servers=deployment.broker.bootstrap,
        group_id=None,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    out: dict[str, Baton] = {}
    try:
        quiet = 0
        while quiet < 5:
            batch = await consumer.getmany(timeout_ms=300)
            quiet = 0 if any(batch.values()) else quiet + 1
            for records in batch.values():
                for r in records:
                    if r.value:
                        baton = Baton.model_validate_json(r.value)
                        out[baton.session_id] = baton
    finally:
        await consumer.stop()
    return out


async def collect(
    deployment: Deployment, standin: Any, prefix: str, replies: int, letters: int
) -> Run:
    got = await delivery.replies(deployment, replies, quiet=3.0, timeout=150)
    records = await delivery.drain(
        deployment, "support.dead-letters", at_least=letters, quiet=2.0, timeout=60
    )
    return Run(
        deployment=deployment,
        prefix=prefix,
        replies=got,
        letters=[DeadLetter.model_validate_json(r.value) for r in records],
        requests=[r for r in standin.stats()["requests"] if str(r["ticket_id"]).startswith(prefix)],
        batons=await _batons(deployment),
        log="\n".join(w.log.read_text(errors="replace") for w in deployment.workers),
    )


EXPECTED_LETTERS = 16


@pytest.fixture(scope="module")
def run(broker: Broker, standin: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """One worker, one ticket per failure path, plus a three-ticket session for the ledger."""
    with open_deployment(
        broker,
        standin.base_url,
        tmp_path_factory.mktemp("faults"),
        BATON_MODEL_TIMEOUT=str(TIMEOUT_S),
        BATON_MODEL_MAX_RETRIES=str(RETRIES),
        BATON_TICKET_MODEL_BUDGET=str(TICKET_BUDGET_S),
        # The stand-in files a call under the ticket its facts name; the reader's call carries
        # only the reply, so the per-ticket ledger is checked without it (test_reader.py
        # checks the reader's own counting).
        BATON_READER="off",
    ) as deployment:
        namespace = deployment.namespace
        tickets = [_ticket(namespace, name, *path) for name, path in PATHS.items()]
        tickets += [
            _ticket(namespace, f"ledger-{i}", "c-ana", text, session=f"{namespace}-ledger")
            for i, text in enumerate(LEDGER)
        ]
        deployment.import_orders(ORDERS_TWO_KETTLES)
        deployment.start_worker()
        asyncio.run(deployment.publish_tickets(tickets))
        yield asyncio.run(collect(deployment, standin, namespace, len(tickets), EXPECTED_LETTERS))


def test_every_ticket_is_answered_exactly_once_and_no_letter_is_extra(run: Run) -> None:
    published = {f"{run.tid(n)}-s": [run.tid(n)] for n in PATHS}
    published[f"{run.prefix}-ledger"] = [run.tid(f"ledger-{i}") for i in range(len(LEDGER))]
    delivery.Tally(published, run.replies).assert_exactly_once_in_order()
    assert len(run.letters) == EXPECTED_LETTERS
    for reply in run.replies:
        letters = [d for d in run.letters if d.ticket_id == reply.ticket_id]
        assert (reply.status == "answered") == (not letters), (reply.ticket_id, letters)
        for dl in letters:
            assert dl.ticket is not None and dl.ticket.ticket_id == reply.ticket_id
            assert dl.prompt_version == PROMPT_VERSION and dl.model and dl.attempts >= 1


def test_invalid_json_is_reasked_once_then_the_rules_answer(run: Run) -> None:
    assert run.dead("json") == [("understand", "validation_failed")]
    dl = run.letter("json", "understand")
    assert dl.attempts == 2 and "Invalid JSON" in dl.error
    assert dl.payload.startswith("Here is the JSON") and dl.model == "claude-sonnet-4-6"
    assert len(run.calls("json", "understand")) == 2
    reply = run.reply("json")
    assert reply.status == "degraded" and reply.order_id == "O-1001"


def test_a_schema_violation_at_strategy_hands_off(run: Run) -> None:
    assert run.dead("schema") == [("strategy", "validation_failed")]
    dl = run.letter("schema", "strategy")
    assert "Field required" in dl.error and dl.payload.startswith("{") and dl.attempts == 2
    reply = run.reply("schema")
    assert reply.status == "handoff" and "O-1001" in reply.reply and reply.confidence == 0


@pytest.mark.parametrize(
    ("name", "stage", "complaint", "status"),
    [
        ("rule-understand", "understand", "'Invented Gadget 9000' is named neither", "degraded"),
        ("rule-lookup", "lookup", "'ORD-INVENTED-0000' is not one of the candidates", "degraded"),
        ("rule-strategy", "strategy", "confidence: Input should be less than or equal", "handoff"),
    ],
)
def test_business_rule_violations_are_reasked_then_fall_back(
    run: Run, name: str, stage: str, complaint: str, status: str
) -> None:
    assert run.dead(name) == [(stage, "validation_failed")]
    dl = run.letter(name, stage)
    assert complaint in dl.error and dl.attempts == 2
    assert len(run.calls(name, stage)) == 2
    reply = run.reply(name)
    assert reply.status == status
    if stage == "lookup":
        # The two kettles fit equally (same product words, date and status): the rules do not
        # guess one; the reply names both and asks which one is meant.
        assert reply.order_id is None
        assert "O-3001" in reply.reply and "O-3002" in reply.reply
    else:
        assert reply.order_id == "O-1001"
    assert "INVENTED" not in reply.reply and "Invented" not in reply.reply


def test_a_rule_violation_fixed_by_the_reask_is_answered(run: Run) -> None:
    assert run.dead("rule-fixed") == []
    assert run.reply("rule-fixed").status == "answered"
    assert len(run.calls("rule-fixed", "strategy")) == 2


def test_rate_limit_is_retried_after_retry_after(run: Run) -> None:
    first, second = run.calls("429", "understand")
    assert (first["status"], second["status"]) == (429, 200)
    assert second["at"] - first["at"] >= 1.0  # the stand-in says retry-after: 1
    assert run.reply("429").status == "answered" and run.dead("429") == []


@pytest.mark.parametrize(("fault", "stage"), [("529", "strategy"), ("500", "understand")])
def test_transient_errors_are_retried_then_given_up(run: Run, fault: str, stage: str) -> None:
    assert [c["status"] for c in run.calls(fault, stage)] == [int(fault), 200]
    assert run.reply(fault).status == "answered" and run.dead(fault) == []
    always = f"{fault}-always"
    assert [c["status"] for c in run.calls(always, stage)] == [int(fault)] * (RETRIES + 1)
    assert run.dead(always) == [(stage, "model_error")]
    assert f"gave up after {RETRIES + 1} attempts" in run.letter(always, stage).error
    assert run.reply(always).status == "degraded"  # the rules answered for the stage


def test_a_hang_times_out_and_the_retry_answers(run: Run) -> None:
    assert [c["status"] for c in run.calls("hang", "understand")] == [499, 200]
    assert run.reply("hang").status == "answered" and run.dead("hang") == []


def test_endless_hangs_stop_at_the_ticket_model_time_budget(run: Run) -> None:
    assert run.dead("hang-always") == [("understand", "timeout"), ("strategy", "timeout")]
    budget = f"time budget of {TICKET_BUDGET_S} s is spent"
    assert budget in run.letter("hang-always", "strategy").error
    calls = run.calls("hang-always")
    assert all(c["status"] == 499 for c in calls)
    span = max(c["at"] for c in calls) - min(c["at"] for c in calls)
    assert len(calls) <= RETRIES + 2 and span < TICKET_BUDGET_S
    reply = run.reply("hang-always")
    assert reply.status == "degraded" and reply.order_id == "O-1001"


def test_max_tokens_is_reasked_once_with_more_room(run: Run) -> None:
    assert [c["max_tokens"] for c in run.calls("max-tokens", "strategy")] == [1024, 2048]
    assert run.reply("max-tokens").status == "answered" and run.dead("max-tokens") == []
    assert run.dead("max-tokens-always") == [("understand", "max_tokens")]
    dl = run.letter("max-tokens-always", "understand")
    assert dl.payload.startswith("{") and dl.attempts == 2
    assert run.reply("max-tokens-always").status == "degraded"


def test_a_refusal_hands_off(run: Run) -> None:
    assert run.dead("refusal") == [("strategy", "model_refused")]
    assert len(run.calls("refusal", "strategy")) == 1  # a refusal is not asked again
    reply = run.reply("refusal")
    assert reply.status == "handoff" and "O-1001" in reply.reply


def test_a_spend_limit_is_never_retried_hands_off_and_alarms_once(run: Run) -> None:
    for name in ("spend", "spend-again"):
        assert run.dead(name) == [("understand", "spend_limit"), ("strategy", "spend_limit")]
        assert Counter(c["stage"] for c in run.calls(name)) == {"understand": 1, "strategy": 1}
        assert run.reply(name).status == "handoff"
    # Four hits within a minute: one ERROR line.
    assert run.log.count("MODEL SPEND LIMIT REACHED") == 1


def test_drift_is_reasked_once_then_degraded(run: Run) -> None:
    assert len(run.calls("drift", "strategy")) == 2
    assert run.reply("drift").status == "answered" and run.dead("drift") == []
    assert run.dead("drift-always") == [("strategy", "drift")]
    dl = run.letter("drift-always", "strategy")
    assert "must name order O-1001" in dl.error and "We have received" in dl.payload
    reply = run.reply("drift-always")
    assert reply.status == "degraded" and "O-1001" in reply.reply  # the rules' reply


def _tokens(calls: list[dict[str, Any]]) -> CallUsage:
    return CallUsage(
        stage="strategy",
        model="sum",
        input_tokens=sum(c["input_tokens"] for c in calls),
        output_tokens=sum(c["output_tokens"] for c in calls),
        cache_read_tokens=sum(c["cache_read_input_tokens"] for c in calls),
        cache_write_tokens=sum(c["cache_creation_input_tokens"] for c in calls),
    )


def test_the_usage_ledger_adds_up_per_call_stage_ticket_and_session(run: Run) -> None:
    for reply in run.replies:
        name = reply.ticket_id.removeprefix(f"{run.prefix}-")
        answered = [c for c in run.calls(name) if "input_tokens" in c]
        total = _tokens(answered)
        usage = reply.usage
        assert usage.calls == len(answered)
        assert usage.by_stage == dict(Counter(c["stage"] for c in answered))
        assert (usage.input_tokens, usage.output_tokens) == (
            total.input_tokens,
            total.output_tokens,
        )
        assert usage.cache_read_tokens == total.cache_read_tokens
        assert usage.cache_write_tokens == total.cache_write_tokens
        priced = sum(cost(_tokens([c]), price_for(c["model"], PRICES)) for c in answered)
        assert usage.cost_usd == pytest.approx(priced, abs=1e-6)
    ledger = [run.reply(f"ledger-{i}") for i in range(len(LEDGER))]
    assert all(r.status == "answered" for r in ledger)
    # Every call sends the static prefix with cache_control: it is written or read each time.
    assert all(r.usage.cache_read_tokens + r.usage.cache_write_tokens > 0 for r in ledger)
    assert ledger[-1].usage.cache_read_tokens > ledger[-1].usage.input_tokens
    session = UsageTotals()
    for r in ledger:
        session = session.merge(r.usage)
    baton = run.batons[f"{run.prefix}-ledger"]
    assert baton.usage.model_dump(exclude={"cost_usd"}) == session.model_dump(exclude={"cost_usd"})
    assert baton.usage.cost_usd == pytest.approx(session.cost_usd, abs=1e-6)


def test_default_models_per_stage_follow_the_address(run: Run) -> None:
    # The stand-in is not Anthropic's API: every stage gets BATON_MODEL, not the API's haiku.
    models: dict[str, set[str]] = defaultdict(set)
    for call in run.requests:
        models[call["stage"]].add(call["model"])
    assert models == {
        "understand": {"claude-sonnet-4-6"},
        "lookup": {"claude-sonnet-4-6"},
        "strategy": {"claude-sonnet-4-6"},
    }


async def test_a_slow_call_delays_only_its_session_and_stage_models_follow_the_env(
    deployment: Deployment, standin: Any
) -> None:
    prefix = deployment.namespace
    deployment.import_orders(ORDERS_TWO_KETTLES)
    deployment.start_worker(
        BATON_MODEL_TIMEOUT="10",
        BATON_MODEL_UNDERSTAND="claude-sonnet-4-5",
        BATON_MODEL_LOOKUP="claude-opus-4-5",
        BATON_MODEL_STRATEGY="claude-haiku-4-5",
    )
    slow = _ticket(prefix, "slow", "c-ana", f"{LEAK} [[fault:hang:understand:1]]")
    fast = [
        _ticket(prefix, f"fast-{i}", "c-kim", text, session=f"{prefix}-fast")
        for i, text in enumerate([AMBIGUOUS, "Can it be repaired?", "How long will it take?"])
    ]
    await deployment.publish_tickets([slow])
    await deployment.publish_tickets(fast)
    replies = await delivery.replies(deployment, 4, timeout=120)
    by_id = {r.ticket_id.removeprefix(f"{prefix}-"): r for r in replies}
    assert len(replies) == 4 and all(r.status == "answered" for r in replies)
    # The slow session waited out a 10 s timeout; the other session did not wait for it.
    assert all(by_id[f"fast-{i}"].replied_at < by_id["slow"].replied_at for i in range(3))
    calls = [r for r in standin.stats()["requests"] if str(r["ticket_id"]).startswith(prefix)]
    slow_understand = [c for c in calls if c["ticket_id"].endswith("-slow")]
    assert [c["status"] for c in slow_understand if c["stage"] == "understand"] == [499, 200]
    models = {(c["stage"], c["model"]) for c in calls}
    assert models == {
        ("understand", "claude-sonnet-4-5"),
        ("lookup", "claude-opus-4-5"),
        ("strategy", "claude-haiku-4-5"),
    }
    assert price_for("claude-opus-4-5", PRICES) is not None


async def test_a_spent_session_budget_hands_off_without_more_model_calls(
    deployment: Deployment, standin: Any
) -> None:
    prefix = deployment.namespace
    deployment.import_orders(ORDERS_TWO_KETTLES)
    deployment.start_worker(BATON_SESSION_TOKEN_BUDGET="1")
    session = [
        _ticket(prefix, f"b{i}", "c-ana", text, session=f"{prefix}-budget")
        for i, text in enumerate(LEDGER)
    ]
    await deployment.publish_tickets(session)
    replies = await delivery.replies(deployment, len(session), timeout=90)
    records = await delivery.drain(deployment, "support.dead-letters", at_least=3, quiet=2.0)
    letters = [DeadLetter.model_validate_json(r.value) for r in records]
    delivery.Tally(delivery.sessions(session), replies).assert_exactly_once_in_order()
    assert all(r.status == "handoff" for r in replies)
    # One dead letter per ticket: the stage that writes the reply reports the spent budget.
    assert sorted((d.ticket_id, d.stage, d.reason) for d in letters) == [
        (f"{prefix}-b{i}", "strategy", "budget_exceeded") for i in range(3)
    ]
    calls = [r for r in standin.stats()["requests"] if str(r["ticket_id"]).startswith(prefix)]
    # The first ticket's understand call spends the budget; nothing is called after it.
    assert [(c["ticket_id"], c["stage"]) for c in calls] == [(f"{prefix}-b0", "understand")]
    first = next(r for r in replies if r.ticket_id == f"{prefix}-b0")
    assert first.usage.calls == 1 and first.usage.by_stage == {"understand": 1}
    assert all(r.usage.calls == 0 for r in replies if r is not first)
    assert all("O-1001" in r.reply for r in replies)
