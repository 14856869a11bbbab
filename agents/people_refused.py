"""A person's decision the baton cannot apply, named for its dead letter."""

from __future__ import annotations


class Refused(ValueError):
    """A decision the baton cannot apply: ``reason`` is its dead letter's reason."""

    def __init__(self, reason: str, error: str) -> None:
        super().__init__(error)
        self.reason = reason
