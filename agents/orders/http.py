"""Orders read from a shop's REST API (JSON over HTTP): mapped fields, retries, a short cache."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import orjson
import yarl
from cachetools import TTLCache
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    RetryError,
    retry_if_exception_type,
    stop_after_attempt,
    wait_random_exponential,
)

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
_ABSENT = object()


def segment(value: str) -> str:
    """An id as one path segment: every reserved character percent-encoded, and ``.`` and
    ``..`` too, so that an id never climbs to another path of the shop's API."""
    quoted = quote(value, safe="")
    return quoted.replace(".", "%2E") if quoted in (".", "..") else quoted


class _Absent(Exception):
    """The API answered 404."""


class _Again(Exception):
    """An answer worth another try: what went wrong, and the server's ``Retry-After``."""

    def __init__(self, problem: str, retry_after: str | None = None) -> None:
        super().__init__(problem)
        self.retry_after = retry_after


class _Wait(wait_random_exponential):
    """Full jitter (workers that met the same outage do not come back in step), or the
    server's ``Retry-After`` up to ``MAX_BACKOFF_S``."""

    def __call__(self, retry_state: RetryCallState) -> float:
        failed = retry_state.outcome.exception() if retry_state.outcome else None
        if isinstance(failed, _Again) and failed.retry_after:
            try:
                return min(max(float(failed.retry_after), 0.0), MAX_BACKOFF_S)
            except ValueError:
                pass
        return float(super().__call__(retry_state))


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
        # A customer's orders with the limit they were fetched with; an order, or None for none.
        self._customers: TTLCache[str, tuple[list[Order], int]] = self._cache()
        self._orders: TTLCache[str, Order | None] = self._cache()
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

    def _cache(self) -> TTLCache[str, Any]:
        return TTLCache(CACHE_ENTRIES, max(self.cache_ttl_s, 0.0), timer=time.monotonic)

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

    async def _get_json(self, path: str, params: Mapping[str, str]) -> Any:
        url = self.base_url + path
        shown = self._say(f"GET {url}")

        def say_retry(state: RetryCallState) -> None:
            failed = state.outcome.exception() if state.outcome else None
            delay = state.next_action.sleep if state.next_action else 0.0
            log.warning("order source %s; retrying in %.2f s", failed, delay)

        retrying = AsyncRetrying(
            retry=retry_if_exception_type(_Again),
            stop=stop_after_attempt(self.retries + 1),
            wait=_Wait(multiplier=self.backoff_s, max=MAX_BACKOFF_S),
            before_sleep=say_retry,
        )
        try:
            return await retrying(self._get_once, url, shown, params)
        except RetryError as gave_up:
            last = gave_up.last_attempt
            raise StoreUnavailable(
                f"order source {last.exception()} (after {last.attempt_number} attempt(s))"
            ) from None

    async def _get_once(self, url: str, shown: str, params: Mapping[str, str]) -> Any:
        """One GET: the JSON body, or ``_Absent``, ``_Again`` (worth another try) or
        ``StoreUnavailable``."""
        import aiohttp

        if self._closed:
            raise StoreUnavailable("order source is closed")
        try:
            # Not followed: the auth header would go along to wherever a redirect points.
            # Encoded already (see ``segment``): taken as it is, never re-resolved.
            target = yarl.URL(url, encoded=True)
            async with self._client().get(target, params=params, allow_redirects=False) as resp:
                if resp.status == 404:
                    raise _Absent
                body = await resp.read()
                if resp.status in _RETRIED:
                    raise _Again(f"{shown}: HTTP {resp.status}", resp.headers.get("Retry-After"))
                if resp.status >= 300:
                    hint = " (check BATON_ORDERS_AUTH)" if resp.status in (401, 403) else ""
                    raise StoreUnavailable(f"order source {shown}: HTTP {resp.status}{hint}")
        except RuntimeError:
            # The session was closed under a request in flight: the source is shutting down.
            if self._closed:
                raise StoreUnavailable("order source is closed") from None
            raise
        except (aiohttp.ClientError, TimeoutError) as exc:
            if self._closed:
                raise StoreUnavailable("order source is closed") from None
            kind = "timed out" if isinstance(exc, TimeoutError) else type(exc).__name__
            raise _Again(self._say(f"{shown}: {kind} {exc}".rstrip())) from None
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise StoreUnavailable(f"order source {shown}: the body is not JSON ({exc})") from None

    def _remember(self, table: TTLCache[str, Any], key: str, value: Any) -> None:
        if self.cache_ttl_s > 0:
            table[key] = value

    async def _fetch_customer(self, customer_id: str, limit: int) -> list[Order]:
        items = await self._items(customer_id, limit)
        where = f"the order source ({customer_id}'s orders)"
        orders = []
        for item in items:
            order = self._order(item, where)
            # Another customer's order in the answer is never shown to this one.
            if order is not None and order.customer_id == customer_id:
                orders.append(order)
        orders.sort(key=lambda o: (o.ordered_at, o.order_id), reverse=True)
        self._remember(self._customers, customer_id, (orders, limit))
        for o in orders:
            self._remember(self._orders, o.order_id, o)
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
        if hit is not None and (hit[1] >= limit or len(hit[0]) < hit[1]):
            return list(hit[0][:limit])
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
        # Read once: an entry can expire between a membership test and the read.
        hit = self._orders.get(order_id, _ABSENT)
        if hit is not _ABSENT:
            return hit  # type: ignore[return-value]
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
        self._remember(self._orders, order_id, order)
        return order

    async def raw_orders(self, customer_id: str, limit: int = 5) -> list[Any]:
        """The customer's order objects as the API writes them, before the map (never cached:
        ``baton check`` shows what the map makes of them)."""
        return (await self._items(customer_id, limit))[:limit]

    async def _items(self, customer_id: str, limit: int) -> list[Any]:
        """The customer's order objects in the answer, where the map's ``list`` says."""
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
        return items

    async def close(self) -> None:
        """Close the HTTP client; later calls raise ``StoreUnavailable``."""
        self._closed = True
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()
