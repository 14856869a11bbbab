"""The drift check: a reply names the matched order and addresses its product by any name."""

from __future__ import annotations

import re

from baton_kafka.agents.languages import HAN
from baton_kafka.agents.rules.matching import (
    mentioned_products,
    normalize,
    product_kinds,
    product_score,
    scorer,
)
from baton_kafka.agents.rules.typos import corrected
from baton_kafka.schemas.baton import Baton
from baton_kafka.schemas.records import Order
from baton_kafka.schemas.stages import StrategyDraft, Understanding

DRIFT = "drift"
ADDRESSED = 0.35
# Words of a catalogue name that say what kind of thing or which variant, not which product.
_GENERIC_TEXT = """
wireless electric electronic smart portable bluetooth digital premium classic original
series edition black white silver grey gray blue green pink gold large small medium mini
max plus ultra lite light new with pack single double inch size color colour model
男款 女款 童款 无线 智能 新款 正品 官方 套装 白色 黑色 银色 蓝色 红色 大号 小号
"""
_GENERIC = frozenset(_GENERIC_TEXT.split())
_ASCII_WORD = re.compile(r"[a-z0-9]+")
_CJK = HAN
_CJK_RUN = re.compile(f"[{_CJK}]{{3,}}")
_CJK_WORD = re.compile(f"(?<![{_CJK}])[{_CJK}]{{2}}(?![{_CJK}])")


def product_names(
    order: Order | None, understanding: Understanding, baton: Baton, message: str
) -> list[str]:
    """Every name the product goes by: the catalogue's, the understanding's, the customer's.

    The customer's words (their message, the session's products) count only where they name
    this product: a session that also talked about headphones does not make "headphones" a name
    of the kettle. Empty when neither an order nor the understanding names a product.
    """
    names = order.products() if order else []
    anchors = list(dict.fromkeys(n for n in (*names, understanding.product) if n))
    if not anchors:
        return []
    words = [*mentioned_products(message), baton.product or "", *baton.products_mentioned]
    # A name is kept once, so a word said twice is scored once, and read once for every anchor.
    own = []
    for word in dict.fromkeys(w for w in words if w):
        score = scorer(word)
        if any(score(a) >= ADDRESSED for a in anchors):
            own.append(word)
    return list(dict.fromkeys([*anchors, *own]))


def _distinctive(name: str) -> tuple[set[str], set[str], list[str]]:
    """What singles the product out: model tokens ("1000xm6", "v8"), words ("pegasus"), and
    CJK pieces (three characters of a longer run, or a two-character word such as "戴森")."""
    norm = normalize(name)
    tokens = _ASCII_WORD.findall(norm)
    models = {w for w in tokens if len(w) >= 2 and not w.isalpha() and not w.isdigit()}
    words = {w for w in tokens if len(w) >= 4 and w.isalpha() and w not in _GENERIC}
    pieces = [run[i : i + 3] for run in _CJK_RUN.findall(norm) for i in range(len(run) - 2)]
    pieces += [w for w in _CJK_WORD.findall(norm) if w not in _GENERIC]
    return models, words, pieces


def _same_model(token: str, models: set[str]) -> bool:
    """``token`` is one of the model tokens, or the end or start of one ("xm6s" for "1000xm6")."""
    if token in models:
        return True
    if token.isalpha() or token.isdigit():
        return False
    short = token[:-1] if token.endswith("s") and len(token) > 3 else token
    return len(short) >= 3 and any(m.endswith(short) or m.startswith(short) for m in models)


def addresses(text: str, name: str) -> bool:
    """The text talks about the product ``name``: by its name, its model, its kind or its words.

    Short of the name or the model, a text that mentions only another kind of product
    ("headphones" for a kettle, "your Sony TV" for Sony headphones) does not. A misspelled word
    ("your kettel") counts as the word it misspells.
    """
    if _addresses(text, name):
        return True
    fixed = corrected(text, [name])
    return fixed is not text and _addresses(fixed, name)


def _addresses(text: str, name: str) -> bool:
    norm = normalize(text)
    seen = set(_ASCII_WORD.findall(norm))
    models, words, pieces = _distinctive(name)
    if normalize(name) in norm or any(_same_model(t, models) for t in seen):
        return True
    name_kinds, text_kinds = product_kinds(name), product_kinds(text)
    if name_kinds and text_kinds and not name_kinds & text_kinds:
        return False
    if product_score(name, text) >= ADDRESSED:
        return True
    return any(w in seen or f"{w}s" in seen for w in words) or any(p in norm for p in pieces)


def drift_problems(draft: StrategyDraft, names: list[str], order_id: str | None) -> list[str]:
    """Drift: the reply must name the matched order and address the product (any of ``names``)."""
    problems = []
    if order_id and order_id not in draft.reply:
        problems.append(f"{DRIFT}: the reply must name order {order_id}")
    text = f"{draft.reply}\n{draft.solution}"
    if names and not any(addresses(text, n) for n in names):
        problems.append(f"{DRIFT}: the reply must address the core problem about {names[0]}")
    return problems
