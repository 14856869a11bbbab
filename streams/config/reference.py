"""The configuration reference (``docs/configuration.md``), rendered from the declarations.

Regenerate with ``python -m baton_kafka.streams.config.reference``; a test fails when the file
drifts.
"""

from __future__ import annotations

from dataclasses import MISSING
from pathlib import Path
from typing import Any

from baton_kafka.streams.config.declared import shown_order
from baton_kafka.streams.config.kafka import CLIENT_OPTIONS
from baton_kafka.streams.config.sources import CONFIG_NAME, CONFIG_VARIABLE, FILE_SUFFIX
from baton_kafka.streams.config.spec import Spec, spec_of

PATH = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"

INTRO = f"""# Configuration

<!-- Generated from streams/config/declared.py
     by `python -m baton_kafka.streams.config.reference`. -->

baton reads its settings once, when a command starts, from three places; a later one wins:

1. `{CONFIG_NAME}` in the working directory, or the file `--config FILE` or `{CONFIG_VARIABLE}`
   names (`baton init` writes a commented one);
2. `.env` in the working directory (`KEY=value` lines);
3. the environment.

In `{CONFIG_NAME}` a variable's key is its name without `BATON_`, in lower case
(`BATON_WEB_PORT` is `web_port`); a table's name joins its keys (`[kafka]` `username` is
`BATON_KAFKA_USERNAME`, `[kafka.client]` `linger_ms` is `BATON_KAFKA_CLIENT_LINGER_MS`). Unknown
keys, bad values and bad combinations stop the command (exit code 2), every one told in the
same run, one line each naming the file and key (or the variable) and the nearest known key;
a secret's value is never shown. Ports are 1 to 65535, times in seconds above 0 (0 turns off
the few that say so), shares fractions below 1, switches `1` or `0` (also `true`/`false`,
`yes`/`no`, `on`/`off`).

A relative path is read from the directory of the file that names it: in `{CONFIG_NAME}`
(`policy`, `data_dir`, `store_dir`, `orders_map`, a `*_file`) from that file's directory,
wherever the command runs; in `.env` or the environment from the working directory, as is
a default (`.baton`). `baton check` reads every file and creates none.

Every secret (marked 🔒) can be read from a file instead: `<VARIABLE>{FILE_SUFFIX}` (or the key
`<key>_file`) names the file, as container secrets are mounted. baton's own child processes
then get the file's variable, never the secret.
"""


def _default(f: Any, spec: Spec) -> str:
    if spec.shown is not None:
        return spec.shown
    value = f.default if f.default is not MISSING else f.default_factory()
    if value in (None, "", (), {}):
        return "none"
    return f"`{spec.render(value)}`"


def _row(f: Any, spec: Spec) -> str:
    name = f"`{spec.env}`" + (" 🔒" if spec.secret else "")
    key = f"`{spec.toml_key}`"
    if spec.also:
        key = ", ".join(f"`{n.removeprefix('BATON_').lower()}`" for n in spec.also)
    return f"| {name} | {key} | {_default(f, spec)} | {spec.help} |"


def render() -> str:
    """The reference's Markdown text."""
    lines = [INTRO, "| variable | `baton.toml` key | default | meaning |", "|---|---|---|---|"]
    for f in shown_order():
        spec = spec_of(f)
        if spec is not None:
            lines.append(_row(f, spec))
    lines += [
        "",
        "## Kafka client options",
        "",
        "`BATON_KAFKA_CLIENT_<OPTION>` (or `[kafka.client]` in the file) passes an option on to",
        "the Kafka clients baton creates, the producers, the consumers or both; what baton sets",
        "itself (servers, login, acks, idempotence, group, offsets) is not among them.",
        "",
        "| option | type | clients |",
        "|---|---|---|",
    ]
    for option, (kind, clients) in CLIENT_OPTIONS.items():
        lines.append(f"| `{option}` | {kind.__name__} | {', '.join(clients)} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    PATH.write_text(render(), "utf-8")
    print(f"wrote {PATH}")
