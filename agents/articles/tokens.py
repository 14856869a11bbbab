"""Words of any shipped language as search terms: Latin words folded, CJK as character bigrams."""

from __future__ import annotations

import re
import unicodedata

from baton_kafka.agents import packs

# Han, kana and hangul have no spaces between words: a run of them is indexed as overlapping
# character pairs (and a lone character as itself), which finds words without a dictionary.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_RUN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+")
_CJK_RUN = re.compile(rf"[{_CJK}]")


def _fold(word: str) -> str:
    """``word`` case-folded with its accents dropped ("Rückgabe" and "ruckgabe" meet)."""
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _stopwords() -> frozenset[str]:
    """The words of every language's ``articles`` pack too common to tell articles apart (read
    each time: a shop's packs added with ``packs.extend`` count from then on)."""
    words = (w for p in packs.all_packs("articles").values() for w in p.get("stopwords", ()))
    return frozenset(_fold(w) for w in words)


def tokens(text: str) -> list[str]:
    """The search terms of ``text``, in order, without the packs' stop words."""
    stop = _stopwords()
    out: list[str] = []
    for run in _RUN.findall(unicodedata.normalize("NFKC", text)):
        if _CJK_RUN.match(run):
            out += [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]
        else:
            word = _fold(run)
            if word not in stop:
                out.append(word)
    return out
