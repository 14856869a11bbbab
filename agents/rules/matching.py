"""Pure text matching: product mentions against order names, and time hints against dates."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

FIND_THRESHOLD = 0.4

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
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
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())

# Product kinds, English and Chinese terms; the first English term names the kind.
_KINDS: tuple[tuple[str, ...], ...] = (
    ("kettle", "electric kettle", "水壶", "热水壶", "电水壶", "烧水壶", "电热水壶"),
    ("headphones", "headphone", "earbud", "earphone", "headset", "airpods", "耳机", "耳麦"),
    ("controller", "gamepad", "joystick", "joycon", "dualsense", "手柄", "游戏手柄"),
    ("phone", "smartphone", "iphone", "cellphone", "手机"),
    ("laptop", "notebook", "macbook", "笔记本", "笔记本电脑"),
    ("vacuum", "vacuum cleaner", "hoover", "吸尘器", "扫地机", "扫地机器人"),
    ("shoes", "shoe", "sneaker", "trainers", "鞋", "鞋子", "球鞋", "运动鞋"),
    ("jacket", "coat", "parka", "外套", "夹克", "羽绒服"),
    ("watch", "smartwatch", "wristwatch", "手表", "智能手表"),
    ("keyboard", "键盘"),
    ("mouse", "mice", "鼠标"),
    ("charger", "charging adapter", "power adapter", "充电器", "充电头"),
    ("power bank", "powerbank", "充电宝", "移动电源"),
    ("coffee machine", "coffee maker", "espresso machine", "咖啡机"),
    ("blender", "juicer", "搅拌机", "破壁机", "料理机", "榨汁机"),
    ("rice cooker", "电饭煲", "电饭锅"),
    ("air fryer", "空气炸锅"),
    ("monitor", "显示器"),
    ("tablet", "ipad", "平板", "平板电脑"),
    ("speaker", "soundbar", "音箱", "音响"),
    ("camera", "webcam", "相机", "照相机", "摄像头"),
    ("tv", "television", "电视", "电视机"),
    ("fridge", "refrigerator", "冰箱"),
    ("washing machine", "washer", "洗衣机"),
    ("microwave", "微波炉"),
    ("hair dryer", "hairdryer", "吹风机", "电吹风"),
    ("toothbrush", "牙刷", "电动牙刷"),
    ("router", "路由器"),
    ("printer", "打印机"),
    ("backpack", "bag", "背包", "书包"),
    ("air purifier", "空气净化器"),
    ("humidifier", "加湿器"),
    ("fan", "电风扇", "风扇"),
    ("console", "game console", "游戏机"),
)


def normalize(text: str) -> str:
    """Casefolded NFKC text with punctuation and symbols replaced by single spaces."""
    text = unicodedata.normalize("NFKC", text).casefold().translate(_APOSTROPHES)
    kept = [" " if unicodedata.category(ch)[0] in "PSZC" else ch for ch in text]
    return " ".join("".join(kept).split())


def _stem(word: str) -> str:
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
    return [_stem(w) for w in _WORD_RE.findall(norm)]


# Product names and mentions recur, so what is found in them is kept; a reply's text is new
# every time and would only fill the cache.
CACHED_CHARS = 200


def _cached_if_short(fn: Callable[[str], frozenset[str]]) -> Callable[[str], frozenset[str]]:
    """``fn`` with its results for texts of at most ``CACHED_CHARS`` characters kept."""
    cached = functools.lru_cache(maxsize=4096)(fn)

    @functools.wraps(fn)
    def call(text: str) -> frozenset[str]:
        return cached(text) if len(text) <= CACHED_CHARS else fn(text)

    call.cache_info = cached.cache_info  # type: ignore[attr-defined]
    return call


@_cached_if_short
def _units(text: str) -> frozenset[str]:
    """Content units: stemmed English words without stopwords, and Chinese character bigrams."""
    units: set[str] = set()
    for run in _UNITS_RE.findall(normalize(text)):
        if _CJK_RE.match(run):
            units.update({run} if len(run) == 1 else {run[i : i + 2] for i in range(len(run) - 1)})
        elif run not in _STOPWORDS:
            units.add(_stem(run))
    return frozenset(units)


@dataclass(frozen=True)
class _Term:
    kind: str
    surface: str
    words: tuple[str, ...]
    cjk: bool


def _compile_terms() -> tuple[_Term, ...]:
    terms: list[_Term] = []
    for group in _KINDS:
        for surface in group:
            norm = normalize(surface)
            cjk = bool(_CJK_RE.search(norm))
            terms.append(_Term(group[0], surface, () if cjk else tuple(_words(norm)), cjk))
    # Longer terms first, so "电热水壶" is reported before "水壶".
    return tuple(sorted(terms, key=lambda t: -len(t.surface)))


_TERMS = _compile_terms()


def _found_terms(text: str) -> list[tuple[int, _Term]]:
    norm = normalize(text)
    spans = [(m.start(), _stem(m.group())) for m in _WORD_RE.finditer(norm)]
    stems = tuple(stem for _, stem in spans)
    # Where each stem starts a word, so a term is tried only where its first word is.
    starts: dict[str, list[int]] = {}
    for i, stem in enumerate(stems):
        starts.setdefault(stem, []).append(i)
    found: list[tuple[int, _Term]] = []
    for term in _TERMS:
        at = -1
        if term.cjk:
            at = norm.find(term.surface)
        else:
            n = len(term.words)
            for i in starts.get(term.words[0], ()):
                if stems[i : i + n] == term.words:
                    at = spans[i][0]
                    break
        if at >= 0:
            found.append((at, term))
    return found


@_cached_if_short
def _kinds(text: str) -> frozenset[str]:
    return frozenset(term.kind for _, term in _found_terms(text))


def mentioned_products(text: str) -> list[str]:
    """Product-kind terms the text mentions, as written in the synonym table, first seen first."""
    seen: dict[str, str] = {}
    for _, term in sorted(_found_terms(text), key=lambda pair: pair[0]):
        seen.setdefault(term.kind, term.surface)
    return list(seen.values())


def content_words(text: str) -> list[str]:
    """The text's English words that carry meaning (no stopwords, no short words), in order."""
    words = _WORD_RE.findall(normalize(text))
    return [w for w in dict.fromkeys(words) if len(w) > 3 and w not in _STOPWORDS]


def _coverage(part: frozenset[str], whole: frozenset[str]) -> float:
    return len(part & whole) / len(part) if part else 0.0


def product_score(mention: str, product_name: str) -> float:
    """How well ``mention`` refers to ``product_name``, from 0 (not at all) to 1 (exactly)."""
    if not mention.strip() or not product_name.strip():
        return 0.0
    if normalize(mention) == normalize(product_name):
        return 1.0
    mention_units, product_units = _units(mention), _units(product_name)
    lexical = max(
        _coverage(mention_units, product_units), 0.9 * _coverage(product_units, mention_units)
    )
    if any(_MODEL_RE.fullmatch(unit) for unit in mention_units & product_units):
        lexical = max(lexical, 0.5)  # a shared model name ("ps5", "rtx4090") is telling
    mention_kinds, product_kinds = _kinds(mention), _kinds(product_name)
    if mention_kinds & product_kinds:
        return round(min(1.0, 0.75 + 0.25 * lexical), 4)
    if mention_kinds and product_kinds:
        # Both name a product kind and the kinds differ: shared words are likely brand noise.
        return round(0.5 * lexical, 4)
    return round(lexical, 4)


def find_product(text: str, product_names: list[str]) -> str | None:
    """The name in ``product_names`` that ``text`` mentions best, or None below the threshold."""
    best: str | None = None
    best_score = FIND_THRESHOLD
    for name in product_names:
        score = product_score(text, name)
        if score > best_score:
            best, best_score = name, score
    return best


_EN_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "a couple of": 2, "couple of": 2, "a few": 3, "few": 3, "several": 3,
}  # fmt: skip
_ZH_DIGITS = {
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_UNIT_WORDS = {
    "day": "day", "days": "day", "week": "week", "weeks": "week", "month": "month",
    "months": "month", "year": "year", "years": "year", "天": "day", "日": "day",
    "周": "week", "星期": "week", "个星期": "week", "礼拜": "week", "个礼拜": "week",
    "个月": "month", "月": "month", "年": "year",
}  # fmt: skip
_EN_COUNT = "|".join([r"\d+", *sorted(_EN_NUMBERS, key=len, reverse=True)])
_ZH_COUNT = r"\d+|[一二两三四五六七八九十几]+"

# (pattern, unit, count); count None means it is read from group 1, unit None from group 2.
_HINTS: tuple[tuple[re.Pattern[str], str | None, int | None], ...] = tuple(
    (re.compile(p, re.I), unit, n)
    for p, unit, n in (
        (rf"\b({_EN_COUNT})\s+(days?|weeks?|months?|years?)\s+ago\b", None, None),
        (
            rf"({_ZH_COUNT})\s*(天|日|个星期|星期|个礼拜|礼拜|周|个月|年)\s*(?:前|之前|以前)",
            None,
            None,
        ),
        (r"\bthe day before yesterday\b", "day", 2),
        (r"\byesterday\b", "day", 1),
        (r"\btoday\b|\bthis morning\b|\bearlier today\b", "day", 0),
        (r"\blast week(?:end)?\b", "week", 1),
        (r"\bthis week\b", "week", 0),
        (r"\blast month\b", "month", 1),
        (r"\bthis month\b", "month", 0),
        (r"\blast year\b", "year", 1),
        (r"\bthis year\b", "year", 0),
        (r"\brecently\b|\bthe other day\b|\bfew days back\b", "recent", 0),
        (r"大前天", "day", 3),
        (r"前天", "day", 2),
        (r"昨天|昨日", "day", 1),
        (r"今天|今日", "day", 0),
        (r"上周|上个?星期|上个?礼拜|上週", "week", 1),
        (r"这周|本周|这个?星期|这个?礼拜", "week", 0),
        (r"上个?月", "month", 1),
        (r"这个月|本月", "month", 0),
        (r"前年", "year", 2),
        (r"去年", "year", 1),
        (r"今年", "year", 0),
        (r"最近|前几天|前些天|前阵子", "recent", 0),
    )
)


def extract_time_hint(text: str) -> str | None:
    """The first time reference in ``text`` ("last month", "上周", "3 days ago"), or None."""
    text = unicodedata.normalize("NFKC", text)
    best: re.Match[str] | None = None
    for pattern, _, _ in _HINTS:
        match = pattern.search(text)
        if match and (best is None or match.start() < best.start()):
            best = match
    return best.group(0).strip().lower() if best else None


def _zh_number(raw: str) -> int:
    if raw.isdigit():
        return int(raw)
    if raw == "几":
        return 3
    if "十" in raw:
        tens, _, ones = raw.partition("十")
        return _ZH_DIGITS.get(tens, 1) * 10 + _ZH_DIGITS.get(ones, 0)
    return _ZH_DIGITS.get(raw, 3)


def _parse_hint(hint: str) -> tuple[str, int] | None:
    for pattern, unit, count in _HINTS:
        match = pattern.search(unicodedata.normalize("NFKC", hint))
        if not match:
            continue
        if unit is not None and count is not None:
            return unit, count
        raw_count, raw_unit = match.group(1).lower(), match.group(2).lower()
        number = int(raw_count) if raw_count.isdigit() else _EN_NUMBERS.get(raw_count)
        return _UNIT_WORDS[raw_unit], number if number is not None else _zh_number(raw_count)
    return None


def _month_start(year: int, month: int) -> date:
    year, month = year + (month - 1) // 12, (month - 1) % 12 + 1
    return date(year, month, 1)


def _window(unit: str, n: int, today: date) -> tuple[date, date, int]:
    """Dates the hint points at (first, last) and how many days it takes to fade out."""
    if unit == "day":
        day = today - timedelta(days=n)
        return day, day, max(3, n)
    if unit == "week":
        if n == 0:
            return today - timedelta(days=today.weekday()), today, 7
        start = today - timedelta(days=today.weekday() + 7 * n)
        return start, start + timedelta(days=6), 7
    if unit == "month":
        start = _month_start(today.year, today.month - n)
        end = _month_start(start.year, start.month + 1) - timedelta(days=1)
        return start, min(end, today), 30
    if unit == "year":
        return date(today.year - n, 1, 1), min(date(today.year - n, 12, 31), today), 180
    return today - timedelta(days=14), today, 14


def _as_utc_date(moment: datetime) -> date:
    return (moment.astimezone(UTC) if moment.tzinfo else moment).date()


def time_score(time_hint: str | None, ordered_at: datetime, now: datetime) -> float:
    """How well an order date fits a time hint, 0..1; 0.5 when there is no usable hint."""
    parsed = _parse_hint(time_hint) if time_hint else None
    if parsed is None:
        return 0.5
    try:
        first, last, fade = _window(*parsed, _as_utc_date(now))
    except (ValueError, OverflowError):
        return 0.5  # "5000 years ago" names no date a calendar holds: no usable hint
    ordered = _as_utc_date(ordered_at)
    if first <= ordered <= last:
        return 1.0
    distance = (first - ordered).days if ordered < first else (ordered - last).days
    return round(max(0.05, 1.0 - distance / fade), 4)
