"""What customer-facing text says was already done, held to the session's records.

A claim that the order was refunded, shipped, delivered, cancelled or returned must be what the
store holds for the matched order; a claim that it was repaired, replaced or credited (a
technician came, a voucher was issued) must be a remedy the session's earlier answered replies
committed to for it. The words per language are the ``claims`` packs; a question, a denial, a
condition and the customer's own words reported back claim nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from baton_kafka.agents.guards import clauses
from baton_kafka.agents.guards.clauses import Marks, Sentence, denied, marks, readable, sentences
from baton_kafka.agents.ticket_memo import shelf
from baton_kafka.schemas.records import Order

CLAIM = "claim"
# The order statuses that show a claim of each kind, and the earlier remedies that do.
_STATUSES: dict[str, frozenset[str]] = {
    "refunded": frozenset({"refunded"}),
    "shipped": frozenset({"shipped", "delivered", "lost", "returned", "refunded"}),
    "delivered": frozenset({"delivered", "returned"}),
    "cancelled": frozenset({"cancelled"}),
    "returned": frozenset({"returned", "refunded"}),
}
_EARLIER: dict[str, frozenset[str]] = {
    "refunded": frozenset({"refund", "cancellation"}),
    "shipped": frozenset({"exchange"}),
    "repaired": frozenset({"repair"}),
    "replaced": frozenset({"exchange"}),
    "cancelled": frozenset({"cancellation"}),
    "credited": frozenset({"compensation"}),
}
# Every kind of deed a text may claim.
KINDS: tuple[str, ...] = tuple(dict.fromkeys([*_STATUSES, *_EARLIER]))


@dataclass(frozen=True)
class Claim:
    """One deed a text states as done: its kind, the words stating it and their sentence."""

    kind: str
    words: str
    language: str
    sentence: str = ""


def read(text: str, languages: Iterable[str]) -> list[Claim]:
    """Every claim ``text`` makes that something was already done, in each language's pack."""
    text = readable(text)
    found: dict[tuple[str, str], Claim] = {}
    for language in dict.fromkeys(languages):
        words = marks("claims", language, "claims")
        markers = marks("commitments", language, "kinds")
        if words is None or not words.may_read(text):
            continue  # no claim word of this language stands anywhere in the text
        for c in _read(text, words, markers or words):
            found.setdefault((c.kind, c.words), c)
    return list(found.values())


def _read(text: str, words: Marks, markers: Marks) -> Iterator[Claim]:
    # A draft's solution repeats sentences of its reply: each is read once per ticket and packs.
    said: dict[str, tuple[Claim, ...]] = shelf("claims", words, markers)
    for sentence in sentences(text, markers):
        found = said.get(sentence.text)
        if found is None:
            found = said[sentence.text] = tuple(_in_sentence(sentence, words, markers))
        yield from found


def _in_sentence(sentence: Sentence, words: Marks, markers: Marks) -> Iterator[Claim]:
    """The claims of one sentence."""
    for clause in clauses.unasked(sentence, words, markers):
        for kind, pattern in words.words.items():
            for hit in pattern.finditer(clause):
                # A condition before it claims nothing ("if it was shipped, ...").
                if markers.has("conditional", clause[: hit.start()]):
                    continue
                if not denied(markers, clause, hit.start(), hit.end()):
                    yield Claim(kind, hit.group().strip(), words.language, sentence.text)
                    break


def shown(kind: str, order: Order | None, earlier: Iterable[str]) -> bool:
    """Whether the records show a deed of ``kind``: the order's status or refunded amount in the
    store, or a remedy the session committed to for it before."""
    if order is None:
        return False
    if kind == "refunded" and order.refunded > 0:
        return True
    if str(order.status) in _STATUSES.get(kind, frozenset()):
        return True
    return bool(_EARLIER.get(kind, frozenset()) & set(earlier))


def problems(
    text: str,
    order: Order | None,
    earlier: Iterable[str],
    languages: Iterable[str],
    others: Sequence[Order] = (),
) -> list[str]:
    """Every claim of ``text`` the records do not show, as a reason the writer can act on.

    A claim is about the matched ``order``, or about one of the customer's ``others`` whose id
    its sentence names ("EV-3302, delivered"), which the store then shows by its status.
    """
    earlier = frozenset(earlier)
    found = []
    for c in read(text, languages):
        if shown(c.kind, order, earlier):
            continue
        if any(o.order_id in c.sentence and shown(c.kind, o, ()) for o in others):
            continue
        whose = f"order {order.order_id} ({order.status})" if order else "any matched order"
        found.append(
            f"{CLAIM}: the reply says it was already {c.kind} ({c.words!r}), which the records "
            f"of {whose} do not show: say what will be done, never that it was done"
        )
    return list(dict.fromkeys(found))
