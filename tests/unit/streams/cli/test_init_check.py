"""``baton init`` writes a shop's files; ``baton check`` checks them, one line each."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest

from baton_kafka.agents.cache_fit import cache_fits
from baton_kafka.agents.policy import default_policy
from baton_kafka.agents.policy import load as load_policy
from baton_kafka.agents.prompts import prompt_version, system_prompt
from baton_kafka.streams.cli.init import files
from baton_kafka.streams.cli.main import main
from baton_kafka.streams.config.template import render
from baton_kafka.streams.settings import Settings, load


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_init_writes_the_files_and_refuses_to_overwrite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shop = tmp_path / "shop"
    assert main(["init", str(shop)]) == 0
    assert sorted(p.name for p in shop.iterdir()) == sorted(files())
    capsys.readouterr()
    (shop / "tone.md").write_text("mine", "utf-8")
    assert main(["init", str(shop)]) == 1
    err = capsys.readouterr().err
    assert (
        err == f"baton init: {shop / 'baton.toml'} exists; nothing written (move it away first)\n"
    )
    assert (shop / "tone.md").read_text("utf-8") == "mine"


def test_the_written_settings_file_is_every_setting_at_its_default(tmp_path: Path) -> None:
    text = render()
    # Every commented key, uncommented, is a valid file whose values are the defaults.
    keys = re.findall(r"^# ([a-z_]+) = ", text, re.MULTILINE)
    assert {"broker", "web_port", "kafka_security_protocol", "topic_tickets"} <= set(keys)
    head, rest = text.split("# Everything else, with its default:")
    settings, _ = rest.split("# Extra options of the Kafka clients")
    opened = head + "\n".join(
        line[2:] if re.match(r"^# [a-z_]+ = ", line) else line for line in settings.splitlines()
    )
    for name, written in files().items():
        (tmp_path / name).write_text(opened if name == "baton.toml" else written, "utf-8")
    s = load({}, cwd=tmp_path)
    assert s.policy_file == tmp_path / "policy.toml"
    # Relative paths are read from the file's directory; the one model named moves every stage.
    assert s.data_dir == tmp_path / ".baton" and s.stage_models == {}
    assert s.with_(policy_file=None, data_dir=Path(".baton"), stage_models={}) == load(
        {"BATON_MODEL": s.model}
    )


def test_the_written_handbook_and_tone_render_today_s_prompts(tmp_path: Path) -> None:
    for name, text in files().items():
        (tmp_path / name).write_text(text, "utf-8")
    mine = load_policy(tmp_path / "policy.toml")
    assert mine.shop.tone == "tone.md" and mine.shop.notes == ""
    # The default texts, as files: the same prompts, word for word, but for the policy data's
    # handbook file and version.
    for stage in ("understand", "lookup", "strategy"):
        ours, default = system_prompt(stage, mine), system_prompt(stage, default_policy())
        ours = ours.replace('"shop":{"handbook":"handbook.md"},', "")
        assert ours.replace(mine.version, default_policy().version) == default
    # The operator's tone is theirs: it is in the prompts, and its hash in both versions.
    (tmp_path / "tone.md").write_text("# Language and tone\nAlways answer in Basque.\n", "utf-8")
    load_policy.cache_clear()
    toned = load_policy(tmp_path / "policy.toml")
    assert "Always answer in Basque." in system_prompt("strategy", toned)
    assert "Chinese when the message" not in system_prompt("strategy", toned)
    assert toned.version != mine.version and prompt_version(toned) != prompt_version(mine)


def test_a_short_prompt_is_reported_with_the_numbers(tmp_path: Path) -> None:
    for name, text in files().items():
        (tmp_path / name).write_text(text, "utf-8")
    policy = load_policy(tmp_path / "policy.toml")
    models = dict.fromkeys(("understand", "lookup", "strategy"), "my-model")
    fits = cache_fits(policy, models, {"my-model": 20_000})
    assert not any(f.cached for f in fits)
    short = fits[0]
    assert short.line() == (
        f"understand on my-model: static prompt about {short.tokens} tokens, below the 20000 "
        f"the model caches: every call pays it in full; add about {20_000 - short.tokens} "
        "tokens to the handbook or tone file, or choose a model with a lower minimum"
    )
    assert all(f.cached for f in cache_fits(policy, models, {"my-model": 1024}))
    # A worker says so at start, with the same numbers; offline, no model caches anything.
    from baton_kafka.streams.runtime.worker import uncached

    slow = load({"BATON_LLM": "anthropic", "ANTHROPIC_API_KEY": "k", "BATON_MODEL": "my-model"})
    assert uncached(slow.with_(cache_min_tokens={"my-model": 20_000}))[0].startswith(
        "understand on my-model: static prompt about "
    )
    assert uncached(slow) == [] and uncached(load({})) == []


def test_check_prints_one_line_per_check_and_fails_on_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in [n for n in list(__import__("os").environ) if n.startswith(("BATON_", "ANTHR"))]:
        monkeypatch.delenv(name)
    assert main(["init", str(tmp_path)]) == 0
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BATON_BROKER", f"kafka://127.0.0.1:{_closed_port()}")
    monkeypatch.setenv("BATON_LLM", "anthropic")
    capsys.readouterr()
    assert main(["check", "--timeout", "1"]) == 1
    out = capsys.readouterr().out.splitlines()
    status = {line.split(":")[0].split()[-1]: line.split()[0] for line in out}
    assert status == {
        "settings": "ok",
        "policy": "ok",
        "handbook": "ok",
        "tone": "ok",
        "cache": "ok",
        "stages": "ok",
        "orders": "ok",
        "executor": "ok",
        "broker": "FAIL",
        "model": "FAIL",
        "limits": "ok",
    }, out
    assert (
        "ok   model limits: 60 s per call, 180 s per ticket, 256 calls in flight at most; "
        "defaults: the Claude API's" in out
    ), out
    assert "FAIL model: BATON_LLM=anthropic needs ANTHROPIC_API_KEY (or its _FILE)" in out
    assert "ok   stages: understand -> lookup -> strategy" in out
    # A bad setting is the one line check prints, naming the file and key.
    (tmp_path / "baton.toml").write_text('web_port = "soon"\n', "utf-8")
    assert main(["check"]) == 2
    assert capsys.readouterr().out == (
        f"FAIL settings: {tmp_path / 'baton.toml'}: key web_port: BATON_WEB_PORT must be an "
        "integer, got 'soon'\n"
    )
    # --config names another file.
    other = tmp_path / "other.toml"
    other.write_text('web_port = "later"\n', "utf-8")
    assert main(["--config", str(other), "check"]) == 2
    assert "key web_port" in capsys.readouterr().out
    assert isinstance(load({}), Settings)
