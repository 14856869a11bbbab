"""Misspelled product words ("kettel", "hedphones") corrected toward the products' own words."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence

from rapidfuzz import process
from rapidfuzz.distance import OSA

from baton_kafka.agents import packs
from baton_kafka.agents.rules.matching import STOPWORDS, normalize, stem

_WORD_RE = re.compile(r"[a-z0-9\u00df-\u024f]+")
_ASCII_LETTERS = re.compile(r"[a-z]+")


def allowed_edits(word: str) -> int:
    """Edits (insert, delete, substitute, swap two neighbours) a misspelling of ``word`` may have.

    None up to four letters: "tv"/"tw", "pan"/"fan", "case"/"cash" are different words, not typos.
    """
    return 0 if len(word) <= 4 else 1 if len(word) <= 8 else 2


def _spelled(word: str) -> bool:
    return bool(_ASCII_LETTERS.fullmatch(word))


@functools.cache
def _kind_vocabulary() -> dict[str, str]:
    """Stemmed English words of the product-kind table, and multi-word terms written as one word
    ("airfryer", "vacuumcleaner"), each to the words it stands for."""
    vocabulary: dict[str, str] = {}
    # English only: a word of another language's pack is no spelling of an English one.
    english = [[kind, *terms] for kind, terms in packs.pack("offline", "en")["kinds"].items()]
    for group in english:
        for surface in group:
            words = [stem(w) for w in _WORD_RE.findall(normalize(surface)) if _spelled(w)]
            vocabulary.update({w: w for w in words})
            if len(words) > 1:
                vocabulary.setdefault(stem("".join(words)), " ".join(words))
    return vocabulary


# A customer's product names recur on every stage of a ticket and across a session.
@functools.lru_cache(maxsize=256)
def _vocabulary(
    names: tuple[str, ...],
) -> tuple[dict[str, str], frozenset[str], dict[str, list[str]]]:
    """The words a typo may stand for (kind terms and the words of ``names``), the known words
    (those, less the terms written as one word, plus the stopwords), and the words by initial."""
    vocabulary = dict(_kind_vocabulary())
    for name in names:
        for word in _WORD_RE.findall(normalize(name)):
            if _spelled(word):
                vocabulary.setdefault(stem(word), stem(word))
    # A term written as one word ("airfryer") is not known as such: it is spelled out.
    known = STOPWORDS | {word for word, words in vocabulary.items() if word == words}
    initials: dict[str, list[str]] = {}
    for word in vocabulary:
        initials.setdefault(word[0], []).append(word)
    return vocabulary, known, initials


def _plausible(typo: str, word: str) -> bool:
    """A typo keeps the first and the last letter (or swaps the last two: "kettel"), and a word
    of five or six letters is not misspelled by a wrong letter: "phoned" is not "phone", "washed"
    not "washer", "charge" not "charger", "house" not "mouse", "cooler" not "cooker"."""
    if typo[0] != word[0] or not (typo[-1] == word[-1] or typo[-2:] == word[-2:][::-1]):
        return False
    return len(typo) >= 7 or len(typo) != len(word) or sorted(typo) == sorted(word)


def _closest(
    typo: str, vocabulary: dict[str, str], initials: dict[str, list[str]], most: int = 2
) -> str | None:
    """What the one word ``typo`` plausibly misspells stands for; None if none or a tie."""
    limit = min(allowed_edits(typo), most)
    if not limit:
        return None
    # A typo keeps its first letter, so only words of the same initial are candidates.
    found = process.extract(
        typo, initials.get(typo[0], []), scorer=OSA.distance, score_cutoff=limit, limit=None
    )
    near = [(distance, word) for word, distance, _ in found if _plausible(typo, word)]
    if not near:
        return None
    best = min(distance for distance, _ in near)
    # As close to another word, even one it is not a plausible typo of, is no answer: "mixter"
    # may be a mixer or a mister, "chager" a charger or a changer.
    rivals = {vocabulary[word] for word, distance, _ in found if distance <= best}
    return rivals.pop() if len(rivals) == 1 else None


def corrected(text: str, names: Sequence[str]) -> str:
    """``text`` with its misspelled English words replaced by product words (then normalized).

    Only words today's matching does not know are touched (not a stopword, not a word of any of
    ``names``, not a product-kind term), and only English letters: a known word, a number, a
    model name or Chinese text comes back as it was. Two neighbouring words that together spell
    a product word ("air fryr", "head phones") become that word. The vocabulary is the words of
    ``names`` and of the product-kind table.
    """
    norm = normalize(text)
    vocabulary, known, initials = _vocabulary(tuple(names))

    # Each word is asked about up to three times (as a join's first and second word, then
    # alone): it is told once per text.
    told: dict[str, bool] = {}

    def unknown(word: str) -> bool:
        found = told.get(word)
        if found is None:
            found = told[word] = _spelled(word) and stem(word) not in known
        return found

    def joinable(first: str, second: str) -> bool:
        # "an airfryer" is not "anairfryer" misspelled: stopwords are never part of a join.
        if first in STOPWORDS or second in STOPWORDS:
            return False
        return unknown(first) or unknown(second)

    return fixed(text, norm, vocabulary, initials, unknown, joinable)


def fixed(
    text: str,
    norm: str,
    vocabulary: dict[str, str],
    initials: dict[str, list[str]],
    unknown: Callable[[str], bool],
    joinable: Callable[[str, str], bool],
) -> str:
    """``norm`` (``text`` normalized) with each word ``unknown`` calls misspelled, and each pair
    ``joinable`` lets join, replaced by its closest vocabulary word; ``text`` when none is."""
    words = list(_WORD_RE.finditer(norm))
    pieces: list[str] = []
    at = i = 0
    while i < len(words):
        word, end, fix = words[i], words[i].end(), None
        after = words[i + 1] if i + 1 < len(words) else None
        if after and norm[end : after.start()] == " " and joinable(word[0], after[0]):
            joined = stem(word[0] + after[0])
            # One edit at most across a join: "air fryr", "vacum cleaner".
            fix = vocabulary.get(joined) or (
                _closest(joined, vocabulary, initials, most=1) if _spelled(joined) else None
            )
            end = after.end() if fix else end
        if fix is None and unknown(word[0]):
            fix = _closest(stem(word[0]), vocabulary, initials)
        if fix is not None:
            pieces += [norm[at : word.start()], fix]
            at = end
        i += 2 if fix is not None and end != word.end() else 1
    return "".join([*pieces, norm[at:]]) if pieces else text
