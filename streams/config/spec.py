"""A setting's declaration: its variable, help line, parser and renderer, kept on its field."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, dataclass, field
from pathlib import Path
from typing import Any


class SettingsError(ValueError):
    """A setting has a value baton cannot use (one line, naming the setting, no secret); several
    problems found at once are one line each."""

    @property
    def lines(self) -> list[str]:
        """Each problem, one line."""
        return [line for line in str(self).splitlines() if line.strip()]


# (variable name, raw text) -> value; raises SettingsError naming the variable.
Parser = Callable[[str, str], Any]
# value -> the text the parser reads back; "" for "not set".
Renderer = Callable[[Any], str]
# The values read so far (by field name) -> this setting's default when it is not given.
Derived = Callable[[Mapping[str, Any]], Any]
# A setting spread over several variables: (variables, values read so far) -> value ...
Reader = Callable[[Mapping[str, str], Mapping[str, Any]], Any]
# ... and back: value -> its variables.
Writer = Callable[[Any], dict[str, str]]


def text(name: str, raw: str) -> str:
    return raw


def stripped(name: str, raw: str) -> str:
    return raw.strip()


def lower(name: str, raw: str) -> str:
    return raw.lower()


def optional_text(name: str, raw: str) -> str | None:
    return raw or None


def optional_path(name: str, raw: str) -> Path | None:
    return Path(raw) if raw else None


def path(name: str, raw: str) -> Path:
    return Path(raw)


def flag(name: str, raw: str) -> bool:
    return raw.strip().lower() in ("1", "true", "yes", "on")


def render_flag(value: Any) -> str:
    return "1" if value else "0"


def render_text(value: Any) -> str:
    return "" if value is None else str(value)


def render_number(value: Any) -> str:
    return repr(value)


def integer(minimum: int = 0, maximum: int | None = None) -> Parser:
    def parse(name: str, raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            raise SettingsError(f"{name} must be an integer, got {cut(raw)}") from None
        if value < minimum:
            raise SettingsError(f"{name} must be at least {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise SettingsError(f"{name} must be at most {maximum}, got {value}")
        return value

    return parse


def positive(name: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{name} must be a number, got {cut(raw)}") from None
    if value <= 0:
        raise SettingsError(f"{name} must be positive, got {cut(raw)}")
    return value


def seconds_or_off(name: str, raw: str) -> float:
    return 0.0 if raw.strip() in ("0", "0.0") else positive(name, raw)


def fraction(name: str, raw: str) -> float:
    value = positive(name, raw)
    if value >= 1:
        raise SettingsError(f"{name} must be a fraction below 1, got {cut(raw)}")
    return value


def choice(*choices: str, upper: bool = False) -> Parser:
    def parse(name: str, raw: str) -> str:
        value = raw.upper() if upper else raw
        if value not in choices:
            if len(choices) == 2 and not upper:
                wanted = f"'{choices[0]}' or '{choices[1]}'"
            elif not upper:
                wanted = ", ".join(f"'{c}'" for c in choices[:-1]) + f" or '{choices[-1]}'"
            else:
                wanted = "one of " + ", ".join(choices)
            raise SettingsError(f"{name} must be {wanted}, got {cut(raw)}")
        return value

    return parse


def cut(value: str, limit: int = 80) -> str:
    """A value for a one-line message: quoted, and cut when long."""
    return repr(value if len(value) <= limit else value[: limit - 1] + "…")


@dataclass(frozen=True)
class Spec:
    """How one field is read from and written back to its variable, and documented."""

    env: str
    help: str
    parse: Parser = text
    render: Renderer = render_text
    # A secret: never shown, never in a message; also read from the file ``<env>_FILE`` names.
    secret: bool = False
    # The default as the reference shows it, when the field's own default is not the story.
    shown: str | None = None
    derived: Derived | None = None
    # More variables documented on the same row (the per-stage models, the topic names).
    also: tuple[str, ...] = ()
    # A setting of several variables: how they are read and written (``env`` is then their
    # pattern, e.g. ``BATON_TOPIC_<ROLE>``), and the prefix all of them start with.
    read: Reader | None = None
    write: Writer | None = None
    prefix: str = ""
    # A file's path: in ``baton.toml`` a relative one is read from the file's directory.
    is_path: bool = False

    @property
    def toml_key(self) -> str:
        """The key in ``baton.toml``: the variable without ``BATON_``, lower case."""
        return toml_key(self.env)


def toml_key(env: str) -> str:
    return re.sub(r"^BATON_", "", env).lower()


def setting(
    env: str,
    help: str,
    default: Any = MISSING,
    *,
    factory: Callable[[], Any] | None = None,
    parse: Parser = text,
    render: Renderer = render_text,
    secret: bool = False,
    shown: str | None = None,
    derived: Derived | None = None,
    also: tuple[str, ...] = (),
    read: Reader | None = None,
    write: Writer | None = None,
    prefix: str = "",
    is_path: bool = False,
) -> Any:
    """A dataclass field declared with its variable, its default and its one-line help."""
    spec = Spec(
        env, help, parse, render, secret, shown, derived, also, read, write, prefix, is_path
    )
    if factory is not None:
        return field(default_factory=factory, metadata={"spec": spec})
    return field(default=default, metadata={"spec": spec})


def spec_of(f: Field[Any]) -> Spec | None:
    spec = f.metadata.get("spec")
    return spec if isinstance(spec, Spec) else None
