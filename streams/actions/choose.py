"""Choosing the executor ``BATON_EXECUTOR`` names: none, the HTTP executor's map, or a factory."""

from __future__ import annotations

import asyncio
import importlib
import re
from pathlib import Path

from baton_kafka.streams.actions.executor import Executor, ExecutorRefused, ExecutorUnavailable
from baton_kafka.streams.actions.http import HttpExecutor
from baton_kafka.streams.actions.http_map import ActionMap, MapProblem
from baton_kafka.streams.actions.manual import NAME as MANUAL
from baton_kafka.streams.actions.manual import ManualExecutor

_DOTTED = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


def open_executor(setting: str) -> Executor | None:
    """The executor ``BATON_EXECUTOR`` names: none for "", the manual executor for "manual",
    the HTTP executor for the path of a JSON map, or ``module:factory``; raises
    ``ValueError`` (one line) when it cannot."""
    setting = setting.strip()
    if not setting:
        return None
    if setting == MANUAL:
        return ManualExecutor()
    if _DOTTED.fullmatch(setting) and not Path(setting).exists():
        module, _, name = setting.partition(":")
        try:
            factory = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"BATON_EXECUTOR={setting}: {exc}") from None
        made = factory()
        if not isinstance(made, Executor):
            raise ValueError(f"BATON_EXECUTOR={setting}: the factory made no executor")
        return made
    try:
        return HttpExecutor(ActionMap.read(Path(setting)))
    except MapProblem as exc:
        raise ValueError(f"BATON_EXECUTOR={setting}: {exc}") from None


def probe(setting: str, timeout: float) -> str | None:
    """Why the executor ``setting`` names cannot be used now (one line), or None when it
    answers (or none is set): what ``baton check`` prints."""
    try:
        executor = open_executor(setting)
    except ValueError as exc:
        return str(exc)
    if executor is None:
        return None

    async def ask() -> None:
        try:
            await asyncio.wait_for(executor.check(), timeout)
        finally:
            await executor.close()

    try:
        asyncio.run(ask())
    except (ExecutorUnavailable, ExecutorRefused) as exc:
        return f"BATON_EXECUTOR={setting}: {exc}"
    except (TimeoutError, OSError) as exc:
        return f"BATON_EXECUTOR={setting}: did not answer ({type(exc).__name__})"
    return None
