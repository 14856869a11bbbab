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


def _read(f: Field[Any], spec: Spec, values: Mapping[str, str], done: Mapping[str, Any]) -> Any:
    if spec.read is not None:
        return spec.read(values, done)
    raw = values.get(spec.env)
    if raw is None or raw == "":
        return spec.derived(done) if spec.derived else _default(f)
    return spec.parse(spec.env, raw)


def _kafka(values: Mapping[str, str]) -> KafkaSecurity:
    done: dict[str, Any] = {}
    for f in fields(KafkaSecurity):
        spec = spec_of(f)
        assert spec is not None
        done[f.name] = _read(f, spec, values, done)
    return check_security(KafkaSecurity(**done))


def kafka_security(env: Mapping[str, str]) -> KafkaSecurity:
    """The ``BATON_KAFKA_*`` variables, checked: raises ``SettingsError`` on a bad combination."""
    return _kafka(env)


def _build(sourced: Sourced) -> tuple[Settings, list[str]]:
    """The settings, a failed one at its default, and every problem found (located)."""
    values = sourced.values
    done: dict[str, Any] = {}
    problems = [*sourced.problems]
    declared = [(f, spec) for f in fields(Settings) if (spec := spec_of(f))]

    def read(f: Field[Any], spec: Spec) -> None:
        # Every setting is read even after one failed: all problems are told in one run.
        try:
            done[f.name] = _read(f, spec, values, done)
        except SettingsError as exc:
            problems.extend(sourced.locate(line) for line in exc.lines)
            done[f.name] = _default(f)

    # Settings whose defaults follow others (the provider's limits) are read after them.
    for f, spec in declared:
        if spec.derived is None and spec.read is None:
            read(f, spec)
    for f, spec in declared:
        if f.name not in done:
            read(f, spec)
    if done["llm"] in NAMED_MODELS and not values.get("BATON_MODEL"):
        problems.append(
            sourced.locate(f"BATON_LLM={done['llm']} needs BATON_MODEL: the model's name there")
        )
    try:
        kafka = _kafka(values)
    except SettingsError as exc:
        problems.extend(sourced.locate(line) for line in exc.lines)
        kafka = KafkaSecurity()
    settings = Settings(
        **done,
        kafka=kafka,
        broker_given="BATON_BROKER" in values,
        secret_files=dict(sourced.secret_files),
    )
    return settings, problems


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
