"""Topic names checked against what Kafka accepts, naming the setting that made each."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from baton_kafka.schemas.topics import ROLES, topic_problem
from baton_kafka.streams.config.spec import SettingsError
from baton_kafka.streams.config.spec import cut as _cut

if TYPE_CHECKING:
    from baton_kafka.streams.config.declared import Settings


def check_topics(settings: Settings) -> Settings:
    """Raise ``SettingsError`` (one line per problem, naming the setting) when Kafka would
    refuse topic names ``settings`` make, or two of them are one topic to Kafka."""
    problems: list[str] = []
    if settings.namespace:
        problem = topic_problem(settings.namespace)
        if problem:
            raise SettingsError(f"BATON_NAMESPACE {_cut(settings.namespace)} {problem}")
    # The tables' changelogs are named by Faust: <app id>-<table>-changelog.
    names = {
        f"{settings.app_id}-{table}-changelog": f"the {table} table's changelog"
        for table in ("batons", "customers", "actions")
    }
    for name in names:
        problems += _check_topic(name, "BATON_NAMESPACE", {})
    for role, default in ROLES.items():
        chosen = default in settings.topic_names
        setting = f"BATON_TOPIC_{role.upper()}" if chosen else "BATON_NAMESPACE"
        name = settings.topic(default)
        problems += _check_topic(name, setting, names)
        names[name] = f"the {role.replace('_', ' ')} topic"
    if problems:
        # One line per setting: a namespace too long makes every name too long.
        first = {line.split(":", 1)[0]: line for line in reversed(problems)}
        raise SettingsError("\n".join(line for line in problems if line in first.values()))
    return settings


def _check_topic(name: str, setting: str, taken: Mapping[str, str]) -> list[str]:
    problem = topic_problem(name)
    if problem:
        return [f"{setting}: the topic name {_cut(name)} {problem}"]
    if name in taken:
        return [f"{setting}: {_cut(name)} is already {taken[name]}"]
    # Kafka refuses a topic whose name differs from another's only by '.' against '_'.
    clash = next((n for n in taken if n.replace(".", "_") == name.replace(".", "_")), None)
    if clash is not None:
        return [
            f"{setting}: Kafka takes {_cut(name)} for {_cut(clash)}, {taken[clash]} ('.' and "
            "'_' collide in topic names)"
        ]
    return []
