"""``baton demo`` as the quick start runs it: its own broker and worker, the offline model."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from baton_kafka.schemas import Reply, Ticket
from baton_kafka.streams.demo import demo_file, read_jsonl
from tests.fixtures.paths import ROOT

pytestmark = pytest.mark.integration


def _clean_env() -> dict[str, str]:
    """The environment of a fresh shell: none of the developer's baton or Anthropic settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BATON_", "ANTHROPIC_"))}
    env["PYTHONPATH"] = str(ROOT)
    return env


@pytest.mark.timeout(300)
def test_make_demo_answers_every_sample_ticket_with_only_replies_on_stdout() -> None:
    # The Makefile's own demo recipe, as `make demo` runs it (no -s), with this interpreter's
    # `baton` and the set-up step left out (STAMP empty): stdout must be JSON Lines and nothing
    # else, so `make demo | jq` works.
    # A shell's environment: under `make test` a child make would print "Entering directory".
    env = {k: v for k, v in _clean_env().items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    done = subprocess.run(
        ["make", "demo", f"BIN={Path(sys.executable).parent}", "STAMP="],
        env=env,
        cwd=ROOT,
        capture_output=True,
        timeout=280,
    )
    err = done.stderr.decode()
    assert done.returncode == 0, err[-3000:]
    assert "OFFLINE" in err
    lines = done.stdout.decode().splitlines()
    assert lines and all(line.strip() for line in lines), done.stdout[:500]
    for line in lines:
        assert isinstance(orjson.loads(line), dict), line[:200]
    replies = [Reply.model_validate_json(line) for line in lines]
    tickets = read_jsonl(demo_file("tickets.jsonl"), Ticket)
    assert sorted(r.ticket_id for r in replies) == sorted(t.ticket_id for t in tickets)
    assert all(r.llm == "offline" for r in replies)
    by_id = {r.ticket_id: r for r in replies}
    kettle = next(t for t in tickets if "kettle" in t.text.lower())
    assert by_id[kettle.ticket_id].order_id is not None


def _descendants(pid: int) -> set[int]:
    found: set[int] = set()
    todo = [pid]
    while todo:
        p = todo.pop()
        for task in Path(f"/proc/{p}/task").glob("*"):
            children = (task / "children").read_text().split()
            for c in map(int, children):
                if c not in found:
                    found.add(c)
                    todo.append(c)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.timeout(200)
def test_sigterm_stops_the_demo_and_everything_it_started(tmp_path: Path) -> None:
    env = _clean_env()
    demo = subprocess.Popen(
        [sys.executable, "-m", "baton_kafka.streams", "demo"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert demo.stderr is not None
    children: set[int] = set()
    for line in demo.stderr:
        children |= _descendants(demo.pid)
        if b"waiting for replies" in line:
            break
    assert len(children) >= 2, "the demo started no broker and worker"
    demo.send_signal(signal.SIGTERM)
    demo.stderr.close()
    assert demo.wait(timeout=60) != 0
    deadline = time.monotonic() + 30
    while any(_alive(c) for c in children) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not [c for c in children if _alive(c)], "processes left running after SIGTERM"
