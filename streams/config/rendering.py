"""Settings rendered back as variables: what a child process gets (no secret read from a file)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from baton_kafka.streams.config.sources import CONFIG_VARIABLE, FILE_SUFFIX
from baton_kafka.streams.config.spec import spec_of


def _rendered(obj: Any, secret_files: Mapping[str, Path]) -> dict[str, str]:
    env: dict[str, str] = {}
    for f in fields(obj):
        spec = spec_of(f)
        if spec is None:
            continue
        value = getattr(obj, f.name)
        if spec.write is not None:
            env |= spec.write(value)
        elif spec.env in secret_files:
            env[spec.env + FILE_SUFFIX] = str(secret_files[spec.env])
        elif text := spec.render(value):
            env[spec.env] = text
    return env


def render(settings: Any) -> dict[str, str]:
    """``settings`` as variables (``load(render(s)) == s``); a secret read from a file is
    passed as the file's variable, and no configuration file is read again."""
    env = {CONFIG_VARIABLE: ""}
    env |= _rendered(settings, settings.secret_files)
    env |= _rendered(settings.kafka, settings.secret_files)
    return env


def secret_values(settings: Any) -> dict[str, Any]:
    """Each secret's variable -> its value in ``settings``."""
    found = {}
    for obj in (settings, settings.kafka):
        for f in fields(obj):
            spec = spec_of(f)
            if spec is not None and spec.secret:
                found[spec.env] = getattr(obj, f.name)
    return found
