"""The stand-in's Message Batches endpoints: every request answered as ``POST /v1/messages`` would.

``POST /v1/messages/batches`` takes ``{"requests": [{"custom_id", "params"}]}`` and answers each
request at once with the stand-in's own message logic (faults included); the batch reports
``in_progress`` (every request ``processing``) until ``delay_s`` has passed, then ``ended`` with
its counts and a ``results_url`` whose JSONL has one result per request: ``succeeded`` with the
message, ``errored`` with the API error a live call would have got, or ``expired`` for a
request not answered within ``expire_s`` (a ``hang`` fault: one the batch never reached).
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import orjson
from aiohttp import web

CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
Answer = Callable[[Any], Awaitable[web.Response]]


@dataclass(frozen=True)
class Posted:
    """A batch request's ``params`` as the ``/v1/messages`` handler reads a request: ``json()``."""

    body: Any

    @classmethod
    def of(cls, body: Any) -> web.Request:
        # The handler reads nothing of its request but the JSON body.
        return cast(web.Request, cls(body))

    async def json(self, *, loads: Any = None) -> Any:
        # As aiohttp's ``json(loads=...)``; the body is parsed already.
        return self.body


@dataclass
class Batch:
    """One batch: its requests' custom ids in order and, once answered, their results."""

    id: str
    custom_ids: list[str]
    created_at: datetime
    started: float
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    task: asyncio.Task[None] | None = None


def _result(answered: web.Response | None) -> dict[str, Any]:
    if answered is None:
        return {"type": "expired"}
    assert isinstance(answered.body, bytes)
    body = orjson.loads(answered.body)
    if answered.status == 200:
        return {"type": "succeeded", "message": body}
    return {"type": "errored", "error": body}


def _error(status: int, kind: str, message: str) -> web.Response:
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return web.json_response(body, status=status)


class BatchDesk:
    """The batches of one stand-in, answered by ``answer`` (the server's ``respond``)."""

    def __init__(
        self, answer: Answer, *, delay_s: float, expire_s: float, base_url: Callable[[], str]
    ) -> None:
        self.answer, self.delay_s, self.expire_s = answer, delay_s, expire_s
        self.base_url = base_url
        self._lock = threading.Lock()
        self.batches: dict[str, Batch] = {}
        self.created = 0
        self.requests = 0

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/messages/batches", self._create)
        app.router.add_get("/v1/messages/batches/{id}", self._retrieve)
        app.router.add_get("/v1/messages/batches/{id}/results", self._results)

    def clear(self) -> None:
        with self._lock:
            self.batches.clear()
            self.created = self.requests = 0

    def stats(self) -> dict[str, int]:
        """How many batches were created and how many requests they held."""
        with self._lock:
            return {"batches": self.created, "batch_requests": self.requests}

    def _ended(self, batch: Batch) -> bool:
        answered = batch.task is not None and batch.task.done()
        return answered and time.monotonic() - batch.started >= self.delay_s

    def _describe(self, batch: Batch) -> dict[str, Any]:
        ended = self._ended(batch)
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if ended:
            for result in batch.results.values():
                counts[result["type"]] += 1
        else:
            counts["processing"] = len(batch.custom_ids)
        results_url = f"{self.base_url()}/v1/messages/batches/{batch.id}/results"
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": counts,
            "created_at": batch.created_at.isoformat(),
            "expires_at": (batch.created_at + timedelta(hours=24)).isoformat(),
            "ended_at": datetime.now(UTC).isoformat() if ended else None,
            "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": results_url if ended else None,
        }

    async def _create(self, http: web.Request) -> web.Response:
        try:
            body = await http.json()
            requests = body["requests"]
            pairs = [(r["custom_id"], r["params"]) for r in requests]
        except (ValueError, TypeError, KeyError) as exc:
            return _error(400, "invalid_request_error", f"requests: malformed ({exc!r})")
        ids = [cid for cid, _ in pairs]
        if not pairs or len(set(ids)) != len(ids):
            return _error(400, "invalid_request_error", "requests: non-empty, unique custom_id")
        if not all(isinstance(cid, str) and CUSTOM_ID.match(cid) for cid in ids):
            return _error(400, "invalid_request_error", "custom_id: ^[a-zA-Z0-9_-]{1,64}$")
        batch = Batch(
            id=f"msgbatch_standin_{uuid.uuid4().hex[:20]}",
            custom_ids=ids,
            created_at=datetime.now(UTC),
            started=time.monotonic(),
        )
        batch.task = asyncio.create_task(self._process(batch, pairs))
        with self._lock:
            self.batches[batch.id] = batch
            self.created += 1
            self.requests += len(pairs)
        return web.json_response(self._describe(batch))

    async def _process(self, batch: Batch, pairs: list[tuple[str, Any]]) -> None:
        answers = await asyncio.gather(*(self._within(p) for _, p in pairs))
        batch.results = {cid: _result(a) for (cid, _), a in zip(pairs, answers, strict=True)}

    async def _within(self, params: Any) -> web.Response | None:
        try:
            return await asyncio.wait_for(self.answer(params), self.expire_s)
        except TimeoutError:
            return None

    def _find(self, http: web.Request) -> Batch | None:
        with self._lock:
            return self.batches.get(http.match_info["id"])

    async def _retrieve(self, http: web.Request) -> web.Response:
        batch = self._find(http)
        if batch is None:
            return _error(404, "not_found_error", "no such batch")
        return web.json_response(self._describe(batch))

    async def _results(self, http: web.Request) -> web.Response:
        batch = self._find(http)
        if batch is None:
            return _error(404, "not_found_error", "no such batch")
        if not self._ended(batch):
            return _error(400, "invalid_request_error", "the batch is still in progress")
        lines = (
            orjson.dumps({"custom_id": cid, "result": batch.results[cid]})
            for cid in batch.custom_ids
        )
        return web.Response(body=b"\n".join(lines) + b"\n", content_type="application/binary")
