"""Replay: re-run recorded tickets in a namespace of their own and collect the new replies."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from baton_kafka.schemas.codec import dumps
from baton_kafka.schemas.records import Reply, Ticket
from baton_kafka.streams.debug.replay_plan import Selection, first_replies, select
from baton_kafka.streams.kafka.topics import CUSTOMER_TABLE, TopicNames, changelog_topic
from baton_kafka.streams.progress import Progress
from baton_kafka.streams.runtime.faust_app.spawn import (
    WorkerProcess,
    read_replies,
    spawn_worker,
    stop_worker,
)
from baton_kafka.streams.settings import Settings

if TYPE_CHECKING:
    from baton_kafka.agents.models.batch_tally import Tally
    from baton_kafka.streams.batched import BatchOptions
    from baton_kafka.streams.kafka.client import Message


async def resolve(
    settings: Settings,
    selection: Selection,
    *,
    since_ms: int | None,
    until_ms: int | None,
    from_dead_letters: bool,
) -> Selection:
    """``selection`` with its time bounds as offsets of the tickets topic and, when asked,
    the tickets that have dead letters."""
    from baton_kafka.streams.debug.dlq import erasures, letters
    from baton_kafka.streams.kafka.reader import offsets_at, read_topics

    names = TopicNames.of(settings)
    since = await offsets_at(settings, names.tickets, since_ms) if since_ms is not None else None
    until = await offsets_at(settings, names.tickets, until_ms) if until_ms is not None else None
    dead = None
    if from_dead_letters:
        read = await read_topics(settings, [names.dead_letters])
        dead = frozenset(
            x.dl.ticket_id for x in letters(read[names.dead_letters]) if x.dl.ticket_id
        )
    # The customers `baton forget` erased: a replay does not bring their tickets back.
    index = changelog_topic(settings, CUSTOMER_TABLE)
    erased = erasures((await read_topics(settings, [index]))[index])
    return replace(selection, since=since, until=until, dead_lettered=dead, erased=erased)


async def wait_for_replies(
    target: Settings, wanted: set[str], timeout: float, proc: WorkerProcess | None, bar: Progress
) -> dict[str, Reply]:
    """Read the namespace's replies until every wanted ticket has one, the timeout passes or
    the worker exits; returns what arrived."""
    bar.show(0)
    try:
        replies = TopicNames.of(target).replies
        return await read_replies(target, replies, wanted, timeout, proc, bar.show)
    finally:
        bar.close()


def replay(
    target: Settings,
    tickets: list[Ticket],
    there: Mapping[str, list[Message]],
    *,
    timeout: float,
    worker: bool,
    say: Callable[[str], None],
) -> tuple[dict[str, Reply], int]:
    """Publish what the target namespace lacks, run its worker (unless one runs already),
    collect its replies; returns them and how many tickets were published."""
    from baton_kafka.streams.kafka.client import publish
    from baton_kafka.streams.kafka.topics import ensure_topics

    into = TopicNames.of(target)
    replies = first_replies(there[into.replies])
    published = {t.ticket_id for t in select(there[into.tickets], Selection()).tickets}
    todo = [t for t in tickets if t.ticket_id not in published | replies.keys()]
    say(
        f"namespace {target.namespace}: {len(tickets)} ticket(s) selected, {len(todo)} to "
        f"publish, {len(tickets) - len(todo)} already there "
        f"(re-run with --namespace {target.namespace} to resume)"
    )
    wanted = {t.ticket_id for t in tickets}
    if wanted <= replies.keys():
        return replies, 0
    asyncio.run(ensure_topics(target))
    asyncio.run(publish(target, into.tickets, ((t.session_id, dumps(t)) for t in todo)))
    log = target.data_dir / "replay" / f"{target.namespace}-worker.log"
    # Tickets published at once would be one burst: each is compared with its own reply.
    proc = spawn_worker(target.with_(coalesce_window_s=0.0), log) if worker else None
    try:
        bar = Progress(len(wanted), "replaying", min_total=1)
        replies = asyncio.run(wait_for_replies(target, wanted, timeout, proc, bar))
        if proc is not None and proc.poll() is not None:
            say(f"the worker exited with code {proc.returncode}; its log: {log}")
    finally:
        if proc is not None:
            stop_worker(proc, 30.0)
    return replies, len(todo)


def replay_in_batches(
    target: Settings,
    tickets: list[Ticket],
    there: Mapping[str, list[Message]],
    options: BatchOptions,
    *,
    say: Callable[[str], None],
) -> tuple[dict[str, Reply], int, Tally | None]:
    """Answer the tickets in this process with message batches (``streams.batched``), then
    publish the tickets, replies and dead letters the namespace lacks, so it reads as if its
    worker had answered them; returns the namespace's replies, how many tickets were published
    and what the batches sent and cost (None: every ticket had its reply already)."""
    from baton_kafka.agents.models.batch_journal import BatchJournal
    from baton_kafka.streams.batched import (
        Answered,
        answer_in_batches,
        batch_llm,
        run_key,
        state_path,
    )
    from baton_kafka.streams.kafka.client import publish
    from baton_kafka.streams.kafka.topics import ensure_topics
    from baton_kafka.streams.runtime.faust_app.orders import build_source
    from baton_kafka.streams.runtime.records import dead_letters

    into = TopicNames.of(target)
    replies = first_replies(there[into.replies])
    path = state_path(target, "replay", target.namespace, options.state)
    # A session the namespace answered whole is not run again; any other is, whole, so its
    # tickets have their context.
    unanswered = {t.session_id for t in tickets if t.ticket_id not in replies}
    if not unanswered:
        say(f"namespace {target.namespace}: every selected ticket has its reply already")
        path.unlink(missing_ok=True)
        return replies, 0, None
    run_tickets = [t for t in tickets if t.session_id in unanswered]
    journal = BatchJournal.open(path, run_key(target, run_tickets, target.namespace))
    say(
        f"namespace {target.namespace}: {len(run_tickets)} ticket(s) of {len(unanswered)} "
        f"session(s) through message batches; state in {path} (run the same command again to "
        "resume)"
    )
    llm = batch_llm(target, journal, poll_s=options.poll_s, say=say)

    async def run() -> Answered:
        store = build_source(target)
        try:
            return await answer_in_batches(target, [run_tickets], llm, store)
        finally:
            await store.close()
            await llm.aclose()

    answered = asyncio.run(run())
    published = {t.ticket_id for t in select(there[into.tickets], Selection()).tickets}
    todo = [t for t in tickets if t.ticket_id not in published | replies.keys()]
    missing = [r for tid, r in answered.replies.items() if tid not in replies]
    answers = {r.ticket_id for r in missing}
    letters = [
        (dl.session_id or dl.ticket_id, dumps(dl), dead_letters.headers(dl))
        for dl in answered.dead_letters
        if dl.ticket_id in answers
    ]
    headers = {value: h for _, value, h in letters}

    async def record() -> None:
        await ensure_topics(target)
        # Replies first: a namespace with a ticket and no reply would be answered again by a
        # later replay's worker.
        await publish(target, into.replies, ((r.session_id, dumps(r)) for r in missing))
        await publish(
            target,
            into.dead_letters,
            ((key, value) for key, value, _ in letters),
            headers_of=lambda _key, value: headers[value],
        )
        await publish(target, into.tickets, ((t.session_id, dumps(t)) for t in todo))

    asyncio.run(record())
    journal.remove()
    for reply in missing:
        replies[reply.ticket_id] = reply
    return replies, len(todo), llm.tally
