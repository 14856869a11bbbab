"""docs/shop.md's commands, run as a new shop would run them: its marked shell blocks in order,
in one bash, from a copy of ``examples/``, against the embedded broker the guide starts. The
guide walks through the bookshop example, its help articles included."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from baton_kafka.agents.articles import index_for
from baton_kafka.agents.policy import load
from baton_kafka.schemas import Reply, Ticket
from baton_kafka.streams.kafka.embedded import free_port
from tests.fixtures.paths import ROOT

pytestmark = pytest.mark.integration

GUIDE = ROOT / "docs" / "shop.md"
MARK = "<!-- tested -->"


def guide_script() -> str:
    """The guide's tested blocks: each ```sh fence right after a ``<!-- tested -->`` line."""
    blocks = re.findall(
        rf"^{re.escape(MARK)}\n```sh\n(.*?)^```$", GUIDE.read_text("utf-8"), re.M | re.S
    )
    assert len(blocks) >= 7, "the guide lost its tested blocks"
    return "\n".join(blocks)


def test_the_guide_marks_every_step_from_the_shop_files_to_the_replies() -> None:
    script = guide_script()
    for command in (
        "examples/shops/bookshop",
        "articles",
        "baton broker",
        "baton orders import",
        "baton worker",
        "baton publish",
        "baton tail support.replies",
        "examples/orders/shopify_server.py",
        "baton check --customer",
    ):
        assert command in script, f"the guide's tested blocks do not run {command}"
    assert "baton init" in GUIDE.read_text("utf-8"), "the place for `baton init` is gone"


@pytest.mark.timeout(180)
def test_the_shop_guide_takes_a_new_shop_to_answered_tickets(tmp_path: Path) -> None:
    for folder in ("shops", "orders"):
        shutil.copytree(ROOT / "examples" / folder, tmp_path / "examples" / folder)
    broker_port, web_port, shopify_port = free_port(), free_port(), free_port()
    # The guide's broker and Shopify ports, moved to free ones; everything else as written.
    script = "set -euo pipefail\n" + guide_script().replace("9092", str(broker_port)).replace(
        "8089", str(shopify_port)
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BATON_", "ANTHROPIC_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["BATON_WEB_PORT"] = str(web_port)
    run = subprocess.Popen(
        ["bash", "-c", script],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = run.communicate(timeout=160)
    finally:
        # The broker and the worker are the guide's background jobs: never left running.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(run.pid, signal.SIGKILL)
    shop = tmp_path / "myshop"
    logs = "".join(
        f"\n--- {p.name}\n{p.read_text(errors='replace')[-2000:]}" for p in shop.glob("*.log")
    )
    assert run.returncode == 0, err.decode(errors="replace")[-3000:] + logs

    tickets = [
        Ticket.model_validate_json(x) for x in (shop / "tickets.jsonl").read_bytes().splitlines()
    ]
    replies = [
        Reply.model_validate_json(x) for x in (shop / "replies.jsonl").read_bytes().splitlines()
    ]
    assert sorted(r.ticket_id for r in replies) == sorted(t.ticket_id for t in tickets)
    by_id = {r.ticket_id: r for r in replies}
    # Written under the shop's own policy and handbook, about the shop's own orders.
    version = load(shop / "policy.toml").version
    assert {r.policy_version for r in replies} == {version}
    assert version != load(None).version
    assert version != load(ROOT / "examples" / "shops" / "bookshop" / "policy.toml").version
    # The bookshop's articles and the guide's own are indexed with the policy: their version
    # is in the policy's.
    articles = load(shop / "policy.toml").shop.articles_dir
    assert articles == str((shop / "articles").resolve())
    names = {a.name for a in index_for(articles).articles}
    assert {"returns.md", "rueckgabe.md", "lieferzeiten.md", "vouchers.md"} <= names
    assert len(names) == 10
    assert by_id["M-1"].order_id == "LL-100301"
    assert by_id["T-1"].order_id == "LL-100302"
    assert by_id["J-1"].order_id == "LL-100303"
    assert all(r.llm == "offline" for r in replies)
    # A session's tickets sent together are one turn (BATON_COALESCE_WINDOW): one full reply
    # lists them all, and each other ticket's record names it.
    assert all(r.reply for r in replies if r.status != "coalesced")
    for r in replies:
        if r.status == "coalesced":
            assert r.answered_by is not None and r.ticket_id in by_id[r.answered_by].ticket_ids
    # A coalesced ticket is answered as its turn's reply is.
    statuses = {r.ticket_id: by_id[r.answered_by or r.ticket_id].status for r in replies}
    assert list(statuses.values()).count("answered") >= 3, statuses
    # The guide shows the replies to the reader, and what baton reads from the Shopify-shaped
    # example server through the shipped map.
    assert b"LL-100302" in out
    assert b"order_id                 'LL-100301'  <- name" in out
    assert b"customer_id              '207119551'  <- customer.id" in out
