"""Where a worker keeps its tables: in memory, or in RocksDB in a directory no other worker uses."""

from __future__ import annotations

import fcntl
import importlib.util
import os
from typing import IO

from baton_kafka.streams.settings import Settings, SettingsError

# Faust 0.15.3's RocksDB store: with the rocksdict package installed it uses it (rocksdict
# has wheels; python-rocksdb needs a compiler and the RocksDB headers).
STORE_URLS = {"memory": "memory://", "rocksdb": "rocksdb://"}
LOCK_FILE = ".worker.lock"


def store_settings(settings: Settings) -> dict[str, str]:
    """The Faust ``store`` (and for RocksDB its ``tabledir``) of ``settings``."""
    conf = {"store": STORE_URLS[settings.store]}
    if settings.store == "rocksdb":
        conf["tabledir"] = str(settings.table_dir.resolve())
    return conf


def check_store(settings: Settings) -> None:
    """Refuse ``BATON_STORE=rocksdb`` in one line when its package is missing."""
    if settings.store == "rocksdb" and importlib.util.find_spec("rocksdict") is None:
        raise SettingsError(
            "BATON_STORE=rocksdb needs the rocksdict package: pip install 'baton-kafka[rocksdb]'"
        )


def lock_table_dir(settings: Settings) -> IO[str] | None:
    """Create the RocksDB directory and hold it for this process; None for the memory store.

    Two workers in one directory would open each other's partitions: the lock refuses the
    second one at start, in one line. The lock goes with the process (also on ``kill -9``),
    so keep the returned file open as long as the worker runs.
    """
    if settings.store != "rocksdb":
        return None
    directory = settings.table_dir
    try:
        directory.mkdir(parents=True, exist_ok=True)
        lock = (directory / LOCK_FILE).open("a+")
    except OSError as exc:
        raise SettingsError(
            f"BATON_STORE_DIR {directory} cannot be used: {exc.strerror or exc}"
        ) from None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.seek(0)
        holder = lock.read().strip() or "?"
        lock.close()
        raise SettingsError(
            f"BATON_STORE_DIR {directory} is in use by another worker (pid {holder}): "
            "give each worker a directory of its own"
        ) from None
    lock.seek(0)
    lock.truncate()
    lock.write(f"{os.getpid()}\n")
    lock.flush()
    return lock
