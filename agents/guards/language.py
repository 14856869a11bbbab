"""The language check of every customer-facing text: Chinese or English, whatever names it quotes.

A text is read without the names it may quote in either language (the customer's product names,
order ids, tracking numbers, carriers): what is left is Chinese when its CJK characters, two to
a word, are at least as many as its Latin words, English when it has Latin words and fewer CJK
characters, and undecided when nothing is left.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from schemas.stages import Language

LANGUAGE = "language"
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2,}(?:'[A-Za-z]+)?(?![A-Za-z0-9])")
_TOKEN_WITH_DIGIT = re.compile(r"[A-Za-z0-9]*\d[A-Za-z0-9-]*")
_QUOTED = re.compile(r"\"[^\"\n]{1,80}\"|“[^”\n]{1,80}”|「[^」\n]{1,80}」|『[^』\n]{1,80}』")
_NAMES = ("UPS", "DHL", "FedEx", "USPS", "EMS", "DPD", "GLS", "OK")

# Added to a re-ask for a customer who does not write English (the errors themselves are the
# validators'): what to fix, in the customer's language, with an example in it.
FEEDBACK_NOTE: dict[str, str] = {
    "zh": (
        "客户用中文写信：reply 必须全部用中文书写（产品名、订单号和运单号可照抄原文）。"
        "例如：「您好，关于您的订单 {order}，我们已经为您查询，会为您安排……」"
    ),
}


def language_of(text: str, names: Iterable[str] = ()) -> Language | None:
    """The language ``text`` is written in once ``names`` and quotes are taken out, or None."""
    for name in sorted({n for n in names if n}, key=len, reverse=True):
        text = text.replace(name, " ")
    text = _QUOTED.sub(" ", text)
    text = _TOKEN_WITH_DIGIT.sub(" ", text)
    for name in _NAMES:
        text = re.sub(rf"(?<![A-Za-z]){name}(?![A-Za-z])", " ", text)
    cjk = len(_CJK.findall(text))
    words = len(_LATIN_WORD.findall(text))
    if cjk == 0 and words == 0:
        return None
    return "zh" if cjk / 2 >= words else "en"


def language_problem(text: str, language: str, names: Iterable[str] = ()) -> str | None:
    """Why ``text`` is not in ``language``, said in ``language``; None when it is (or undecided)."""
    found = language_of(text, names)
    if found is None or found == language:
        return None
    if language == "zh":
        return f"{LANGUAGE}: 回复是英文的，但客户用中文写信；请用中文重写整段回复"
    return (
        f"{LANGUAGE}: the reply is in Chinese but the customer wrote in English; rewrite it all "
        "in English"
    )


def feedback_note(language: str, order_id: str | None) -> str | None:
    """What a re-ask adds for a customer writing ``language``, in it, with an example; None
    for English, which the errors are written in."""
    note = FEEDBACK_NOTE.get(language)
    return note.format(order=order_id or "（订单号）") if note else None
