"""Money in text: each amount with its currency, and whether its sentence promises money."""

from __future__ import annotations

import functools
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Literal

from baton_kafka.agents.guards.numbers import Number, all_numbers
from baton_kafka.agents.guards.skipping import Sieved, skipping
from baton_kafka.agents.languages import HAN_RE

_DOLLARS = frozenset({"USD", "HKD", "CAD", "AUD", "SGD", "TWD", "NZD"})
_ANY: frozenset[str] = frozenset()  # "元", "块": a currency unit, which one is not said
_SYMBOLS = {
    "US$": {"USD"},
    "HK$": {"HKD"},
    "NT$": {"TWD"},
    "C$": {"CAD"},
    "A$": {"AUD"},
    "S$": {"SGD"},
    "$": _DOLLARS,
    "¥": {"CNY", "JPY"},
    "￥": {"CNY", "JPY"},
    "€": {"EUR"},
    "£": {"GBP"},
    "₩": {"KRW"},
    "₹": {"INR"},
}
_WORDS = {
    **{code: {code} for code in ("USD", "CNY", "EUR", "GBP", "HKD", "JPY", "AUD", "CAD")},
    "RMB": {"CNY"},
    "YUAN": {"CNY"},
    "人民币": {"CNY"},
    "美元": {"USD"},
    "美金": {"USD"},
    "刀": {"USD"},
    "欧元": {"EUR"},
    "EURO": {"EUR"},
    "EUROS": {"EUR"},
    "英镑": {"GBP"},
    "POUND": {"GBP"},
    "POUNDS": {"GBP"},
    "QUID": {"GBP"},
    "港元": {"HKD"},
    "港币": {"HKD"},
    "日元": {"JPY"},
    "円": {"JPY"},
    "ユーロ": {"EUR"},
    "ドル": _DOLLARS,
    "CHF": {"CHF"},
    "FRANKEN": {"CHF"},
    "DOLLAR": _DOLLARS,
    "DOLLARS": _DOLLARS,
    "BUCK": _DOLLARS,
    "BUCKS": _DOLLARS,
    "CENT": _DOLLARS,
    "CENTS": _DOLLARS,
    "元": _ANY,
    "圆": _ANY,
    "块": _ANY,
    "块钱": _ANY,
}
_CODES = r"USD|CNY|RMB|EUR|GBP|HKD|JPY|AUD|CAD|CHF|usd|cny|rmb|eur|gbp|hkd|jpy|chf"
_BEFORE = skipping(
    rf"(?:(?P<sym>US\$|HK\$|NT\$|C\$|A\$|S\$|\$|¥|￥|€|£|₩|₹)|(?<![A-Za-z])(?P<code>{_CODES})"
    r"|(?P<zh>人民币|美元))\s*[:：]?\s*$"
)
_AFTER = skipping(
    rf"\s*(?:(?P<code>{_CODES})(?![A-Za-z])"
    r"|(?P<word>dollars?|bucks?|cents?|yuan|euros?|pounds?|quid|franken)(?![A-Za-z])"
    r"|(?P<zh>块钱|人民币|美元|美金|欧元|英镑|港元|港币|日元|元|圆|块|刀|円|ユーロ|ドル)"
    r"|(?P<sym>[€$¥￥£]))",
    re.I,
)
# 块 also counts things ("一块手表"): money only before 钱, punctuation or a money word.
_KUAI_MONEY_NEXT = "钱的给作补红代优礼积购现左吧呢哦啊"
_PERCENT_AFTER = skipping(
    r"\s*(?:%|％|percent\b|per\s?cent\b|prozent\b|por\s?ciento\b|パーセント)", re.I
)
_DISCOUNT_AFTER = re.compile(r"\s*折")
_RANGE_TAIL = re.compile(
    r"\s*(?:-|–|—|~|～|to|至|到|or|或)\s*(?:\d+(?:\.\d+)?|[一二两三四五六七八九十百千]+)", re.I
)
_UNIT_AFTER = skipping(
    r"\s*(?:(?:business|working|calendar|more|extra|additional|full|whole)\s+)?"
    r"(?:days?|hours?|hrs?|h|minutes?|mins?|seconds?|secs?|weeks?|wks?|months?|years?|yrs?"
    r"|am|pm|a\.m\.|p\.m\.|o'clock|pairs?|pcs|pieces?|items?|units?|boxes|box|packs?"
    r"|packages?|parcels?|bottles?|sets?|oz|ounces?|lbs?|kg|g|grams?|ml|l|liters?|litres?"
    r"|cm|mm|m|km|meters?|metres?|inch(?:es)?|ft|feet|foot|w|watts?|v|volts?|mah|gb|tb|mb"
    r"|hz|x|times|stars?|steps?|orders?|tickets?|emails?|messages?|calls?|attempts?|people"
    r"|persons?|customers?|colou?rs?|sizes?|seats?|rooms?|nights?|digits?|st|nd|rd|th"
    r"|of\s+(?:them|the|your|our|these|those)"
    # German and Spanish
    r"|(?:werk|arbeits|kalender|geschäfts)?tage?n?|wochen?|monate?n?|jahre?n?|stunden?|minuten?"
    r"|sekunden?|stück|paar|teile?|größe|mal"
    r"|días?(?:\s+(?:hábiles|laborables|naturales))?|semanas?|meses|mes|años?|horas?|minutos?"
    r"|segundos?|unidades|unidad|pares?|piezas?|veces|talla|tallas)(?![^\W\d_])"
    r"|\s*(?:多|余|几)?(?:个?工作日|个?自然日|个?小时|分钟|秒钟?|天|日|周|星期|个?礼拜|个?月|年|岁"
    r"|次|件|个|双|台|部|只|张|份|套|盒|瓶|包|箱|支|条|号|点|时|升|毫升|克|千克|公斤|斤|米|厘米"
    r"|毫米|寸|英寸|瓦|伏|倍|步|位|名|颗|星|楼|层|单|笔|成|款|种|项|封|通|码|期|批|轮|度|℃|°"
    r"|営業日|週間|か月|ヶ月|カ月|時間|分|足|点|回)",
    re.I,
)
_NOT_MONEY_BEFORE = skipping(
    r"(?:(?<![A-Za-z])(?:size|model|version|v|step|option|no\.?|number|item|page|line|room|gate"
    r"|level|chapter|section|part|generation|gen|series|ending(?:\s+in)?|pin|code|floor"
    r"|apt|suite|unit|batch|lot|serial|phase|round|day|week|ref|reference|ext|extension"
    r"|channel|port|slot|row|seat|question|point|rule|article|clause|tier|out\s+of"
    r"|open|opens|opening\s+hours|hours"
    # a product or software name before a bare number: "iOS 26.1", "iPhone 17", "Pro 3"
    r"|ios|ipados|macos|android|windows|firmware|build|pro|mini|ultra|air|lite|edition"
    r"|iphone|ipad|galaxy|pixel|watch|switch|xbox|playstation|ps)"
    r"\s*[:#]?\s*|第|型号|尺码|编号|尾号|批次|序号|步骤|选项)$",
    re.I,
)
_MONTHS = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
    r"|januar|jänner|februar|märz|mai|juni|juli|oktober|dezember"
    r"|enero|febrero|marzo|abril|mayo|junio|julio|agosto|septiembre|octubre|noviembre"
    r"|diciembre)"
)
_MONTH_BEFORE = skipping(rf"(?<![A-Za-z]){_MONTHS}\.?\s*(?:\d{{1,2}}(?:st|nd|rd|th)?,?\s*)?$", re.I)
_YEAR_BEFORE = skipping(
    r"(?<![A-Za-z])(?:in|by|since|until|till|before|after|from|of|during|through|early|late"
    r"|mid|end|start|spring|summer|autumn|fall|winter|fy)\s*$",
    re.I,
)
_DATE_AFTER = re.compile(rf"\s*(?:st|nd|rd|th|\.)?\s*(?:of\s+|de\s+)?{_MONTHS}(?![A-Za-z])", re.I)
_LIST_MARK = re.compile(r"\s*[.)、]")
_SENTENCE_END = skipping(r"(?<=[.!?])\s+|[。！？；;\n]+")
_CLAUSE_END = skipping(
    r"(?<=[.!?])\s+|[。！？；;\n、]+|(?<!\d)[,，:：]|[,，:：](?!\d)"
    r"|\s+(?:but|however|although|though|whereas)\s+|但是?|不过|然而",
    re.I,
)
PROMISE = Sieved(
    r"refund|reimburs|compensat|credit(?!\s*card)|voucher|coupon|gift\s?card|gift\s+certificate"
    r"|cash\s?back|money\s+back|discount|goodwill|rebate|pay\s+(?:you|back)|payout"
    r"|price\s+adjustment|退款|退还|退回|退钱|退费|返还|返现|赔偿|补偿|赔付|补贴|代金券|优惠券"
    r"|礼品卡|积分|红包|购物金|折扣|优惠|打折|减免|抵扣|现金券|抵用券|礼金|[退赔返补](?:给)?[您你]"
    # German, Spanish, Japanese
    r"|erstatt|gutschrift|gutschein|entschädig|rabatt|zurückzahl|überweis|nachlass|guthaben"
    r"|reembols|devol|compensa|indemniz|cupón|cupon|descuento|abon|vale\b|saldo"
    r"|返金|返品|補償|払い戻|クーポン|割引|ポイント",
    re.I,
)
_CREDIT = Sieved(
    r"store\s+credit|credit(?!\s*card)|voucher|coupon|gift\s?card|gift\s+certificate|e-?gift"
    r"|discount"
    r"|points|cash\s?back|代金券|优惠券|礼品卡|积分|红包|购物金|购物卡|现金券|抵用券|礼金|返现|余额"
    r"|gutschrift|gutschein|guthaben|cupón|cupon|vale\b|saldo|クーポン|ポイント",
    re.I,
)
_CREDIT_GAP = 20
# A number the promise before it reaches, followed by a noun, counts things ("the 1 kettle and
# 2 filters"); one followed by these words is still money ("You get 900 back").
_COUNTED = re.compile(
    r"\s*(?!(?:for|to|in|as|back|now|today|more|extra|total|altogether|overall|each|and|or|of"
    r"|on|into|via|by|from|within|at|plus|off|net|gross|straight|directly|instead|then|once"
    r"|when|after|before|if|is|are|was|will|would|should|has|have|had)(?![^\W\d_]))"
    r"(?:[^\W\d_]{2,}|[\u3400-\u9fff])",
)
_GRAND_AFTER = re.compile(r"\s*grand(?![A-Za-z])", re.I)  # "2 grand", "two grand": thousands
_OFF_AFTER = re.compile(r"\s*off(?![A-Za-z])", re.I)  # "60 off your next order"
_REPORTED = Sieved(
    r"(?<![A-Za-z])(?:asked|ask(?:ing|s)?\s+for|requested|request(?:ing|s)?|wants?|wanted"
    r"|demand(?:ed|s|ing)?|claim(?:ed|s|ing)?|mention(?:ed|s)?|said|says|wrote|would\s+like"
    r"|expect(?:ed|s|ing)?|hop(?:ed|ing)|were\s+charged|was\s+charged|you\s+paid|reported)"
    r"(?![A-Za-z])|要求|希望|想要|提到|表示|称|说|申请|反映|反馈|索赔|索要",
    re.I,
)
COMMITS = Sieved(
    r"(?<![A-Za-z])(?:we|i)\s*(?:will|'ll|’ll|can|shall|are\s+going\s+to)(?![A-Za-z])"
    r"|(?<![A-Za-z])(?:approv|grant|authori[sz]|issu)\w*|我们(?:会|将|可以|已)|为您|给您|批准"
    r"|同意|已退|发放",
    re.I,
)

Kind = Literal["amount", "percent"]


@dataclass(frozen=True)
class Money:
    """One mention of money: an amount (or a percentage off), as a reader would take it."""

    value: float
    kind: Kind
    written: str  # as written, with its currency or unit ("80元", "$5k", "fifty dollars")
    currencies: frozenset[str]  # the currencies its marker allows; empty when not said
    marked: bool  # a currency, a credit word or a percent sign says it is money
    promise: bool  # its sentence promises money (refund, compensation, voucher, ...)
    reported: bool  # its clause reports what the customer asked for, not a promise
    at: int = 0  # where it starts in the text


Spans = tuple[tuple[int, int], ...]


def _spans(text: str, ends: re.Pattern[str]) -> Spans:
    spans, start = [], 0
    for m in ends.finditer(text):
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(text)))
    return tuple(spans)


# The offer check reads the sentences of the text the money reading just split.
@functools.lru_cache(maxsize=256)
def sentences(text: str) -> Spans:
    """Where each sentence of ``text`` starts and ends."""
    return _spans(text, _SENTENCE_END)


def _around(spans: Spans, at: int) -> tuple[int, int]:
    return next((s for s in spans if s[0] <= at <= s[1]), (0, 0))


@dataclass(frozen=True)
class _Marker:
    currencies: frozenset[str]
    word: str
    start: int
    end: int


def _currency(text: str, n: Number, left_at: int, right_at: int) -> _Marker | None:
    """The currency symbol, code or word next to ``n``, and the span it and ``n`` cover."""
    before = _BEFORE.search(text[max(0, left_at - 24) : left_at])
    if before:
        word = (before.group("sym") or before.group("code") or before.group("zh")).strip()
        start = max(0, left_at - 24) + before.start()
        return _Marker(frozenset(_SYMBOLS.get(word) or _WORDS[word.upper()]), word, start, n.end)
    after = _AFTER.match(text, right_at)
    if after is None:
        return None  # and "4K" without any currency is a screen, not money
    word = after.group().strip()
    if word == "块":
        nxt = text[after.end() : after.end() + 1]
        if nxt and HAN_RE.match(nxt) and nxt not in _KUAI_MONEY_NEXT:
            return None
    currencies = frozenset(_SYMBOLS.get(word) or _WORDS[word.upper()])
    return _Marker(currencies, word, n.start, after.end())


def marked(text: str, start: int, end: int) -> bool:
    """A currency symbol, code or word stands right before ``start`` or right after ``end``."""
    if _BEFORE.search(text[max(0, start - 24) : start]):
        return True
    return _AFTER.match(text, end) is not None


def _credit_near(text: str, n: Number, clause: tuple[int, int]) -> bool:
    """A credit word ("voucher", "积分", ...) right before or after ``n`` in its clause."""
    for m in _CREDIT.finditer(text, clause[0], clause[1]):
        gap = text[n.end : m.start()] if m.start() >= n.end else text[m.end() : n.start]
        if len(gap) <= _CREDIT_GAP and not re.search(r"\d", gap):
            return True
    return False


def _not_money(text: str, n: Number, left: str, right_at: int) -> bool:
    """A quantity, duration, date, ordinal or list number: not an amount of money."""
    if _UNIT_AFTER.match(text, right_at) or _NOT_MONEY_BEFORE.search(left):
        return True
    if _MONTH_BEFORE.search(left) or _DATE_AFTER.match(text, right_at):
        return True
    year = n.value.is_integer() and 1900 <= n.value <= 2100 and n.end - n.start == 4
    if year and _YEAR_BEFORE.search(left):
        return True
    line_start = left.rsplit("\n", 1)[-1].strip() in ("", "(")
    return line_start and _LIST_MARK.match(text, n.end) is not None


def money(
    text: str, skip: list[tuple[int, int]], names: Collection[float] = (), *, carry: bool = False
) -> list[Money]:
    """Every mention of money in ``text``, numbers inside ``skip`` (ids, tracking) left out.

    A number is money when a currency symbol, code or word stands next to it ("80元", "$5k",
    "fifty dollars"), when a credit word does ("a 20 voucher", "500积分"), when a percent sign
    or "折" follows it, or "grand" ("2 grand"), or, without any unit, when its sentence promises
    money ("we will refund 120"); with ``carry``, also when the sentence before it does ("We
    will refund you. You get 900."), unless a noun follows it ("2 filters"). Bare numbers in
    ``names`` (digits of the customer's own product names, "Pro 3") are names there.
    Durations, quantities, dates, sizes and list numbers are not money.
    """
    numbers = all_numbers(text, skip)
    if not numbers:
        return []
    spans, clauses = sentences(text), _spans(text, _CLAUSE_END)
    reach = spans
    if carry:  # a promise reaches a bare number in the next sentence
        reach = tuple((spans[i - 1][0] if i else a, b) for i, (a, b) in enumerate(spans))
    read = _Reading(text, spans, clauses, reach)
    found = (_read(read, n, names) for n in numbers)
    return [m for m in found if m is not None]


@dataclass
class _Reading:
    """One text's sentences and clauses, each searched once for a promise or a report however
    many numbers stand in it."""

    text: str
    sentences: Spans
    clauses: Spans
    reach: Spans
    _promise: dict[tuple[int, int], bool] = field(default_factory=dict)
    _reported: dict[tuple[int, int], bool] = field(default_factory=dict)

    def promise(self, span: tuple[int, int]) -> bool:
        """Whether ``text[span]`` promises money."""
        if (hit := self._promise.get(span)) is None:
            hit = self._promise[span] = bool(PROMISE.search(self.text, *span))
        return hit

    def reported(self, clause: tuple[int, int]) -> bool:
        """Whether the clause reports what the customer asked for rather than commits."""
        if (hit := self._reported.get(clause)) is None:
            text = self.text
            hit = bool(_REPORTED.search(text, *clause)) and not COMMITS.search(text, *clause)
            self._reported[clause] = hit
        return hit


def _read(read: _Reading, n: Number, names: Collection[float]) -> Money | None:
    """``n`` as money, or None when it is a quantity, a date, a name or a bare number."""
    text = read.text
    first, last = n.start, n.end
    if n.partner:  # a range: the unit or currency of either end applies to both
        first, last = min(first, n.partner[0]), max(last, n.partner[1])
    left = text[max(0, first - 24) : first]
    right_at = last
    if tail := _RANGE_TAIL.match(text, last):
        right_at = tail.end()
    clause = _around(read.clauses, n.start)
    promise = read.promise(_around(read.sentences, n.start))
    reported = read.reported(clause)
    written = text[n.start : n.end]
    if (pct := _PERCENT_AFTER.match(text, right_at)) or left.endswith("百分之"):
        written = text[n.start : pct.end()] if pct else written
        return Money(n.value, "percent", written, _ANY, True, promise, reported, n.start)
    if off := _DISCOUNT_AFTER.match(text, right_at):
        # "8折" (pay 80%) is 20% off, and always an offer of money.
        tenths = n.value if n.value < 10 else n.value / 10
        off_pct = round(100 - 10 * tenths, 2)
        return Money(
            off_pct, "percent", text[n.start : off.end()], _ANY, True, True, reported, n.start
        )
    if grand := _GRAND_AFTER.match(text, right_at):
        written = text[n.start : grand.end()]
        return Money(n.value * 1000, "amount", written, _ANY, True, promise, reported, n.start)
    if marker := _currency(text, n, first, right_at):
        value = n.value / 100 if marker.word.lower().startswith("cent") else n.value
        written = text[min(marker.start, first) : max(marker.end, n.end)].strip()
        return Money(value, "amount", written, marker.currencies, True, promise, reported, n.start)
    if n.k:  # "1K in store credit" is money; "a 4K screen" is not
        if _credit_near(text, n, clause):
            return Money(n.value, "amount", written, _ANY, True, promise, reported, n.start)
        return None
    if _not_money(text, n, left, right_at):
        return None
    if _credit_near(text, n, clause) or _OFF_AFTER.match(text, right_at):
        return Money(n.value, "amount", written, _ANY, True, promise, reported, n.start)
    small_word = n.spelled and (n.value < 10 or n.end - n.start == 1)
    carried = not promise and read.promise(_around(read.reach, n.start))
    if carried and _COUNTED.match(text, right_at):
        return None  # "We will refund you. Pack the 1 kettle and 2 filters."
    promise = promise or carried
    if small_word or (not n.spelled and n.value in names) or not promise:
        return None
    return Money(n.value, "amount", written, _ANY, False, promise, reported, n.start)
