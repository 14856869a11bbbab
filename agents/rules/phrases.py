"""The offline model's phrase tables, read from the language packs (``<lang>/offline.toml``):
what customers write in each language and what it answers in it."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from baton_kafka.agents import packs
from baton_kafka.agents.languages import HAN_RE, KANA, detect
from baton_kafka.agents.rules.matching import normalize
from baton_kafka.agents.rules.screen import Screen
from baton_kafka.schemas.stages import Demand

CONCERN = "offline"
_CJK_RE = HAN_RE
_KANA_RE = re.compile(f"[{KANA}]")
_SAMPLE = 2000
# The order the problems are tried in: the first that a text names is its problem.
PROBLEM_ORDER: tuple[str, ...] = (
    "fire", "shock", "overheat", "leaking", "refund_missing", "not_delivered", "wrong_item",
    "display", "coming_apart", "damaged", "missing_parts", "overcharged", "drifting", "noise",
    "battery", "no_heat", "broken", "late", "fit", "quality", "unwanted",
)  # fmt: skip
# Checked in this order, so "send it back for repair" is a repair, not a refund.
DEMAND_ORDER: tuple[Demand, ...] = (
    "cancel", "exchange", "repair", "refund", "compensation", "complaint", "information",
)  # fmt: skip


def _packs() -> dict[str, Mapping[str, Any]]:
    return dict(packs.all_packs(CONCERN))


def words(language: str) -> Mapping[str, Any]:
    """The offline pack of ``language`` (its primary subtag), English when it has none."""
    found = packs.pack(CONCERN, language)
    return found if found.get("actions") else packs.pack(CONCERN, "en")


def writes(language: str) -> str:
    """The language the offline model answers ``language`` in: itself when it has a pack."""
    lang = language.split("-")[0].lower()
    return lang if packs.pack(CONCERN, lang).get("actions") else "en"


def _bounded(words: Mapping[str, Any], pattern: str) -> str:
    boundary = words.get("boundary")
    return f"(?<!{boundary})(?:{pattern})(?!{boundary})" if boundary else pattern


# English and Chinese are read in every text (names, mixed text); another language's words only
# in a text written in it, so the other packs never change how English or Chinese is read.
ALWAYS = ("en", "zh")


@dataclass(frozen=True)
class Reading:
    """The patterns a text is read with: its language's, English's and Chinese's, as one."""

    problems: dict[str, re.Pattern[str]]
    demands: dict[Demand, re.Pattern[str]]
    news: re.Pattern[str]
    negated: re.Pattern[str]
    earlier: re.Pattern[str]
    return_logistics: re.Pattern[str]
    size: re.Pattern[str]
    # The problems and demands a text may name, told by the literal starts of their words: the
    # others' patterns are not run over it (each is a scan of the whole text).
    screen: Screen[tuple[bool, str]] = field(compare=False, repr=False)

    def said(self, norm: str) -> tuple[dict[str, list[str]], dict[Demand, list[str]]]:
        """What each problem's and each demand's words find in normalized ``norm`` (``hits``)."""
        may, negated = self.screen.possible(norm), self.negated
        return (
            {
                k: hits(rx, norm, negated) if (True, k) in may else []
                for k, rx in self.problems.items()
            },
            {
                d: hits(rx, norm, negated) if (False, d) in may else []
                for d, rx in self.demands.items()
            },
        )

    def first_problem(self, norm: str, negated: bool = True) -> str | None:
        """The first problem whose words ``norm`` holds (not negated, unless ``negated`` false)."""
        may = self.screen.possible(norm)
        for key, rx in self.problems.items():
            if (True, key) in may and (
                hits(rx, norm, self.negated) if negated else rx.search(norm)
            ):
                return key
        return None

    def demands_in(self, norm: str) -> list[Demand]:
        """The demands whose words normalized ``norm`` holds, not negated, in ``DEMAND_ORDER``."""
        may = self.screen.possible(norm)
        return [
            d
            for d, rx in self.demands.items()
            if (False, d) in may and hits(rx, norm, self.negated)
        ]


def _join(parts: list[str]) -> re.Pattern[str]:
    return re.compile("|".join(parts) if parts else "(?!)")


@functools.cache
def reading(language: str) -> Reading:
    """The patterns of ``language`` with English's and Chinese's (only those for en and zh)."""
    by_language = _packs()
    chosen = [
        by_language[lang] for lang in dict.fromkeys((*ALWAYS, language)) if lang in by_language
    ]

    def union(section: str, key: str, bounded: bool = True) -> re.Pattern[str]:
        found = [(p, p.get(section, {}).get(key)) for p in chosen]
        return _join([_bounded(p, x) if bounded else x for p, x in found if x])

    def problem(key: str) -> re.Pattern[str]:
        found = [(p, p.get("problems", {}).get(key, {}).get("words")) for p in chosen]
        return _join([_bounded(p, x) for p, x in found if x])

    before = "|".join(
        p["patterns"]["size_before"] for p in chosen if p["patterns"].get("size_before")
    )
    after = "|".join(p["patterns"]["size_after"] for p in chosen if p["patterns"].get("size_after"))
    problems = {key: problem(key) for key in PROBLEM_ORDER}
    demands = {d: union("demands", d) for d in DEMAND_ORDER}
    # One screen for both tables, a problem's key tagged True and a demand's False.
    tagged: dict[tuple[bool, str], re.Pattern[str]] = {(True, k): rx for k, rx in problems.items()}
    tagged.update({(False, d): rx for d, rx in demands.items()})
    return Reading(
        problems=problems,
        demands=demands,
        screen=Screen(tagged),
        news=union("patterns", "news"),
        negated=union("patterns", "negated", bounded=False),
        earlier=union("patterns", "earlier"),
        return_logistics=union("patterns", "return_logistics", bounded=False),
        size=re.compile(rf"(?:{before})\s*(\d{{1,2}}(?:\.5)?)(?!\d)|(\d{{2}})\s*(?:{after})"),
    )


_BOTH = reading("en")
PROBLEM_RX = _BOTH.problems


def problem_label(key: str, language: str) -> str:
    """What the problem ``key`` is called in ``language`` ("leaking", "漏水")."""
    pack = words(language)
    return str(pack["core"]["general"] if key == "general" else pack["problems"][key]["label"])


def problem_predicate(key: str, language: str) -> str:
    """What ``key`` says about a product in ``language`` ("is leaking")."""
    return str(words(language)["problems"][key]["predicate"])


_EN, _ZH = packs.pack(CONCERN, "en"), packs.pack(CONCERN, "zh")
# key: (English pattern, Chinese pattern, English label, English predicate, Chinese label)
PROBLEMS: dict[str, tuple[str, str, str, str, str]] = {
    key: (
        _EN["problems"][key]["words"],
        _ZH["problems"][key]["words"],
        _EN["problems"][key]["label"],
        _EN["problems"][key]["predicate"],
        _ZH["problems"][key]["label"],
    )
    for key in PROBLEM_ORDER
}
GENERAL = (_EN["core"]["general"], _ZH["core"]["general"])
PROBLEMS["general"] = ("", "", GENERAL[0], "", GENERAL[1])
PROBLEM_BY_LABEL = {
    label: key
    for by_language in _packs().values()
    for key, row in by_language.get("problems", {}).items()
    if (label := row.get("label")) and key in PROBLEM_RX
}
PROBLEM_BY_LABEL.update(
    {
        str(p["core"]["general"]): "general"
        for p in _packs().values()
        if p.get("core", {}).get("general")
    }
)
PROBLEM_BY_LABEL.update({label: key for key, row in PROBLEMS.items() for label in (row[2], row[4])})
# The problems that are hazards: a person takes them over, so they have no default demand.
SAFETY = ("fire", "shock")
DELIVERY = ("not_delivered", "late")

DEMANDS = _BOTH.demands
# Asking for news with no request of its own: it continues what was asked before, if anything.
NEWS = _BOTH.news
NEGATED = _BOTH.negated
# Longer than any negation NEGATED matches in normalized text, where every run of spaces is a
# single space: the longest, "rather than want the ", has 21 characters.
NEGATION_REACH = 32
DEFAULT_DEMAND: dict[str, Demand] = {
    "not_delivered": "information", "late": "information", "wrong_item": "exchange",
    "damaged": "exchange", "missing_parts": "exchange", "fit": "exchange",
    "overcharged": "refund", "unwanted": "refund", "leaking": "repair", "broken": "repair",
    "drifting": "repair", "noise": "repair", "battery": "repair", "quality": "repair",
    "overheat": "exchange", "refund_missing": "information", "display": "repair",
    "coming_apart": "exchange", "no_heat": "repair",
}  # fmt: skip
EARLIER = _BOTH.earlier
RETURN_LOGISTICS = _BOTH.return_logistics
# A size the message names ("size 9", "42码"): the number in group 1 or 2.
SIZE = _BOTH.size
CLAUSE_EN: dict[str, str] = dict(_EN["clauses"])
# The remedies whose duration a follow-up asks about.
NOUN = {key: (_EN["nouns"][key], _ZH["nouns"][key]) for key in _EN["nouns"]}


def is_chinese(text: str) -> bool:
    """True when ``text`` contains Han characters: the rules read it with their Chinese words."""
    return bool(_CJK_RE.search(text))


def written_in(text: str) -> str:
    """The language the rules write their reading of ``text`` in: German, Spanish, French or
    Japanese when it is plainly that, else Chinese when it has Han characters, else English."""
    if _KANA_RE.search(text) and words("ja").get("core"):
        return "ja"
    # The opening of a long text says its language as well as the whole, and in a fraction of
    # the time.
    found = detect(text[:_SAMPLE], ("en", "de", "es", "fr"))
    if found in ("de", "es", "fr") and packs.pack(CONCERN, found).get("core"):
        return found
    return "zh" if is_chinese(text) else "en"


def hits(rx: re.Pattern[str], norm: str, negated: re.Pattern[str] = NEGATED) -> list[str]:
    """What ``rx`` finds in normalized text, leaving out negated finds ("not a refund").

    Only the ``NEGATION_REACH`` characters before a find can negate it, so the scan is linear
    in the text: searching the whole text before every find took seconds on a long ticket.
    """
    return [
        m.group(0)
        for m in rx.finditer(norm)
        if not negated.search(norm, max(0, m.start() - NEGATION_REACH), m.start())
    ]


def problem_key(text: str | None) -> str | None:
    """The problem table's key for a label or a free text, or None when none applies."""
    if not text:
        return None
    if text in PROBLEM_BY_LABEL:
        return PROBLEM_BY_LABEL[text]
    return reading(written_in(text)).first_problem(normalize(text), negated=False)


def pad(name: str) -> str:
    """``name`` for Chinese text: spaced off where it starts or ends in Latin letters or digits."""

    def edge(ch: str) -> str:
        return " " if ch.isascii() and ch.isalnum() else ""

    return f"{edge(name[:1])}{name}{edge(name[-1:])}"


def name_in(name: str, language: str) -> str:
    """``name`` as a sentence of ``language`` writes it: padded where the pack says so."""
    return pad(name) if words(language).get("pad_names") else name
