"""The suite's own tree walk: outside the run artifacts, and not failed by a folder that goes."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.fixtures.paths import ARTIFACTS, ROOT, tree


def test_the_walk_never_enters_the_run_artifacts() -> None:
    planted = ARTIFACTS / "walk-check" / "deep"
    planted.mkdir(parents=True, exist_ok=True)
    (planted / "walk_check_marker.py").write_text("")
    try:
        assert tree(ROOT / "tests", "walk_check_marker.py") == []
        assert ROOT / "tests" / "unit" / "test_fixture_paths.py" in tree(ROOT / "tests", "*.py")
    finally:
        shutil.rmtree(ARTIFACTS / "walk-check")


def test_a_folder_gone_while_walking_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "a.py").write_text("")
    (tmp_path / "gone").mkdir()
    (tmp_path / "gone" / "b.py").write_text("")
    listing = os.scandir

    def scandir(path: object) -> object:
        # As a broker deleting its segment folder between the listing and the read.
        if Path(os.fspath(path)).name == "gone":  # type: ignore[arg-type]
            raise FileNotFoundError(2, "No such file or directory", os.fspath(path))  # type: ignore[arg-type]
        return listing(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)
    assert tree(tmp_path, "*.py") == [tmp_path / "kept" / "a.py"]
