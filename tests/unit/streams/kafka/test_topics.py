"""baton's topics: retention per topic, and a describe that waits for just-created topics."""

from __future__ import annotations

from typing import Any

import pytest

from baton_kafka.schemas.topics import ALL, ROLES, topic_problem
from baton_kafka.streams.kafka.topics import (
    TopicMismatch,
    TopicNames,
    TopicRefused,
    _described,
    changelogs,
    check_topics,
    refusals,
    topic_configs,
    wanted_partitions,
)
from baton_kafka.streams.settings import Settings, SettingsError, load

CHOSEN = {f"BATON_TOPIC_{role.upper()}": f"prod.cs.{role}.v1" for role in ROLES}


def test_every_topic_has_a_setting_that_renames_it_and_the_namespace_prefixes_it() -> None:
    assert sorted(ROLES.values()) == sorted(ALL)
    names = TopicNames.of(load({**CHOSEN, "BATON_NAMESPACE": "stage"}))
    assert names.tickets == "stage.prod.cs.tickets.v1"
    assert names.all() == tuple(f"stage.prod.cs.{role}.v1" for role in ROLES)
    assert TopicNames.of(load(CHOSEN)).replies == "prod.cs.replies.v1"
    # Only the topics named change; the others keep their default names.
    one = TopicNames.of(load({"BATON_TOPIC_REPLIES": "out"}))
    assert (one.replies, one.tickets) == ("out", "support.tickets")


def test_a_renamed_dead_letter_topic_keeps_the_longer_retention() -> None:
    s = load({"BATON_TOPIC_DEAD_LETTERS": "prod.cs.dlq", "BATON_DEAD_LETTER_RETENTION_DAYS": "30"})
    assert topic_configs(s, "prod.cs.dlq")["retention.ms"] == str(30 * 86_400_000)
    assert topic_configs(s, "support.dead-letters")["retention.ms"] == str(7 * 86_400_000)


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("", "is empty"),
        (".", "is reserved by Kafka"),
        ("..", "is reserved by Kafka"),
        ("a" * 250, "has 250 characters, Kafka allows at most 249"),
        ("prod cs", "holds ' '"),
        ("prod/cs", "holds '/'"),
        ("tickets:v1", "holds ':'"),
        ("tickéts", "holds 'é'"),
        ("a\nb", "holds U+000A"),
    ],
)
def test_kafkas_topic_name_rule(name: str, problem: str) -> None:
    assert problem in (topic_problem(name) or "")


def test_legal_topic_names_pass() -> None:
    for name in ("prod.cs.tickets.v1", "a" * 249, "A_b-C.9", "support.tickets"):
        assert topic_problem(name) is None, name


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"BATON_TOPIC_TICKETS": "prod cs"},
            "BATON_TOPIC_TICKETS: the topic name 'prod cs' holds ' '",
        ),
        (
            {"BATON_NAMESPACE": "n" * 200, "BATON_TOPIC_MEMORY_INDEX": "x" * 49},
            "BATON_TOPIC_MEMORY_INDEX: the topic name 'nnnn",
        ),
        ({"BATON_NAMESPACE": "a b"}, "BATON_NAMESPACE 'a b' holds ' '"),
        (
            {"BATON_TOPIC_REPLIES": "out", "BATON_TOPIC_TICKETS": "out"},
            "BATON_TOPIC_REPLIES: 'out' is already the tickets topic",
        ),
        (
            {"BATON_TOPIC_REPLIES": "support_tickets"},
            "Kafka takes 'support_tickets' for 'support.tickets', the tickets topic",
        ),
        (
            {"BATON_TOPIC_TICKETS": "baton-batons-changelog"},
            "is already the batons table's changelog",
        ),
    ],
)
def test_a_bad_topic_setting_is_one_line_naming_it(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError) as raised:
        load(env)
    assert message in str(raised.value)
    assert "\n" not in str(raised.value) and len(str(raised.value)) < 300


def test_the_longest_legal_names_pass() -> None:
    # 249 characters with the namespace and its dot.
    s = load({"BATON_NAMESPACE": "n" * 100, "BATON_TOPIC_TICKETS": "t" * 148})
    assert len(s.topic("support.tickets")) == 249


def test_dead_letters_are_kept_longer_than_the_hops() -> None:
    settings = Settings(namespace="ns", retention_days=7, dead_letter_retention_days=30)
    assert topic_configs(settings, "ns.support.replies") == {
        "cleanup.policy": "delete",
        "retention.ms": str(7 * 86_400_000),
    }
    assert topic_configs(settings, "ns.support.dead-letters")["retention.ms"] == str(
        30 * 86_400_000
    )


def test_changelogs_are_compacted_and_sized_like_their_tables() -> None:
    settings = Settings(namespace="ns", partitions=6)
    assert changelogs(settings) == {
        "baton-ns-batons-changelog": 6,
        "baton-ns-customers-changelog": 1,
        "baton-ns-actions-changelog": 6,
    }
    assert topic_configs(settings, "baton-ns-batons-changelog") == {
        "cleanup.policy": "compact",
        "max.compaction.lag.ms": str(7 * 86_400_000),
    }


class LateAdmin:
    """Answers "unknown topic" (no partitions) for its first describes, as Kafka does."""

    def __init__(self, late: int) -> None:
        self.late = late
        self.calls = 0

    async def describe_topics(self, topics: list[str]) -> list[dict[str, Any]]:
        self.calls += 1
        ready = self.calls > self.late
        return [
            {"topic": t, "error_code": 0 if ready else 3, "partitions": [{}] * 4 if ready else []}
            for t in topics
        ]


async def test_a_just_created_topic_is_described_once_the_broker_lists_it() -> None:
    admin = LateAdmin(late=3)
    assert await _described(admin, ["a", "b"]) == {"a": 4, "b": 4}
    assert admin.calls == 4


async def test_a_topic_that_never_appears_is_reported_missing_after_the_wait() -> None:
    admin = LateAdmin(late=10**6)
    assert await _described(admin, ["a"], patience_s=0.2) == {}


class PartialAdmin(LateAdmin):
    """Lists only the ``present`` topics, with their partition counts."""

    def __init__(self, present: dict[str, int]) -> None:
        super().__init__(late=0)
        self.present = present

    async def describe_topics(self, topics: list[str]) -> list[dict[str, Any]]:
        return [
            {"topic": t, "partitions": [{}] * self.present[t] if t in self.present else []}
            for t in topics
        ]


def test_every_per_topic_error_of_a_create_is_read_except_already_exists() -> None:
    answers = [
        ("a", 0, None),
        ("b", 36, "Topic 'b' already exists."),
        ("c", 44, "Replication factor 1 is below the required 3"),
        ("d", 29, None),
    ]
    assert refusals(answers) == {
        "c": "POLICY_VIOLATION: Replication factor 1 is below the required 3",
        "d": "TOPIC_AUTHORIZATION_FAILED: Returned by the broker when the client is not "
        "authorized to access the requested topic.",
    }


def test_a_refused_topic_that_is_absent_is_one_line_naming_it_and_why() -> None:
    settings = Settings(namespace="ns", partitions=4)
    counts = {t: n for t, n in wanted_partitions(settings).items() if t != "ns.support.replies"}
    refused = {"ns.support.replies": "POLICY_VIOLATION: replication factor must be 3"}
    with pytest.raises(TopicRefused) as caught:
        check_topics(settings, counts, refused)
    message = str(caught.value)
    assert "\n" not in message
    assert "ns.support.replies" in message and "POLICY_VIOLATION" in message


def test_a_refused_topic_created_beforehand_by_someone_else_is_used() -> None:
    settings = Settings(namespace="ns", partitions=4)
    counts = wanted_partitions(settings)
    check_topics(settings, counts, {"ns.support.replies": "TOPIC_AUTHORIZATION_FAILED: denied"})


@pytest.mark.parametrize(
    ("topic", "found", "says"),
    [
        ("baton-ns-batons-changelog", 2, "BATON_PARTITIONS is 4"),
        ("ns.support.replies", 6, "BATON_PARTITIONS is 4"),
        ("ns.support.memory-index", 3, "it must have 1"),
    ],
)
def test_an_existing_topic_with_another_partition_count_is_named(
    topic: str, found: int, says: str
) -> None:
    settings = Settings(namespace="ns", partitions=4)
    counts = wanted_partitions(settings) | {topic: found}
    with pytest.raises(TopicMismatch, match=f"topic {topic} has {found} partitions but {says}"):
        check_topics(settings, counts, {})


def test_tickets_and_dead_letters_may_have_any_partition_count() -> None:
    settings = Settings(namespace="ns", partitions=4)
    counts = wanted_partitions(settings) | {"ns.support.tickets": 12, "ns.support.dead-letters": 1}
    check_topics(settings, counts, {})


async def test_a_create_answered_with_errors_raises_refused_without_waiting() -> None:
    settings = Settings(namespace="ns", partitions=4)
    names = list(wanted_partitions(settings))
    admin = PartialAdmin(present={})
    response = [(t, 38, "Replication factor: 3 larger than available brokers: 1.") for t in names]
    refused = refusals(response)
    assert await _described(admin, []) == {}
    counts = await _described(admin, list(refused), patience_s=0.0)
    with pytest.raises(TopicRefused, match="INVALID_REPLICATION_FACTOR: Replication factor: 3"):
        check_topics(settings, counts, refused)
