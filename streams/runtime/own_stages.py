"""The chain the settings name: the built-in stages plus ``BATON_STAGES``' own, loaded at start."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterable
from typing import Any

from baton_kafka.agents.stage import Stage
from baton_kafka.streams.runtime.chain import BUILTIN, Chain
from baton_kafka.streams.settings import Settings, SettingsError

SETTING = "BATON_STAGES"


def _line(exc: BaseException) -> str:
    """An exception of the shop's own code as one line: its type and its message's first line."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def load_stage(ref: str, settings: Settings) -> Stage[Any]:
    """The stage ``module:attribute`` names (a ``Stage``, or a factory called with
    ``settings`` that returns one); raises ``SettingsError``, one line, when it cannot."""
    module_name, _, attr = ref.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or module_name
        raise SettingsError(
            f"{SETTING}: {ref}: cannot import {module_name} (no module named {missing!r})"
        ) from None
    except Exception as exc:
        # The shop's own module failed while being imported: said in one line, not a traceback.
        raise SettingsError(
            f"{SETTING}: {ref}: importing {module_name} failed: {_line(exc)}"
        ) from None
    if not hasattr(module, attr):
        raise SettingsError(f"{SETTING}: {ref}: {module_name} has no attribute {attr!r}")
    found = getattr(module, attr)
    if isinstance(found, Stage):
        return found
    if not callable(found) or inspect.isclass(found):
        kind = f"the class {found.__name__}" if inspect.isclass(found) else type(found).__name__
        raise SettingsError(
            f"{SETTING}: {ref} is {kind}, not a Stage (nor a factory that returns one)"
        )
    try:
        made = found(settings)
    except Exception as exc:
        raise SettingsError(f"{SETTING}: {ref} failed: {_line(exc)}") from None
    if inspect.iscoroutine(made):
        made.close()  # an async function is not a factory: it is never awaited
    if not isinstance(made, Stage):
        raise SettingsError(f"{SETTING}: {ref} returned {type(made).__name__}, not a Stage")
    return made


def configured_chain(settings: Settings) -> Chain:
    """The built-in chain with each stage ``settings.stages`` names inserted, in order, after
    the stage its ``after`` names; raises ``SettingsError`` (one line, naming the reference)
    for a stage that cannot be loaded or a chain that cannot work."""
    if not settings.stages:
        return BUILTIN
    loaded: list[Stage[Any]] = []
    for ref in settings.stages:
        loaded.append(load_stage(ref, settings))
        try:
            Chain.of(loaded)
        except ValueError as exc:
            raise SettingsError(f"{SETTING}: {ref}: {exc}") from None
    return Chain.of(loaded)


def chain_for(settings: Settings, stages: Chain | Iterable[Stage[Any]] | None = None) -> Chain:
    """``stages`` as a chain when given in code (the setting is then not read), else the
    chain ``settings`` name."""
    return configured_chain(settings) if stages is None else Chain.of(stages)
