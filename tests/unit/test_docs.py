"""The documents tell the truth about the code: links resolve, cited names exist, versions are
current, and the README stays a front door."""

from __future__ import annotations

import contextlib
import importlib
import inspect
import pkgutil
import re
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

from tests.fixtures.paths import ROOT, tree

DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [ROOT / "README.md", *DOCS]
PACKAGES = ("schemas", "agents", "streams")
TOP = "baton_kafka"
# Names docs/design.md cites that are not baton's: an HTTP header, Kafka's protocol words.
EXTERNAL = {"Host", "InitProducerId", "UnknownError"}


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*\*", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    found: set[str] = set()
    in_fence = False
    for line in path.read_text("utf-8").splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        elif not in_fence and line.startswith("#"):
            found.add(_slug(line.lstrip("#")))
    return found


def _prose(path: Path) -> str:
    """The page without its fenced blocks (whose text is output or code, not references)."""
    return re.sub(r"^```.*?^```", "", path.read_text("utf-8"), flags=re.M | re.S)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_reaches_a_file_and_its_heading(page: Path) -> None:
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", _prose(page)):
        if re.match(r"[a-z]+:", target):
            continue  # an absolute address: not checked offline
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.name}")
    assert not broken, f"{page.name}: " + "; ".join(broken)


def test_the_readme_is_a_front_door() -> None:
    text = (ROOT / "README.md").read_text("utf-8")
    lines = text.splitlines()
    assert len(lines) <= 160, f"README.md has {len(lines)} lines; move reference text to docs/"
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = quick.split("```console\n", 1)[1].split("```", 1)[0]
    assert [line.split("#")[0].strip() for line in block.splitlines()] == ["make demo", "make test"]
    assert "pip install" in text and "-e '.[" in text, "installing without make is not described"
    for doc in ("configuration.md", "security.md", "bench.md", "shop.md", "guarantees.md"):
        assert f"(docs/{doc}" in text, f"the README does not link docs/{doc}"


@cache
def _modules() -> dict[str, ModuleType]:
    found: dict[str, ModuleType] = {}
    for name in PACKAGES:
        package = importlib.import_module(f"{TOP}.{name}")
        found[package.__name__] = package
        for info in pkgutil.walk_packages(package.__path__, f"{TOP}.{name}."):
            if ".testing.standin.__main__" in info.name or info.name.endswith("__main__"):
                continue
            found[info.name] = importlib.import_module(info.name)
    return found


def _members(obj: object) -> set[str]:
    """What ``obj`` has: attributes, fields, and for a class what its methods assign to self."""
    names = set(dir(obj))
    names |= set(getattr(obj, "model_fields", {}) or {})
    names |= set(getattr(obj, "__dataclass_fields__", {}) or {})
    names |= set(getattr(obj, "__annotations__", {}) or {})
    if inspect.isclass(obj):
        with contextlib.suppress(OSError, TypeError):
            names |= set(re.findall(r"self\.(\w+)\s*[:=]", inspect.getsource(obj)))
    return names


@cache
def _classes() -> dict[str, list[type]]:
    found: dict[str, list[type]] = {}
    for module in _modules().values():
        for value in vars(module).values():
            if inspect.isclass(value):
                found.setdefault(value.__name__, []).append(value)
    return found


@cache
def _defined_names() -> set[str]:
    names: set[str] = set()
    for module in _modules().values():
        names |= set(vars(module))
    return names


def _resolves(dotted: str) -> bool:
    """``pkg.module.attr[.attr]`` is importable and has each attribute."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = _modules().get(".".join(parts[:cut]))
        if module is None:
            continue
        obj: object = module
        for attr in parts[cut:]:
            if attr not in _members(obj):
                return False
            obj = getattr(obj, attr, None)
        return True
    return False


def _problems_with(name: str) -> str | None:
    """Why ``name`` (a code span of docs/design.md) is not a real, public thing; None if it is."""
    if re.fullmatch(r"(schemas|agents|streams|tests)(/[\w.<>-]+)*/?", name):
        path = name.rstrip("/")
        return None if (ROOT / path).exists() else "no such file or folder"
    if re.fullmatch(r"[\w]+\.py|[\w]+/", name):
        tops = (*PACKAGES, "tests")
        hits = [p for top in tops for p in tree(ROOT / top, name.rstrip("/"))]
        hits += [ROOT / name] if (ROOT / name).is_dir() else []
        return None if hits else "no such file or folder in the packages or tests"
    if name in EXTERNAL:
        return None
    bare = re.sub(r"\(.*\)$", "", name)
    if re.fullmatch(r"_\w+", bare.split(".")[-1]) and not bare.startswith("__"):
        return "a private name (docs name public things only)"
    if re.fullmatch(rf"{TOP}\.(schemas|agents|streams)(\.\w+)+", bare):
        return None if _resolves(bare) else "not importable"
    if re.fullmatch(r"(schemas|agents|streams)(\.\w+)+", bare):
        return f"not an import name (it is {TOP}.{bare})"
    head, _, attr = bare.partition(".")
    if re.fullmatch(r"[A-Z][a-z]\w*", head) and (not attr or re.fullmatch(r"\w+", attr)):
        classes = _classes().get(head)
        if classes is None:
            return None if head in _defined_names() else "no such class or name"
        if attr and not any(attr in _members(c) for c in classes):
            return f"{head} has no attribute {attr}"
    return None


def test_design_names_only_things_that_exist_and_are_public() -> None:
    spans = set(re.findall(r"`([^`\n]+)`", _prose(ROOT / "docs" / "design.md")))
    wrong = {name: why for name in sorted(spans) if (why := _problems_with(name))}
    assert not wrong, "docs/design.md cites: " + "; ".join(f"`{n}`: {w}" for n, w in wrong.items())


def test_the_prompt_versions_cited_in_the_docs_are_current() -> None:
    from baton_kafka.agents.policy import default_policy
    from baton_kafka.agents.prompts import PROMPT_VERSION
    from baton_kafka.streams.eval.judge import judge_prompt_version

    current = {"p": PROMPT_VERSION, "j": judge_prompt_version(default_policy())}
    stale = []
    for page in PAGES:
        for kind, digest in re.findall(r"\b([pj])-([0-9a-f]{10})\b", page.read_text("utf-8")):
            if f"{kind}-{digest}" != current[kind]:
                stale.append(f"{page.name}: {kind}-{digest} (now {current[kind]})")
    assert not stale, "stale prompt versions: " + "; ".join(stale)


def _section(page: str, heading: str) -> str:
    """The text of ``page`` under ``heading`` (a ``###`` heading), up to the next heading."""
    text = (ROOT / "docs" / page).read_text("utf-8")
    return text.split(f"### {heading}\n", 1)[1].split("\n#", 1)[0]


def test_production_counts_and_lists_the_topics_baton_creates() -> None:
    from baton_kafka.streams.kafka.topics import changelogs, required_partitions, wanted_partitions
    from baton_kafka.streams.settings import Settings

    managed = _section("production.md", "Topics on a managed cluster")
    said = re.search(
        r"baton creates (\d+) topics plus (\d+) changelogs, (\d+) of them with "
        r"`BATON_PARTITIONS` partitions and (\d+) with one \((\d+) partitions at (\d+)\)",
        managed,
    )
    assert said, "docs/production.md no longer states the topic counts"
    topics, changelog_count, many, one, total, at = map(int, said.groups())
    settings = Settings(partitions=at)
    wanted, required = wanted_partitions(settings), required_partitions(settings)
    logs = changelogs(settings)
    assert (topics, changelog_count) == (len(wanted) - len(logs), len(logs))
    counts = list(wanted.values())
    assert (many, one) == (counts.count(settings.partitions), counts.count(1))
    assert total == sum(counts)

    def listed(lead: str) -> set[str]:
        (item,) = re.findall(rf"^- {re.escape(lead)}(.*?)(?=^- |^\n)", managed, flags=re.M | re.S)
        return set(re.findall(r"`([\w.-]+)`", item)) - {"BATON_PARTITIONS"}

    exact = {t for t, n in required.items() if n == settings.partitions}
    assert listed("exactly `BATON_PARTITIONS`") == exact
    assert listed("exactly one:") == {t for t, n in required.items() if n == 1}
    assert listed("any count:") == set(wanted) - set(required)
    retention = _section("production.md", "Retention per topic").split("\n\n")[1]
    assert set(re.findall(r"`((?:support|baton)[\w.-]*)`", retention)) == set(wanted)


def test_production_names_the_registry_and_dead_letter_settings() -> None:
    from baton_kafka.streams.config.declared import shown_order
    from baton_kafka.streams.config.spec import spec_of

    names = {spec.env for f in shown_order() if (spec := spec_of(f))}
    wanted = {n for n in names if n.startswith("BATON_SCHEMA_REGISTRY_")}
    wanted |= {"BATON_DEAD_LETTER_FORMAT"}
    section = _section("production.md", "Schema Registry and the dead-letter format")
    assert wanted <= names and len(wanted) >= 3
    assert {n for n in wanted if f"`{n}`" not in section} == set()
