"""``baton eval --batch``: the eval's tickets through the pipeline with message batches, no broker.

The same order store and date shift as the live run; the phases stay in order (every ticket
of phase k is answered before phase k+1 starts), each phase in waves (``streams.batched``).
With ``--llm echo`` the stand-in lives only as long as the run, so its state file is temporary
and there is nothing to resume.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from baton_kafka.agents.models.batch_journal import BatchJournal
from baton_kafka.agents.models.batch_tally import Tally
from baton_kafka.agents.testing.standin.weak import STYLES
from baton_kafka.schemas.codec import dumps
from baton_kafka.schemas.records import Order, Reply
from baton_kafka.streams.batched import BatchOptions
from baton_kafka.streams.eval.score import Case
from baton_kafka.streams.settings import OWN_ORDERS, Settings


def run_in_batches(
    settings: Settings,
    mode: str,
    cases: Sequence[Case],
    orders: Sequence[Order],
    tickets_file: Path,
    options: BatchOptions,
    say: Callable[[str], None],
    stand_in_key: str,
) -> tuple[dict[str, Reply], Tally]:
    """Every case's reply, phase by phase, and what the batches sent and cost (``--llm echo``:
    on a stand-in of its own, reached with ``stand_in_key``)."""
    from baton_kafka.agents.testing.standin import run_in_thread
    from baton_kafka.streams.batched import answer_in_batches, batch_llm, run_key, state_path
    from baton_kafka.streams.demo import import_orders
    from baton_kafka.streams.runtime.faust_app.orders import build_source

    tickets = [c.ticket for c in cases]
    phases = sorted({c.label.phase for c in cases})
    groups = [[c.ticket for c in cases if c.label.phase == p] for p in phases]
    with tempfile.TemporaryDirectory(prefix="baton-eval-") as tmp, contextlib.ExitStack() as stack:
        path = state_path(settings, "eval", tickets_file.stem, options.state)
        run = settings.with_(data_dir=Path(tmp), llm="anthropic", **OWN_ORDERS)
        if mode in STYLES:
            standin = stack.enter_context(run_in_thread(style=STYLES[mode]))
            run = run.with_(anthropic_base_url=standin.base_url, anthropic_api_key=stand_in_key)
            path = Path(tmp) / "batch.json"
            say(f"model: message batches on the stand-in {standin.base_url} (echoes prompt facts)")
        else:
            say(
                f"model: {settings.model} through message batches; state in {path} "
                "(run the same command again to resume)"
            )
        import_orders(run, orders)
        key = run_key(run, tickets, [c.label.phase for c in cases], [dumps(o) for o in orders])
        journal = BatchJournal.open(path, key)
        llm = batch_llm(run, journal, poll_s=options.poll_s, say=say)

        async def go() -> dict[str, Reply]:
            store = build_source(run)
            try:
                return (await answer_in_batches(run, groups, llm, store)).replies
            finally:
                await store.close()
                await llm.aclose()

        replies = asyncio.run(go())
        journal.remove()
    return replies, llm.tally
