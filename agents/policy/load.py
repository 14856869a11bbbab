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
from baton_kafka.agents.policy.vocabulary import near
from baton_kafka.agents.policy.vocabulary import problems as vocabulary_problems

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


def _fields_at(loc: tuple[int | str, ...]) -> list[str]:
    """The keys the table at ``loc`` may have (a model's fields), for a "did you mean"."""
    model: object = Policy
    for part in loc:
        if not hasattr(model, "model_fields"):
            return []
        field = model.model_fields.get(str(part))
        if field is None:
            # A name of the shop's own (a remedy's): its table is the dict's value type.
            continue
        annotation = field.annotation
        args = getattr(annotation, "__args__", ())
        model = args[-1] if args and isinstance(args[-1], type) else annotation
    return list(getattr(model, "model_fields", ()))


def _lines(exc: ValidationError) -> list[str]:
    """Every error pydantic found, one line each: the key, what is wrong, a near key."""
    lines = []
    for error in exc.errors(include_url=False):
        loc = tuple(error["loc"])
        if error["type"] == "extra_forbidden":
            known = [f for f in _fields_at(loc[:-1]) if f not in ("notes", "tone_text", "version")]
            msg = f"unknown key{near(str(loc[-1]), known)}"
        else:
            msg = error["msg"].removeprefix("Value error, ")
        lines.append(f"{_where(loc)}: {msg}")
    return lines


def parse(data: bytes, source: str = "<policy>") -> Policy:
    """The policy in ``data`` (TOML), its version the hash of the bytes; ``PolicyError`` lists
    every problem found, one line each naming the file and key."""
    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PolicyError(f"{source}: not valid TOML ({exc})") from None
    problems = vocabulary_problems(raw)
    try:
        policy = Policy.model_validate(raw)
    except ValidationError as exc:
        # The vocabulary tells a bad language by its place in the list, with a near name.
        told = any(line.startswith("shop.languages[") for line in problems)
        pydantic = [
            line for line in _lines(exc) if not (told and line.startswith("shop.languages:"))
        ]
        problems = [*pydantic, *problems]
    if problems:
        # A name pydantic and the vocabulary both refuse (a language) is told once.
        unique = dict.fromkeys(problems)
        raise PolicyError("\n".join(f"{source}: {line}" for line in unique))
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
