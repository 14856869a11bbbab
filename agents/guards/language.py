"""The language check of every customer-facing text: in the customer's language, whatever names
it quotes.

A text is read without the names it may quote in any language (the customer's product names,
order ids, tracking numbers, carriers, quoted words); what is left is given to the one detector
(agents/languages.py) among the shop's languages, and undecided when nothing is left or the
detector cannot tell.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from baton_kafka.agents.languages import (
    DEFAULT_LANGUAGES,
    among,
    detect,
    display_name,
    primary,
    same,
)
from baton_kafka.agents.ticket_memo import read_once

LANGUAGE = "language"
_TOKEN_WITH_DIGIT = re.compile(r"[A-Za-z0-9]*\d[A-Za-z0-9-]*")
# The same in an ASCII text: there such a token never starts right after a letter or digit (it
# would have started there), so a try inside a word stops at once instead of after reading the
# word to its end. (A digit of another script may follow one, so it serves ASCII text only.)
_ASCII_TOKEN_WITH_DIGIT = re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]*\d[A-Za-z0-9-]*")
_QUOTED = re.compile(
    r"\"[^\"\n]{1,80}\"|“[^”\n]{1,80}”|「[^」\n]{1,80}」|『[^』\n]{1,80}』|„[^“\n]{1,80}“"
)
_NAMES = ("UPS", "DHL", "FedEx", "USPS", "EMS", "DPD", "GLS", "OK")
# Each of them standing alone, found in one pass (a name's letters never border another's). Each
# name's first letter comes before the test of the character before it, so the engine itself
# scans the text for those letters: as ``(?<![A-Za-z])(?:UPS|DHL|...)(?![A-Za-z])``.
_NAMED = re.compile(
    "(?:"
    + "|".join(f"{re.escape(n[0])}(?<![A-Za-z]{re.escape(n[0])}){re.escape(n[1:])}" for n in _NAMES)
    + ")(?![A-Za-z])"
)

# Why a reply is rejected, in the customer's language ({found}: the language it is written in).
_PROBLEM: dict[str, str] = {
    "zh": "回复是{found}的，但客户用中文写信；请用中文重写整段回复",
    "ja": "返信が{found}で書かれていますが、お客様は日本語で書いています。"
    "返信全体を日本語で書き直してください",
    "de": "die Antwort ist auf {found}, der Kunde schreibt Deutsch; "
    "schreibe die ganze Antwort auf Deutsch neu",
    "es": "la respuesta está en {found}, pero el cliente escribe en español; "
    "reescribe toda la respuesta en español",
    "en": "the reply is in {found} but the customer wrote in English; rewrite it all in English",
}
# Added to a re-ask for a customer who does not write English (the errors themselves are the
# validators'): what to fix, in the customer's language, with an example in it.
FEEDBACK_NOTE: dict[str, str] = {
    "zh": (
        "客户用中文写信：reply 必须全部用中文书写（产品名、订单号和运单号可照抄原文）。"
        "例如：「您好，关于您的订单 {order}，我们已经为您查询，会为您安排……」"
    ),
    "de": (
        "Der Kunde schreibt Deutsch: reply muss ganz auf Deutsch sein (Produktnamen, Bestell- "
        "und Sendungsnummern dürfen wörtlich bleiben). Zum Beispiel: „Guten Tag, zu Ihrer "
        "Bestellung {order} haben wir nachgesehen und veranlassen …“"
    ),
}
_NO_ORDER = {"zh": "（订单号）", "de": "(Bestellnummer)"}


def _without_names(text: str, names: Iterable[str]) -> str:
    for name in sorted({n for n in names if n}, key=len, reverse=True):
        text = text.replace(name, " ")
    text = _QUOTED.sub(" ", text)
    text = (_ASCII_TOKEN_WITH_DIGIT if text.isascii() else _TOKEN_WITH_DIGIT).sub(" ", text)
    return _NAMED.sub(" ", text)


def language_of(
    text: str, names: Iterable[str] = (), languages: Sequence[str] = DEFAULT_LANGUAGES
) -> str | None:
    """The one of ``languages`` ``text`` is in, ``names`` and quotes left out; None: undecided."""
    # A reply is checked by the strategy's validator and again by its agent: told once per ticket.
    named, served = tuple(names), tuple(languages)
    key = ("language_of", text, named, served)
    return read_once(key, lambda: _language_of(text, named, served))


def _language_of(text: str, names: Iterable[str], languages: Sequence[str]) -> str | None:
    """``language_of``, told anew."""
    return detect(_without_names(text, names), languages)


def language_problem(
    text: str,
    language: str,
    names: Iterable[str] = (),
    languages: Sequence[str] = DEFAULT_LANGUAGES,
) -> str | None:
    """Why ``text`` is not in ``language``, said in ``language``; None when it is (or undecided).

    ``language`` is always a candidate, whether or not the shop lists it.
    """
    found = language_of(text, names, among(language, languages))
    if found is None or same(found, language):
        return None
    said_in = primary(language) if primary(language) in _PROBLEM else "en"
    named = display_name(found, said_in)
    return f"{LANGUAGE}: {_PROBLEM[said_in].format(found=named)}"


def feedback_note(language: str, order_id: str | None) -> str | None:
    """What a re-ask adds for a customer writing ``language``, in it, with an example; None
    for English (which the errors are written in) and languages without a note."""
    note = FEEDBACK_NOTE.get(primary(language))
    if note is None:
        return None
    return note.format(order=order_id or _NO_ORDER.get(primary(language), ""))
