"""``baton check``'s order source lines: reached, the credential taken, what the map reads."""

from __future__ import annotations

import asyncio
import re
from datetime import datetime
from typing import Any

from baton_kafka.streams.settings import Settings, SettingsError

OK, WARN, FAIL = "ok  ", "warn", "FAIL"
# A detail under the line before it (an order's fields under ``orders``).
MORE = "    "
# The customer asked for without --customer: made up, so it has no orders and no path is read.
PROBE_CUSTOMER = "baton-check"
# How many of the customer's orders --customer shows, field by field.
SHOWN_ORDERS = 3
VALUE_WIDTH = 60

Line = tuple[str, str, str]


def _shown(value: Any) -> str:
    if isinstance(value, datetime):
        text = value.isoformat()
    elif isinstance(value, str):
        text = repr(value)
    else:
        text = str(value)
    return text if len(text) <= VALUE_WIDTH else text[: VALUE_WIDTH - 1] + "…"


def _refused(settings: Settings, where: str, status: str) -> Line:
    header = settings.orders_auth_header
    if header is None:
        hint = "BATON_ORDERS_AUTH is not set: set it to the header the API wants ('Name: value')"
    else:
        given = settings.secret_files.get("BATON_ORDERS_AUTH")
        source = f", from {given}" if given else ""
        hint = f"check BATON_ORDERS_AUTH (sent as {header[0]}{source}; the value is not shown)"
    return (FAIL, "orders", f"{where} refused the credential (HTTP {status}): {hint}")


def _unavailable(settings: Settings, where: str, exc: BaseException, timeout: float) -> Line:
    from baton_kafka.agents.dsn import mask_dsn

    text = mask_dsn(str(exc))
    refused = re.search(r"HTTP (401|403)\b", text)
    if refused:
        return _refused(settings, where, refused[1])
    if isinstance(exc, TimeoutError):
        return (FAIL, "orders", f"{where} did not answer within {timeout:g} s")
    return (FAIL, "orders", f"{where} did not answer: {text or type(exc).__name__}")


def _fields(seen: Any) -> list[Line]:
    oid = seen.order.order_id if seen.order is not None else "?"
    lines: list[Line] = []
    if seen.order is None:
        lines.append((MORE, "", f"order {oid}: not valid, baton skips it: {seen.problem}"))
    else:
        lines.append((MORE, "", f"order {oid}:"))
    for r in seen.reads:
        shown = "—" if r.value is None or r.value in ("", []) else _shown(r.value)
        origin = f"  <- {r.path}" if r.path else ""
        note = f"  ({r.note})" if r.note else ""
        lines.append((MORE, "", f"  {r.field:<24} {shown}{origin}{note}"))
    return lines


def _summary(where: str, who: str, all_seen: list[Any]) -> list[Line]:
    valid = sum(s.order is not None for s in all_seen)
    status = OK if valid == len(all_seen) else FAIL if not valid else WARN
    head = f"{where} answers for customer {who}: {len(all_seen)} order(s), {valid} valid"
    lines: list[Line] = [(status, "orders", head + ", as baton sees them:")]
    for seen in all_seen:
        lines += _fields(seen)
    unread: dict[tuple[str, str], int] = {}
    for seen in all_seen:
        for r in seen.unread:
            unread[(r.field, r.path)] = unread.get((r.field, r.path), 0) + 1
    if unread:
        named = "; ".join(f"{f} <- {p} (in {n} of {len(all_seen)})" for (f, p), n in unread.items())
        lines.append((WARN, "orders map", f"{len(unread)} path(s) read nothing: {named}"))
    else:
        lines.append((OK, "orders map", "every path read a value"))
    return lines


async def _http(
    source: Any, where: str, settings: Settings, timeout: float, customer: str | None
) -> list[Line]:
    from baton_kafka.agents.orders.probe import seen
    from baton_kafka.agents.orders.source import StoreUnavailable

    who = customer or PROBE_CUSTOMER
    try:
        items = await asyncio.wait_for(source.raw_orders(who, SHOWN_ORDERS), timeout)
    except StoreUnavailable as exc:
        status = re.search(r"HTTP (4\d\d)\b", str(exc))
        if customer is None and status and status[1] not in ("401", "403"):
            return [
                (
                    WARN,
                    "orders",
                    f"{where} refused the made-up customer {PROBE_CUSTOMER!r} (HTTP "
                    f"{status[1]}): reached, but neither the credential nor the map is verified; "
                    "run `baton check --customer ID` with a customer who has orders",
                )
            ]
        raise
    if not items and customer is None:
        return [
            (OK, "orders", f"{where} answers and takes the credential"),
            (
                WARN,
                "orders map",
                f"not verified: the made-up customer {PROBE_CUSTOMER!r} has no orders, so no "
                "path was read; run `baton check --customer ID` with a customer who has orders",
            ),
        ]
    if not items:
        return [
            (
                WARN,
                "orders",
                f"{where} answers, but customer {customer!r} has no orders: the map is not "
                "verified (try a customer who has orders)",
            )
        ]
    return _summary(where, who, [seen(source.mapping, item) for item in items])


def _stored(where: str, customer: str, orders: list[Any]) -> list[Line]:
    if not orders:
        return [(WARN, "orders", f"{where} answers, but customer {customer!r} has no orders")]
    lines: list[Line] = [
        (OK, "orders", f"{where} answers for customer {customer}: {len(orders)} order(s):")
    ]
    for order in orders:
        lines.append((MORE, "", f"order {order.order_id}:"))
        for name in type(order).model_fields:
            value = getattr(order, name)
            shown = "—" if value is None or value == () else _shown(value)
            lines.append((MORE, "", f"  {name:<24} {shown}"))
    return lines


async def _probe(
    source: Any, where: str, settings: Settings, timeout: float, customer: str | None
) -> list[Line]:
    from baton_kafka.agents.orders import HttpOrderSource

    try:
        if isinstance(source, HttpOrderSource):
            return await _http(source, where, settings, timeout, customer)
        if customer is None:
            if getattr(source, "check", None) is None:
                await asyncio.wait_for(source.for_customer(PROBE_CUSTOMER, 1), timeout)
            return [(OK, "orders", f"{where} answers")]
        orders = await asyncio.wait_for(source.for_customer(customer, SHOWN_ORDERS), timeout)
        return _stored(where, customer, orders)
    finally:
        await source.close()


def orders_lines(settings: Settings, timeout: float, customer: str | None) -> list[Line]:
    """The order source's lines: reached, the credential taken, and (for an HTTP source) what
    its map reads, field by field for ``customer``'s orders when given."""
    from baton_kafka.agents.dsn import mask_url
    from baton_kafka.agents.orders.source import StoreUnavailable
    from baton_kafka.streams.runtime.faust_app.orders import build_source, check_source

    where = settings.orders_source or mask_url(settings.orders_url)
    try:
        source = build_source(settings)
    except SettingsError as exc:
        return [(FAIL, "orders", str(exc))]
    try:
        warning = check_source(source)
    except SettingsError as exc:
        warning = str(exc)
    if warning:
        asyncio.run(source.close())
        return [(FAIL, "orders", warning)]
    try:
        return asyncio.run(_probe(source, where, settings, timeout, customer))
    except (StoreUnavailable, TimeoutError, OSError) as exc:
        return [_unavailable(settings, where, exc, timeout)]
