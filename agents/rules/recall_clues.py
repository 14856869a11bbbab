"""The clues a message gives about an order it refers back to: what was done about it, its
status, when it was bought or discussed, a problem raised. The words are the language packs'
(``<lang>/recall.toml``); a message is read in its language and English and Chinese.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Literal

from baton_kafka.agents import packs, text_cache
from baton_kafka.agents.rules.matching import normalize
from baton_kafka.agents.rules.phrases import ALWAYS, reading, written_in
from baton_kafka.agents.rules.time_hints import extract_time_hint

CONCERN = "recall"
# What was done or asked about the order (each pack's ``done`` table, by key): the demands, or
# the store statuses, the clue points at.
DONE_KINDS: tuple[tuple[str, frozenset[str]], ...] = (
    ("repair", frozenset({"repair"})),
    ("refund", frozenset({"refund", "refunded", "returned"})),
    ("returned", frozenset({"refund", "exchange", "returned", "refunded"})),
    ("exchange", frozenset({"exchange"})),
    ("cancel", frozenset({"cancel", "cancelled"})),
    ("complaint", frozenset({"complaint"})),
)
# The order's status in the store today (each pack's ``status`` table, by key).
STATUS_KINDS: tuple[tuple[str, frozenset[str]], ...] = (
    ("not_shipped", frozenset({"pending", "paid"})),
    ("on_the_way", frozenset({"shipped"})),
    ("lost", frozenset({"lost"})),
    ("not_arrived", frozenset({"shipped", "lost", "paid", "pending"})),
    ("delivered", frozenset({"delivered"})),
)
Table = tuple[tuple[re.Pattern[str], frozenset[str]], ...]


@dataclass(frozen=True)
class Words:
    """The clue patterns a text in one language is read with: its own, English's and Chinese's."""

    done: Table
    status: Table
    # Words that point back at something ("the one ...", "那个"): a time alone is a clue only
    # next to one of them, so "my kettle broke last week" does not become a reference.
    pointer: re.Pattern[str]
    talked: re.Pattern[str]
    bought: re.Pattern[str]


@functools.cache
def words(language: str) -> Words:
    """The clue patterns of ``language`` joined with English's and Chinese's (packs' ``recall``)."""
    chosen = [packs.pack(CONCERN, lang) for lang in dict.fromkeys((*ALWAYS, language))]

    def joined(section: str, key: str) -> re.Pattern[str]:
        parts = []
        for pack in chosen:
            found = pack.get(section, {}).get(key)
            if found and pack.get("boundary"):
                parts.append(f"(?<!{pack['boundary']})(?:{found})(?!{pack['boundary']})")
            elif found:
                parts.append(found)
        return re.compile("|".join(parts) if parts else "(?!)")

    return Words(
        done=tuple((joined("done", key), kinds) for key, kinds in DONE_KINDS),
        status=tuple((joined("status", key), kinds) for key, kinds in STATUS_KINDS),
        pointer=joined("refers", "pointer"),
        talked=joined("refers", "talked"),
        bought=joined("refers", "bought"),
    )


def warm() -> None:
    """Compile every language's clue patterns now, not while a ticket waits."""
    for language in packs.languages(CONCERN):
        words(language)


warm()


@dataclass(frozen=True)
class Clues:
    """What a message says about the order it means, each with the words it was read from."""

    done: frozenset[str] = frozenset()
    done_words: tuple[str, ...] = ()
    status: frozenset[str] = frozenset()
    status_words: tuple[str, ...] = ()
    time_hint: str | None = None
    time_of: Literal["talk", "purchase", "either"] = "either"
    problem: str | None = None
    problem_words: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.done or self.status or self.time_hint or self.problem)

    @property
    def points(self) -> bool:
        """Says what was done about the order or its status (more than a time)."""
        return bool(self.done or self.status)


def _read(table: Table, norm: str) -> tuple[frozenset[str], tuple[str, ...]]:
    """The kinds every matching clue allows ("returned ... for a refund": a refund), else any."""
    sets: list[frozenset[str]] = []
    words: list[str] = []
    for rx, kind in table:
        found = rx.search(norm)
        if found:
            sets.append(kind)
            words.append(found.group(0).strip())
    if not sets:
        return frozenset(), ()
    common = frozenset.intersection(*sets)
    return common or frozenset.union(*sets), tuple(words)


# A ticket's text is read for clues by several stages in a row; what it gives never changes.
@text_cache.across_tickets(256)
def clues(message: str, language: str | None = None) -> Clues:
    """The clues a message gives about an order it refers back to, read in ``language`` (the
    message's own when not given) and English and Chinese."""
    language = language or written_in(message)
    norm, told = normalize(message), words(language)
    done, done_words = _read(told.done, norm)
    status, status_words = _read(told.status, norm)
    hint = extract_time_hint(message, language)
    if hint and not told.pointer.search(norm):
        hint = None
    talked, bought = bool(told.talked.search(norm)), bool(told.bought.search(norm))
    of: Literal["talk", "purchase", "either"] = (
        "talk" if talked and not bought else "purchase" if bought and not talked else "either"
    )
    problems = reading(language).problems
    key = next(((k, rx) for k, rx in problems.items() if rx.search(norm)), None)
    problem, problem_words = (key[0], (key[1].search(norm).group(0),)) if key else (None, ())  # type: ignore[union-attr]
    return Clues(done, done_words, status, status_words, hint, of, problem, problem_words)
