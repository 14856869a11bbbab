"""``baton check`` tells every mistake of the configuration in one run, and writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton_kafka.agents.policy import PolicyError, parse
from baton_kafka.streams.cli.main import main
from baton_kafka.streams.settings import SettingsError, load

# The new user's mistakes, each made in the policy `baton init` writes.
MISTAKES = (
    ('demands = ["compensation", "complaint"]', 'demands = ["compensations", "complaint"]'),
    (
        'statuses = ["delivered"]\ndemands = ["exchange"',
        'statuses = ["deliverd"]\ndemands = ["exchange"',
    ),
    ('languages = ["en", "zh"]', 'languages = ["en", "zh", "jp"]'),
    ('turnaround = { en = "right away", zh = "立即" }', 'turnaround = { en = "right away" }'),
    ('channels = ["original_payment"]\nshare', 'channels = ["store_voucher"]\nshare'),
    ("window_days = 730", 'window_days = 730\nturnround = "x"'),
)
EXPECTED = (
    "remedies.compensation.demands[0]: unknown demand 'compensations' "
    "(did you mean 'compensation'?)",
    "remedies.exchange.statuses[0]: unknown order status 'deliverd' (did you mean 'delivered'?)",
    "shop.languages[2]: 'jp' is not a known language code (did you mean 'ja'?)",
    "remedies.cancellation.turnaround: no text in zh",
    "remedies.compensation.channels[0]: unknown channel 'store_voucher' (did you mean "
    "'voucher'?): the reply audit knows original_payment, store_credit, voucher, points",
    "remedies.repair.turnround: unknown key (did you mean 'turnaround'?)",
)


@pytest.fixture
def shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in list(__import__("os").environ):
        if name.startswith(("BATON_", "ANTHROPIC_")):
            monkeypatch.delenv(name)
    assert main(["init", str(tmp_path)]) == 0
    return tmp_path


def test_every_mistake_of_the_policy_and_settings_in_one_run(
    shop: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = shop / "policy.toml"
    text = policy.read_text("utf-8")
    for before, after in MISTAKES:
        assert before in text, before
        text = text.replace(before, after, 1)
    policy.write_text(text, "utf-8")
    with (shop / "baton.toml").open("a", encoding="utf-8") as f:
        f.write("web_prot = 1\nparttions = 3\n")
    capsys.readouterr()
    assert main(["check", "--timeout", "0.5"]) == 2
    out = capsys.readouterr().out.splitlines()
    for expected in EXPECTED:
        assert f"FAIL settings: {policy}: {expected}" in out, (expected, out)
    toml = shop / "baton.toml"
    assert f"FAIL settings: {toml}: unknown key 'web_prot' (did you mean 'web_port'?)" in out
    assert f"FAIL settings: {toml}: unknown key 'parttions' (did you mean 'partitions'?)" in out
    assert all(line.startswith("FAIL settings: ") for line in out), out
    assert "Traceback" not in "\n".join(out)


def test_settings_errors_all_come_in_one_error() -> None:
    env = {
        "BATON_WEB_PORT": "99999",
        "BATON_PARTITIONS": "0",
        "BATON_MAX_IN_FLIGHT": "many",
        "BATON_COALESCE_WINDOW": "-1",
        "BATON_TURN_TIMEOUT": "0",
        "BATON_LANGUAGES": "en,jp",
        "BATON_TOPIC_TICKETS": "bad name",
    }
    with pytest.raises(SettingsError) as caught:
        load(env)
    assert sorted(caught.value.lines) == sorted(
        [
            "BATON_WEB_PORT must be at most 65535, got 99999",
            "BATON_PARTITIONS must be at least 1, got 0",
            "BATON_MAX_IN_FLIGHT must be an integer, got 'many'",
            "BATON_COALESCE_WINDOW must be positive, got '-1'",
            "BATON_TURN_TIMEOUT must be positive, got '0'",
            "BATON_LANGUAGES: 'jp' is not a known language code (did you mean 'ja'?)",
            "BATON_TOPIC_TICKETS: the topic name 'bad name' holds ' ': Kafka allows only ASCII "
            "letters, digits, '.', '_' and '-'",
        ]
    )
    assert load({"BATON_WEB_PORT": "65535"}).web_port == 65535


def test_a_port_out_of_range_is_one_line_at_the_worker_start(
    shop: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BATON_WEB_PORT", "99999")
    assert main(["worker"]) == 2
    err = capsys.readouterr().err
    assert err == "baton: BATON_WEB_PORT must be at most 65535, got 99999\n"


def test_the_policy_lists_every_error_pydantic_finds() -> None:
    data = b"[shop]\nnam = 'x'\n[remedies.refund]\ntext = 'a'\nmoney = true\ncap = 'lots'\n"
    with pytest.raises(PolicyError) as caught:
        parse(data, "p.toml")
    assert str(caught.value).splitlines() == [
        "p.toml: shop.nam: unknown key (did you mean 'name'?)",
        "p.toml: remedies.refund.cap: Input should be a valid number, unable to parse string "
        "as a number",
    ]


def test_the_vocabulary_of_the_check_is_the_code_s() -> None:
    from baton_kafka.agents.guards import offered
    from baton_kafka.agents.policy.vocabulary import CHANNELS, DEMANDS, STATUSES

    # The audit's channels: a table of its own, or read from the language packs' words.
    audited = getattr(offered, "_CHANNELS", None) or offered._w().CHANNELS
    assert set(CHANNELS) == {"original_payment", *audited}
    assert "compensation" in DEMANDS and "delivered" in STATUSES


def test_a_language_without_a_pack_is_a_warning_not_a_failure(
    shop: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = shop / "policy.toml"
    text = policy.read_text("utf-8").replace('languages = ["en", "zh"]', 'languages = ["en", "it"]')
    policy.write_text(text.replace('zh = "', 'it = "'), "utf-8")
    capsys.readouterr()
    main(["check", "--timeout", "0.5"])
    out = capsys.readouterr().out
    assert (
        f"warn policy: {policy}: shop.languages[1]: 'it' (Italian) has no language pack "
        "(packs ship for en, zh, de, ja, es, fr)"
    ) in out, out


def test_check_creates_no_state(shop: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = sorted(p.relative_to(shop) for p in shop.rglob("*"))
    main(["check", "--timeout", "0.5"])
    out = capsys.readouterr().out
    assert sorted(p.relative_to(shop) for p in shop.rglob("*")) == before
    assert not (shop / ".baton").exists()
    assert "ok   orders: no order store yet at" in out, out


def test_relative_paths_are_read_from_the_file_that_names_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shop, elsewhere = tmp_path / "shop", tmp_path / "elsewhere"
    shop.mkdir()
    elsewhere.mkdir()
    assert main(["init", str(shop)]) == 0
    toml = shop / "baton.toml"
    toml.write_text(toml.read_text("utf-8") + 'data_dir = "state"\nstore_dir = "tables"\n', "utf-8")
    monkeypatch.chdir(elsewhere)
    # baton.toml's paths: from baton.toml's directory, wherever the command runs.
    s = load({}, config=toml)
    assert s.policy_file == shop / "policy.toml"
    assert s.data_dir == shop / "state" and s.store_dir == shop / "tables"
    # The environment's (and .env's) paths and the defaults: from the working directory.
    s = load({"BATON_DATA_DIR": "here", "BATON_POLICY": "../shop/policy.toml"})
    assert s.data_dir.resolve() == elsewhere / "here"
    assert s.policy_file is not None and s.policy_file.resolve() == shop / "policy.toml"
    assert load({}).data_dir.resolve() == elsewhere / ".baton"
    (elsewhere / ".env").write_text("BATON_DATA_DIR=fromdotenv\n", "utf-8")
    assert load().data_dir.resolve() == elsewhere / "fromdotenv"
    # The rule is the one the configuration reference states.
    from baton_kafka.streams.config import reference

    stated = " ".join(reference.render().split())
    assert "A relative path is read from the directory of the file that names it" in stated
    assert "in `.env` or the environment from the working directory, as is a default" in stated


def test_the_policy_reference_lists_every_vocabulary_as_the_code_has_it() -> None:
    from baton_kafka.agents.policy import reference

    text = reference.PATH.read_text("utf-8")
    assert reference.document(text) == text, (
        "docs/policy.md is stale: run python -m baton_kafka.agents.policy.reference"
    )
    section = text[text.index(reference.DOC_BEGIN) : text.index(reference.DOC_END)]
    for name in ("compensation", "delivered", "store_credit", "needs_approval", "turnaround"):
        assert f"`{name}`" in section, name
    for lang in ("en", "zh", "de", "ja", "es", "fr"):
        assert f"`{lang}`" in section, lang


def test_a_remedy_spelled_like_a_known_one_is_a_warning(
    shop: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = shop / "policy.toml"
    text = policy.read_text("utf-8").replace("[remedies.cancellation]", "[remedies.cancelation]")
    policy.write_text(text, "utf-8")
    capsys.readouterr()
    main(["check", "--timeout", "0.5"])
    out = capsys.readouterr().out
    assert (
        f"warn policy: {policy}: remedies.cancelation: a name of the shop's own, which baton's "
        "rules do not know (did you mean 'cancellation'?)"
    ) in out, out


@pytest.mark.parametrize(
    "dsn", ["sqlite:///{tmp}/elsewhere/o.db", "{tmp}/plain/o.db", "http://127.0.0.1:1/orders"]
)
def test_check_creates_no_store_for_any_order_source(
    dsn: str, shop: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BATON_ORDERS_DSN", dsn.format(tmp=shop))
    if dsn.startswith("http"):
        monkeypatch.setenv("BATON_ORDERS_MAP", "orders-map.json")
    before = sorted(p.relative_to(shop) for p in shop.rglob("*"))
    main(["check", "--timeout", "0.5"])
    capsys.readouterr()
    assert sorted(p.relative_to(shop) for p in shop.rglob("*")) == before
