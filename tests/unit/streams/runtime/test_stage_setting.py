"""``BATON_STAGES``: stages of the shop's own named in the settings, loaded at start into the
chain the worker, its child processes, ``baton trace``, ``baton check`` and ``baton forget`` use;
each way it can be wrong is one line."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from baton_kafka.agents.rules.offline import OfflineLLM
from baton_kafka.streams.admin.forget import retention
from baton_kafka.streams.cli.main import main
from baton_kafka.streams.runtime import Chain
from baton_kafka.streams.runtime.faust_app.app import create_app
from baton_kafka.streams.runtime.faust_app.spawn import child_env, spawn_worker
from baton_kafka.streams.runtime.own_stages import chain_for, configured_chain
from baton_kafka.streams.settings import Settings, SettingsError, load
from examples.stages.priority import PRIORITY

EXAMPLE = "examples.stages.priority:PRIORITY"

# A module of the shop's own: a stage declared as a value, one built by a factory from the
# settings, and what is not a stage.
SHOP = """
from pydantic import BaseModel

from examples.stages.priority import Priority
from baton_kafka.schemas import Ticket
from baton_kafka.streams.runtime import stage


class Length(BaseModel):
    words: int


async def count(ticket: Ticket, given: Priority) -> Length:
    return Length(words=len(ticket.text.split()))


def length(settings):
    return stage(
        "length",
        after="priority",
        input=Priority,
        output=Length,
        agent=count,
        topic=f"{settings.namespace or 'shop'}.length",
    )


def broken(settings):
    raise KeyError("SHOP_TOKEN")


def not_a_stage(settings):
    return 42


async def coroutine(settings):
    return None


LATE = stage("late", after="nowhere", input=Priority, output=Length, agent=count)
AGAIN = stage("priority", after="lookup", input=Ticket, output=Length, agent=count)
UNPLACED = stage("unplaced", after="", input=Ticket, output=Length, agent=count)
COUNT = 3
"""


@pytest.fixture
def shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The name of a fresh importable module holding ``SHOP``."""
    name = f"shop_stages_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(SHOP, "utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def test_the_setting_reads_a_list_from_the_environment_or_baton_toml(tmp_path: Path) -> None:
    assert load({}).stages == ()
    assert configured_chain(load({})) is Chain.builtin()
    env = load({"BATON_STAGES": f" {EXAMPLE} , pkg.mod:OTHER "})
    assert env.stages == (EXAMPLE, "pkg.mod:OTHER")
    toml = tmp_path / "baton.toml"
    toml.write_text(f'stages = ["{EXAMPLE}", "pkg.mod:OTHER"]\n', "utf-8")
    assert load({}, config=toml).stages == env.stages


def test_a_child_process_gets_the_stages() -> None:
    settings = load({"BATON_STAGES": EXAMPLE})
    env = child_env(settings)
    assert env["BATON_STAGES"] == EXAMPLE
    assert load(env).stages == (EXAMPLE,)
    assert "BATON_STAGES" not in child_env(load({}))


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("priority", "BATON_STAGES: 'priority' is not module:attribute"),
        ("a.b:c.d", "BATON_STAGES: 'a.b:c.d' is not module:attribute"),
        ("a:B,a:B", "BATON_STAGES: a:B is given twice"),
        ("[1, 2]", "BATON_STAGES must be a list of module:attribute strings"),
    ],
)
def test_a_reference_of_the_wrong_form_is_one_line_when_settings_load(
    raw: str, message: str
) -> None:
    with pytest.raises(SettingsError) as raised:
        load({"BATON_STAGES": raw})
    assert str(raised.value).startswith(message) and "\n" not in str(raised.value)


def test_the_example_and_a_factory_go_where_they_say(shop: str) -> None:
    settings = load({"BATON_STAGES": f"{EXAMPLE},{shop}:length", "BATON_NAMESPACE": "u"})
    chain = configured_chain(settings)
    assert chain.names == ("understand", "priority", "length", "lookup", "strategy")
    assert chain["priority"] is PRIORITY
    # The factory was called with the settings.
    assert chain.own_topics() == {"priority": "support.priority", "length": "u.length"}
    # In the order given: the factory's stage goes after one of the shop's own.
    with pytest.raises(SettingsError, match="no stage 'priority' to go after"):
        configured_chain(load({"BATON_STAGES": f"{shop}:length,{EXAMPLE}"}))


def test_stages_given_in_code_replace_the_setting(shop: str) -> None:
    settings = load({"BATON_STAGES": f"{EXAMPLE},{shop}:length"})
    assert chain_for(settings).names[1:3] == ("priority", "length")
    assert chain_for(settings, [PRIORITY]).names == Chain.of([PRIORITY]).names
    assert chain_for(settings, Chain.builtin()) is Chain.builtin()


@pytest.mark.parametrize(
    ("attribute", "message"),
    [
        ("missing", "{shop}:missing: {shop} has no attribute 'missing'"),
        ("COUNT", "{shop}:COUNT is int, not a Stage (nor a factory that returns one)"),
        ("Length", "{shop}:Length is the class Length, not a Stage"),
        ("broken", "{shop}:broken failed: KeyError: 'SHOP_TOKEN'"),
        ("not_a_stage", "{shop}:not_a_stage returned int, not a Stage"),
        ("coroutine", "{shop}:coroutine returned coroutine, not a Stage"),
        ("LATE", "{shop}:LATE: stage late: no stage 'nowhere' to go after"),
        ("AGAIN", "{shop}:AGAIN: the chain names a stage twice"),
        ("UNPLACED", "{shop}:UNPLACED: stage unplaced: say where it goes (after=...)"),
    ],
)
def test_a_stage_that_cannot_be_used_is_one_line(shop: str, attribute: str, message: str) -> None:
    refs = f"{EXAMPLE},{shop}:{attribute}"
    with pytest.raises(SettingsError) as raised:
        configured_chain(load({"BATON_STAGES": refs}))
    text = str(raised.value)
    assert text.startswith("BATON_STAGES: " + message.format(shop=shop)), text
    assert "\n" not in text


def test_a_module_that_is_not_there_or_fails_to_import_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(SettingsError) as raised:
        configured_chain(load({"BATON_STAGES": "no_such_shop.stages:TAGGER"}))
    assert str(raised.value) == (
        "BATON_STAGES: no_such_shop.stages:TAGGER: cannot import no_such_shop.stages "
        "(no module named 'no_such_shop')"
    )
    name = f"shop_broken_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text("import no_such_dependency\n", "utf-8")
    (tmp_path / f"{name}_syntax.py").write_text("def (:\n", "utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(SettingsError, match="no module named 'no_such_dependency'"):
        configured_chain(load({"BATON_STAGES": f"{name}:TAGGER"}))
    with pytest.raises(SettingsError) as raised:
        configured_chain(load({"BATON_STAGES": f"{name}_syntax:TAGGER"}))
    text = str(raised.value)
    assert text.startswith(f"BATON_STAGES: {name}_syntax:TAGGER: importing {name}_syntax failed: ")
    assert "SyntaxError" in text and "\n" not in text


@pytest.mark.parametrize("command", [["worker"], ["trace", "s-1"], ["check"]])
def test_the_commands_say_it_in_one_line_without_a_traceback(
    command: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BATON_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("BATON_STAGES", "examples.stages.priority:NOPE")
    # Nothing listens here: a command that got past the stages would fail on the broker.
    monkeypatch.setenv("BATON_BROKER", "kafka://127.0.0.1:1")
    code = main(command)
    out = capsys.readouterr()
    wanted = (
        "BATON_STAGES: examples.stages.priority:NOPE: examples.stages.priority has no attribute"
    )
    if command == ["check"]:
        # A configuration problem: exit code 2, as the worker's.
        assert code == 2 and f"FAIL stages: {wanted}" in out.out
    else:
        assert code == 2 and out.err.startswith(f"baton: {wanted}"), out.err
        assert len(out.err.splitlines()) == 1 and "Traceback" not in out.err


def test_a_child_worker_is_not_started_with_stages_that_cannot_be_loaded(tmp_path: Path) -> None:
    settings = load({"BATON_STAGES": "examples.stages.priority:NOPE"})
    with pytest.raises(SettingsError, match="has no attribute 'NOPE'"):
        spawn_worker(settings, tmp_path / "worker.log")
    assert not (tmp_path / "worker.log").exists()


def test_create_app_runs_the_chain_the_settings_name(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, namespace="u", stages=(EXAMPLE,))
    runtime = create_app(settings, llm=OfflineLLM())
    assert runtime.pipeline.chain.names == ("understand", "priority", "lookup", "strategy")
    assert "priority" in runtime.schedulers
    assert create_app(settings, llm=OfflineLLM(), stages=()).pipeline.chain is Chain.builtin()


def test_forget_names_the_retention_of_the_stages_topics() -> None:
    held = retention(Settings(namespace="u", stages=(EXAMPLE,), retention_days=3.0))
    assert held["u.support.priority"] == 3.0
    assert "u.support.priority" not in retention(Settings(namespace="u"))
