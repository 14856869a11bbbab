"""The language-neutral contract: committed JSON Schemas and AsyncAPI match the models."""

from __future__ import annotations

from pathlib import Path

import orjson

from baton_kafka.schemas.contracts import FOLDER, RECORDS, TOPICS, main, rendered, stale
from baton_kafka.schemas.topics import ALL


def test_the_committed_files_match_the_models() -> None:
    assert stale() == [], "run: python -m baton_kafka.schemas.contracts"


def test_a_drifted_file_is_reported(tmp_path: Path) -> None:
    for name, data in rendered().items():
        (tmp_path / name).write_bytes(data)
    assert stale(tmp_path) == []
    (tmp_path / "reply.schema.json").write_bytes(b"{}\n")
    (tmp_path / "ticket.schema.json").unlink()
    assert sorted(stale(tmp_path)) == ["reply.schema.json", "ticket.schema.json"]


def test_asyncapi_names_every_topic_with_an_existing_schema() -> None:
    doc = orjson.loads((FOLDER / "asyncapi.json").read_bytes())
    assert doc["asyncapi"].startswith("3.")
    addresses = {c["address"] for c in doc["channels"].values()}
    assert addresses == set(ALL) == set(TOPICS)
    for message in doc["components"]["messages"].values():
        ref = message["payload"]["$ref"]
        assert (FOLDER / ref.removeprefix("./")).exists(), ref
        assert ref.removeprefix("./").removesuffix(".schema.json") in RECORDS
    for op in doc["operations"].values():
        assert op["channel"]["$ref"].removeprefix("#/channels/") in doc["channels"]


def test_the_check_command_passes_on_the_committed_files() -> None:
    assert main(["contracts", "--check"]) == 0
