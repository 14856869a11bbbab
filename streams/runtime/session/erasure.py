"""Forgetting a customer inside the worker: the session's baton, then the customer's index entry.

Erasure requests travel on the topics whose workers hold the data, marked by a header: one per
session on the sessions topic (so it waits behind that session's ticket in flight, like a
ticket), one per customer on the index topic.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from baton_kafka.schemas.baton import Erasure
from baton_kafka.schemas.codec import InvalidRecord, parse
from baton_kafka.streams.runtime.session.batons import BatonStore
from baton_kafka.streams.runtime.session.scheduler import SessionGate

log = logging.getLogger("baton.erasure")

CONTROL_HEADER = "baton-control"
ERASE = b"erase"


def requested(headers: Iterable[tuple[str, bytes]] | None) -> bool:
    """Whether a record is an erasure request rather than data."""
    return any(k == CONTROL_HEADER and bytes(v) == ERASE for k, v in headers or ())


def headers() -> list[tuple[str, bytes]]:
    """The header that marks an erasure request."""
    return [(CONTROL_HEADER, ERASE)]


def _parse(value: bytes | None) -> Erasure | None:
    try:
        return parse(Erasure, value)
    except InvalidRecord as exc:
        log.error("ignoring an invalid erasure request: %s", exc)
        return None


async def erase_session(
    batons: BatonStore,
    gate: SessionGate,
    value: bytes | None,
    misplaced: Callable[[str], str | None] = lambda _: None,
) -> bool:
    """Tombstone the session's baton if it is the customer's; True when one was erased.

    It waits for the session's ticket in flight, so that ticket cannot write the baton back.
    ``misplaced`` says why a request for a session was read off the session's key/partition.
    """
    request = _parse(value)
    if request is None or request.session_id is None:
        return False
    if (problem := misplaced(request.session_id)) is not None:
        log.error("ignoring an erasure request (request %s): %s", request.request_id, problem)
        return False
    session, holder = request.session_id, f"erase:{request.request_id}"
    await gate.enter(session, holder, lambda: None)
    try:
        baton = batons.get(session)
        if baton is None or baton.customer_id != request.customer_id:
            return False
        batons.delete(session)
        log.info("erased session %s of a customer (request %s)", session, request.request_id)
        return True
    finally:
        gate.leave(session, holder)


def erase_index(
    batons: BatonStore, value: bytes | None, misplaced: Callable[[str], str | None] = lambda _: None
) -> bool:
    """Replace the customer's index entry by the mark of the erasure; True when there was one.

    The mark (the request's time) makes the erasure last: every stage and the index refuse the
    customer's records written before it, read again or re-driven as they may be.
    """
    request = _parse(value)
    if request is None or request.session_id is not None:
        return False
    if (problem := misplaced(request.customer_id)) is not None:
        log.error("ignoring an erasure request (request %s): %s", request.request_id, problem)
        return False
    held = batons.index(request.customer_id)
    batons.erase_index(request.customer_id, request.requested_at)
    log.info("erased a customer's index entry (request %s)", request.request_id)
    return held is not None and bool(held.sessions or held.orders)
