"""Languages: the one detector on a labelled sample, and the guards in every language a shop
serves (natural replies pass, amounts over the offer and replies in the wrong language do not)."""

from __future__ import annotations

from typing import Any

import pytest

from baton_kafka.agents.guards import money
from baton_kafka.agents.guards.language import language_problem
from baton_kafka.agents.languages import LanguageError, code, customer_language, detect
from baton_kafka.agents.policy import load
from tests.fixtures.guard_corpus import GUARD_ORDERS, assert_covers, check_corpus_case
from tests.fixtures.paths import ROOT, data_rows

ORDERS = GUARD_ORDERS
CORPUS = data_rows("multilingual_corpus.jsonl")
# Written after the code, without running it first: its first run is the blind measure.
BLIND = data_rows("multilingual_blind_corpus.jsonl")
SAMPLE = data_rows("language_sample.jsonl")
FIVE = ("zh", "ja", "en", "de", "es")


@pytest.mark.parametrize("case", SAMPLE, ids=[c["id"] for c in SAMPLE])
def test_the_detector_names_the_language_of_a_labelled_sample(case: dict[str, Any]) -> None:
    assert customer_language(case["text"], FIVE) == case["language"]


def test_the_sample_covers_five_languages_and_mixed_text() -> None:
    assert {c["language"] for c in SAMPLE} >= set(FIVE)
    assert sum("mixed" in c["id"] for c in SAMPLE) >= 4


def test_a_language_the_shop_does_not_serve_is_answered_in_its_default() -> None:
    served = ("de", "en", "zh")
    assert customer_language("注文した靴がまだ届きません。どうなっていますか？", served) == "de"
    assert customer_language("Mi pedido no ha llegado todavía, ¿qué pasa?", served) == "de"
    assert customer_language("Meine Jacke ist noch nicht angekommen.", served) == "de"
    assert customer_language("我的外套还没有到。", served) == "zh"
    assert detect("400918273 JJD014600003824412", served) is None


def test_codes_are_bcp47_and_a_bad_one_is_a_clear_error() -> None:
    assert code("ZH_Hans") == "zh-Hans"
    assert code("de-CH") == "de-CH"
    with pytest.raises(LanguageError, match="not a BCP 47 language code: 'deutsch!'"):
        code("deutsch!")


@pytest.mark.parametrize("case", CORPUS, ids=[c["id"] for c in CORPUS])
def test_multilingual_corpus_no_false_accepts_or_rejects(case: dict[str, Any]) -> None:
    check_corpus_case(case, ORDERS)


@pytest.mark.parametrize("case", BLIND, ids=[c["id"] for c in BLIND])
def test_multilingual_blind_corpus_no_false_accepts_or_rejects(case: dict[str, Any]) -> None:
    check_corpus_case(case, ORDERS)


def test_the_corpora_hold_natural_and_hostile_replies_in_each_language() -> None:
    for corpus in (CORPUS, BLIND):
        assert_covers(corpus, FIVE)


@pytest.mark.parametrize(
    ("text", "amounts"),
    [
        ("Wir erstatten Ihnen fünfhundert Euro.", [500]),
        ("Gutschrift über zweihundertfünfundzwanzig Euro und 1.000,00 €", [225, 1000]),
        ("Wir erstatten 1.000 € zurück.", [1000]),
        ("Le devolvemos quinientos euros y treinta y cinco euros.", [500, 35]),
        ("Le devolvemos 1.500 euros.", [1500]),
        ("五百ユーロを返金いたします。三千円のクーポン。", [500, 3000]),
    ],
)
def test_amounts_are_read_in_every_language(text: str, amounts: list[float]) -> None:
    assert [m.value for m in money(text, [])] == [float(a) for a in amounts]


@pytest.mark.parametrize(
    "text",
    [
        "Wir erstatten den Betrag innerhalb von 5 Werktagen, spätestens am 3. Dezember.",
        "Die Rückerstattung erfolgt in 2 Wochen; Sie bekommen 2 Paar Socken.",
        "Le devolvemos el importe en un plazo de 5 días hábiles, antes del 3 de diciembre.",
        "返金は 5 営業日以内に行います。",
        "We will refund you once the item arrives.",
    ],
)
def test_durations_and_dates_are_not_money_in_any_language(text: str) -> None:
    assert money(text, []) == []


def test_the_shop_languages_are_a_setting_validated_in_one_line() -> None:
    from baton_kafka.streams.settings import SettingsError
    from baton_kafka.streams.settings import load as load_settings

    s = load_settings({"BATON_LANGUAGES": "de, en,zh"})
    assert s.languages == ("de", "en", "zh") and load_settings(s.to_env()) == s
    assert load_settings({}).languages == ()
    with pytest.raises(SettingsError, match=r"^BATON_LANGUAGES: not a BCP 47 language code"):
        load_settings({"BATON_LANGUAGES": "de,Deutsch!"})
    alpine = load(ROOT / "examples/shops/alpine/policy.toml")
    assert alpine.languages == ("en", "de", "zh")
    assert alpine.serving(s.languages).languages == ("de", "en", "zh")
    assert alpine.turnaround("refund", "de-CH") == "innerhalb von 5 Werktagen"


def test_what_baton_writes_itself_is_in_the_customer_language() -> None:
    from baton_kafka.agents.fixed_texts import fixed
    from baton_kafka.streams.runtime.answers.replies import could_not_process

    five = ("zh", "ja", "en", "de", "es")
    for lang in five:
        for key in ("could_not_process", "holding", "awaiting_approval"):
            text = fixed(key, lang, about="")
            assert customer_language(text, five) == lang, (key, lang, text)
    assert could_not_process("pt", "de") == fixed("could_not_process", "de")
    assert could_not_process("de-AT") == fixed("could_not_process", "de")


def test_a_german_customer_answered_in_english_gets_the_reason_in_german() -> None:
    reason = language_problem("Hello, your order has shipped.", "de", (), ("en", "de", "zh"))
    assert reason is not None and "Englisch" in reason and "Deutsch" in reason
    assert language_problem("Ihre Bestellung ist unterwegs.", "de", (), ("en", "de")) is None
    # Japanese is not Chinese: a Chinese reply to a Japanese customer is in the wrong language.
    assert language_problem("您好，您的订单已发货。", "ja", (), ("ja", "zh")) is not None
    assert language_problem("ご注文の商品を発送しました。", "ja", (), ("ja", "zh")) is None


def test_the_eval_reads_each_ticket_language_among_the_shop_languages() -> None:
    from baton_kafka.streams.eval.score import language

    assert language("Wo bleiben meine Wanderschuhe?", ("en", "de", "zh")) == "de"
    assert language("Wo bleiben meine Wanderschuhe?") == "en"  # the demo shop serves en, zh
    assert language("注文した靴が届きません", ("ja", "zh", "en")) == "ja"
