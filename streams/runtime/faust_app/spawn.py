"""A worker child process for the commands that run the pipeline themselves, and its replies."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from baton_kafka.schemas.records import Reply
from baton_kafka.streams import processes
from baton_kafka.streams.kafka.embedded import free_port
from baton_kafka.streams.runtime.own_stages import configured_chain
from baton_kafka.streams.settings import Settings

WorkerProcess = subprocess.Popen[bytes]

SOURCE_ROOT = Path(__file__).resolve().parents[2]


def child_env(settings: Settings) -> dict[str, str]:
    """The environment of a child process that runs with ``settings``.

    This process's own ``BATON_*`` and ``ANTHROPIC_*`` variables are left out: the settings
    say everything the child needs, and what they leave out (a credential) it must not get.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BATON_", "ANTHROPIC_"))}
    env.update(settings.to_env())
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SOURCE_ROOT), env.get("PYTHONPATH")]))
    return env


def spawn_worker(settings: Settings, log_path: Path) -> WorkerProcess:
    """Start ``python -m baton_kafka.streams worker`` with ``settings`` on a free web port of its
    own, appending its output to ``log_path``.

    A command's own worker (demo, eval, replay, bench) runs in a namespace of its own: without
    signing keys it runs unsigned rather than refusing to start. It runs the chain the
    settings name (``BATON_STAGES`` goes to it with the others), checked here first.
    """
    # The child loads BATON_STAGES again: a stage that cannot be loaded is said here, in one
    # line, rather than in the child's log.
    configured_chain(settings)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    own = settings.with_(web_port=free_port(), allow_unsigned=True)
    with log_path.open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "baton_kafka.streams", "worker"],
            env=child_env(own),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def stop_worker(proc: WorkerProcess, timeout: float = 20.0) -> None:
    """Stop a worker gracefully, then forcefully."""
    processes.stop(proc, timeout)


async def read_replies(
    settings: Settings,
    topic: str,
    wanted: set[str],
    timeout: float,
    proc: WorkerProcess | None,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Reply]:
    """Read ``topic`` from the beginning until every wanted ticket has a reply, ``timeout``
    seconds pass or the worker exits; returns the first reply of every ticket read (holding
    replies left out)."""
    from baton_kafka.streams.kafka.connect import new_consumer

    replies: dict[str, Reply] = {}
    consumer = new_consumer(
        settings,
        topic,
        group_id=None,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        metadata_max_age_ms=1000,
    )
    await consumer.start()
    deadline = time.monotonic() + timeout
    try:
        while not wanted <= replies.keys() and time.monotonic() < deadline:
            if proc is not None and proc.poll() is not None:
                break
            batch = await consumer.getmany(timeout_ms=500)
            for records in batch.values():
                for r in records:
                    reply = Reply.model_validate_json(r.value)
                    if reply.status != "holding":  # a slow ticket's holding reply: not its own
                        replies.setdefault(reply.ticket_id, reply)
            if progress is not None:
                progress(len(wanted & replies.keys()))
    finally:
        await consumer.stop()
    return replies
