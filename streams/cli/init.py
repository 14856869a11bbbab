"""``baton init [DIR]``: a shop's files, ready to edit: settings, policy, handbook, tone, map."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from baton_kafka.streams.cli.errors import Fail
from baton_kafka.streams.settings import Settings

ORDERS_MAP = """{
  "customer_orders": "/customers/{customer_id}/orders",
  "order": "/orders/{order_id}",
  "list": "data",
  "fields": {"order_id": "id", "customer_id": "customer.id", "product_name": "item.title",
             "status": "state", "amount": "total.amount", "currency": "total.currency",
             "ordered_at": "created_at", "delivered_at": "delivered_at",
             "carrier": "shipping.carrier", "tracking_no": "shipping.tracking_no"},
  "status_values": {"PAID": "paid", "SHIPPED": "shipped", "DELIVERED": "delivered"}
}
"""

HANDBOOK = """<!--
The shop's own words for the model, rendered into every prompt under "About <shop name>":
who the shop is, what it sells, its promises, how it signs a reply. HTML comments like this one
are not sent. The file's hash is part of the policy version (in every reply). For example:

Alpine Outfitters sells outdoor clothing and gear to hikers in Europe. Prices are in EUR.
Sign every reply with "— The Alpine Outfitters team".
-->
"""

TONE_HEAD = """<!--
How replies sound: the language rule, the voice, and the words customers use for the shop's
products. It replaces baton's default tone section in every prompt; as written here it is that
default. HTML comments like this one are not sent; the file's hash is part of the policy
version. `baton check` says whether the prompts stay long enough to be cached.
-->
"""

SHOP_FILES = """# The shop's own words for the model (who it is, what it sells, sign-off).
handbook = "handbook.md"
# How replies sound (language, voice, product words), beside this file.
tone = "tone.md"
"""


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "init",
        help="write a shop's baton.toml, policy, handbook, tone and orders map, ready to edit",
    )
    p.add_argument("dir", nargs="?", type=Path, default=Path("."), help="default: here")
    p.set_defaults(loads_settings=True)
    return p


def files() -> dict[str, str]:
    """Each file ``baton init`` writes, by name, with its text."""
    from baton_kafka.agents.policy.load import DEFAULT_FILE, DEFAULT_TONE_FILE
    from baton_kafka.streams.config.template import render

    policy = DEFAULT_FILE.read_text("utf-8")
    anchor = policy.index("\n", policy.index("languages = ", policy.index("[shop]"))) + 1
    policy = policy[:anchor] + SHOP_FILES + policy[anchor:]
    return {
        "baton.toml": render(),
        "policy.toml": policy,
        "handbook.md": HANDBOOK,
        "tone.md": TONE_HEAD + DEFAULT_TONE_FILE.read_text("utf-8"),
        "orders-map.json": ORDERS_MAP,
    }


def run(args: argparse.Namespace, settings: Settings | None = None) -> int:
    target: Path = args.dir
    written = files()
    taken = [name for name in written if (target / name).exists()]
    if taken:
        raise Fail(f"baton init: {target / taken[0]} exists; nothing written (move it away first)")
    try:
        target.mkdir(parents=True, exist_ok=True)
        for name, text in written.items():
            (target / name).write_text(text, "utf-8")
    except OSError as exc:
        raise Fail(f"baton init: cannot write to {target}: {exc.strerror or exc}") from None
    for name in written:
        print(target / name)
    print(f"next: edit them, then `baton check` in {target}")
    return 0
