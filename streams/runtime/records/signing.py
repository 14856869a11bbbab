"""Records between stages carry an HMAC of their topic, key and bytes: writing one is not enough.

The header is ``baton-signature: <key id>:<hex SHA-256 HMAC of topic, key and value>``. The topic
and the key are part of what is signed, so a record cannot be replayed into another stage's
input nor under another session's key (where it would land on a partition that does not hold
the session's baton). The first
key signs and every key verifies: a new key is added behind the old one on every worker, then
moved first, then the old one is dropped once its records have been consumed.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from baton_kafka.streams.runtime.records.sink import Sink

HEADER = "baton-signature"


Headers = list[tuple[str, bytes]]


def _pairs(headers: Mapping[str, bytes] | Iterable[tuple[str, bytes]] | None) -> Headers:
    if headers is None:
        return []
    if isinstance(headers, Mapping):
        return list(headers.items())
    return list(headers)


@dataclass(frozen=True)
class Signer:
    """Signs and checks records; without keys it signs nothing and accepts everything."""

    keys: tuple[tuple[str, str], ...] = ()

    @property
    def enabled(self) -> bool:
        return bool(self.keys)

    @staticmethod
    def _mac(secret: str, topic: str, key: str | None, value: bytes) -> str:
        # The key's length goes first so no key/value split can be read as another one; a
        # record without a key signs differently from one with an empty key.
        keyed = b"-" if key is None else str(len(key.encode())).encode() + b":" + key.encode()
        message = topic.encode() + b"\0" + keyed + b"\0" + value
        return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()

    def headers(self, topic: str, key: str | None, value: bytes) -> Headers:
        """The signature header for ``value`` under ``key`` on ``topic`` (none when off)."""
        if not self.keys:
            return []
        kid, secret = self.keys[0]
        return [(HEADER, f"{kid}:{self._mac(secret, topic, key, value)}".encode())]

    def problem(
        self,
        topic: str,
        key: str | None,
        value: bytes | None,
        headers: Mapping[str, bytes] | Iterable[tuple[str, bytes]] | None,
    ) -> str | None:
        """Why the record read from ``topic`` under ``key`` is not trusted, or None when it is."""
        if not self.keys:
            return None
        found = [v for k, v in _pairs(headers) if k == HEADER]
        if not found:
            return f"the record on {topic} carries no {HEADER} header"
        try:
            kid, _, mac = bytes(found[-1]).decode("ascii").partition(":")
        except UnicodeDecodeError:
            return f"the {HEADER} header is not ASCII"
        secret = dict(self.keys).get(kid)
        if secret is None:
            return f"the record on {topic} is signed with unknown key {kid!r}"
        if not hmac.compare_digest(
            mac.encode(), self._mac(secret, topic, key, value or b"").encode()
        ):
            return f"the signature of the record on {topic} does not match its key and content"
        return None


@dataclass(frozen=True)
class SignedSink:
    """A sink that signs what it sends to the ``signed`` topics, and passes the rest through."""

    inner: Sink
    signer: Signer
    signed: frozenset[str]

    async def send(
        self, topic: str, key: str | None, value: bytes, headers: Headers | None = None
    ) -> int | None:
        if topic in self.signed and self.signer.enabled:
            headers = [*(headers or []), *self.signer.headers(topic, key, value)]
        return await self.inner.send(topic, key, value, headers)

    async def contains(
        self, topic: str, key: str, since: datetime, match: Callable[[bytes], bool]
    ) -> bool:
        return await self.inner.contains(topic, key, since, match)
