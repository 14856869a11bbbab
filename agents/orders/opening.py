"""Choosing a source: baton's own store by URL, the shop's by URL and map, any by dotted path."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from baton_kafka.agents.dsn import mask_dsn
from baton_kafka.agents.orders.http import HttpMap, HttpOrderSource
from baton_kafka.agents.orders.mapping import MapError
from baton_kafka.agents.orders.postgres import PostgresOrderStore
from baton_kafka.agents.orders.postgres_mapped import PostgresOrderSource, SqlMap
from baton_kafka.agents.orders.source import OrderSource, StoreUnavailable, WritableStore
from baton_kafka.agents.orders.sqlite import SQLiteOrderStore

_POSTGRES = ("postgresql://", "postgres://")
_HTTP = ("http://", "https://")
_DOTTED = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


def open_store(url: str, connect_timeout: float = 10.0) -> WritableStore:
    """Baton's own store for ``url``: sqlite:///abs/path or a plain path, or postgresql://..."""
    if url.startswith(_POSTGRES):
        return PostgresOrderStore(url, connect_timeout)
    if url.startswith("sqlite:///"):
        path = Path("/" + url.removeprefix("sqlite:///").lstrip("/"))
    elif "://" in url or not url.strip():
        raise ValueError(
            f"unsupported order store URL {mask_dsn(url)!r}: use sqlite:///path or postgresql://"
        )
    else:
        path = Path(url)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreUnavailable(f"cannot create the directory of {path}: {exc}") from exc
    return SQLiteOrderStore(path)


def open_source(
    url: str,
    mapping: Mapping[str, Any] | None = None,
    *,
    auth: tuple[str, str] | None = None,
    timeout_s: float = 10.0,
    retries: int = 2,
    cache_ttl_s: float = 30.0,
) -> OrderSource:
    """The source the pipeline reads for ``url``; raises ``ValueError`` on a bad one.

    http(s):// is a shop's REST API; postgresql:// with a ``mapping`` is the shop's own
    table, view or queries (read-only); without one, and sqlite, baton's own store.
    """
    try:
        if url.startswith(_HTTP):
            return HttpOrderSource(
                url,
                HttpMap.parse(mapping or {}),
                auth=auth,
                timeout_s=timeout_s,
                retries=retries,
                cache_ttl_s=cache_ttl_s,
            )
        if mapping is not None:
            if not url.startswith(_POSTGRES):
                raise ValueError(
                    f"a field map reads PostgreSQL or HTTP sources, not {mask_dsn(url)!r}"
                )
            return PostgresOrderSource(url, SqlMap.parse(mapping), timeout_s)
    except MapError as exc:
        raise ValueError(f"BATON_ORDERS_MAP: {exc}") from None
    return open_store(url, timeout_s)


def load_factory(path: str) -> Callable[..., Any]:
    """The callable ``module:name`` names; raises ``ValueError`` (one line) when it cannot."""
    if not _DOTTED.fullmatch(path):
        raise ValueError(f"{path!r} is not module:factory (for instance my_shop.orders:source)")
    module_name, _, name = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import {module_name!r}: {exc}") from None
    factory = getattr(module, name, None)
    if not callable(factory):
        raise ValueError(f"{module_name!r} has no callable {name!r}")
    return factory
