"""Reading a policy file: TOML validated at start, a one-line error naming the file and key."""

from __future__ import annotations

import functools
import hashlib
import re
import tomllib
from pathlib import Path

from pydantic import ValidationError

from baton_kafka.agents import articles, packs
from baton_kafka.agents.policy.model import Policy

DEFAULT_FILE = Path(__file__).with_name("default.toml")
# baton's shared handbook (with {{POLICY}} and {{TONE}} to fill in) and its default tone.
PIPELINE_FILE = Path(__file__).with_name("pipeline.md")
DEFAULT_TONE_FILE = Path(__file__).with_name("tone.md")
# The strategy stage's examples, one per language.
EXAMPLES_FILE = Path(__file__).with_name("strategy_examples.toml")
_COMMENT = re.compile(rb"<!--.*?-->[ \t]*\n?", re.DOTALL)


class PolicyError(ValueError):
    """The policy file is missing, is not TOML, or states something baton cannot enforce."""


def _where(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(p) for p in loc) or "(top level)"


def parse(data: bytes, source: str = "<policy>") -> Policy:
    """The policy in ``data`` (TOML), its version the hash of the bytes."""
    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PolicyError(f"{source}: not valid TOML ({exc})") from None
    try:
        policy = Policy.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = _where(first["loc"])
        msg = "unknown key" if first["type"] == "extra_forbidden" else first["msg"]
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise PolicyError(f"{source}: {key}: {msg}{more}") from None
    version = hashlib.sha256(data).hexdigest()[:12]
    return policy.model_copy(update={"version": version})


@functools.cache
def load(path: Path | str | None = None) -> Policy:
    """The policy in the file at ``path``; the demo shop's when none is named.

    Its version is the hash of the file, and of the shop's handbook and tone files when it
    names them. A folder ``packs`` beside the file adds the shop's words to the language packs.
    """
    file = Path(path) if path else DEFAULT_FILE
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise PolicyError(f"{file}: cannot read the policy file ({exc.strerror})") from None
    policy = parse(data, str(file))
    if (file.parent / "packs").is_dir():  # the shop's own words, beside its policy
        packs.extend(file.parent / "packs")
    hashed = data
    shop = policy.shop
    for key, name, target in (
        ("handbook", shop.handbook, "notes"),
        ("tone", shop.tone, "tone_text"),
    ):
        if name is None:
            continue
        raw = _beside(file, key, name)
        # The file's hash is its version; its HTML comments (editing notes) are not prompt text.
        text = _COMMENT.sub(b"", raw).decode("utf-8", "replace").strip()
        shop = shop.model_copy(update={target: text})
        hashed += b"\0" + raw
    if shop.articles is not None:
        # The articles' index version joins the policy's: a reply names both in one version.
        folder = _articles(file, shop.articles)
        shop = shop.model_copy(update={"articles_dir": str(folder)})
        try:
            version = articles.index_for(folder).version
        except articles.ArticlesError as exc:
            raise PolicyError(f"{file}: shop.articles: {exc}") from None
        hashed += b"\0" + version.encode()
    if hashed is data:
        return policy
    version = hashlib.sha256(hashed).hexdigest()[:12]
    return policy.model_copy(update={"shop": shop, "version": version})


def _beside(file: Path, key: str, name: str) -> bytes:
    """The bytes of the file ``name`` beside the policy ``file`` (its ``shop.<key>``)."""
    path = file.parent / name
    try:
        return path.read_bytes()
    except OSError as exc:
        raise PolicyError(f"{file}: shop.{key}: cannot read {path} ({exc.strerror})") from None


def _articles(file: Path, name: str) -> Path:
    """The articles folder ``name`` beside the policy ``file`` (its ``shop.articles``)."""
    folder = (file.parent / name).resolve()
    if not folder.is_dir():
        raise PolicyError(f"{file}: shop.articles: {folder} is not a directory")
    return folder


def default() -> Policy:
    """The demo shop's policy, shipped with baton."""
    return load(None)
