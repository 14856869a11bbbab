"""The log redactor's quick screen: a text it passes through unchanged is one the full
redaction would also have left unchanged."""

from __future__ import annotations

import random

import pytest

from baton_kafka.streams.observe.redaction import Redactor

SECRET = "s3cret-Value-42"
# Pieces of what the patterns look for, in the spellings re's case folding also matches
# (the Kelvin sign for k, the long s, dotted and dotless i), and ordinary words around them.
PIECES = (
    "sk-ant-",
    "Sk-Ant-",
    "api03_Zx9abcdef",
    "x-api-key",
    "X-API-\u212aEY",
    "x-apİ-key",
    "x-apı-key",
    "Bearer ",
    "BEARER\t",
    "tok.en/12=",
    "password=",
    "pa\u017fsword=",
    "PGPASSWORD=",
    "PASSWORD =",
    "postgres://",
    "user:pw@host",
    "://",
    "system",
    "System",
    "prompt",
    "messages",
    '"',
    "'",
    ":",
    "=",
    " ",
    "?",
    "&",
    "understand ok",
    "reply answered",
    "Bestellung 4711",
    "注文",
    "の返金",
    SECRET,
    SECRET[:7],
)


def texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choices(PIECES, k=rng.randint(1, 8))) for _ in range(n)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_screen_never_lets_through_what_redaction_would_change(seed: int) -> None:
    redactor = Redactor([SECRET])
    sample = texts(4000, seed)
    changed = 0
    for text in sample:
        full = redactor._redacted(text)
        assert redactor.text(text) == full, text
        changed += full != text
    # Both ways are exercised: texts left alone and texts redacted.
    assert 0 < changed < len(sample)


def test_ordinary_lines_come_back_as_they_are_and_secrets_never() -> None:
    redactor = Redactor([SECRET])
    for line in ("understand ok", "model call offline-rules: 0 tokens in, 0 out", "lookup ok"):
        assert redactor.text(line) is line
    assert SECRET not in redactor.text(f"connect failed with {SECRET}")
    assert "abcdef123456" not in redactor.text("X-API-\u212aEY: abcdef123456")
    assert "hunter22" not in redactor.text("dsn pa\u017fsword=hunter22")
