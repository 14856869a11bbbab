"""Where settings come from: ``baton.toml`` < ``.env`` < the environment; ``*_FILE`` secrets."""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dotenv.parser import parse_stream

from baton_kafka.streams.config.spec import SettingsError, Spec, toml_key

CONFIG_VARIABLE = "BATON_CONFIG"
CONFIG_NAME = "baton.toml"
DOTENV_NAME = ".env"
FILE_SUFFIX = "_FILE"
_VARIABLE = re.compile(r"\b(?:BATON|ANTHROPIC)_[A-Z0-9_]*[A-Z0-9]")


@dataclass
class Sourced:
    """The variables gathered from every source, and where each came from."""

    values: dict[str, str] = field(default_factory=dict)
    # variable -> "baton.toml: key web_port" or ".env" (absent: the environment).
    origin: dict[str, str] = field(default_factory=dict)
    # secret's variable -> the (absolute) file it was read from.
    secret_files: dict[str, Path] = field(default_factory=dict)
    # Problems of the files found while reading them (unknown keys), one line each.
    problems: list[str] = field(default_factory=list)

    def locate(self, message: str) -> str:
        """``message`` prefixed with the file (and key) of the first setting it names that
        came from a file: an error in ``baton.toml`` says where to look."""
        for name in _VARIABLE.findall(message):
            where = self.origin.get(name) or self.origin.get(name + FILE_SUFFIX)
            if where:
                return f"{where}: {message}"
        return message


class Keys:
    """The variables a ``baton.toml`` key may name: declared, their ``*_FILE``, families."""

    def __init__(self, specs: Iterable[Spec]) -> None:
        self.by_key: dict[str, str] = {}
        self.prefixes: dict[str, str] = {}
        self.secrets: set[str] = set()
        self.paths: set[str] = set()
        for spec in specs:
            if spec.prefix:
                self.prefixes[toml_key(spec.prefix)] = spec.prefix
            names = spec.also if spec.read else (spec.env,)
            for name in names:
                self.by_key[toml_key(name)] = name
            if spec.is_path:
                self.paths.add(spec.env)
            if spec.secret:
                self.paths.add(spec.env + FILE_SUFFIX)
                self.secrets.add(spec.env)
                self.by_key[toml_key(spec.env + FILE_SUFFIX)] = spec.env + FILE_SUFFIX

    def variable(self, key: str) -> str | None:
        if key in self.by_key:
            return self.by_key[key]
        for prefix, variable in self.prefixes.items():
            if key.startswith(prefix) and len(key) > len(prefix):
                return variable + key[len(prefix) :].upper()
        return None


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, dict | list):
        import orjson

        return orjson.dumps(value).decode()
    return str(value)


def close(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` when ``known`` has a name close to ``name``, else ``""``."""
    near = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f" (did you mean {near[0]!r}?)" if near else ""


def read_toml(
    path: Path, keys: Keys, problems: list[str] | None = None
) -> tuple[dict[str, str], dict[str, str]]:
    """``path``'s settings as variables, and each variable's key; raises ``SettingsError``, or
    adds each unknown key to ``problems`` when given."""
    try:
        data = tomllib.loads(path.read_text("utf-8"))
    except OSError as exc:
        raise SettingsError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        # tomllib's message names the line and column, never the value.
        raise SettingsError(f"{path}: not valid TOML: {str(exc).splitlines()[0]}") from None
    values: dict[str, str] = {}
    origin: dict[str, str] = {}

    def walk(table: Mapping[str, Any], dotted: str, flat: str) -> None:
        for key, value in table.items():
            here, name = f"{dotted}{key}", f"{flat}{key}".lower()
            variable = keys.variable(name)
            if isinstance(value, dict) and (variable is None or name in keys.prefixes):
                walk(value, here + ".", name + "_")
                continue
            if variable is None:
                # In a table, the keys of that table are the near ones.
                near = [k[len(flat) :] for k in keys.by_key if k.startswith(flat)] if flat else []
                message = (
                    f"{path}: unknown key {here!r}{close(str(key).lower(), near or keys.by_key)}"
                )
                if problems is None:
                    raise SettingsError(message)
                problems.append(message)
                continue
            text = _text(value)
            if variable in keys.paths and _relative(text):
                text = str(path.parent / text)
            values[variable] = text
            origin[variable] = f"{path}: key {here}"

    walk(data, "", "")
    return values, origin


def _relative(text: str) -> bool:
    # An inline JSON map is not a path.
    return bool(text) and not text.lstrip().startswith("{") and not Path(text).is_absolute()


def read_dotenv(path: Path) -> dict[str, str]:
    """``KEY=value`` lines as python-dotenv reads them (``#`` comments, ``export``, quotes, no
    interpolation); raises ``SettingsError`` naming the first line that is not one."""
    try:
        with path.open(encoding="utf-8") as stream:
            bindings = list(parse_stream(stream))
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{path}: cannot be read ({exc})") from None
    values = {}
    for binding in bindings:
        if binding.key is None and not binding.error:
            continue  # a blank or comment line
        if binding.error or binding.key is None or binding.value is None:
            # Never the line itself: it may hold a secret. Blank lines before it are part of the
            # binding's text.
            text = binding.original.string
            line = binding.original.line + text[: len(text) - len(text.lstrip())].count("\n")
            raise SettingsError(f"{path}:{line}: not a KEY=value line")
        values[binding.key] = binding.value
    return values


def gather(
    env: Mapping[str, str] | None,
    specs: Iterable[Spec],
    config: Path | None = None,
    cwd: Path | None = None,
) -> Sourced:
    """Every source merged, later ones winning: the TOML file, ``.env``, then ``env``.

    ``env`` None: the process environment, and the files of the working directory. A given
    ``env`` reads files only when it names one (``BATON_CONFIG``) or ``config``/``cwd`` is
    given. ``BATON_CONFIG`` set but empty reads no file (what baton's own children get).
    """
    keys = Keys(specs)
    if env is None:
        env, cwd = os.environ, cwd or Path.cwd()
    layers: list[tuple[dict[str, str], dict[str, str]]] = []
    problems: list[str] = []
    dotenv: dict[str, str] = {}
    no_files = env.get(CONFIG_VARIABLE) == "" and config is None
    if cwd is not None and not no_files and (cwd / DOTENV_NAME).is_file():
        dotenv = read_dotenv(cwd / DOTENV_NAME)
    named = config or env.get(CONFIG_VARIABLE) or dotenv.get(CONFIG_VARIABLE)
    if named:
        path = Path(named) if cwd is None or Path(named).is_absolute() else cwd / named
        if not path.is_file():
            raise SettingsError(f"{CONFIG_VARIABLE}: no such file {named}")
        layers.append(read_toml(path, keys, problems))
    elif cwd is not None and not no_files and (cwd / CONFIG_NAME).is_file():
        layers.append(read_toml(cwd / CONFIG_NAME, keys, problems))
    if dotenv:
        label = str(cwd / DOTENV_NAME) if cwd else DOTENV_NAME
        layers.append((dotenv, dict.fromkeys(dotenv, label)))
    layers.append((dict(env), {}))
    sourced = Sourced(problems=problems)
    for values, origin in layers:
        for secret in keys.secrets:
            if values.get(secret) and values.get(secret + FILE_SUFFIX):
                where = origin.get(secret, "the environment")
                raise SettingsError(f"{where}: give {secret} or {secret}{FILE_SUFFIX}, not both")
        for name, value in values.items():
            sibling = _sibling(name, keys.secrets)
            if sibling and value:
                sourced.values.pop(sibling, None)
                sourced.origin.pop(sibling, None)
            sourced.values[name] = value
            if name in origin:
                sourced.origin[name] = origin[name]
            else:
                sourced.origin.pop(name, None)
    _read_secret_files(sourced, keys.secrets)
    return sourced


def _sibling(name: str, secrets: set[str]) -> str | None:
    if name in secrets:
        return name + FILE_SUFFIX
    base = name.removesuffix(FILE_SUFFIX)
    return base if base != name and base in secrets else None


def _read_secret_files(sourced: Sourced, secrets: set[str]) -> None:
    for secret in sorted(secrets):
        named = sourced.values.pop(secret + FILE_SUFFIX, "")
        if not named:
            continue
        path = Path(named).resolve()
        try:
            value = path.read_text("utf-8").rstrip("\r\n")
        except (OSError, UnicodeDecodeError):
            where = sourced.origin.get(secret + FILE_SUFFIX)
            message = f"{secret}{FILE_SUFFIX} names no readable file: {named}"
            raise SettingsError(f"{where}: {message}" if where else message) from None
        sourced.values[secret] = value
        sourced.secret_files[secret] = path
        if secret + FILE_SUFFIX in sourced.origin:
            sourced.origin[secret] = sourced.origin[secret + FILE_SUFFIX]
