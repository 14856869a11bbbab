"""Text as a reader sees it: normalised, with links, grouped numbers, phone numbers and card
requests found."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator

from baton_kafka.agents.guards import words
from baton_kafka.agents.guards.parted import Parted
from baton_kafka.agents.guards.skipping import Sieved, skipping

_URL = re.compile(
    r"(?<![@\w.])(?:(?:https?|ftp)://(?P<host>[^\s/:?#\"'<>()\]]+)"
    r"|(?P<www>www\.[^\s/:?#\"'<>()\]]+)"
    r"|(?P<bare>(?:[a-z0-9-]+\.)+(?:com|net|org|io|cn|de|shop|co|info|biz|xyz|ru|top|me|app"
    r"|link|click|site|online|store|eu|uk|us|ly|gl|to|cc|tk)(?![\w-])))",
    re.I,
)


@words.builder
class _Words:
    """The credential and id words of every language pack, compiled."""

    def __init__(self) -> None:
        alt = words.alternation
        # Most replies hold none of a secret's words: only the entries whose words they hold.
        self.SENSITIVE = Parted(words.entries("credentials", "secrets"), re.I, end=False)
        self.ASKS = Sieved(alt("credentials", "asks", end=False), re.I)
        self.NEVER = skipping(alt("credentials", "never"), re.I)
        self.NEVER_AFTER = skipping(alt("credentials", "never_after"), re.I)
        tracking = alt("numbers", "ids.tracking", end=False)
        # Most replies name no tracking number: an ASCII one without a tracking word is not read.
        self.TRACKING_WORDS = Sieved(rf"(?:{tracking})\s*[:：#]?\s*", re.I)
        phone = alt("numbers", "ids.phone", end=False)
        joiners = alt("numbers", "ids.phone_joiners")
        self.PHONE_WORDS = skipping(rf"(?:{phone})\s*(?:(?:{joiners})\s*)?[:：]?\s*$", re.I)


def _w() -> _Words:
    return words.compiled(_Words)


# A denial this close before a secret ("we will never ask for your PIN") takes the request back.
_NEVER_REACH = 40
# Every character of Unicode's "Cf" category (zero-width space and joiners, bidi marks, soft
# hyphen, word joiner, BOM, tags, ...), as of Unicode 14; a test checks it against unicodedata.
FORMAT_CHARACTERS = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064"
    "\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|[。！？；;\n]+")
_GROUPS = re.compile(r"[A-Za-z0-9]{1,6}(?:[ \u00a0-][A-Za-z0-9]{1,6}){2,}")
# "+49 30 1234 5678", "+49 301234567", "0800 123 4567", "030 12345678": a country code or a
# leading zero, then digits in groups. Amounts never start with either.
_PHONE = skipping(
    r"(?<![\w.,+])(?:\+\d{1,3}|\(?0\d{1,5}\)?)(?:[ \u00a0./-]?\(?\d{1,12}\)?){1,5}(?![\w]|[.,]\d)"
)
_DIGIT_GROUPS = re.compile(r"\+?\d[\d \u00a0./-]{4,}\d")
_GROUP_GAP = re.compile(r"[ \u00a0-]")
_PHONE_DIGITS = 7


def normalise(text: str) -> str:
    """``text`` in NFKC (fullwidth digits to ASCII) without format characters (zero-width, ...)."""
    if text.isascii():
        return text  # NFKC and format characters concern non-ASCII text only
    return FORMAT_CHARACTERS.sub("", unicodedata.normalize("NFKC", text))


# Every link holds "://", "www." or a dot before a letter of its top-level domain (read
# case-insensitively as ``_URL`` reads it: "ſ" and the Kelvin sign are letters too).
_LINKED = re.compile(r"://|www\.|\.[a-z]", re.I)


def hosts(text: str) -> Iterator[str]:
    """The host of every link in ``text`` ("https://x.com/a", "www.x.com", "x.com/path")."""
    if not _LINKED.search(text):
        return  # most replies hold no link: no try of a host at each of their words
    for m in _URL.finditer(text):
        host = m.group("host") or m.group("www") or m.group("bare")
        yield host.lower().rstrip(".").removeprefix("www.")


def allowed(host: str, allowed_hosts: Iterable[str]) -> bool:
    """``host`` is an allowed host or one of its subdomains."""
    return any(host == h.lower() or host.endswith("." + h.lower()) for h in allowed_hosts)


def asks_for_secrets(text: str) -> list[str]:
    """Sentences of ``text`` that ask for card data or a password (not "we never ask for ...")."""
    w = _w()
    found: list[str] = []
    if not w.SENSITIVE.holds(text):
        return found  # most texts name no secret: one search, no sentences
    for sentence in _SENTENCE.split(text):
        for secret in w.SENSITIVE.finditer(sentence):
            before = sentence[max(0, secret.start() - _NEVER_REACH) : secret.start()]
            denied = w.NEVER.search(before) or w.NEVER_AFTER.search(sentence, secret.end())
            if not denied and w.ASKS.search(sentence):
                found.append(secret.group())
                break
    return found


def phones(text: str) -> list[tuple[int, int]]:
    """Where ``text`` writes a phone number: "+49 30 1234 5678", "0800 123 4567", or any digit
    groups right after "call us at", "电话"."""
    return list(_phones(text))


# The audit and the cited facts read the same reply's phone numbers: read once.
@words.per_text(maxsize=256)
def _phones(text: str) -> tuple[tuple[int, int], ...]:
    # Written in groups or with a country code: "0123456789" alone may be an order id.
    found = [
        m.span()
        for m in _PHONE.finditer(text)
        if sum(c.isdigit() for c in m.group()) >= 8
        and (m.group().startswith("+") or not m.group().isdigit())
    ]
    for m in _DIGIT_GROUPS.finditer(text):
        said = _w().PHONE_WORDS.search(text[max(0, m.start() - 24) : m.start()])
        if said and sum(c.isdigit() for c in m.group()) >= _PHONE_DIGITS:
            found.append(m.span())
    return tuple(sorted(set(found)))


def grouped_tracking(text: str) -> Iterator[str]:
    """Tracking numbers written in groups after a tracking word ("1Z 84A 9E7 0312"), compacted."""
    for m in _w().TRACKING_WORDS.finditer(text):
        g = _GROUPS.match(text, m.end())
        if g is None:
            continue
        compact = _GROUP_GAP.sub("", g.group())
        if sum(c.isdigit() for c in compact) >= 6:
            yield compact


_w()  # compiled at import, as module patterns are; again only when a shop adds words
