"""The Apache Kafka server's jars: the release ``pom.xml`` pins, fetched with Maven and cached."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from baton_kafka.streams.kafka.embedded import BrokerError

POM = Path(__file__).with_name("pom.xml")


def pinned_version(pom: Path = POM) -> str:
    """The Kafka release that ``pom.xml`` pins (its one place); another 4.x can be asked for."""
    found = re.search(r"<kafka.version>([^<]+)</kafka.version>", pom.read_text())
    if found is None:
        raise RuntimeError(f"{pom} pins no kafka.version")
    return found[1]


KAFKA_VERSION = pinned_version()


class ApacheKafkaError(BrokerError):
    """The Kafka cluster could not be prepared, started or reached."""


class KafkaUnavailable(ApacheKafkaError):
    """A tool needed to run Kafka (java, mvn) is missing or too old."""


def cache_root() -> Path:
    """``~/.cache/baton`` (or under ``$XDG_CACHE_HOME``): jars and class archives live there."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "baton"


def default_libs(version: str) -> Path:
    """Where the jars of Kafka ``version`` are kept between runs."""
    return cache_root() / f"kafka-{version}" / "libs"


def resolve_jars(
    version: str = KAFKA_VERSION,
    libs: Path | None = None,
    say: Callable[[str], None] | None = None,
) -> Path:
    """The folder of Kafka ``version``'s jars, fetched with Maven into ``libs`` on first use.

    A given ``libs`` that already holds a ``kafka_2.13`` jar (an unpacked Kafka release's
    ``libs/``, say) is used as it is.
    """
    if libs is not None and any(libs.glob("kafka_2.13-*.jar")):
        return libs
    libs = libs or default_libs(version)
    if (libs / ".complete").exists():
        return libs
    mvn = shutil.which("mvn")
    if mvn is None:
        raise KafkaUnavailable(
            f"mvn not found: install Maven 3.6+ (e.g. apt-get install maven) to fetch the "
            f"Kafka {version} jars into {libs}"
        )
    say = say or _say
    libs.parent.mkdir(parents=True, exist_ok=True)
    # Gathered beside the target and renamed into place, so an interrupted or concurrent
    # fetch never leaves a half-filled libs folder that a later run would trust.
    staging = Path(tempfile.mkdtemp(prefix=".libs-", dir=libs.parent))
    say(f"baton: fetching the Apache Kafka {version} jars with Maven into {libs} (first use)")
    started = time.monotonic()
    cmd = [
        mvn,
        "-B",
        "-f",
        str(POM),
        f"-Dkafka.version={version}",
        "dependency:copy-dependencies",
        f"-DoutputDirectory={staging}",
    ]
    tail: list[str] = []
    try:
        with subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        ) as proc:
            assert proc.stdout is not None
            for line in proc.stdout:
                line = line.rstrip()
                tail = [*tail[-30:], line]
                # Maven's "Downloaded <url> (<size> at <rate>)" lines are the progress; its
                # build chatter and the matching "Downloading" lines are not worth showing.
                text = line.removeprefix("[INFO] ")
                if text.startswith("Downloaded") or line.startswith("[ERROR]"):
                    say(f"  {text}")
        if proc.returncode != 0:
            raise ApacheKafkaError(
                f"mvn could not fetch Kafka {version} (exit {proc.returncode}):\n" + "\n".join(tail)
            )
        (staging / ".complete").write_text(f"{version}\n")
        try:
            staging.rename(libs)
        except OSError:
            if not (libs / ".complete").exists():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    jars = list(libs.glob("*.jar"))
    size = sum(j.stat().st_size for j in jars) / 1e6
    say(f"baton: {len(jars)} jars, {size:.0f} MB, fetched in {time.monotonic() - started:.0f}s")
    return libs


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
