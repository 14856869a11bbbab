"""Order store DSNs never show their password: printed, logged, in errors or dead letters."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import orjson
import pytest

from baton_kafka.agents.dsn import mask_dsn, passwords, scrub
from baton_kafka.agents.orders import (
    PostgresOrderStore,
    SQLiteOrderStore,
    StoreUnavailable,
    open_store,
)
from baton_kafka.streams.cli.main import main
from baton_kafka.streams.observe.logs import JsonFormatter, logging_config
from baton_kafka.streams.observe.redaction import RedactFilter
from baton_kafka.streams.settings import Settings, SettingsError

PASSWORD = "pg-Secret-0123456789"
DSN = f"postgresql://baton:{PASSWORD}@db:5432/orders"
SHOWN = "postgresql://baton:***@db:5432/orders"


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("postgresql://u:p%40ss@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u:p@ss@h:5432/db?x=1", "postgresql://u:***@h:5432/db?x=1"),
        ("postgresql://h/db?user=u&password=pw&x=1", "postgresql://h/db?user=u&password=***&x=1"),
        ("host=h password=pw dbname=d", "host=h password=*** dbname=d"),
        ("host=h password = 'a b\\' c' dbname=d", "host=h password = *** dbname=d"),
        ("PGPASSWORD=hunter22 psql", "PGPASSWORD=*** psql"),
        ("to a://u:p@h/x and b://v:q@k/y", "to a://u:***@h/x and b://v:***@k/y"),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        ("sqlite:///data/orders.sqlite3", "sqlite:///data/orders.sqlite3"),
        ("kafka://k1:9092;k2:9092", "kafka://k1:9092;k2:9092"),
        ("http://h:8080/a@b", "http://h:8080/a@b"),
    ],
)
def test_every_dsn_in_a_text_is_shown_without_its_password(text: str, masked: str) -> None:
    assert mask_dsn(text) == masked


def test_the_passwords_of_a_dsn_as_written_and_decoded() -> None:
    assert passwords("postgresql://u:p%40ss@h/db") == {"p%40ss", "p@ss"}
    assert passwords("host=h password='a b' user=u") == {"a b"}
    assert passwords("postgresql://u@h/db") == set()
    # An error that quotes only the password, not the DSN, is scrubbed too.
    assert scrub(f'bad token: "{PASSWORD}"', DSN) == 'bad token: "***"'


def test_orders_import_prints_the_dsn_without_its_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import baton_kafka.streams.runtime.faust_app.orders as runtime_orders

    lines = tmp_path / "orders.jsonl"
    lines.write_text(
        '{"order_id": "O-1", "customer_id": "C1", "product_name": "Kettle", "status": "paid",'
        ' "amount": 1, "ordered_at": "2026-11-01T00:00:00Z"}\n'
    )
    # A SQLite store behind a PostgreSQL DSN: what is printed is the DSN.
    monkeypatch.setattr(
        runtime_orders, "build_store", lambda s: SQLiteOrderStore(tmp_path / "o.db")
    )
    monkeypatch.setenv("BATON_ORDERS_DSN", DSN)
    assert main(["orders", "import", str(lines)]) == 0
    out = capsys.readouterr()
    assert f"imported 1 order(s) into {SHOWN}" in out.out
    assert PASSWORD not in out.out + out.err


def test_an_unsupported_dsn_is_one_line_without_its_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = tmp_path / "orders.jsonl"
    lines.write_text("")
    monkeypatch.setenv("BATON_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("BATON_ORDERS_DSN", f"mysql://baton:{PASSWORD}@db/orders")
    assert main(["orders", "import", str(lines)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "BATON_ORDERS_DSN" in err and "mysql://baton:***@db/orders" in err
    assert PASSWORD not in err
    with pytest.raises(ValueError, match=r"mysql://u:\*\*\*@h") as raised:
        open_store(f"mysql://u:{PASSWORD}@h/db")
    assert PASSWORD not in str(raised.value)

    from baton_kafka.streams.runtime.faust_app.orders import build_store

    with pytest.raises(SettingsError, match="BATON_ORDERS_DSN"):
        build_store(Settings(data_dir=tmp_path, orders_dsn=f"redis://u:{PASSWORD}@h"))


async def test_a_postgres_error_quoting_the_password_is_scrubbed() -> None:
    pytest.importorskip("psycopg")
    # libpq rejects the bad percent-encoding and quotes the password in its message.
    secret = "s3c%zzret-password"
    store = PostgresOrderStore(f"postgresql://baton:{secret}@127.0.0.1:1/orders")
    with pytest.raises(StoreUnavailable) as raised:
        await store.count()
    await store.close()
    message = str(raised.value)
    assert "percent-encoded" in message and secret not in message and "***" in message
    assert raised.value.__suppress_context__


def test_worker_logs_never_show_the_dsn_password() -> None:
    # The worker's own log filter, as its logging configuration builds it.
    redact = logging_config(Settings(orders_dsn=DSN))["filters"]["redact"]
    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RedactFilter(redact["secrets"]))
    log = logging.getLogger("baton.test-dsn")
    log.handlers[:], log.propagate = [handler], False
    try:
        log.warning("connecting to %s", DSN)
        log.warning("server said: password %s is wrong", PASSWORD)
        log.warning("other store: host=h password=%s", "another-pass")
    finally:
        log.handlers.clear()
        log.propagate = True
    messages = [orjson.loads(line)["msg"] for line in buf.getvalue().splitlines()]
    assert messages == [
        f"connecting to {SHOWN}",
        "server said: password [redacted] is wrong",
        "other store: host=h password=***",
    ]
