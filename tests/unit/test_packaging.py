"""The built wheel installs one import name, with every data file the packages read."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.fixtures.paths import ROOT


def test_the_wheel_has_one_import_name_and_its_data_files(tmp_path: Path) -> None:
    # Built from a copy: an in-tree build would leave build/ in the checkout.
    source = tmp_path / "source"
    # Only what the build reads: the tests' artifacts (broker data, logs) would cost a minute.
    skip = shutil.ignore_patterns(
        ".git", ".venv", ".baton", "build", "*cache*", "*.egg-info", "tests", "docs", "deploy"
    )
    shutil.copytree(ROOT, source, symlinks=True, ignore=skip)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(source)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("baton_kafka-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = next(n for n in names if n.endswith(".dist-info/top_level.txt"))
        assert archive.read(info).decode().split() == ["baton_kafka"]
        entry = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        assert "baton = baton_kafka.streams.cli.main:main" in archive.read(entry).decode()
    tops = {n.split("/")[0] for n in names if ".dist-info/" not in n}
    assert tops == {"baton_kafka"}
    for data in (
        "baton_kafka/schemas/json/reply.schema.json",
        "baton_kafka/agents/policy/default.toml",
        "baton_kafka/agents/fixed_texts.toml",
        "baton_kafka/streams/kafka/pom.xml",
        "baton_kafka/streams/demo_data/tickets.jsonl",
        "baton_kafka/streams/observe/static/dashboard.js",
        "baton_kafka/py.typed",
    ):
        assert data in names, data
