"""The signature check's early out (signing off) answers as the signer's verdict does."""

from __future__ import annotations

import itertools
from types import SimpleNamespace
from typing import Any

from baton_kafka.schemas.codec import dumps
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.runtime.records.delivery import Delivery
from baton_kafka.streams.runtime.records.signing import Signer
from baton_kafka.streams.runtime.trust.admission_checks import Signature
from baton_kafka.streams.runtime.trust.checks import DONE, GO, RecordView

KEYS = (("k1", "a-secret-of-thirty-two-characters"),)


class _Host:
    def __init__(self, signer: Signer, topic: str) -> None:
        self.signer, self.topic = signer, topic
        self.untrusted: list[tuple[Any, ...]] = []

    def source_topic(self, stage: Any) -> str:
        return self.topic

    async def _untrusted(self, *args: Any) -> None:
        self.untrusted.append(args)


async def test_the_signature_check_answers_as_the_signers_verdict() -> None:
    value = dumps({"a": 1})
    topics = ("u.support.sessions", "u.support.understood")
    signers = (Signer(), Signer(KEYS), Signer((("k2", "another-secret-of-thirty-two-chars"),)))
    headers: list[Any] = [
        None,
        [],
        Signer(KEYS).headers(topics[0], "S1", value),
        Signer(KEYS).headers(topics[1], "S1", value),
        [("baton-signature", b"k1:0000")],
    ]
    verdicts = set()
    for signer, topic, header, key in itertools.product(signers, topics, headers, ("S1", "S2")):
        source = Source(key=key)
        host = _Host(signer, topic)
        stage: Any = SimpleNamespace(name="understand")
        view = RecordView(stage, Delivery(value, source, header), source, batons=None)  # type: ignore[arg-type]
        got = await Signature()(host, view)  # type: ignore[arg-type]
        problem = Delivery(value, source, header).problem(signer, topic)
        assert got == (GO if problem is None else DONE)
        letters = [] if problem is None else [("understand", value, problem, source, None)]
        assert host.untrusted == letters
        verdicts.add(got)
    assert verdicts == {GO, DONE}
