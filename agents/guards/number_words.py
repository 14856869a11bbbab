"""Number words of the language packs (``numbers.toml``, table ``words``): German
("fünfhundert", "zweihundertfünfundzwanzig"), Spanish ("quinientos", "treinta y cinco"), ..."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass

from baton_kafka.agents.guards import whole_words
from baton_kafka.agents.guards import words as packs_words
from baton_kafka.agents.guards.skipping import led
from baton_kafka.agents.guards.whole_words import tree

_GAP = re.compile(r"[\s\u00a0-]+")


@dataclass(frozen=True)
class Words:
    """One language's number words."""

    language: str
    units: dict[str, int]
    hundreds: frozenset[str]
    scales: dict[str, int]
    joiners: frozenset[str]
    ambiguous: frozenset[str]
    articles: frozenset[str]
    compound: bool

    @functools.cached_property
    def known(self) -> frozenset[str]:
        """Every word a number of this language is made of."""
        return self._known

    @functools.cached_property
    def _known(self) -> frozenset[str]:
        return frozenset((*self.units, *self.hundreds, *self.scales, *self.joiners))

    @functools.cached_property
    def _compound(self) -> re.Pattern[str]:
        # Longest parts first, so "siebzehn" is one part and not "sieb" + "zehn".
        alternatives = "|".join(map(re.escape, sorted(self._known, key=len, reverse=True)))
        return re.compile(f"(?:{alternatives})")

    @functools.cached_property
    def tokens(self) -> re.Pattern[str]:
        """A whole word made of this language's number words (one, or several if compound)."""
        alternatives = self._compound.pattern
        if all(w.isalpha() for w in self._known):
            # A match is then a whole word, whichever parts it is read as: the words as a
            # tree of their letters find the same words, trying each letter once.
            alternatives = f"(?:{tree(self._known)})"
        many = "+" if self.compound else ""
        # The lookahead only skips, at once, the words no number word can start.
        first = re.escape("".join(sorted({w[0] for w in self._known})))
        return re.compile(rf"(?<![^\W\d_])(?=[{first}]){alternatives}{many}(?![^\W\d_])", re.I)

    def parts(self, word: str) -> list[str] | None:
        """``word`` as number-word parts ("zweihundertfünf": zwei, hundert, fünf), or None."""
        if word in self._known:
            return [word]
        if not self.compound or not self._compound.match(word):
            return None
        out, at = [], 0
        while at < len(word):
            m = self._compound.match(word, at)
            if m is None:
                return None
            out.append(m.group())
            at = m.end()
        return out if len(out) > 1 and out[-1] not in self.joiners else None

    def value(self, parts: list[str]) -> float:
        total = current = 0
        for part in parts:
            if part in self.units:
                current += self.units[part]
            elif part in self.hundreds:
                current = (current or 1) * 100
            elif part in self.scales:
                total += (current or 1) * self.scales[part]
                current = 0
        return float(total + current)


def languages() -> dict[str, Words]:
    """The number words of every language pack that has them."""
    return packs_words.compiled(_languages)


@packs_words.builder
def _languages() -> dict[str, Words]:
    data = {
        lang: pack["words"]
        for lang, pack in packs_words.languages("numbers")
        if isinstance(pack.get("words"), dict)
    }
    return {
        lang: Words(
            language=lang,
            units={k.casefold(): int(v) for k, v in t["units"].items()},
            hundreds=frozenset(w.casefold() for w in t["hundreds"]),
            scales={k.casefold(): int(v) for k, v in t["scales"].items()},
            joiners=frozenset(t["joiners"]),
            ambiguous=frozenset(w.casefold() for w in t["ambiguous"]),
            articles=frozenset(w.casefold() for w in t.get("articles", ())),
            compound=bool(t["compound"]),
        )
        for lang, t in data.items()
    }


Spelled = tuple[float, int, int]  # a number's value, and where it is written: text[start:end]


def _numbers(text: str, words: Words, ambiguous: bool) -> Iterator[Spelled]:
    """The numbers ``text`` writes in ``words``; its ambiguous words only when ``ambiguous``."""
    group: list[tuple[re.Match[str], list[str]]] = []

    def close() -> Iterator[Spelled]:
        while (
            group
            and group[-1][1] == [group[-1][0].group().casefold()]
            and (group[-1][1][0] in words.joiners)
        ):
            group.pop()
        alone = len(group) == 1 and group[0][0].group().casefold() in words.articles
        if group and not alone:
            parts = [p for _, ps in group for p in ps]
            yield words.value(parts), group[0][0].start(), group[-1][0].end()
        group.clear()

    for m in words.tokens.finditer(text):
        word = m.group().casefold()
        parts = words.parts(word)
        if parts is not None and not ambiguous and parts == [word] and word in words.ambiguous:
            parts = None
        joined = bool(group) and _GAP.fullmatch(text[group[-1][0].end() : m.start()]) is not None
        if parts is None:
            yield from close()
            continue
        if parts == [word] and word in words.joiners:
            if joined:
                group.append((m, parts))
            else:
                yield from close()
            continue
        previous = group[-1][1] if group else []
        big = {*words.hundreds, *words.scales}
        one = joined and (
            (previous[-1:] and previous[-1] in words.joiners)
            or bool(big & set(parts))
            or bool(big & set(previous))
        )
        if not one:
            yield from close()
        group.append((m, parts))
    yield from close()


def ambiguous() -> re.Pattern[str]:
    """A word that is a number in one language only: the text's language decides."""
    return packs_words.compiled(_ambiguous)


def holds_ambiguous(text: str) -> bool:
    """Whether ``ambiguous()`` finds a word in ``text`` (told from its words when ASCII)."""
    return whole_words.holds(ambiguous(), packs_words.compiled(_ambiguous_screen), text)


@packs_words.builder
def _ambiguous_screen() -> re.Pattern[str] | None:
    return whole_words.screen([(w.ambiguous, False) for w in languages().values()])


@packs_words.builder
def _ambiguous() -> re.Pattern[str]:
    words = sorted({w for lang in languages().values() for w in lang.ambiguous}, key=len)
    if not words:
        return re.compile("(?!)")
    first = re.escape("".join(sorted({w[0] for w in words})))
    alternatives = "|".join(map(re.escape, words[::-1]))
    # The first letter is tested before the look behind: most positions fail it at once.
    return re.compile(rf"(?=[{first}])(?<![^\W\d_])(?:{alternatives})(?![^\W\d_])", re.I)


def spelled_numbers(text: str, language: str | None) -> Iterator[Spelled]:
    """Number words of every language in the data file; a language's ambiguous words only
    when ``text`` is written in it (``language``)."""
    screened = packs_words.compiled(_any_word_screen)
    if not whole_words.holds(packs_words.compiled(_any_word), screened, text):
        return  # one scan for every language's words: most texts have none
    for lang, words in languages().items():
        yield from _numbers(text, words, ambiguous=language == lang)


@packs_words.builder
def _any_word() -> re.Pattern[str]:
    """A number word of any language pack (each language's own pattern, as one)."""
    patterns = [w.tokens.pattern for w in languages().values()]
    if not patterns:
        return re.compile("(?!)")
    # Each language's word starts where a word starts: tested once for all of them, after the
    # first letters of any; most positions fail one of the two at once.
    if all(p.startswith(_WORD_START) for p in patterns):
        rest = "|".join(f"(?:{p[len(_WORD_START) :]})" for p in patterns)
        return led(f"{_WORD_START}(?:{rest})", re.I)
    return led("|".join(f"(?:{p})" for p in patterns), re.I)


_WORD_START = r"(?<![^\W\d_])"


@packs_words.builder
def _any_word_screen() -> re.Pattern[str] | None:
    """``_any_word`` told from an ASCII text's words: each language's, compound where it is."""
    return whole_words.screen([(w.known, w.compound) for w in languages().values()])
