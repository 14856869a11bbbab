"""Order sources: the read-only protocol the pipeline uses, the writing one, and the sources.

One module per source: ``sqlite`` and ``postgres`` (baton's own table), ``postgres_mapped``
(the shop's table, view or queries, read-only), ``http`` (the shop's REST API).
"""

from baton_kafka.agents.orders.http import HttpMap, HttpOrderSource
from baton_kafka.agents.orders.opening import load_factory, open_source, open_store
from baton_kafka.agents.orders.postgres import PostgresOrderStore
from baton_kafka.agents.orders.postgres_mapped import PostgresOrderSource, SqlMap
from baton_kafka.agents.orders.source import (
    OrderSource,
    OrderStore,
    OrderWriter,
    SourceMisconfigured,
    StoreUnavailable,
    WritableStore,
)
from baton_kafka.agents.orders.sqlite import SQLiteOrderStore

__all__ = [
    "HttpMap",
    "HttpOrderSource",
    "OrderSource",
    "OrderStore",
    "OrderWriter",
    "PostgresOrderSource",
    "PostgresOrderStore",
    "SQLiteOrderStore",
    "SourceMisconfigured",
    "SqlMap",
    "StoreUnavailable",
    "WritableStore",
    "load_factory",
    "open_source",
    "open_store",
]
