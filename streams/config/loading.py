"""Settings built from their sources, checked, and rendered back for a child process."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import MISSING, Field, fields, replace
from pathlib import Path
from typing import Any

from baton_kafka.streams.config.declared import Settings
from baton_kafka.streams.config.kafka import KafkaSecurity, check_security
from baton_kafka.streams.config.sources import Sourced, gather
from baton_kafka.streams.config.spec import SettingsError, Spec, spec_of
from baton_kafka.streams.config.topics import check_topics
from baton_kafka.streams.config.values import NAMED_MODELS
from baton_kafka.streams.config.variables import check


def specs() -> Iterator[Spec]:
    """Every declared setting, the Kafka security settings included."""
    for cls in (Settings, KafkaSecurity):
        for f in fields(cls):
            spec = spec_of(f)
            if spec is not None:
                yield spec


def _default(f: Field[Any]) -> Any:
    if f.default is not MISSING:
        return f.default
    assert f.default_factory is not MISSING
    return f.default_factory()


def _fields(
    cls: type[Any], values: Mapping[str, str], read: Mapping[str, Any], problems: list[str]
) -> dict[str, Any]:
    """``cls``'s fields: the variables read, a family by its reader, else the (derived) default;
    settings whose defaults follow others (the provider's limits) come after them."""
    declared = [(f, spec) for f in fields(cls) if (spec := spec_of(f))]
    done: dict[str, Any] = {}
    for later in (False, True):
        for f, spec in declared:
            if (spec.derived is not None or spec.read is not None) != later:
                continue
            try:
                if spec.read is not None:
                    done[f.name] = spec.read(values, done)
                elif spec.env in read:
                    done[f.name] = read[spec.env]
                else:
                    done[f.name] = spec.derived(done) if spec.derived else _default(f)
            except SettingsError as exc:
                problems.extend(exc.lines)
                done[f.name] = _default(f)
    return done


def kafka_security(env: Mapping[str, str]) -> KafkaSecurity:
    """The ``BATON_KAFKA_*`` variables, checked: raises ``SettingsError`` on a bad combination."""
    read, problems = check([s for f in fields(KafkaSecurity) if (s := spec_of(f))], env)
    done = _fields(KafkaSecurity, env, read, problems)
    if problems:
        raise SettingsError("\n".join(problems))
    return check_security(KafkaSecurity(**done))


def _build(sourced: Sourced) -> tuple[Settings, list[str]]:
    """The settings, a failed one at its default, and every problem found (located)."""
    values = sourced.values
    # Every variable is read even after one failed: all problems are told in one run.
    read, problems = check(specs(), values)
    done = _fields(Settings, values, read, problems)
    if done["llm"] in NAMED_MODELS and not values.get("BATON_MODEL"):
        problems.append(f"BATON_LLM={done['llm']} needs BATON_MODEL: the model's name there")
    kafka = KafkaSecurity(**_fields(KafkaSecurity, values, read, problems))
    try:
        kafka = check_security(kafka) if not _kafka_failed(read, values) else KafkaSecurity()
    except SettingsError as exc:
        problems.extend(exc.lines)
        kafka = KafkaSecurity()
    settings = Settings(
        **done,
        kafka=kafka,
        broker_given="BATON_BROKER" in values,
        secret_files=dict(sourced.secret_files),
    )
    return settings, [*sourced.problems, *(sourced.locate(line) for line in problems)]


def _kafka_failed(read: Mapping[str, Any], values: Mapping[str, str]) -> bool:
    """Whether a ``BATON_KAFKA_*`` login variable given was not read (its problem is told)."""
    return any(
        values.get(spec.env) and spec.env not in read
        for f in fields(KafkaSecurity)
        if (spec := spec_of(f)) is not None
    )


def load(
    env: Mapping[str, str] | None = None,
    *,
    config: Path | None = None,
    cwd: Path | None = None,
    **overrides: object,
) -> Settings:
    """Build settings from ``baton.toml`` < ``.env`` < ``env`` (default: ``os.environ``, and
    the files of the working directory); raises ``SettingsError`` with every problem found,
    one line each naming the file and key or the variable, never a secret."""
    sourced = gather(env, specs(), config, cwd)
    settings, problems = _build(sourced)
    unknown = set(overrides) - {f.name for f in fields(Settings)}
    if unknown:
        raise SettingsError(f"unknown settings: {', '.join(sorted(unknown))}")
    settings = replace(settings, **overrides)  # type: ignore[arg-type]
    try:
        check_topics(settings)
    except SettingsError as exc:
        problems.extend(sourced.locate(line) for line in exc.lines)
    if problems:
        raise SettingsError("\n".join(dict.fromkeys(problems)))
    return settings
