"""BATON_STORE: the Faust store a worker's tables use, its directory, its lock, its counter."""

from __future__ import annotations

import importlib.util
import os
import socket
from pathlib import Path
from types import SimpleNamespace

import faust
import pytest

from baton_kafka.streams.cli.main import main
from baton_kafka.streams.observe.metrics import PrometheusObserver
from baton_kafka.streams.runtime.faust_app.app import faust_settings
from baton_kafka.streams.runtime.faust_app.faust_io import FaustState
from baton_kafka.streams.runtime.faust_app.table_store import check_store, lock_table_dir
from baton_kafka.streams.settings import Settings, SettingsError, load


def test_the_store_is_memory_unless_rocksdb_is_chosen_and_anything_else_is_one_line() -> None:
    assert load({}).store == "memory"
    assert load({"BATON_STORE": "rocksdb"}).store == "rocksdb"
    for bad in ("disk", "RocksDB", "rocksdict"):
        with pytest.raises(SettingsError, match="BATON_STORE must be 'memory' or 'rocksdb'") as e:
            load({"BATON_STORE": bad})
        assert "\n" not in str(e.value)


def test_a_bad_store_stops_the_worker_command_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BATON_STORE", "disk")
    assert main(["worker"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert err == ["baton: BATON_STORE must be 'memory' or 'rocksdb', got 'disk'"]


def test_each_worker_gets_a_directory_of_its_own_unless_one_is_given(tmp_path: Path) -> None:
    s = load({"BATON_STORE": "rocksdb", "BATON_DATA_DIR": str(tmp_path), "BATON_WEB_PORT": "7001"})
    host = socket.gethostname()
    assert s.table_dir == tmp_path / "store" / "baton" / f"{host}-7001"
    # Two workers of one host need two web ports, so they get two directories.
    assert s.with_(web_port=7002).table_dir != s.table_dir
    assert s.with_(namespace="eu").table_dir.parent.name == "baton-eu"
    given = load({"BATON_STORE": "rocksdb", "BATON_STORE_DIR": str(tmp_path / "w1")})
    assert given.table_dir == tmp_path / "w1"
    assert load(given.to_env()) == given and load(s.to_env()) == s


def test_faust_gets_the_store_url_and_for_rocksdb_its_directory(tmp_path: Path) -> None:
    memory = faust_settings(Settings(data_dir=tmp_path))
    assert memory["store"] == "memory://" and "tabledir" not in memory
    rocksdb = faust_settings(Settings(store="rocksdb", store_dir=tmp_path / "w1"))
    assert rocksdb["store"] == "rocksdb://"
    assert rocksdb["tabledir"] == str((tmp_path / "w1").resolve())


def test_rocksdb_without_its_package_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    check_store(Settings(store="rocksdb"))  # installed with the dev extra
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "rocksdict" else real(name)
    )
    check_store(Settings())  # the memory store needs nothing
    with pytest.raises(SettingsError, match=r"pip install 'baton-kafka\[rocksdb\]'") as e:
        check_store(Settings(store="rocksdb"))
    assert "\n" not in str(e.value)


def test_a_store_directory_belongs_to_one_worker_at_a_time(tmp_path: Path) -> None:
    s = Settings(store="rocksdb", store_dir=tmp_path / "w1")
    assert lock_table_dir(Settings(data_dir=tmp_path / "m")) is None
    assert not (tmp_path / "m").exists()
    held = lock_table_dir(s)
    assert held is not None
    with pytest.raises(SettingsError, match=f"in use by another worker \\(pid {os.getpid()}\\)"):
        lock_table_dir(s)
    held.close()  # as when the worker exits
    lock_table_dir(s).close()  # type: ignore[union-attr]


def test_a_store_directory_that_cannot_be_made_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(SettingsError, match=r"BATON_STORE_DIR .* cannot be used") as e:
        lock_table_dir(Settings(store="rocksdb", store_dir=tmp_path / "file" / "w1"))
    assert "\n" not in str(e.value)


def _app(settings: Settings) -> faust.App:
    return faust.App(
        "t-store", **{**faust_settings(settings), "broker": "kafka://127.0.0.1:1", "web_port": 1}
    )


def test_rocksdb_tables_keep_their_values_and_changelog_offset_in_the_directory(
    tmp_path: Path,
) -> None:
    from faust.stores.rocksdb import Store
    from faust.types import TP

    settings = Settings(store="rocksdb", store_dir=tmp_path / "w1", partitions=4)
    tp = TP("baton-batons-changelog", 2)
    first = FaustState(_app(settings), settings.partitions).batons.table.data
    assert isinstance(first, Store) and first.use_rocksdict
    event = SimpleNamespace(
        message=SimpleNamespace(tp=tp, partition=2, offset=41, key=b"S1", value=b"{}")
    )
    first.apply_changelog_batch([event], to_key=bytes, to_value=bytes)  # type: ignore[list-item]
    assert (tmp_path / "w1" / "batons-2.db").is_dir()
    first._dbs.clear()  # closes the files, as the worker's stop does

    again = FaustState(_app(settings), settings.partitions).batons.table.data
    assert again.persisted_offset(tp) == 41
    assert again._db_for_partition(2).get(b"S1") == b"{}"
    # The memory store keeps nothing: recovery reads the changelog from its start.
    memory = FaustState(_app(Settings(data_dir=tmp_path)), 4).batons.table.data
    assert memory.persisted_offset(tp) is None


async def test_changelog_records_read_into_each_table_are_counted(tmp_path: Path) -> None:
    metrics = PrometheusObserver()
    state = FaustState(_app(Settings(data_dir=tmp_path)), 4, on_read=metrics.changelog_read)
    event = SimpleNamespace()
    await state.batons.table.on_changelog_event(event)  # type: ignore[arg-type]
    await state.batons.table.on_changelog_event(event)  # type: ignore[arg-type]
    await state.customers.table.on_changelog_event(event)  # type: ignore[arg-type]
    read = metrics.values()["baton_changelog_records_read_total"]
    assert read == {("batons",): 2, ("customers",): 1}
    # Without a listener the tables take no hook at all.
    assert FaustState(_app(Settings(data_dir=tmp_path)), 4).batons.table._on_changelog_event is None
