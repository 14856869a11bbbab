"""A setting's declaration: its variable, help line, parser and renderer, kept on its field."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, StringConstraints
from pydantic import Field as Checked


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


# The simple kinds are pydantic types: pydantic-settings coerces and range-checks them, every
# problem at once (``variables``); a grammar of our own is a parser, run as their validator.
text: Any = str
path: Any = Path
stripped: Any = Annotated[str, StringConstraints(strip_whitespace=True)]
# Off is 0; a surrounding space is forgiven, as a shell's quoting may leave one.
flag: Any = Annotated[bool, BeforeValidator(str.strip)]
positive: Any = Annotated[float, Checked(gt=0)]
seconds_or_off: Any = Annotated[float, Checked(ge=0)]
fraction: Any = Annotated[float, Checked(gt=0, lt=1)]


def integer(minimum: int = 0, maximum: int | None = None) -> Any:
    return Annotated[int, Checked(ge=minimum, le=maximum)]


@dataclass(frozen=True)
class Upper:
    """A choice read in upper case, listed as ``one of A, B``."""


def choice(*choices: str, upper: bool = False, lower: bool = False) -> Any:
    """One of ``choices``; ``upper``/``lower``: read in that case (``upper`` also listed as
    ``one of A, B``)."""
    kind = Literal[choices]  # type: ignore[valid-type]
    if upper:
        return Annotated[kind, BeforeValidator(str.upper), Upper()]
    return Annotated[kind, BeforeValidator(str.lower)] if lower else kind


def grammar(parse: Parser) -> Any:
    """A value with a grammar of its own: ``parse(variable, raw)`` as its pydantic validator."""
    return Annotated[Any, BeforeValidator(lambda raw, info: parse(info.field_name, raw))]


def render_text(value: Any) -> str:
    """A value as the text its variable holds: a flag as 1 or 0, None as not set."""
    if isinstance(value, bool):
        return "1" if value else "0"
    return "" if value is None else str(value)


def cut(value: str, limit: int = 80) -> str:
    """A value for a one-line message: quoted, and cut when long."""
    return repr(value if len(value) <= limit else value[: limit - 1] + "…")


@dataclass(frozen=True)
class Spec:
    """How one field is read from and written back to its variable, and documented."""

    env: str
    help: str
    # The pydantic type the variable's text is read as (a parser is wrapped by ``grammar``).
    parse: Any = text
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
    parse: Any = text,
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
    if inspect.isfunction(parse):
        parse = grammar(parse)
    spec = Spec(
        env, help, parse, render, secret, shown, derived, also, read, write, prefix, is_path
    )
    if factory is not None:
        return field(default_factory=factory, metadata={"spec": spec})
    return field(default=default, metadata={"spec": spec})


def spec_of(f: Field[Any]) -> Spec | None:
    spec = f.metadata.get("spec")
    return spec if isinstance(spec, Spec) else None
