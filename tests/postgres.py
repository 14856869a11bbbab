"""A PostgreSQL server for tests: ``BATON_TEST_POSTGRES_DSN``, or a throwaway one started here."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from streams.kafka.embedded import free_port, port_open

# Read at import: the suite's autouse fixture clears BATON_* variables before each test.
GIVEN_DSN = os.environ.get("BATON_TEST_POSTGRES_DSN", "")
DATABASE = "baton_test"
INSTALL_HINT = "apt-get install -y postgresql"


def _binaries() -> Path:
    """The newest installed PostgreSQL's bin directory; fails the test run when there is none."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    pytest.fail(
        "PostgreSQL is needed for the order-store tests: set BATON_TEST_POSTGRES_DSN to a "
        f"throwaway database, or install the server binaries ({INSTALL_HINT})",
        pytrace=False,
    )


def _as_owner(owner: str | None, argv: list[str]) -> list[str]:
    # PostgreSQL refuses to run as root: run its tools as the unprivileged owner instead.
    return ["runuser", "-u", owner, "--", *argv] if owner else argv


def _owner() -> str | None:
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    pytest.fail("running as root and found no unprivileged user to run PostgreSQL as")


def _run(argv: list[str], what: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        pytest.fail(f"{what} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[str]:
    """A DSN of an empty database (``BATON_TEST_POSTGRES_DSN``'s, or a server started here)."""
    if GIVEN_DSN:
        yield GIVEN_DSN
        return
    bin_dir = _binaries()
    owner = _owner()
    root = Path(tempfile.mkdtemp(prefix="baton-pg-"))
    data, log = root / "data", root / "server.log"
    port = free_port()
    if owner:
        entry = pwd.getpwnam(owner)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    _run(
        _as_owner(
            owner,
            [str(bin_dir / "initdb"), "-D", str(data), "-U", "baton", "-A", "trust", "-E", "UTF8"],
        ),
        "initdb",
    )
    options = f"-p {port} -c listen_addresses=127.0.0.1 -k {root} -c fsync=off"
    pg_ctl = [str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log)]
    _run(_as_owner(owner, [*pg_ctl, "-o", options, "-w", "-t", "60", "start"]), "pg_ctl start")
    try:
        if not port_open("127.0.0.1", port):
            pytest.fail(f"PostgreSQL did not listen on port {port}: see {log}")
        createdb = [str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "baton"]
        _run(_as_owner(owner, [*createdb, DATABASE]), "createdb")
        yield f"postgresql://baton@127.0.0.1:{port}/{DATABASE}"
    finally:
        subprocess.run(
            _as_owner(owner, [*pg_ctl, "-m", "immediate", "-w", "stop"]),
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(root, ignore_errors=True)
