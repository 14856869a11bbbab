"""Running Kafka's JVMs: the ``java`` to use, its class-data archive, stopping its process group."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from baton_kafka.streams.kafka.jars import KafkaUnavailable, cache_root

MIN_JAVA = 17
INSTALL_JAVA = "apt-get install openjdk-17-jre-headless"


@dataclass(frozen=True)
class Java:
    """A Java runtime: its executable, major version and ``java -version`` text."""

    path: str
    major: int
    version: str


def find_java(java: str | None = None) -> Java:
    """The ``java`` to run Kafka with (argument, ``$JAVA_HOME`` or ``PATH``); must be 17+."""
    java_home = os.environ.get("JAVA_HOME")
    candidate = java or (str(Path(java_home) / "bin" / "java") if java_home else "java")
    path = shutil.which(candidate)
    if path is None:
        raise KafkaUnavailable(
            f"java not found ({candidate}): install Java {MIN_JAVA}+, e.g. {INSTALL_JAVA}"
        )
    out = subprocess.run([path, "-version"], capture_output=True, text=True, timeout=60)
    text = (out.stderr + out.stdout).strip()
    major = java_major(text)
    if major is None or major < MIN_JAVA:
        raise KafkaUnavailable(
            f"{path} is Java {major or '?'} but Kafka 4 needs {MIN_JAVA}+, e.g. {INSTALL_JAVA}"
        )
    return Java(path=path, major=major, version=text)


def java_major(version_text: str) -> int | None:
    """The major version in ``java -version`` output (``1.8.0`` is 8, ``17.0.15`` is 17)."""
    found = re.search(r'version "(\d+)(?:\.(\d+))?', version_text)
    if not found:
        return None
    first = int(found.group(1))
    return int(found.group(2) or 0) if first == 1 else first


@dataclass
class ClassArchive:
    """JVM flags that share one program's loaded classes between runs (AppCDS).

    The first run writes the archive when its JVM exits; later runs map it, which cut the
    CPU a broker start costs from about 10 s to 6 s on a loaded two-core machine.
    """

    path: Path
    pending: Path | None = None

    @classmethod
    def of(cls, java: Java, libs: Path, program: str) -> ClassArchive:
        """The archive of ``program`` run by ``java`` from ``libs`` (any change: a new one)."""
        key = hashlib.sha256(f"{java.path}\n{java.version}\n{libs.resolve()}".encode())
        return cls(cache_root() / "cds" / f"{program}-{key.hexdigest()[:16]}.jsa")

    def flags(self, record: bool) -> list[str]:
        """Use the archive if there is one, else (when ``record``) write it at exit."""
        if self.path.exists():
            return [f"-XX:SharedArchiveFile={self.path}"]
        if not record:
            return []
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Written under a name of its own and published once the JVM exited cleanly, so no
        # other JVM maps a half-written archive.
        self.pending = self.path.with_name(f"{self.path.name}.{os.getpid()}-{id(self)}.tmp")
        # The dump warns about every old-format class it skips: hundreds of useless lines.
        return [f"-XX:ArchiveClassesAtExit={self.pending}", "-Xlog:cds=off,cds+dynamic=off"]

    def publish(self, exit_code: int | None) -> None:
        """Move the archive written by a JVM that exited with ``exit_code`` into place."""
        pending, self.pending = self.pending, None
        if pending is None:
            return
        # 143: the JVM's own exit after SIGTERM, shutdown hooks (and the archive dump) run.
        if exit_code in (0, 143) and pending.exists() and pending.stat().st_size > 0:
            with contextlib.suppress(OSError):
                os.replace(pending, self.path)
        pending.unlink(missing_ok=True)


def signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)
