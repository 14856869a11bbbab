"""Text as a reader sees it: normalised, with links, grouped numbers, phone numbers and card
requests found."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator

from baton_kafka.agents.guards.skipping import Sieved, skipping

_URL = re.compile(
    r"(?<![@\w.])(?:(?:https?|ftp)://(?P<host>[^\s/:?#\"'<>()\]]+)"
    r"|(?P<www>www\.[^\s/:?#\"'<>()\]]+)"
    r"|(?P<bare>(?:[a-z0-9-]+\.)+(?:com|net|org|io|cn|de|shop|co|info|biz|xyz|ru|top|me|app"
    r"|link|click|site|online|store|eu|uk|us|ly|gl|to|cc|tk)(?![\w-])))",
    re.I,
)
_SENSITIVE = Sieved(
    r"card\s*(?:number|no\.?|details)|credit\s*card|debit\s*card|cvv|cvc|cv2|security\s+code"
    r"|expiry\s+date|expiration\s+date|passwords?|passcode|\bpin\b|one-time\s+code|otp"
    r"|verification\s+code|login\s+details|security\s+number|card\s+verification"
    r"|(?:\d+|sixteen|three|four|long)[- ]?digits?\s+(?:number\s+)?(?:on|of|from|printed\s+on)"
    r"\s+(?:the\s+)?(?:front\s+|back\s+)?(?:of\s+)?(?:your\s+|the\s+)?card"
    r"|(?:numbers?|digits?|code)\s+on\s+(?:the\s+)?(?:(?:front|back|reverse)\s+of\s+)?(?:your|the)"
    r"\s+card|(?:front|back|reverse)\s+(?:side\s+)?of\s+(?:your|the)\s+(?:credit\s+|debit\s+|bank\s+)?card"
    r"|(?:three|3|four|4)[- ]digit\s+(?:security\s+)?(?:code|number)"
    r"|卡号|银行卡|信用卡|安全码|(?<![修员品贺])卡(?:片)?的?有效期|有效期(?:和|及|与|、)|密码|验证码"
    r"|动态码|(?<![修员品贺])卡(?:片)?(?:的)?(?:背面|正面|背后|后面|反面)(?:的)?(?:[三四3４4]|十六|16)?位?(?:数字|数|码)?"
    r"|(?<![修员品贺])卡面(?:上的?)?(?:数字|号码)|(?<![修员品贺])卡(?:片)?上的?(?:数字|号码|有效日期|日期)|(?:十六|16)位(?:卡号|数字|号码)?|(?:三|3)位(?:安全)?(?:码|数字|数)",
    re.I,
)
_ASKS = Sieved(
    r"send|provide|share|give|enter|type|tell|reply\s+with|confirm|let\s+us\s+know|submit"
    r"|need|require|verify|update|what(?:'s|’s|\s+is|\s+are)|read\s+(?:out|us|me)|write|note"
    r"|photo|picture|ready|\?|提供|发送|发给|发我|告诉|输入|填写|回复|确认|核实|需要|报一下|念|拍|照片"
    r"|麻烦|请(?!勿)|？",
    re.I,
)
_NEVER = skipping(
    r"never|not|don't|do\s+not|won't|no\s+need|without|不会|切勿|不要|请勿|无需|不需要|绝不|从不",
    re.I,
)
# Every character of Unicode's "Cf" category (zero-width space and joiners, bidi marks, soft
# hyphen, word joiner, BOM, tags, ...), as of Unicode 14; a test checks it against unicodedata.
FORMAT_CHARACTERS = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064"
    "\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|[。！？；;\n]+")
_TRACKING_WORDS = skipping(
    r"(?:tracking(?:\s+(?:number|no\.?|code|id))?|waybill|运单号?|快递单号|物流单号)\s*[:：#]?\s*",
    re.I,
)
_GROUPS = re.compile(r"[A-Za-z0-9]{1,6}(?:[ \u00a0-][A-Za-z0-9]{1,6}){2,}")
# "+49 30 1234 5678", "+49 301234567", "0800 123 4567", "030 12345678": a country code or a
# leading zero, then digits in groups. Amounts never start with either.
_PHONE = skipping(
    r"(?<![\w.,+])(?:\+\d{1,3}|\(?0\d{1,5}\)?)(?:[ \u00a0./-]?\(?\d{1,12}\)?){1,5}(?![\w]|[.,]\d)"
)
_PHONE_WORDS = skipping(
    r"(?:\bcall(?:\s+us)?|\bphone|\btel\.?|telephone|hotline|helpline|\bfax|\bmobile|whatsapp"
    r"|电话|致电|拨打|热线|手机|联系电话|客服电话)\s*(?:(?:us\s+)?(?:at|on)\s+|号码)?[:：]?\s*$",
    re.I,
)
_DIGIT_GROUPS = re.compile(r"\+?\d[\d \u00a0./-]{4,}\d")
_PHONE_DIGITS = 7


def normalise(text: str) -> str:
    """``text`` in NFKC (fullwidth digits to ASCII) without format characters (zero-width, ...)."""
    if text.isascii():
        return text  # NFKC and format characters concern non-ASCII text only
    return FORMAT_CHARACTERS.sub("", unicodedata.normalize("NFKC", text))


def hosts(text: str) -> Iterator[str]:
    """The host of every link in ``text`` ("https://x.com/a", "www.x.com", "x.com/path")."""
    for m in _URL.finditer(text):
        host = m.group("host") or m.group("www") or m.group("bare")
        yield host.lower().rstrip(".").removeprefix("www.")


def allowed(host: str, allowed_hosts: Iterable[str]) -> bool:
    """``host`` is an allowed host or one of its subdomains."""
    return any(host == h.lower() or host.endswith("." + h.lower()) for h in allowed_hosts)


def asks_for_secrets(text: str) -> list[str]:
    """Sentences of ``text`` that ask for card data or a password (not "we never ask for ...")."""
    found = []
    for sentence in _SENTENCE.split(text):
        secret = _SENSITIVE.search(sentence)
        if secret and _ASKS.search(sentence) and not _NEVER.search(sentence):
            found.append(secret.group())
    return found


def phones(text: str) -> list[tuple[int, int]]:
    """Where ``text`` writes a phone number: "+49 30 1234 5678", "0800 123 4567", or any digit
    groups right after "call us at", "电话"."""
    # Written in groups or with a country code: "0123456789" alone may be an order id.
    found = [
        m.span()
        for m in _PHONE.finditer(text)
        if sum(c.isdigit() for c in m.group()) >= 8
        and (m.group().startswith("+") or not m.group().isdigit())
    ]
    for m in _DIGIT_GROUPS.finditer(text):
        said = _PHONE_WORDS.search(text[max(0, m.start() - 24) : m.start()])
        if said and sum(c.isdigit() for c in m.group()) >= _PHONE_DIGITS:
            found.append(m.span())
    return sorted(set(found))


def grouped_tracking(text: str) -> Iterator[str]:
    """Tracking numbers written in groups after a tracking word ("1Z 84A 9E7 0312"), compacted."""
    for m in _TRACKING_WORDS.finditer(text):
        g = _GROUPS.match(text, m.end())
        if g is None:
            continue
        compact = re.sub(r"[ \u00a0-]", "", g.group())
        if sum(c.isdigit() for c in compact) >= 6:
            yield compact
