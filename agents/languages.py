"""The one language detector: which of the shop's languages a text is written in (BCP 47).

Detection is py3langid's (its model ships in the wheel, nothing is fetched at run time), held to
the languages the shop serves: among those, the likeliest wins; a text with no letters left, or
one the model cannot tell between them, is undecided. Japanese (kana and kanji) is told from
Chinese; mixed text ("我的 kettle 漏水了") goes to the language most of it is written in.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

from baton_kafka.agents import text_cache
from baton_kafka.agents.ticket_memo import read_once

# A BCP 47 tag as shops write them: a language subtag, then script, region or variant subtags.
BCP47 = re.compile(r"[a-z]{2,3}(?:-[A-Za-z0-9]{2,8})*")
DEFAULT_LANGUAGES: tuple[str, ...] = ("en", "zh")
# Han ideographs (with the compatibility block) and kana: the one CJK range of the project.
HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
KANA = "\u3040-\u30ff"
HAN_RE = re.compile(f"[{HAN}]")
_LETTER = re.compile(f"[^\\W\\d_]{{2,}}|[{HAN}{KANA}]")  # a word, or one CJK character
_WITH_DIGIT = re.compile(r"[A-Za-z0-9]*\d[A-Za-z0-9-]*")
# Every match of ``_WITH_DIGIT`` holds a digit: a text with none is left as it is, unscanned.
_DIGIT = re.compile(r"\d")
_CJK_CHAR = re.compile(f"[{HAN}{KANA}]")
_CJK_RUNS = re.compile(f"[{HAN}{KANA}\u3000-\u303f\uff00-\uffef]+")
_WORD = re.compile(r"[^\W\d_]{2,}")
# The small words that carry a sentence's grammar (pronouns, particles, copulas, negation):
# in mixed text, whose grammar it is tells the language from the names it quotes.
_CJK_GRAMMAR = re.compile("[我你他她它的了吗呢吧是在不有请怎么没还要这那个のはがをにで]|です|ます")
_LATIN_GRAMMAR = re.compile(
    r"\b(?:i|my|me|is|are|was|the|a|an|it|to|of|and|not|please|can|have|has|this|that|"
    r"ich|mein|meine|ist|das|der|die|und|nicht|el|la|mi|es|y|no|por|favor)\b",
    re.IGNORECASE,
)
# Languages written in Han characters or kana; a text in another script is none of them
# (Korean is written in Hangul).
_CJK_LANGUAGES = frozenset({"zh", "ja", "yue", "wuu"})
_KANA_RE = re.compile(f"[{KANA}]")
# Below this probability among the shop's languages a text is undecided (short, or a name).
_SURE = 0.8
# A message this sure to be in a language the shop does not serve is answered in the default.
_UNSERVED = 0.95


class LanguageError(ValueError):
    """A language code that is not a BCP 47 tag."""


def code(tag: str) -> str:
    """``tag`` as a BCP 47 code (``zh-Hans``, ``de-CH``, ``en``), or LanguageError."""
    text = tag.strip().replace("_", "-")
    head, _, rest = text.partition("-")
    text = f"{head.lower()}-{rest}" if rest else head.lower()
    if not BCP47.fullmatch(text):
        raise LanguageError(f"not a BCP 47 language code: {tag[:40]!r}")
    return text


def primary(tag: str) -> str:
    """The language subtag of ``tag``: ``zh`` of ``zh-Hans``, ``de`` of ``de-CH``."""
    return tag.split("-", 1)[0].lower()


def same(a: str, b: str) -> bool:
    """``a`` and ``b`` name the same language (``de-CH`` and ``de``)."""
    return primary(a) == primary(b)


def codes(tags: Iterable[str]) -> tuple[str, ...]:
    """``tags`` as BCP 47 codes, each once, in order; LanguageError on a bad one or none."""
    found = tuple(dict.fromkeys(code(t) for t in tags if t.strip()))
    if not found:
        raise LanguageError("no language given")
    return found


@functools.cache
def _identifier() -> Any:
    from py3langid.langid import _load_identifier  # loaded once per process (about 2 s)

    return _load_identifier()


def ready() -> None:
    """Load the detector's model now (about 2 s, once per process), not on the first ticket."""
    _identifier()


@text_cache.across_tickets(256)
def _rank(text: str) -> tuple[tuple[str, float], ...]:
    """Every language of the detector with its score for ``text``, best first."""
    # A ticket's text is ranked several times (its language, the risk packs it is read with).
    return tuple(_identifier().rank(text))


@text_cache.across_tickets(256)
def _places(text: str) -> dict[str, tuple[int, float]]:
    """Each language of the detector with its place in ``_rank(text)`` and its score."""
    return {lab: (place, score) for place, (lab, score) in enumerate(_rank(text))}


def _scores(text: str, languages: Sequence[str]) -> list[tuple[str, float]]:
    """Each of ``languages`` (by language subtag) with its probability among them, best first."""
    wanted = {primary(lang): lang for lang in languages}
    # The few wanted languages looked up in the ranking, not the ranking's ~100 walked.
    places = _places(text)
    found = sorted(places[lab] + (lang,) for lab, lang in wanted.items() if lab in places)
    ranked = [(lang, score) for _, score, lang in found]
    if not ranked:
        return []
    top = ranked[0][1]
    total = sum(math.exp(score - top) for _, score in ranked)
    return [(lang, math.exp(score - top) / total) for lang, score in ranked]


def _main_script(text: str) -> str:
    """The part of mixed text in its main script: the one whose small grammar words the text
    uses more ("我的 Philips Electric Kettle 漏水了" is its Chinese, "My 美的电热水壶 is leaking"
    its English); when they tie, CJK characters, two to a word, against the other words."""
    cjk = len(_CJK_CHAR.findall(text))
    if cjk == 0:
        return text
    rest = _CJK_RUNS.sub(" ", text)
    words = len(_WORD.findall(rest))
    if words == 0:
        return text
    han = " ".join(_CJK_RUNS.findall(text))
    # Product and brand names are nouns in any language; the grammar is the customer's.
    han_grammar = len(_CJK_GRAMMAR.findall(han))
    latin_grammar = len(_LATIN_GRAMMAR.findall(rest))
    if han_grammar != latin_grammar:
        return han if han_grammar > latin_grammar else rest
    return han if cjk / 2 >= words else rest


def among(language: str, languages: Sequence[str] = ()) -> tuple[str, ...]:
    """``language`` first, then the others of ``languages`` (the demo shop's when none)."""
    others = [x for x in (languages or DEFAULT_LANGUAGES) if not same(x, language)]
    return (language, *others)


def display_name(language: str, in_language: str) -> str:
    """The name of ``language`` in ``in_language`` ("英语" for en in zh), else the code."""
    from babel import Locale, UnknownLocaleError

    try:
        names = Locale.parse(primary(in_language)).languages
    except (UnknownLocaleError, ValueError):
        return language
    return str(names.get(primary(language), language))


def detect(
    text: str, languages: Sequence[str] = DEFAULT_LANGUAGES, sure: float = _SURE
) -> str | None:
    """The one of ``languages`` ``text`` is written in, or None when it cannot be told (its
    probability among them below ``sure``)."""
    if _DIGIT.search(text):  # ids, tracking numbers, sizes: no language's words
        text = _WITH_DIGIT.sub(" ", text)
    if not _LETTER.search(text):
        return None
    text = _main_script(text)
    cjk = bool(_CJK_CHAR.search(text))
    written = [lang for lang in languages if (primary(lang) in _CJK_LANGUAGES) == cjk]
    if cjk and _KANA_RE.search(text):
        written = [lang for lang in written if primary(lang) == "ja"]
    if not written:  # in a script none of the languages is written in
        return ("ja" if _KANA_RE.search(text) else "zh") if cjk else None
    if len(written) == 1:
        return written[0]
    scores = _scores(text, written)
    if not scores or scores[0][1] < sure:
        return None
    return scores[0][0]


def likely(text: str, languages: Sequence[str], floor: float = 0.1) -> list[str]:
    """Every one of ``languages`` whose probability for ``text`` is at least ``floor``, best
    first (the script's languages alone; none when the text has no letters)."""
    text = _main_script(_WITH_DIGIT.sub(" ", text))
    if not _LETTER.search(text):
        return []
    cjk = bool(_CJK_CHAR.search(text))
    written = [lang for lang in languages if (primary(lang) in _CJK_LANGUAGES) == cjk]
    return [lang for lang, p in _scores(text, written) if p >= floor] if written else []


def detect_or(text: str, languages: Sequence[str], default: str | None = None) -> str:
    """The likeliest of ``languages`` for ``text``; ``default`` (else the first) without letters."""
    return detect(text, languages, sure=0.0) or default or languages[0]


def customer_language(text: str, languages: Sequence[str]) -> str:
    """The language to answer ``text`` in: the likeliest of ``languages``, or the first (the
    shop's default) when the text is plainly in a language the shop does not serve."""
    # The understanding and its rules both ask for the ticket's: it is told once per ticket.
    served = tuple(languages)
    return read_once(("customer_language", text, served), lambda: _customer_language(text, served))


def _customer_language(text: str, languages: tuple[str, ...]) -> str:
    """``customer_language``, told anew."""
    if not _LETTER.search(text):
        return languages[0]
    ranked = _rank(_main_script(text))
    best, top = ranked[0]
    served = {primary(lang) for lang in languages}
    if best not in served:
        sure = 1 / sum(math.exp(score - top) for _, score in ranked)
        if sure >= _UNSERVED:
            return languages[0]
    return detect_or(text, languages)
