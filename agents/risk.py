"""Hand-offs by meaning: the risks a ticket raises, as typed flags grounded in its own words.

Two readers agree on one type. The understanding model flags a risk with the customer's words
as evidence; a flag is kept only if those words occur in the ticket (compared after NFKC, in
lower case, with runs of whitespace as one), so a model cannot invent one. The language packs
(``<language>/risk.toml``, concern ``risk``) are a deterministic backstop under it, per
language, extended by a shop's own words. Words of the shop's own product names are taken out
of the ticket before the backstop reads it, so a "Spark" sleeping bag sets nothing off while
"my Spark sleeping bag caught fire" still does.
"""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, cast, get_args

from baton_kafka.agents import packs, text_cache
from baton_kafka.agents.languages import HAN, KANA, likely, primary
from baton_kafka.agents.ticket_memo import read_once
from baton_kafka.schemas.stages import RiskFlag, RiskKind

CONCERN = "risk"
# A language the detector gives at least this probability is read with its pack too.
LIKELY = 0.05
KINDS: tuple[RiskKind, ...] = get_args(RiskKind)
# A pack's (or a shop's) phrases that only look like a risk ("fire sale"), cut out like names.
FIGURATIVE = "not"
ENTRY_CHARS = 100
# A letter or digit of a script that separates its words (Latin, Greek, Cyrillic), in lower
# case: CJK and Hangul characters do not end a word, so an entry in those scripts matches
# anywhere. Listed, not negated: a negated class with ranges takes 40 ms to compile.
_CJK = f"{HAN}{KANA}\uac00-\ud7af\uff66-\uff9f"
_ALNUM = "[0-9a-z\u00b5\u00df-\u00f6\u00f8-\u024f\u0370-\u03ff\u0400-\u04ff\u1e00-\u1eff]"
_CJK_CHAR = re.compile(f"[{_CJK}]")
# What a removed product name leaves: neither a word nor a space, so no phrase spans it.
CUT = "\u00a6"
_GAP = f"[^{CUT}\\n]{{0,40}}?"
# A word: a run of letters and digits, a CJK run apart ("Fireの" is "Fire", "の").
_TOKEN = re.compile(f"[{_CJK}]+|[^\\W_{_CJK}]+")
_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u00b4": "'"})
_SPACES = re.compile(r"\s+")
# Between two words of one product name in a ticket: spaces, a hyphen, a slash or quotes.
_JOIN = re.compile(r"[\s\-/'\"\u201c\u201d\u201e«»]{0,3}")


def norm(text: str) -> str:
    """``text`` as the risk readers compare it: NFKC (width), one kind of apostrophe, single
    spaces. Case is kept (product names are told apart by it); matching ignores it."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    return _SPACES.sub(" ", text).strip()


def folded(text: str) -> str:
    """``text`` normalised and in lower case: what evidence is looked up in."""
    return lower(norm(text))


# Lower-casing a whole text differs from doing it character by character only for a capital
# sigma (its final form at the end of a word) and for a character that lowers to two ("İ").
_SIGMA = "\u03a3"


def lower(text: str) -> str:
    """``text`` in lower case, character for character (so a match's span is the text's)."""
    low = text.lower()
    if len(low) == len(text) and _SIGMA not in text:
        return low
    return "".join(c if len(low := c.lower()) != 1 else low for c in text)


def compile_entry(entry: str) -> re.Pattern[str]:
    """A pack's or a policy's trigger entry as a pattern; ``ValueError`` saying why not."""
    return re.compile(_source(entry))


def _source(entry: str) -> str:
    """A trigger entry as the source of a pattern over ``lower`` text; ``ValueError`` if none.

    Words are separated by spaces and match whole words in scripts that separate words
    (anywhere in CJK); ``*`` ending a word matches any ending ("burn*": burned, burning), ``*``
    starting it any beginning ("*anwalt": Rechtsanwalt), a lone ``*`` up to 40 characters.
    """
    words = entry.split()
    if not words or len(entry) > ENTRY_CHARS:
        raise ValueError(f"{entry!r}: a trigger is 1 to {ENTRY_CHARS} characters of words")
    doubled = any(a == b == "*" for a, b in itertools.pairwise(words))
    if words[0] == "*" or words[-1] == "*" or doubled:
        raise ValueError(f"{entry!r}: a lone '*' goes between two words")
    parts: list[str] = []
    for i, word in enumerate(words):
        if word == "*":
            parts.append(_GAP)
            continue
        stem = word.strip("*")
        if not stem or "*" in stem:
            raise ValueError(f"{entry!r}: '*' only starts or ends a word")
        if i and words[i - 1] != "*":
            before = words[i - 1].rstrip("*")[-1:]
            latin = not _CJK_CHAR.match(before) and not _CJK_CHAR.match(stem[0])
            parts.append(r"\s+" if latin else r"\s*")
        head = f"{_ALNUM}*" if word.startswith("*") else ""
        tail = f"{_ALNUM}*" if word.endswith("*") else ""
        text = lower(norm(stem))
        right = "" if tail or _CJK_CHAR.match(stem[-1]) else f"(?!{_ALNUM})"
        if head or _CJK_CHAR.match(stem[0]):
            parts.append(f"{head}{re.escape(text)}{tail}{right}")
        else:
            # The boundary is checked after the first letter: a pattern that starts with a
            # look-behind is tried at every position, one that starts with a letter is not.
            first, rest = re.escape(text[0]), re.escape(text[1:])
            parts.append(f"{first}(?<!{_ALNUM}.){rest}{tail}{right}")
    return "".join(parts)


Triggers = Mapping[str, Mapping[str, Sequence[str]]]
NONE: Triggers = MappingProxyType({})


def validate(triggers: Triggers) -> None:
    """``ValueError`` naming the first trigger of ``triggers`` (language -> kind -> entries)
    that is not one: an unknown kind or an entry that does not compile."""
    for language, by_kind in triggers.items():
        for kind, entries in by_kind.items():
            if kind not in (*KINDS, FIGURATIVE):
                known = ", ".join((*KINDS, FIGURATIVE))
                raise ValueError(f"{language}: {kind!r} is not a risk ({known})")
            for entry in entries:
                compile_entry(entry)


@functools.cache
def _compiled(entries: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    """``entries`` as one pattern (none when there are none), the longest first."""
    if not entries:
        return ()
    ordered = sorted(entries, key=len, reverse=True)
    return (re.compile("|".join(f"(?:{_source(e)})" for e in ordered)),)


def _patterns(language: str, extra: Triggers) -> list[tuple[str, re.Pattern[str]]]:
    """The shipped pack's triggers (and figurative phrases) in ``language``, then the shop's."""
    out: list[tuple[str, re.Pattern[str]]] = []
    for words in (packs.pack(CONCERN, language), extra.get(language, {})):
        for kind in (*KINDS, FIGURATIVE):
            out += [(kind, rx) for rx in _compiled(tuple(words.get(kind, ())))]
    return out


def languages_of(text: str, language: str, extra: Triggers = NONE) -> list[str]:
    """The packs a ticket is read with: its language, every one it may be written in (a short
    text is often several), English (customers mix it in), and both CJK packs for text in Han
    or kana."""
    known = [*packs.languages(CONCERN), *(lang for lang in extra if lang not in packs.LANGUAGES)]
    found = [primary(language), *likely(text, known, LIKELY), "en"]
    if _CJK_CHAR.search(text):
        found += ["zh", "ja"]
    return [lang for lang in dict.fromkeys(found) if lang in known or lang in extra]


def _words(name: str) -> list[str]:
    return [w for w in _TOKEN.findall(norm(name)) if not _CJK_CHAR.search(w)]


def without_products(text: str, names: Iterable[str]) -> str:
    """``text`` normalised, each mention of a product name overwritten with cut marks (the
    text keeps its length, so a span in it is the same span of ``norm(text)``).

    A mention is two or more words of one name in a row ("Trail Pro Shock", "Spark sleeping
    bag"), one of its words written as the name writes it with a capital ("Spark"), or a CJK
    word of the name (a name's CJK words are long, so they are cut wherever they occur).
    """
    text = norm(text)
    names = [norm(n) for n in names if n and n.strip()]
    for name in names:
        for word in sorted(_TOKEN.findall(name), key=len, reverse=True):
            if _CJK_CHAR.search(word) and len(word) >= 2:
                text = text.replace(word, CUT * len(word))
    tokens = list(_TOKEN.finditer(text))
    for name in names:
        own = _words(name)
        lowered = {w.casefold() for w in own}
        capitals = {w for w in own if not w.islower()}
        i = 0
        while i < len(tokens):
            j = i
            while j < len(tokens) and tokens[j].group().casefold() in lowered:
                if j > i and not _JOIN.fullmatch(text, tokens[j - 1].end(), tokens[j].start()):
                    break
                j += 1
            if j - i >= 2 or (j - i == 1 and tokens[i].group() in capitals):
                start, end = tokens[i].start(), tokens[j - 1].end()
                text = f"{text[:start]}{CUT * (end - start)}{text[end:]}"
            i = max(j, i + 1)
    return text


# The text normalised; in lower case with names and figurative phrases cut; the patterns it is
# read with; normalised with the names cut (``without_products``).
Reading = tuple[str, str, tuple[tuple[str, re.Pattern[str]], ...], str]


def _reading(text: str, language: str, names: Iterable[str], extra: Triggers) -> Reading:
    """``text`` normalised; the same in lower case with the product names and figurative
    phrases cut out; the patterns of every language it is read in."""
    # A ticket is read several times (understand, the reply's triggers, each a scan and a
    # grounding) with the same words: read once per text, names, triggers and packs. A name
    # repeated (two orders of one product) cuts nothing more, so the names count each once and
    # every stage's reading of the ticket is the same one.
    return _read_once(*_key(text, language, names, extra))


def _key(text: str, language: str, names: Iterable[str], extra: Triggers) -> tuple[Any, ...]:
    """What a reading of ``text`` depends on: its language, names, triggers and the packs."""
    frozen = (
        tuple((lang, tuple((k, tuple(v)) for k, v in by.items())) for lang, by in extra.items())
        if extra
        else ()  # most shops add no triggers of their own
    )
    return text, language, tuple(dict.fromkeys(names)), frozen, packs.version()


@text_cache.across_tickets(256)
def _read_once(
    text: str,
    language: str,
    names: tuple[str, ...],
    frozen: tuple[tuple[str, tuple[tuple[str, tuple[str, ...]], ...]], ...],
    version: str,
) -> Reading:
    extra: Triggers = {lang: dict(by) for lang, by in frozen}
    read = norm(text)
    cut = without_products(text, names)
    low = lower(cut)
    found = [p for lang in languages_of(text, language, extra) for p in _patterns(lang, extra)]
    for kind, rx in found:
        if kind == FIGURATIVE:
            low = rx.sub(lambda m: CUT * len(m.group()), low)
    return read, low, tuple(found), cut


def unnamed(text: str, language: str, names: Iterable[str] = (), extra: Triggers = NONE) -> str:
    """``without_products(text, names)``, from the ticket's one reading (``scan`` of the same
    text, language, names and triggers reads it again from there)."""
    return _reading(text, language, names, extra)[3]


def scan(
    text: str,
    language: str,
    names: Iterable[str] = (),
    extra: Triggers = NONE,
) -> list[RiskFlag]:
    """The risks the packs (and the shop's ``extra`` triggers) find in ``text``, the product
    ``names`` and figurative phrases cut out first; each with the words that set it off."""
    # The understanding's rules, its agent and the reply's check each scan the ticket's message
    # with the same words: it is scanned once per ticket (the flags are frozen, the list is not).
    key = _key(text, language, names, extra)
    return list(read_once(("risk.scan", *key), lambda: _scan(_read_once(*key))))


def _scan(reading: Reading) -> list[RiskFlag]:
    """``scan`` of one reading, anew."""
    read, low, found, _ = reading
    flags: list[RiskFlag] = []
    for kind, rx in found:
        m = rx.search(low) if kind != FIGURATIVE else None
        evidence = read[m.start() : m.end()].strip() if m else ""
        if evidence:
            flags.append(RiskFlag(kind=cast(RiskKind, kind), evidence=evidence[:200]))
    return merged(flags)


def grounded(
    flags: Iterable[RiskFlag],
    text: str,
    names: Iterable[str] = (),
    language: str = "en",
    extra: Triggers = NONE,
) -> list[RiskFlag]:
    """The ``flags`` whose evidence occurs in ``text`` (case, width and spacing aside) outside
    the product ``names`` and figurative phrases: a model cannot invent one, nor flag a name."""
    read, low, _, _ = _reading(text, language, names, extra)
    said = lower(read)
    kept = []
    for flag in flags:
        evidence = folded(flag.evidence)
        at = said.find(evidence) if evidence else -1
        while at >= 0:
            if any(c not in (CUT, " ") for c in low[at : at + len(evidence)]):
                kept.append(flag)
                break
            at = said.find(evidence, at + 1)
    return merged(kept)


def merged(flags: Iterable[RiskFlag]) -> list[RiskFlag]:
    """``flags`` without repeats, in order: of two of one kind whose words overlap ("fire",
    "caught fire"), the longer."""
    kept: list[RiskFlag] = []
    for flag in flags:
        words = folded(flag.evidence)
        same = [k for k in kept if k.kind == flag.kind]
        if any(words in folded(k.evidence) for k in same):
            continue
        kept = [k for k in kept if k.kind != flag.kind or folded(k.evidence) not in words]
        kept.append(flag)
    return kept


def read(
    text: str,
    flags: Iterable[RiskFlag],
    language: str,
    names: Iterable[str] = (),
    extra: Triggers = NONE,
) -> list[RiskFlag]:
    """Every risk of ``text``: the model's ``flags`` it grounds, then the backstop's."""
    names = list(names)
    kept = grounded(flags, text, names, language, extra)
    return merged([*kept, *scan(text, language, names, extra)])[:8]


def warm(extra: Triggers = NONE) -> None:
    """Compile every language pack's triggers, and the shop's ``extra``, as a ticket's first
    reading in that language would (``_patterns``): a worker does it before its first ticket."""
    for language in dict.fromkeys([*packs.languages(CONCERN), *extra]):
        _patterns(language, extra)
