"""Parsers of the settings whose values have a grammar of their own (one-line errors)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from baton_kafka.agents.dsn import mask_url
from baton_kafka.agents.languages import LanguageError, codes
from baton_kafka.agents.models.capabilities import is_anthropic_api
from baton_kafka.agents.models.prices import Price, parse_cache_minimums, parse_prices
from baton_kafka.agents.models.providers import ProviderError, check_name, default_limits
from baton_kafka.agents.policy import PolicyError
from baton_kafka.agents.policy import load as load_policy
from baton_kafka.agents.policy.vocabulary import language_problem
from baton_kafka.agents.stages import ORDER, lookup, understand
from baton_kafka.schemas.topics import ROLES
from baton_kafka.streams.config.spec import SettingsError, cut

# Providers whose model names are their own: BATON_MODEL must name one.
NAMED_MODELS = ("bedrock", "vertex", "openai")
# The reader (agents.reader) reads each final reply once: a cheap model is enough.
DEFAULT_STAGE_MODELS = {
    understand.NAME: "claude-haiku-4-5",
    lookup.NAME: "claude-haiku-4-5",
    "reader": "claude-haiku-4-5",
}
STAGES = (*ORDER, "reader")


def broker(name: str, raw: str) -> str:
    if not raw.startswith("kafka://"):
        # Masked: a broker URL may carry a password.
        raise SettingsError(f"{name} must look like kafka://host:port, got {mask_url(raw)!r}")
    return raw


def orders_map(raw: str, name: str = "BATON_ORDERS_MAP") -> dict[str, object] | None:
    """The orders mapping's JSON object, given inline or as a file's path."""
    if not raw.strip():
        return None
    text = raw
    if not raw.lstrip().startswith("{"):
        try:
            text = Path(raw).read_text("utf-8")
        except OSError as exc:
            raise SettingsError(
                f"{name} is neither a JSON object nor a readable file: {exc}"
            ) from None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise SettingsError(f"{name} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise SettingsError(f"{name} must be a JSON object")
    return value


def orders_map_text(name: str, raw: str) -> str:
    orders_map(raw, name)
    return raw


def orders_auth(name: str, raw: str) -> str:
    header, sep, value = raw.partition(":")
    if raw and (not sep or not re.fullmatch(r"[A-Za-z0-9-]+", header.strip()) or not value.strip()):
        # Never the value in the message: it is the secret.
        raise SettingsError(f"{name} must be 'Header-Name: value'")
    return raw


def acks(name: str, raw: str) -> str:
    if raw not in ("all", "-1", "0", "1"):
        raise SettingsError(f"{name} must be all, 0 or 1, got {cut(raw)}")
    return "all" if raw == "-1" else raw


def prices(name: str, raw: str) -> dict[str, Price]:
    try:
        return parse_prices(raw, name)
    except ValueError as exc:
        raise SettingsError(str(exc)) from None


def render_prices(value: Any) -> str:
    rows = {m: [p.input, p.output, p.cache_write, p.cache_read] for m, p in value.items()}
    return orjson.dumps(rows).decode() if rows else ""


def cache_minimums(name: str, raw: str) -> dict[str, int]:
    try:
        return parse_cache_minimums(raw, name)
    except ValueError as exc:
        raise SettingsError(str(exc)) from None


_CURRENCY = re.compile(r"^(?:[A-Z]{3}|\*)$")


def money_caps(name: str, raw: str) -> dict[str, float]:
    """``EUR:5000,USD:6000,*:4000`` as {currency: cap}: ISO 4217 codes (``*``: any other)."""
    caps: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in raw.split(","))):
        currency, _, amount = part.partition(":")
        currency = currency.strip().upper()
        try:
            cap = float(amount)
        except ValueError:
            cap = -1.0
        if not _CURRENCY.match(currency) or not 0 <= cap <= 1e12 or currency in caps:
            raise SettingsError(
                f"{name} must be CURRENCY:AMOUNT[,CURRENCY:AMOUNT...] (EUR:5000,*:4000), "
                f"got {cut(part)}"
            )
        caps[currency] = cap
    return caps


def render_money_caps(value: Any) -> str:
    return ",".join(f"{c}:{a:g}" for c, a in value.items())


def render_json(value: Any) -> str:
    return orjson.dumps(dict(value)).decode() if value else ""


def llm(name: str, raw: str) -> str:
    try:
        check_name(raw)
    except ProviderError as exc:
        raise SettingsError(str(exc)) from None
    return raw


def default_llm(done: Mapping[str, Any]) -> str:
    return "anthropic" if done.get("anthropic_api_key") else "offline"


def registry_url(name: str, raw: str) -> str:
    url = raw.strip().rstrip("/")
    if url and not re.match(r"^https?://[^/\s]+", url):
        raise SettingsError(f"{name} must look like https://host[:port], got {mask_url(url)!r}")
    return url


def user_info(name: str, raw: str) -> str:
    if raw and ":" not in raw:
        raise SettingsError(f"{name} must look like key:secret")
    return raw


_KEY_ID = re.compile(r"[A-Za-z0-9_.-]{1,32}")
MIN_SIGNING_SECRET = 16


def signing_keys(name: str, raw: str) -> tuple[tuple[str, str], ...]:
    """``id:secret[,id:secret...]``: the first signs, all verify (so keys rotate live)."""
    keys: list[tuple[str, str]] = []
    for item in filter(None, (part.strip() for part in raw.split(","))):
        kid, sep, secret = item.partition(":")
        if not sep or not _KEY_ID.fullmatch(kid):
            raise SettingsError(
                f"{name} must be id:secret[,id:secret...] with ids of letters, "
                "digits, '.', '_' or '-'"
            )
        if len(secret) < MIN_SIGNING_SECRET:
            raise SettingsError(
                f"{name}: the secret of key {kid!r} must have at least "
                f"{MIN_SIGNING_SECRET} characters"
            )
        if any(kid == known for known, _ in keys):
            raise SettingsError(f"{name}: key id {kid!r} given twice")
        keys.append((kid, secret))
    return tuple(keys)


def render_signing_keys(value: Any) -> str:
    return ",".join(f"{k}:{v}" for k, v in value)


def languages(name: str, raw: str) -> tuple[str, ...]:
    """Comma-separated BCP 47 codes, the default first; empty: the policy's."""
    if not raw.strip():
        return ()
    bad = [why for tag in raw.split(",") if tag.strip() and (why := language_problem(tag))]
    if bad:
        raise SettingsError("\n".join(f"{name}: {why}" for why in bad))
    try:
        return codes(raw.split(","))
    except LanguageError as exc:
        raise SettingsError(f"{name}: {exc}") from None


def policy_file(name: str, raw: str) -> Path | None:
    """The policy file, read and validated now: a bad policy stops the start in one line."""
    if not raw:
        return None
    path = Path(raw)
    try:
        load_policy(path)
    except PolicyError as exc:
        # The policy's own problems name its file and key; only a file not read names the setting.
        text = str(exc)
        raise SettingsError(
            text if "\n" in text or ": cannot read" not in text else f"{name}: {text}"
        ) from None
    return path


_STAGE_REF = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")


def stage_refs(name: str, raw: str) -> tuple[str, ...]:
    """``module:attribute`` references separated by commas, or a JSON list of them (what a
    list in ``baton.toml`` arrives as); only their form is checked here, they are loaded at
    start."""
    text = raw.strip()
    items: object = text.split(",")
    if text.startswith("["):
        try:
            items = orjson.loads(text)
        except orjson.JSONDecodeError:
            items = None
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise SettingsError(f"{name} must be a list of module:attribute strings")
    assert isinstance(items, list)
    refs = tuple(ref for ref in (i.strip() for i in items) if ref)
    for at, ref in enumerate(refs):
        if not _STAGE_REF.fullmatch(ref):
            raise SettingsError(
                f"{name}: {cut(ref)} is not module:attribute (for instance my_shop.stages:TAGGER)"
            )
        if ref in refs[:at]:
            raise SettingsError(f"{name}: {ref} is given twice")
    return refs


def read_topic_names(env: Mapping[str, str], done: Mapping[str, Any]) -> dict[str, str]:
    """The ``BATON_TOPIC_<ROLE>`` names given, by default name."""
    return {
        default: env[f"BATON_TOPIC_{role.upper()}"].strip()
        for role, default in ROLES.items()
        if env.get(f"BATON_TOPIC_{role.upper()}", "").strip()
    }


def write_topic_names(value: Mapping[str, str]) -> dict[str, str]:
    return {
        f"BATON_TOPIC_{role.upper()}": value[default]
        for role, default in ROLES.items()
        if default in value
    }


def read_stage_models(env: Mapping[str, str], done: Mapping[str, Any]) -> dict[str, str]:
    """Understanding and choosing among orders are extraction tasks: a small fast model does
    them well; BATON_MODEL alone moves every stage, BATON_MODEL_<STAGE> one of them. Like the
    time limits, the defaults follow where the calls go: the Claude API at another address
    serves the operator's model, so every stage gets BATON_MODEL there."""
    llm = done["llm"]
    first_party = llm == "offline" or (
        llm == "anthropic" and is_anthropic_api(done.get("anthropic_base_url"))
    )
    models = {} if env.get("BATON_MODEL") or not first_party else dict(DEFAULT_STAGE_MODELS)
    return models | {
        stage: env[f"BATON_MODEL_{stage.upper()}"]
        for stage in STAGES
        if env.get(f"BATON_MODEL_{stage.upper()}")
    }


def write_stage_models(value: Mapping[str, str]) -> dict[str, str]:
    # BATON_MODEL is always given, so the stage models must all be spelled out.
    return {f"BATON_MODEL_{stage.upper()}": model for stage, model in value.items()}


def limit(name: str) -> Any:
    """The default of a model time limit where the calls go (a slow self-hosted server's for
    the Claude API at another address)."""
    return lambda done: getattr(
        default_limits(done["llm"], done.get("anthropic_base_url")).limits, name
    )
