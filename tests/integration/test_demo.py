"""``baton demo`` as the quick start runs it: its own broker and worker, the offline model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from schemas import Reply, Ticket
from streams.demo import demo_file, read_jsonl
from tests.fixtures.paths import ROOT

pytestmark = pytest.mark.integration


@pytest.mark.timeout(300)
def test_the_demo_answers_every_sample_ticket_and_says_the_model_is_offline(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BATON_", "ANTHROPIC_"))}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-m", "streams", "demo"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        timeout=280,
    )
    err = done.stderr.decode()
    assert done.returncode == 0, err[-3000:]
    assert "OFFLINE" in err
    replies = [Reply.model_validate_json(line) for line in done.stdout.splitlines() if line]
    tickets = read_jsonl(demo_file("tickets.jsonl"), Ticket)
    assert sorted(r.ticket_id for r in replies) == sorted(t.ticket_id for t in tickets)
    assert all(r.llm == "offline" for r in replies)
    by_id = {r.ticket_id: r for r in replies}
    kettle = next(t for t in tickets if "kettle" in t.text.lower())
    assert by_id[kettle.ticket_id].order_id is not None
