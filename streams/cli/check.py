"""``baton check``: the whole configuration checked, one line per check or problem; exit code 2
when the configuration has problems (every one told), 1 when a service fails; it writes nothing."""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from baton_kafka.streams.settings import Settings, SettingsError

OK, WARN, FAIL = "ok  ", "warn", "FAIL"
# The exit code of a configuration with problems (a usage error's), apart from a failed service.
CONFIGURATION = 2


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "check",
        help="check the settings, policy, order source, broker and model key, one line each",
    )
    p.add_argument(
        "--timeout", type=float, default=5.0, help="seconds per network check (default 5)"
    )
    p.add_argument(
        "--customer",
        metavar="ID",
        help="read this customer's orders through the order source and show, field by field, "
        "what baton sees and each path of the map that read nothing",
    )
    p.set_defaults(loads_settings=True)
    return p


def _line(status: str, what: str, detail: str) -> str:
    return f"{status} {what}: {detail}" if what else f"{status} {detail}"


def _sources(config: Path | None) -> str:
    named = config or os.environ.get("BATON_CONFIG")
    read = [str(named)] if named else (["baton.toml"] if Path("baton.toml").is_file() else [])
    if Path(".env").is_file():
        read.append(".env")
    return ", ".join([*read, "the environment"])


def _local_store(settings: Settings) -> Path | None:
    """The SQLite file of baton's own order store, when the orders are read from one."""
    url = settings.orders_url
    if settings.orders_source or settings.orders_map or url.startswith(("http", "postgres")):
        return None
    if url.startswith("sqlite:///"):
        return Path("/" + url.removeprefix("sqlite:///").lstrip("/"))
    return None if "://" in url else Path(url)


def _no_store_yet(settings: Settings) -> tuple[str, str, str] | None:
    """Baton's own order store before the worker's first start: told, not created."""
    file = _local_store(settings)
    if file is None or file.exists():
        return None
    return (OK, "orders", f"no order store yet at {file.resolve()} (the worker creates it)")


def _policy(settings: Settings) -> list[tuple[str, str, str]]:
    from baton_kafka.agents.cache_fit import STAGES as BUILT_IN
    from baton_kafka.agents.cache_fit import cache_fits
    from baton_kafka.agents.policy import PolicyError
    from baton_kafka.agents.policy import load as load_policy
    from baton_kafka.agents.policy.load import DEFAULT_FILE

    try:
        policy = load_policy(settings.policy_file)
    except PolicyError as exc:
        return [(FAIL, "policy", str(exc))]
    from baton_kafka.agents.policy import vocabulary

    shop = policy.shop
    file = settings.policy_file or DEFAULT_FILE
    base = file.parent
    served = policy.serving(settings.languages)
    lines = [
        (OK, "policy", f"{file} ({shop.name}, {policy.version})"),
        *((WARN, "policy", f"{file}: {line}") for line in vocabulary.warnings(served)),
        # BATON_LANGUAGES may serve a language the policy has no texts in: the first is used.
        *(
            (WARN, "policy", f"BATON_LANGUAGES: {file}: {line} (its first language's is used)")
            for line in vocabulary.problems(policy.model_dump(), settings.languages)
            if settings.languages
        ),
        (OK, "handbook", str(base / shop.handbook) if shop.handbook else "none"),
        (OK, "tone", str(base / shop.tone) if shop.tone else "baton's default"),
    ]
    models = {stage: settings.model_for(stage) for stage in BUILT_IN}
    for fit in cache_fits(policy, models, settings.cache_min_tokens):
        lines.append((OK if fit.cached else WARN, "cache", fit.line()))
    return lines


def _stages(settings: Settings) -> tuple[str, str, str]:
    from baton_kafka.streams.runtime.own_stages import configured_chain

    try:
        chain = configured_chain(settings)
    except SettingsError as exc:
        return (FAIL, "stages", str(exc))
    return (OK, "stages", " -> ".join(chain.names))


def _orders(settings: Settings, timeout: float, customer: str | None) -> list[tuple[str, str, str]]:
    from baton_kafka.streams.cli.check_orders import orders_lines

    return orders_lines(settings, timeout, customer)


def _executor(settings: Settings, timeout: float) -> tuple[str, str, str]:
    from baton_kafka.streams.actions.choose import probe

    if not settings.executor:
        return (OK, "executor", "none: approved offers are only written to their topic")
    problem = probe(settings.executor, timeout)
    return (FAIL, "executor", problem) if problem else (OK, "executor", "answers")


def _broker(settings: Settings, timeout: float) -> tuple[str, str, str]:
    from baton_kafka.streams.kafka.connect import BrokerRefused, BrokerUnreachable, probe_broker

    try:
        cluster = asyncio.run(probe_broker(settings, timeout))
    except (BrokerUnreachable, BrokerRefused) as exc:
        return (FAIL, "broker", str(exc))
    return (OK, "broker", f"{settings.broker_shown} answers (cluster {cluster})")


def _model(settings: Settings) -> tuple[str, str, str]:
    llm = settings.llm
    if llm == "offline":
        return (OK, "model", "offline rules, no key needed")
    if llm == "anthropic":
        if not settings.anthropic_api_key:
            return (FAIL, "model", "BATON_LLM=anthropic needs ANTHROPIC_API_KEY (or its _FILE)")
        given = settings.secret_files.get("ANTHROPIC_API_KEY")
        return (OK, "model", f"anthropic, key present ({f'from {given}' if given else 'set'})")
    if settings.model_api_key:
        return (OK, "model", f"{llm}, {settings.model}, BATON_MODEL_API_KEY present")
    return (WARN, "model", f"{llm}, {settings.model}, no BATON_MODEL_API_KEY: its own credentials")


def _limits(settings: Settings) -> tuple[str, str, str]:
    from baton_kafka.streams.runtime.faust_app.llms import limits_line

    return (OK, "model limits", limits_line(settings))


def check(
    config: Path | None,
    timeout: float,
    load: Callable[..., Settings],
    customer: str | None = None,
) -> int:
    """Print one line per check, and one per problem of the configuration; 2 when the
    configuration has any, else 1 when a check failed, else 0."""
    try:
        settings = load(config=config)
    except SettingsError as exc:
        for problem in exc.lines:
            print(_line(FAIL, "settings", problem))
        return CONFIGURATION
    lines = [(OK, "settings", _sources(config))]
    lines += _policy(settings)
    lines.append(_stages(settings))
    no_store = _no_store_yet(settings)
    lines += [no_store] if no_store else _orders(settings, timeout, customer)
    lines.append(_executor(settings, timeout))
    lines.append(_broker(settings, timeout))
    lines.append(_model(settings))
    if settings.llm != "offline":
        lines.append(_limits(settings))
    for status, what, detail in lines:
        print(_line(status, what, detail), flush=True)
    if any(status == FAIL and what in ("policy", "stages") for status, what, _ in lines):
        return CONFIGURATION
    return 1 if any(status == FAIL for status, _, _ in lines) else 0


def run(args: argparse.Namespace, settings: Settings | None = None) -> int:
    from baton_kafka.streams.settings import load

    return check(args.config, args.timeout, load, getattr(args, "customer", None))
