"""Pure text matching: product mentions against order names."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from baton_kafka.agents import packs, text_cache
from baton_kafka.agents.languages import HAN, KANA
from baton_kafka.agents.ticket_memo import read_once

FIND_THRESHOLD = 0.4

_CJK = HAN + KANA
_CJK_RE = re.compile(f"[{_CJK}]")
_WORD = r"[a-z0-9\u00df-\u024f]+"
_WORD_RE = re.compile(_WORD)
_UNITS_RE = re.compile(f"[{_CJK}]+|{_WORD}")
_MODEL_RE = re.compile(r"(?=.*[a-z])(?=.*[0-9])[a-z0-9]{3,}")
_APOSTROPHES = dict.fromkeys(map(ord, "'’‘`´"), None)

_STOPWORD_TEXT = """
a an the my our your his her their its it this that these those i me we you he she they
and or but of for to in on at by with from about as is are was were be been am do does
did have has had not no so just very really also still please can could would will should
one some any all new old bought buy got get order ordered purchase purchased item thing
want need sent send back will that take what when where there them actually instead
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def _kinds_table() -> tuple[tuple[str, ...], ...]:
    """Each product kind's words in every language, its English name first (the packs' kinds)."""
    groups: dict[str, list[str]] = {}
    for words in packs.all_packs("offline").values():
        for kind, terms in words.get("kinds", {}).items():
            group = groups.setdefault(kind, [kind])
            group += [t for t in terms if t not in group]
    return tuple(tuple(group) for group in groups.values())


# Product kinds: the words for each in every language; the first names the kind.
KINDS: tuple[tuple[str, ...], ...] = _kinds_table()


# The rules normalize one message many times (each product score, mention and phrase scan):
# a few cached texts save most of that work on a long ticket.
@functools.lru_cache(maxsize=16)
def normalize(text: str) -> str:
    """Casefolded NFKC text with punctuation and symbols replaced by single spaces."""
    text = unicodedata.normalize("NFKC", text).casefold().translate(_APOSTROPHES)
    return " ".join(text.translate(_SPACED).split())


class _Spaces(dict[int, str]):
    """Each character as ``normalize`` keeps it: punctuation, symbols, separators and controls
    (Unicode categories P, S, Z, C) become a space; each character's category is looked up
    once, then ``str.translate`` maps a whole text in one pass."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        kept = self[code] = " " if unicodedata.category(char)[0] in "PSZC" else char
        return kept


_SPACED = _Spaces()


def stem(word: str) -> str:
    """``word`` without a plural ending ("kettles" -> "kettle", "batteries" -> "battery")."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _words(norm: str) -> list[str]:
    return [stem(w) for w in _WORD_RE.findall(norm)]


# Product names and mentions recur, so what is found in them is kept; a reply's text is new
# every time and would only fill the cache.
CACHED_CHARS = 200


def _cached_if_short(fn: Callable[[str], frozenset[str]]) -> Callable[[str], frozenset[str]]:
    """``fn`` with its results for texts of at most ``CACHED_CHARS`` characters kept, and for
    longer ones kept for the ticket (``read_once``)."""
    cached = text_cache.across_tickets(4096)(fn)
    name = f"matching.{fn.__name__}"

    @functools.wraps(fn)
    def call(text: str) -> frozenset[str]:
        if len(text) <= CACHED_CHARS:
            return cached(text)
        # A long text is mostly a ticket's message, read by each score against a product name
        # (the understanding's, its check's, the look-up's): read once for the ticket.
        return read_once((name, text), lambda: fn(text))

    call.cache_info = cached.cache_info  # type: ignore[attr-defined]
    call.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
    return call


@_cached_if_short
def _units(text: str) -> frozenset[str]:
    """Content units: stemmed English words without stopwords, and Chinese character bigrams."""
    units: set[str] = set()
    for run in _UNITS_RE.findall(normalize(text)):
        if _CJK_RE.match(run):
            units.update({run} if len(run) == 1 else {run[i : i + 2] for i in range(len(run) - 1)})
        elif run not in STOPWORDS:
            units.add(stem(run))
    return frozenset(units)


@dataclass(frozen=True)
class _Term:
    kind: str
    surface: str
    words: tuple[str, ...]
    cjk: bool


def _compile_terms() -> tuple[_Term, ...]:
    terms: list[_Term] = []
    for group in KINDS:
        for surface in group:
            norm = normalize(surface)
            # Han or kana: found as written, since such text does not space its words.
            cjk = bool(_CJK_RE.search(norm)) or not _WORD_RE.search(norm)
            terms.append(_Term(group[0], surface, () if cjk else tuple(_words(norm)), cjk))
    # Longer terms first, so "电热水壶" is reported before "水壶".
    return tuple(sorted(terms, key=lambda t: -len(t.surface)))


_TERMS = _compile_terms()


# The word terms by their first word, the Chinese ones apart: a text is checked only for the
# terms its words can start, and for Chinese and Japanese terms only when it has Han or kana.
def _word_terms() -> dict[str, list[tuple[int, _Term]]]:
    by_first: dict[str, list[tuple[int, _Term]]] = {}
    for place, term in enumerate(_TERMS):
        if not term.cjk:
            by_first.setdefault(term.words[0], []).append((place, term))
    return by_first


_WORD_TERMS = _word_terms()
_CJK_TERMS = tuple((place, term) for place, term in enumerate(_TERMS) if term.cjk)


def _found_terms(text: str) -> list[tuple[int, _Term]]:
    """``(where, term)`` of each term the text holds, in the order of ``_TERMS``."""
    norm = normalize(text)
    spans = [(m.start(), stem(m.group())) for m in _WORD_RE.finditer(norm)]
    stems = tuple(s for _, s in spans)
    # Where each stem starts a word, so a term is tried only where its first word is.
    starts: dict[str, list[int]] = {}
    for i, s in enumerate(stems):
        starts.setdefault(s, []).append(i)
    found: list[tuple[int, int, _Term]] = []
    for first, places in starts.items():
        for place, term in _WORD_TERMS.get(first, ()):
            n = len(term.words)
            for i in places:
                if stems[i : i + n] == term.words:
                    found.append((place, spans[i][0], term))
                    break
    if _CJK_RE.search(norm):
        for place, term in _CJK_TERMS:
            at = norm.find(term.surface)
            if at >= 0:
                found.append((place, at, term))
    found.sort(key=lambda hit: hit[0])
    return [(at, term) for _, at, term in found]


def _terms_in(text: str) -> list[tuple[int, _Term]]:
    """``_found_terms(text)``, a long text's kept for the ticket: its kinds and its mentions
    are both read from them."""
    if len(text) <= CACHED_CHARS:
        return _found_terms(text)
    return read_once(("matching._found_terms", text), lambda: _found_terms(text))


@_cached_if_short
def _kinds(text: str) -> frozenset[str]:
    return frozenset(term.kind for _, term in _terms_in(text))


def product_kinds(text: str) -> frozenset[str]:
    """The product kinds the text mentions ("kettle", "headphones"), by the synonym table."""
    return _kinds(text)


def _mentions(text: str) -> tuple[str, ...]:
    """``mentioned_products(text)`` as a tuple, found anew."""
    seen: dict[str, str] = {}
    for _, term in sorted(_terms_in(text), key=lambda pair: pair[0]):
        seen.setdefault(term.kind, term.surface)
    return tuple(seen.values())


def mentioned_products(text: str) -> list[str]:
    """Product-kind terms the text mentions, as written in the synonym table, first seen first."""
    # A ticket's message is searched for mentions by the understanding (twice when its spelling
    # needed no fix) and by the reply's drift check: they are found once per ticket.
    return list(read_once(("mentioned_products", text), lambda: _mentions(text)))


def content_words(text: str) -> list[str]:
    """The text's English words that carry meaning (no stopwords, no short words), in order."""
    words = _WORD_RE.findall(normalize(text))
    return [w for w in dict.fromkeys(words) if len(w) > 3 and w not in STOPWORDS]


def _coverage(part: frozenset[str], whole: frozenset[str]) -> float:
    return len(part & whole) / len(part) if part else 0.0


def product_score(mention: str, product_name: str) -> float:
    """How well ``mention`` refers to ``product_name``, from 0 (not at all) to 1 (exactly)."""
    return scorer(mention)(product_name)


def scorer(mention: str) -> Callable[[str], float]:
    """``product_score(mention, name)`` as a function of the name: the mention is read once for
    every name it is scored against."""
    if not mention.strip():
        return _nothing
    said = normalize(mention), _units(mention), _kinds(mention)

    def score(product_name: str) -> float:
        return _score(said, product_name) if product_name.strip() else 0.0

    return score


def _nothing(product_name: str) -> float:
    return 0.0


def _score(said: tuple[str, frozenset[str], frozenset[str]], product_name: str) -> float:
    norm, mention_units, mention_kinds = said
    if norm == normalize(product_name):
        return 1.0
    product_units = _units(product_name)
    lexical = max(
        _coverage(mention_units, product_units), 0.9 * _coverage(product_units, mention_units)
    )
    shared = mention_units & product_units
    if shared and any(_MODEL_RE.fullmatch(unit) for unit in shared):
        lexical = max(lexical, 0.5)  # a shared model name ("ps5", "rtx4090") is telling
    product_kinds = _kinds(product_name)
    if mention_kinds & product_kinds:
        return round(min(1.0, 0.75 + 0.25 * lexical), 4)
    if mention_kinds and product_kinds:
        # Both name a product kind and the kinds differ: shared words are likely brand noise.
        return round(0.5 * lexical, 4)
    return round(lexical, 4)


def order_score(mention: str, names: Sequence[str]) -> float:
    """How well ``mention`` refers to an order that answers to ``names`` (its summary and each
    line's product): the best of them, so "the blender" finds the order whose second line is one."""
    score = scorer(mention)
    return max((score(name) for name in names), default=0.0)


def distinct_name(text: str, product_names: list[str]) -> str | None:
    """The one name in ``product_names`` that a word of ``text`` belongs to alone ("navy",
    "Weber", "零食"), or None when no such word or several names have one."""
    units = {n: {u for u in _units(n) if len(u) >= 3 or _CJK_RE.match(u)} for n in product_names}
    said = _units(text)
    fits = []
    for name, own in units.items():
        others = set().union(*(u for n, u in units.items() if n != name))
        if (own - others) & said:
            fits.append(name)
    return fits[0] if len(fits) == 1 else None


def find_product(text: str, product_names: list[str]) -> str | None:
    """The name in ``product_names`` that ``text`` mentions best, or None below the threshold."""
    best: str | None = None
    best_score = FIND_THRESHOLD
    score = scorer(text)
    for name in product_names:
        found = score(name)
        if found > best_score:
            best, best_score = name, found
    return best
