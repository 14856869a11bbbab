"""Language packs: shipped and a shop's own words merge key by key."""

from pathlib import Path

import pytest

from baton_kafka.agents import packs


@pytest.fixture(autouse=True)
def _clean():
    packs.reset()
    yield
    packs.reset()


def test_a_shops_pack_extends_lists_and_replaces_scalars(tmp_path: Path) -> None:
    (tmp_path / "de").mkdir()
    (tmp_path / "de" / "probe.toml").write_text('words = ["a", "b"]\nname = "x"\n', "utf-8")
    packs.extend(tmp_path)
    assert packs.pack("probe", "de-AT") == {"words": ["a", "b"], "name": "x"}
    more = tmp_path / "more"
    (more / "de").mkdir(parents=True)
    (more / "de" / "probe.toml").write_text('words = ["b", "c"]\nname = "y"\n', "utf-8")
    before = packs.version()
    packs.extend(more)
    assert packs.pack("probe", "de") == {"words": ["a", "b", "c"], "name": "y"}
    assert packs.version() != before
    assert packs.pack("probe", "sv") == {}


def test_a_broken_pack_is_one_line_naming_its_file(tmp_path: Path) -> None:
    (tmp_path / "fr").mkdir()
    (tmp_path / "fr" / "probe.toml").write_text("words = [", "utf-8")
    packs.extend(tmp_path)
    with pytest.raises(packs.PackError, match=r"probe\.toml"):
        packs.pack("probe", "fr")
