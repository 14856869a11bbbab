"""The order source a run reads and the store it writes, from the settings (``BATON_ORDERS_*``)."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from baton_kafka.agents.orders import (
    OrderSource,
    SourceMisconfigured,
    StoreUnavailable,
    WritableStore,
    load_factory,
    open_source,
    open_store,
)
from baton_kafka.streams.settings import Settings, SettingsError


def build_store(settings: Settings) -> WritableStore:
    """Baton's own store of ``settings.orders_url``, for writing (import, demo, bench); raises
    ``SettingsError`` for a URL of another kind."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    if settings.orders_source or settings.orders_map:
        raise SettingsError(
            "BATON_ORDERS_SOURCE or BATON_ORDERS_MAP is set: the orders are the shop's own and "
            "baton does not write them (import them into the shop's system instead)"
        )
    if settings.orders_url.startswith(("http://", "https://")):
        raise SettingsError(
            "BATON_ORDERS_DSN is the shop's REST API: baton reads it and does not write it"
        )
    try:
        return open_store(settings.orders_url, settings.orders_timeout_s)
    except ValueError as exc:
        raise SettingsError(f"BATON_ORDERS_DSN: {exc}") from None


def build_source(settings: Settings) -> OrderSource:
    """The source the pipeline reads: ``BATON_ORDERS_SOURCE``'s factory (called with the
    settings), else the one ``BATON_ORDERS_DSN`` and ``BATON_ORDERS_MAP`` describe."""
    if settings.orders_source:
        # A shop's own source may keep files there; baton's own store makes its directory.
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        try:
            factory = load_factory(settings.orders_source)
        except ValueError as exc:
            raise SettingsError(f"BATON_ORDERS_SOURCE: {exc}") from None
        try:
            made = factory(settings)
        except Exception as exc:
            # The operator's own code: its failure is reported in one line, as a setting's.
            raise SettingsError(
                f"BATON_ORDERS_SOURCE: {settings.orders_source} failed: {exc}"
            ) from None
        if not isinstance(made, OrderSource):
            raise SettingsError(
                f"BATON_ORDERS_SOURCE: {settings.orders_source} returned "
                f"{type(made).__name__}, which lacks for_customer, get or close"
            )
        return made
    try:
        return open_source(
            settings.orders_url,
            settings.orders_mapping,
            auth=settings.orders_auth_header,
            timeout_s=settings.orders_timeout_s,
            retries=settings.orders_retries,
            cache_ttl_s=settings.orders_cache_ttl_s,
        )
    except ValueError as exc:
        text = str(exc)
        raise SettingsError(
            text if text.startswith("BATON_") else f"BATON_ORDERS_DSN: {text}"
        ) from None


def check_source(source: OrderSource) -> str | None:
    """Run the source's own ``check`` once, in an event loop of its own: a misconfigured source
    is a ``SettingsError``; an unreachable one is returned as a warning (the worker starts and
    flags its tickets until it is back)."""
    check: Any = getattr(source, "check", None)
    if check is None or not inspect.iscoroutinefunction(check):
        return None
    try:
        asyncio.run(check())
    except SourceMisconfigured as exc:
        raise SettingsError(str(exc)) from None
    except StoreUnavailable as exc:
        return f"order store unavailable at start: {exc}"
    return None
