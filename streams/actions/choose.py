"""Choosing the executor ``BATON_EXECUTOR`` names: none, the HTTP executor's map, or a factory."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from baton_kafka.streams.actions.executor import Executor
from baton_kafka.streams.actions.http import HttpExecutor
from baton_kafka.streams.actions.http_map import ActionMap, MapProblem

_DOTTED = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


def open_executor(setting: str) -> Executor | None:
    """The executor ``BATON_EXECUTOR`` names: none for "", the HTTP executor for the path of
    a JSON map, or ``module:factory``; raises ``ValueError`` (one line) when it cannot."""
    setting = setting.strip()
    if not setting:
        return None
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
