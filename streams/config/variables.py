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
def _model(kinds: tuple[tuple[str, Any], ...]) -> type[_Variables]:
    fields: dict[str, Any] = {name: (kind | None, None) for name, kind in kinds}
    return create_model("Variables", __base__=_Variables, **fields)


def _line(error: Mapping[str, Any], name: str, kind: Any, raw: str) -> str:
    """Pydantic's finding as baton's one line: the variable, what it takes, what it got."""
    code, ctx, shown = error["type"], error.get("ctx", {}), cut(raw)
    if code == "value_error" and isinstance(ctx.get("error"), SettingsError):
        return str(ctx["error"])
    if code in ("int_parsing", "int_from_float", "int_type"):
        return f"{name} must be an integer, got {shown}"
    if code in ("float_parsing", "float_type"):
        return f"{name} must be a number, got {shown}"
    if code == "greater_than_equal" and isinstance(ctx["ge"], int):
        return f"{name} must be at least {ctx['ge']}, got {raw.strip()}"
    if code == "less_than_equal":
        return f"{name} must be at most {ctx['le']}, got {raw.strip()}"
    if code in ("greater_than", "greater_than_equal"):
        return f"{name} must be positive, got {shown}"
    if code == "less_than" and ctx["lt"] == 1:
        return f"{name} must be a fraction below 1, got {shown}"
    if code == "bool_parsing":
        return f"{name} must be true or false (1/0, yes/no, on/off), got {shown}"
    if code == "literal_error":
        if any(isinstance(m, Upper) for m in getattr(kind, "__metadata__", ())):
            wanted = ctx["expected"].replace("'", "").replace(" or ", ", ")
            return f"{name} must be one of {wanted}, got {shown}"
        return f"{name} must be {ctx['expected']}, got {shown}"
    # Whatever else pydantic finds: its own words, never the value (it may be a secret).
    return f"{name}: {error['msg']}"


def read_as(kinds: Mapping[str, Any], given: Mapping[str, str]) -> tuple[dict[str, Any], list[str]]:
    """``given`` read as ``kinds`` (variable -> pydantic type) in one pydantic-settings model:
    the values read, and a line for each that is not what it takes (those are left out)."""
    if not given:
        return {}, []
    model = _model(tuple(kinds.items()))
    problems: list[str] = []
    try:
        read = model(**cast(dict[str, Any], given))
    except ValidationError as exc:
        # Every problem is told; the others are read again without the ones that failed.
        errors = exc.errors()
        bad = [str(e["loc"][0]) for e in errors]
        for error, name in zip(errors, bad, strict=True):
            problems += _line(error, name, kinds[name], given[name]).splitlines()
        given = {name: raw for name, raw in given.items() if name not in bad}
        read = model(**cast(dict[str, Any], given))
    return {name: getattr(read, name) for name in given}, problems


def check(specs: Iterable[Spec], values: Mapping[str, str]) -> tuple[dict[str, Any], list[str]]:
    """The variables of ``specs`` given (not empty) in ``values``, read as their kinds, and a
    line for each that is not what its setting takes (those are left out)."""
    kinds = {spec.env: spec.parse for spec in specs if spec.read is None}
    return read_as(kinds, {name: values[name] for name in kinds if values.get(name)})
