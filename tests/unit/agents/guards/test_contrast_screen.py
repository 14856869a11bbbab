"""A text none of whose parts holds a contrast word is split as without one: the sentences and
clauses are those of the plain reading, which cuts every part at each contrast word."""

from __future__ import annotations

import random

import pytest

from baton_kafka.agents import packs
from baton_kafka.agents.guards import clauses
from tests.unit.agents.guards.test_led_reading import _texts

CONCERNS = (("commitments", "kinds"),)
CONTRAST = ["but", "However", "although", "aber", "doch", "pero", "sin embargo", "mais"]
CONTRAST += ["但是", "不过", "ですが", "butter", "xbut", "BUT", "ſin embargo", "\u212aein", "但"]
GLUE = [" ", ", ", ". ", "; ", "。", "，", "\n", "", "-", "“", "”"]


def _contrasted() -> list[str]:
    """The corpora's texts with contrast words of every pack put between their words."""
    rng = random.Random(47)
    texts = []
    for text in _texts()[::3]:
        parts = text.split(" ")
        for _ in range(rng.randrange(1, 4)):
            at = rng.randrange(len(parts) + 1)
            parts.insert(at, rng.choice(GLUE) + rng.choice(CONTRAST) + rng.choice(GLUE))
        texts.append(" ".join(parts))
    return texts


def _plain(text: str, marks: clauses.Marks) -> tuple[clauses.Sentence, ...]:
    """Every part read for the contrast words, as before the screen (nothing kept)."""
    return clauses._sentences.__wrapped__(text, marks.markers.get("contrast"), None)


@pytest.mark.parametrize(("concern", "group"), CONCERNS, ids=[c for c, _ in CONCERNS])
def test_a_screened_text_is_split_as_the_plain_reading_splits_it(concern: str, group: str) -> None:
    screened = cut = 0
    for text in [*_texts(), *_contrasted()]:
        body = clauses.readable(text)
        for language in packs.LANGUAGES:
            marks = clauses.marks(concern, language, group)
            if marks is None or marks.contrast is None:
                continue
            want = _plain(body, marks)
            assert tuple(clauses.sentences(body, marks)) == want, (language, body)
            screened += not marks.contrast.may_match(body)
            cut += want != clauses._sentences.__wrapped__(body, None, None)
    # Most texts are passed over for most languages; many others are cut by a contrast word.
    assert screened > 5000 and cut > 1000, (screened, cut)
