"""A ticket's sentences read once: the commitments and claims of a draft's reply and solution
read within one ticket's memo are those each text's reading anew finds, in every language."""

from __future__ import annotations

import random
from typing import Any

import pytest

from baton_kafka.agents import packs
from baton_kafka.agents.guards import claims, clauses, commitments
from baton_kafka.agents.ticket_memo import TicketMemo, sharing
from tests.unit.agents.guards.test_led_reading import _texts


def _drafts() -> list[tuple[str, str]]:
    """Each corpus text with some of its own sentences (as a draft's solution repeats its
    reply's), with another text, and with its sentences ended otherwise."""
    rng = random.Random(47)
    texts = _texts()
    marks = clauses.marks("commitments", "en", "kinds")
    assert marks is not None
    drafts = []
    for text in texts:
        said = [s.text for s in clauses.sentences(clauses.readable(text), marks)]
        part = " ".join(s for s in said if rng.random() < 0.5) or text
        # Its sentences each begun as they are and ended as another text's end.
        other = rng.choice(texts)
        ended = " ".join(s[: len(s) // 2] + other[len(other) // 2 :] for s in said) or text
        drafts += [(text, part), (text, other), (text, ended)]
    return drafts


@pytest.mark.parametrize("module", [commitments, claims], ids=["commitments", "claims"])
def test_a_tickets_texts_read_with_its_memo_are_read_as_anew(module: Any) -> None:
    languages = list(packs.LANGUAGES)
    shared = 0
    for i, (reply, solution) in enumerate(_drafts()[::3]):
        order = languages[i % len(languages) :] + languages[: i % len(languages)]
        want = [module.read(t, order) for t in (reply, solution, reply)]
        memo = TicketMemo("t", "c", 0.0)
        with sharing(memo):
            got = [module.read(t, order) for t in (reply, solution, reply)]
        assert got == want, (order, reply, solution)
        shared += sum(1 for found in want for _ in found)
    assert shared > 200
