"""A commented ``baton.toml`` rendered from the declarations: every setting, its default."""

from __future__ import annotations

import textwrap
from dataclasses import MISSING
from typing import Any

import orjson

from baton_kafka.streams.config.declared import shown_order
from baton_kafka.streams.config.spec import spec_of

HEAD = """# baton's settings for this shop. Every key is optional; commented ones show the default.
# The environment (and .env) override this file; every setting: docs/configuration.md.
# Secrets do not belong here: set them in the environment, or name a file holding one with
# its key and "_file" (anthropic_api_key_file = "/run/secrets/anthropic").
# `baton check` reads this file and checks everything it names.

# The shop's service policy; its handbook.md and tone.md are named in it and sit beside it.
policy = "policy.toml"

# The shop's orders: baton's own store (`baton orders import`) unless the shop's system is
# named: a REST API or PostgreSQL, with the mapping of its fields.
# orders_dsn = "https://api.shop.example"
# orders_map = "orders-map.json"
"""

WRITTEN = {"BATON_POLICY", "BATON_ORDERS_DSN", "BATON_ORDERS_MAP"}


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, tuple):
        return '""'
    return orjson.dumps("" if value is None else str(value)).decode()


def render() -> str:
    """The commented file ``baton init`` writes."""
    lines = [HEAD, "# Everything else, with its default:"]
    for f in shown_order():
        spec = spec_of(f)
        if spec is None or spec.env in WRITTEN or spec.prefix:
            continue
        default = f.default if f.default is not MISSING else f.default_factory()
        lines.append("")
        help = spec.help + (" (a secret)" if spec.secret else "")
        lines += [f"# {line}" for line in textwrap.wrap(help, 96)]
        if spec.shown:
            lines.append(f"# default: {spec.shown}")
        names = spec.also or (spec.env,)
        for name in names:
            key = name.removeprefix("BATON_").lower()
            # A dict a setting reads from text (money caps) is written as that text.
            text = spec.render(default) if isinstance(default, dict) and not default else None
            shown = '""' if spec.also or text == "" else _value(default)
            lines.append(f"# {key} = {shown}")
    lines += [
        "",
        "# Extra options of the Kafka clients baton creates (docs/configuration.md):",
        "# [kafka.client]",
        "# linger_ms = 5",
        '# compression_type = "zstd"',
    ]
    return "\n".join(lines) + "\n"
