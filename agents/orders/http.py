"""Orders read from a shop's REST API (JSON over HTTP): mapped fields, retries, a short cache."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import orjson
import yarl

from baton_kafka.agents.dsn import MASK, mask_dsn
from baton_kafka.agents.orders import paths
from baton_kafka.agents.orders.http_map import HttpMap as HttpMap
from baton_kafka.agents.orders.source import StoreUnavailable, clamp_limit
from baton_kafka.schemas.records import Order

log = logging.getLogger("baton.orders")

# Statuses worth another try: the shop's server or a proxy is overloaded or restarting.
_RETRIED = {429, 500, 502, 503, 504}
MAX_BACKOFF_S = 5.0
CACHE_ENTRIES = 10_000


def segment(value: str) -> str:
    """An id as one path segment: every reserved character percent-encoded, and ``.`` and
    ``..`` too, so that an id never climbs to another path of the shop's API."""
    quoted = quote(value, safe="")
    return quoted.replace(".", "%2E") if quoted in (".", "..") else quoted


class _Absent(Exception):
    """The API answered 404."""


@dataclass
class _Cached:
    at: float
    value: Any
    limit: int = 0


class HttpOrderSource:
    """A shop's orders over HTTP/JSON, through ``HttpMap``; down means ``StoreUnavailable``.

    Connection errors, timeouts, 429 and 5xx are retried ``retries`` times with exponential
    backoff (a ``Retry-After`` is honoured up to 5 s); other statuses (redirects included: they
    are not followed) and bodies that are not the mapped JSON are not. A 404 is no order (or
    a customer with none). Answers are kept ``cache_ttl_s`` seconds, and callers asking for one
    customer at once share one request.
    The auth header's value is never logged or shown.
    """

    def __init__(
        self,
        base_url: str,
        mapping: HttpMap | None = None,
        *,
        auth: tuple[str, str] | None = None,
        timeout_s: float = 10.0,
        retries: int = 2,
        backoff_s: float = 0.2,
        cache_ttl_s: float = 30.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.mapping = mapping or HttpMap()
        self._auth = auth
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.cache_ttl_s = cache_ttl_s
        self._session: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._customers: dict[str, _Cached] = {}
        self._orders: dict[str, _Cached] = {}
        # One fetch in flight per customer (with the limit it asked for), shared by its callers.
        self._pending: dict[str, tuple[int, asyncio.Future[list[Order]]]] = {}

    def __repr__(self) -> str:
        auth = f"{self._auth[0]}: {MASK}" if self._auth else None
        return f"HttpOrderSource({mask_dsn(self.base_url)!r}, auth={auth!r})"

    def _say(self, text: str) -> str:
        # An error message must not carry the secret even if a server echoed it back.
        if self._auth and self._auth[1]:
            text = text.replace(self._auth[1], MASK)
        return mask_dsn(text)

    def _client(self) -> Any:
        import aiohttp

        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop or self._session.closed:
            headers = {"Accept": "application/json"}
            if self._auth:
                headers[self._auth[0]] = self._auth[1]
            self._session = aiohttp.ClientSession(
                headers=headers, timeout=aiohttp.ClientTimeout(total=self.timeout_s)
            )
            self._loop = loop
        return self._session

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(max(float(retry_after), 0.0), MAX_BACKOFF_S)
            except ValueError:
                pass
        # Full jitter: workers that met the same outage do not come back in step.
        return random.uniform(0, min(self.backoff_s * 2**attempt, MAX_BACKOFF_S))

    async def _get_json(self, path: str, params: Mapping[str, str]) -> Any:
        import aiohttp

        url = self.base_url + path
        shown = self._say(f"GET {url}")
        attempt = 0
        while True:
            if self._closed:
                raise StoreUnavailable("order source is closed")
            retry_after = None
            try:
                # Not followed: the auth header would go along to wherever a redirect points.
                # Encoded already (see ``segment``): taken as it is, never re-resolved.
                target = yarl.URL(url, encoded=True)
                async with self._client().get(target, params=params, allow_redirects=False) as resp:
                    if resp.status == 404:
                        raise _Absent
                    body = await resp.read()
                    if resp.status in _RETRIED:
                        problem = f"{shown}: HTTP {resp.status}"
                        retry_after = resp.headers.get("Retry-After")
                    elif resp.status >= 300:
                        hint = " (check BATON_ORDERS_AUTH)" if resp.status in (401, 403) else ""
                        raise StoreUnavailable(f"order source {shown}: HTTP {resp.status}{hint}")
                    else:
                        try:
                            return orjson.loads(body)
                        except orjson.JSONDecodeError as exc:
                            raise StoreUnavailable(
                                f"order source {shown}: the body is not JSON ({exc})"
                            ) from None
            except RuntimeError:
                # The session was closed under a request in flight: the source is shutting down.
                if self._closed:
                    raise StoreUnavailable("order source is closed") from None
                raise
            except (aiohttp.ClientError, TimeoutError) as exc:
                if self._closed:
                    raise StoreUnavailable("order source is closed") from None
                kind = "timed out" if isinstance(exc, TimeoutError) else type(exc).__name__
                problem = self._say(f"{shown}: {kind} {exc}".rstrip())
            if attempt >= self.retries:
                raise StoreUnavailable(
                    f"order source {problem} (after {attempt + 1} attempt(s))"
                ) from None
            delay = self._delay(attempt, retry_after)
            log.warning("order source %s; retrying in %.2f s", problem, delay)
            await asyncio.sleep(delay)
            attempt += 1

    def _fresh(self, entry: _Cached | None) -> bool:
        return entry is not None and time.monotonic() - entry.at < self.cache_ttl_s

    def _remember(self, table: dict[str, _Cached], key: str, entry: _Cached) -> None:
        if self.cache_ttl_s <= 0:
            return
        table.pop(key, None)
        table[key] = entry
        while len(table) > CACHE_ENTRIES:
            del table[next(iter(table))]

    async def _fetch_customer(self, customer_id: str, limit: int) -> list[Order]:
        m = self.mapping
        path = m.customer_orders.replace("{customer_id}", segment(customer_id))
        params = {m.limit_param: str(limit)} if m.limit_param else {}
        try:
            body = await self._get_json(path, params)
        except _Absent:
            return []
        items = paths.read(body, m.list)
        if not isinstance(items, list):
            raise StoreUnavailable(
                f"order source {self._say('GET ' + self.base_url + path)}: the body has no list "
                f"at {m.list or 'its top'} (see 'list' in BATON_ORDERS_MAP)"
            )
        where = f"the order source ({customer_id}'s orders)"
        orders = []
        for item in items:
            order = self._order(item, where)
            # Another customer's order in the answer is never shown to this one.
            if order is not None and order.customer_id == customer_id:
                orders.append(order)
        orders.sort(key=lambda o: (o.ordered_at, o.order_id), reverse=True)
        now = time.monotonic()
        self._remember(self._customers, customer_id, _Cached(now, orders, limit))
        for o in orders:
            self._remember(self._orders, o.order_id, _Cached(now, o))
        return orders

    def _order(self, item: Any, where: str) -> Order | None:
        if not isinstance(item, Mapping):
            log.warning("skipped an entry of %s that is not a JSON object", where)
            return None
        return self.mapping.fields.order(lambda ours: self.mapping.value(item, ours), where)

    async def for_customer(self, customer_id: str, limit: int = 50) -> list[Order]:
        """The customer's orders, most recent first (from the cache when fresh)."""
        limit = clamp_limit(limit)
        hit = self._customers.get(customer_id)
        if (
            hit is not None
            and self._fresh(hit)
            and (hit.limit >= limit or len(hit.value) < hit.limit)
        ):
            return list(hit.value[:limit])
        wanted = max(limit, 50)
        pending = self._pending.get(customer_id)
        if pending is None or pending[0] < wanted:
            fetch = asyncio.ensure_future(self._fetch_customer(customer_id, wanted))
            pending = self._pending[customer_id] = (wanted, fetch)

            def done(_: object, mine: tuple[int, Any] = pending) -> None:
                if self._pending.get(customer_id) is mine:
                    del self._pending[customer_id]

            fetch.add_done_callback(done)
        orders = await asyncio.shield(pending[1])
        return list(orders[:limit])

    async def get(self, order_id: str) -> Order | None:
        """One order by id, or None (from the cache when fresh)."""
        hit = self._orders.get(order_id)
        if hit is not None and self._fresh(hit):
            found: Order | None = hit.value
            return found
        m = self.mapping
        path = m.order.replace("{order_id}", segment(order_id))
        try:
            body = await self._get_json(path, {})
        except _Absent:
            order = None
        else:
            order = self._order(paths.read(body, m.item), f"the order source (order {order_id})")
            if order is not None and order.order_id != order_id:
                order = None
        self._remember(self._orders, order_id, _Cached(time.monotonic(), order))
        return order

    async def raw_orders(self, customer_id: str, limit: int = 5) -> list[Any]:
        """The customer's order objects as the API writes them, before the map (never cached:
        ``baton check`` shows what the map makes of them)."""
        m = self.mapping
        path = m.customer_orders.replace("{customer_id}", segment(customer_id))
        params = {m.limit_param: str(limit)} if m.limit_param else {}
        try:
            body = await self._get_json(path, params)
        except _Absent:
            return []
        items = paths.read(body, m.list)
        if not isinstance(items, list):
            raise StoreUnavailable(
                f"order source {self._say('GET ' + self.base_url + path)}: the body has no list "
                f"at {m.list or 'its top'} (see 'list' in BATON_ORDERS_MAP)"
            )
        return items[:limit]

    async def close(self) -> None:
        """Close the HTTP client; later calls raise ``StoreUnavailable``."""
        self._closed = True
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()
