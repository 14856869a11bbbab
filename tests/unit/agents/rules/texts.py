"""Texts to hold a faster reading equal to the plain one on: every corpus the project keeps, the
language packs' own words in every shipped language, and texts generated from them."""

from __future__ import annotations

import functools
import random
import tomllib

import orjson

from baton_kafka.agents import packs
from baton_kafka.agents.rules.matching import _found_terms
from tests.fixtures.paths import ROOT
from tests.unit.agents.rules.test_matching_terms import _strings, corpus


def pack_words() -> list[str]:
    """Every text of every shipped language pack (words, sentences and the patterns' sources)."""
    found: list[str] = []
    for path in sorted(packs.SHIPPED.glob("*/*.toml")):
        found.extend(_strings(tomllib.loads(path.read_text(encoding="utf-8"))))
    return found


def _language_corpora() -> list[str]:
    texts: list[str] = []
    for path in sorted((ROOT / "tests" / "data" / "offline_languages").glob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            if line.strip():
                texts.extend(_strings(orjson.loads(line)))
    return texts


def generated(pool: list[str], count: int, seed: int = 7) -> list[str]:
    """``count`` texts made of pieces of ``pool``: cut at random places, joined by spaces,
    punctuation or nothing, in any order and case (each language's words next to another's)."""
    rng = random.Random(seed)
    joins = [" ", "", ", ", ". ", "，", "。", " - ", "!", "\n", " #"]
    texts = []
    for _ in range(count):
        pieces = []
        for _ in range(rng.randint(1, 5)):
            piece = rng.choice(pool)
            if len(piece) > 4 and rng.random() < 0.5:
                a = rng.randrange(len(piece))
                piece = piece[a : a + rng.randint(1, 40)]
            if rng.random() < 0.2:
                piece = piece.upper() if rng.random() < 0.5 else piece.title()
            pieces.append(piece)
        texts.append("".join(p + rng.choice(joins) for p in pieces).strip())
    return texts


@functools.cache
def every_text() -> tuple[str, ...]:
    """The corpora, the packs' words and 6,000 texts generated from both."""
    base = [*corpus(), *_language_corpora(), *pack_words()]
    return tuple(dict.fromkeys([*base, *generated(base, 6000)]))


def plain_mentions(text: str) -> list[str]:
    """The product words ``text`` mentions, first of each kind, read term by term with no
    shortcut: what ``matching.mentioned_products`` must equal."""
    seen: dict[str, str] = {}
    for _, term in sorted(_found_terms(text), key=lambda pair: pair[0]):
        seen.setdefault(term.kind, term.surface)
    return list(seen.values())
