"""An order source of one's own: by dotted path in the settings, or handed to create_app; the
shipped example (examples/csv_orders.py) through the pipeline."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from baton_kafka.agents.orders import SQLiteOrderStore, StoreUnavailable
from baton_kafka.agents.rules.offline import OfflineLLM
from baton_kafka.streams.cli.main import main
from baton_kafka.streams.runtime.faust_app.app import create_app
from baton_kafka.streams.runtime.faust_app.orders import build_source, build_store
from baton_kafka.streams.settings import Settings, SettingsError
from examples.csv_orders import CsvOrderSource
from tests.fixtures.data import days_ago, ticket
from tests.fixtures.pipelines import in_memory

EXAMPLE = "examples.csv_orders:source"


def export(path: Path, *rows: str, header: str | None = None) -> Path:
    head = header or "Order No,Customer,Item,Status,Total,Currency,Placed,Delivered,Carrier"
    path.write_text("\n".join([head, *rows]) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def csv_export(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    placed, delivered = days_ago(20).isoformat(), days_ago(17).isoformat()
    path = export(
        tmp_path / "orders.csv",
        f"K-77,C1,Midea Electric Kettle 1.7L,delivered,39.90,USD,{placed},{delivered},UPS",
        f"K-78,C1,DualSense Wireless Controller,delivered,69,USD,{days_ago(40).isoformat()},,",
        "bad line,C1,,delivered,-3,USD,yesterday,,",
        f"K-90,C2,Espresso Machine,paid,120,EUR,{placed},,",
    )
    monkeypatch.setenv("SHOP_ORDERS_CSV", str(path))
    return path


async def test_the_example_source_by_dotted_path_answers_through_the_pipeline(
    csv_export: Path,
) -> None:
    source = build_source(Settings(orders_source=EXAMPLE))
    assert isinstance(source, CsvOrderSource)
    assert [o.order_id for o in await source.for_customer("C1")] == ["K-77", "K-78"]
    pipeline = in_memory(source)
    (reply,) = await pipeline.send(ticket("T-1", "My kettle is leaking, I want a refund."))
    assert reply.status == "answered" and reply.order_id == "K-77" and "K-77" in reply.reply
    # The export changes: the next ticket reads the new file.
    export(csv_export, f"K-80,C1,Sony WH-1000XM5 Headphones,shipped,349,USD,{days_ago(1)},,")
    (later,) = await pipeline.send(ticket("T-2", "Where are my headphones?", "S2"))
    assert later.order_id == "K-80"
    os.remove(csv_export)
    (*_, gone) = await pipeline.send(ticket("T-3", "My kettle is leaking!", "S3"))
    assert gone.status == "degraded"
    assert [d.reason for d in pipeline.dead_letters] == ["order_store_unavailable"]
    await source.close()


def test_the_example_missing_a_column_stops_the_worker_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = export(
        tmp_path / "o.csv",
        "K-1,C1,Kettle,paid,1,x",
        header="Order No,Customer,Item,Status,Total,When",
    )
    monkeypatch.setenv("SHOP_ORDERS_CSV", str(path))
    monkeypatch.setenv("BATON_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("BATON_ORDERS_SOURCE", EXAMPLE)
    assert main(["worker"]) == 2
    err = capsys.readouterr().err
    assert err == f"baton: {path} has no column Placed\n"


def not_a_source(settings: Settings) -> object:
    return {"orders": []}


def failing_factory(settings: Settings) -> object:
    raise KeyError("SHOP_API_TOKEN")


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("csv_orders.source", "is not module:factory"),
        ("no_such_module_here:source", "cannot import 'no_such_module_here'"),
        ("examples.csv_orders:nothing", "'examples.csv_orders' has no callable 'nothing'"),
        (f"{__name__}:not_a_source", "returned dict, which lacks for_customer, get or close"),
        (f"{__name__}:failing_factory", "failing_factory failed: 'SHOP_API_TOKEN'"),
    ],
)
def test_a_bad_dotted_path_is_one_line(path: str, message: str) -> None:
    with pytest.raises(SettingsError) as raised:
        build_source(Settings(orders_source=path))
    text = str(raised.value)
    assert text.startswith("BATON_ORDERS_SOURCE: ") and message in text and "\n" not in text


def test_the_example_without_its_variable_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SHOP_ORDERS_CSV", raising=False)
    with pytest.raises(SettingsError, match="set SHOP_ORDERS_CSV"):
        build_source(Settings(orders_source=EXAMPLE))


def test_orders_of_ones_own_are_not_imported_into(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = tmp_path / "orders.jsonl"
    lines.write_text("")
    monkeypatch.setenv("BATON_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("BATON_ORDERS_SOURCE", EXAMPLE)
    assert main(["orders", "import", str(lines)]) == 2
    assert "baton does not write them" in capsys.readouterr().err
    with pytest.raises(SettingsError, match="BATON_ORDERS_MAP is set"):
        build_store(Settings(data_dir=tmp_path, orders_map='{"table": "t"}'))


async def test_create_app_takes_an_order_source_or_builds_and_closes_its_own(
    tmp_path: Path, csv_export: Path
) -> None:
    settings = Settings(data_dir=tmp_path, namespace="u", orders_source=EXAMPLE)
    given = SQLiteOrderStore(tmp_path / "given.sqlite3")
    runtime = create_app(settings, llm=OfflineLLM(), orders=given)
    assert runtime.pipeline.store is given
    await runtime.app.on_before_shutdown.send()
    assert await given.count() == 0  # the caller's source is the caller's to close
    await given.close()

    built = create_app(settings, llm=OfflineLLM())
    own = built.pipeline.store
    assert isinstance(own, CsvOrderSource) and len(await own.for_customer("C1")) == 2
    await built.app.on_before_shutdown.send()
    with pytest.raises(StoreUnavailable, match="closed"):
        await own.for_customer("C1")


def test_a_shops_rest_api_is_never_imported_into(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="does not write it"):
        build_store(Settings(data_dir=tmp_path, orders_dsn="https://shop.example/api"))
