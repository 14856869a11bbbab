"""The HTTP executor: an action sent to the shop's REST API as its map says, under its key."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import orjson
import yarl

from baton_kafka.schemas.action import Action
from baton_kafka.streams.actions.executor import (
    ExecutorRefused,
    ExecutorUnavailable,
    Outcome,
)
from baton_kafka.streams.actions.http_map import (
    ActionMap,
    KindMap,
    dig,
    fill_body,
    fill_url,
    values,
)

# Answers after which the system may or may not have done it: looked up, never assumed.
_UNKNOWN = {408, 425, 429, 500, 502, 503, 504}


class HttpExecutor:
    """Sends each action once per call, with its idempotency key in the map's header; an
    answer it cannot trust (a drop, a timeout, a 5xx) is ``ExecutorUnavailable``."""

    name = "http"

    def __init__(self, mapping: ActionMap) -> None:
        self.mapping = mapping
        self._session: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _client(self) -> Any:
        import aiohttp

        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop or self._session.closed:
            headers = {"Accept": "application/json"}
            if self.mapping.auth_env:
                secret = os.environ.get(self.mapping.auth_env, "")
                if not secret:
                    raise ExecutorRefused(f"the map's auth_env {self.mapping.auth_env} is not set")
                headers[self.mapping.auth_header] = secret
            self._session = aiohttp.ClientSession(
                headers=headers, timeout=aiohttp.ClientTimeout(total=self.mapping.timeout_s)
            )
            self._loop = loop
        return self._session

    def _kind(self, action: Action) -> KindMap:
        kind = self.mapping.kinds.get(action.kind)
        if kind is None:
            raise ExecutorRefused(f"the executor's map has no request for a {action.kind!r}")
        return kind

    async def _call(
        self, method: str, path: str, body: Any = None, key: str | None = None
    ) -> tuple[int, Any]:
        import aiohttp

        url = yarl.URL(self.mapping.base_url + path, encoded=True)
        headers = {self.mapping.idempotency_header: key} if key else {}
        data = orjson.dumps(body) if body is not None else None
        if data is not None:
            headers["Content-Type"] = "application/json"
        try:
            async with self._client().request(
                method, url, data=data, headers=headers, allow_redirects=False
            ) as resp:
                raw = await resp.read()
                status = resp.status
        except (aiohttp.ClientError, TimeoutError) as exc:
            what = "timed out" if isinstance(exc, TimeoutError) else type(exc).__name__
            raise ExecutorUnavailable(f"{method} {path}: {what}") from None
        if status in _UNKNOWN:
            raise ExecutorUnavailable(f"{method} {path}: HTTP {status}")
        try:
            return status, orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            raise ExecutorRefused(f"{method} {path}: the answer is not JSON") from None

    def _read(self, kind: KindMap, found: Any, id_path: str, state_path: str) -> Outcome:
        word = dig(found, state_path)
        state = kind.remote_state(word)
        remote = dig(found, id_path)
        if state is None:
            raise ExecutorRefused(f"the shop's system answered the state {word!r}, not mapped")
        return Outcome(state, str(remote) if remote is not None else None, str(word))

    async def execute(self, action: Action) -> Outcome:
        kind = self._kind(action)
        known = values(action)
        path = fill_url(kind.url, known)
        status, body = await self._call(
            kind.method, path, fill_body(kind.body, known), action.idempotency_key
        )
        if status >= 400:
            # The system refused it for good (4xx): nothing was done, a person looks at it.
            return Outcome("failed", None, f"HTTP {status}")
        if status >= 300:
            raise ExecutorRefused(f"{kind.method} {path}: HTTP {status} (redirects not followed)")
        return self._read(kind, body, kind.remote_id, kind.state)

    async def lookup(self, action: Action, remote_id: str | None) -> Outcome | None:
        kind = self._kind(action)
        look = kind.lookup
        path = fill_url(look.url, values(action, remote_id))
        status, body = await self._call("GET", path)
        if status == 404:
            return None
        if status >= 300:
            raise ExecutorUnavailable(f"GET {path}: HTTP {status}")
        found = dig(body, look.item)
        if look.list is not None:
            items = dig(body, look.list)
            if not isinstance(items, list):
                raise ExecutorRefused(f"GET {path}: no list at {look.list!r}")
            if not items:
                return None
            found = dig(items[0], look.item)
        return self._read(kind, found, look.remote_id, look.state)

    async def check(self) -> None:
        status, _ = await self._call("GET", self.mapping.probe)
        if status >= 400:
            hint = " (check the map's auth_env)" if status in (401, 403) else ""
            raise ExecutorRefused(f"GET {self.mapping.probe}: HTTP {status}{hint}")

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
