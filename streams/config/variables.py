"""The declared variables as one pydantic-settings model: every given value coerced and
range-checked at once, each problem told in one line that never shows a secret."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any, cast

from pydantic import ValidationError, create_model
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from baton_kafka.streams.config.spec import SettingsError, Spec, Upper, cut


class _Variables(BaseSettings):
    """The variables by their names; only the ones given are read, the rest stay None."""

    model_config = SettingsConfigDict(case_sensitive=True, extra="ignore", frozen=True)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The files, the environment and the *_FILE secrets are merged (with where each value
        # came from) before this model reads them: it is handed the result.
        return (init_settings,)


@functools.cache
def _model(specs: tuple[Spec, ...]) -> type[_Variables]:
    fields: dict[str, Any] = {spec.env: (spec.parse | None, None) for spec in specs}
    return create_model("Variables", __base__=_Variables, **fields)


def _line(error: Mapping[str, Any], spec: Spec, raw: str) -> str:
    name, kind, ctx = spec.env, error["type"], error.get("ctx", {})
    shown = cut(raw) if not spec.secret else "(a secret)"
    if kind == "value_error" and isinstance(ctx.get("error"), SettingsError):
        return str(ctx["error"])
    if kind in ("int_parsing", "int_from_float", "int_type"):
        return f"{name} must be an integer, got {shown}"
    if kind in ("float_parsing", "float_type"):
        return f"{name} must be a number, got {shown}"
    if kind == "greater_than_equal" and isinstance(ctx["ge"], int):
        return f"{name} must be at least {ctx['ge']}, got {raw.strip()}"
    if kind == "less_than_equal":
        return f"{name} must be at most {ctx['le']}, got {raw.strip()}"
    if kind in ("greater_than", "greater_than_equal"):
        return f"{name} must be positive, got {shown}"
    if kind == "less_than" and ctx["lt"] == 1:
        return f"{name} must be a fraction below 1, got {shown}"
    if kind == "bool_parsing":
        return f"{name} must be 1 or 0 (true/false, yes/no, on/off), got {shown}"
    if kind == "literal_error":
        upper = any(isinstance(m, Upper) for m in getattr(spec.parse, "__metadata__", ()))
        wanted = ctx["expected"].replace("'", "").replace(" or ", ", ") if upper else None
        return f"{name} must be {f'one of {wanted}' if upper else ctx['expected']}, got {shown}"
    # Whatever else pydantic finds: its own words, never the value.
    return f"{name}: {error['msg']}"


def check(specs: Iterable[Spec], values: Mapping[str, str]) -> tuple[dict[str, Any], list[str]]:
    """The variables of ``specs`` given (not empty) in ``values``, read as their types, and a
    line for each that is not what its setting takes (those are left out)."""
    specs = tuple(spec for spec in specs if spec.read is None)
    given = {spec.env: values[spec.env] for spec in specs if values.get(spec.env)}
    model = _model(specs)
    by_name = {spec.env: spec for spec in specs}
    problems: list[str] = []
    try:
        read = model(**cast(dict[str, Any], given))
    except ValidationError as exc:
        # Every problem is told; the others are read again without the ones that failed.
        errors = exc.errors()
        bad = [str(e["loc"][0]) for e in errors]
        for error, name in zip(errors, bad, strict=True):
            problems += _line(error, by_name[name], given[name]).splitlines()
        given = {name: raw for name, raw in given.items() if name not in set(bad)}
        read = model(**cast(dict[str, Any], given))
    return {name: getattr(read, name) for name in given}, problems
