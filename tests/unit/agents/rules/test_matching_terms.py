"""Product terms found through the first-word index: the same terms, places and order as trying
every term of the synonym table on every text, on every corpus the project keeps."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from baton_kafka.agents.rules import matching
from baton_kafka.agents.rules.matching import _TERMS, _found_terms, normalize, stem
from baton_kafka.streams.bench.load import Workload
from tests.fixtures.paths import ROOT


def _every_term(text: str) -> list[tuple[int, Any]]:
    """The table tried term by term, longest first (what the index must give)."""
    norm = normalize(text)
    spans = [(m.start(), stem(m.group())) for m in matching._WORD_RE.finditer(norm)]
    stems = tuple(s for _, s in spans)
    found = []
    for term in _TERMS:
        at = -1
        if term.cjk:
            at = norm.find(term.surface)
        else:
            n = len(term.words)
            for i in range(len(stems)):
                if stems[i : i + n] == term.words:
                    at = spans[i][0]
                    break
        if at >= 0:
            found.append((at, term))
    return found


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


HANDWRITTEN = [
    # Several terms, one of them twice, a two-word term and a longer term holding a shorter.
    "My kettle and the electric kettle leak; the air purifier and the kettle again",
    "我的电热水壶坏了，水壶也漏水，还有空气净化器",
    "Der Wasserkocher (kettle) und die Kopfhörer – headphones – sind kaputt",
    "ケトルが壊れました。kettle と headphones、それに 电热水壶",
    "El hervidor (kettle) y los auriculares (headphones) no funcionan",
    "La bouilloire (kettle) et le casque (headphones) sont en panne",
    "game console, console, stand mixer mixer; travel mug and a water bottle bottle",
    "",
    "12345 #A-77 order ORD-2026-0001",
]


def corpus() -> list[str]:
    texts = list(HANDWRITTEN)
    for path in sorted([*(ROOT / "tests" / "data").glob("*.jsonl"), *_shop_files()]):
        for line in path.read_bytes().splitlines():
            if line.strip():
                texts.extend(_strings(orjson.loads(line)))
    load = Workload("terms", sessions=40, per_session=5)
    texts += [t.text for t in load.tickets()]
    texts += [o.product_name for o in load.orders()]
    texts += [term.surface for term in _TERMS]
    return texts


def _shop_files() -> list[Path]:
    return list((ROOT / "examples" / "shops").glob("*/*.jsonl"))


def test_the_index_finds_what_every_term_finds_on_every_corpus() -> None:
    texts = corpus()
    assert len(texts) > 2000
    differing = [t for t in texts if _found_terms(t) != _every_term(t)]
    assert differing == []
    # The corpora do mention products, in English and in Chinese.
    assert sum(1 for t in texts if _every_term(t)) > 500
    assert any(term.cjk for t in texts for _, term in _every_term(t))
