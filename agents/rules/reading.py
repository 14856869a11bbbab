"""The offline rule for the independent reader: the reply read with the language packs, so the
two layers agree (the offline model and the stand-in), unless a test scripts otherwise."""

from __future__ import annotations

from baton_kafka.agents.guards import claims, commitments
from baton_kafka.agents.reader import FoundLine, ReaderFindings, read_context


def reader_rules(text: str) -> ReaderFindings:
    """What the packs read in the reply of a reader's message ``text``: its firm commitments,
    and its deeds with their sentence as evidence (an order id there is read with it)."""
    reply, languages = read_context(text)
    languages = languages or ["en"]
    lines = [
        FoundLine(kind=c.kind, evidence=c.words)
        for c in commitments.read(reply, languages)
        if c.mode == "firm"
    ]
    lines += [
        FoundLine(kind=c.kind, done=True, evidence=c.sentence or c.words)
        for c in claims.read(reply, languages)
    ]
    return ReaderFindings(lines=lines)
