"""The names a policy and the settings may use: languages told from countries and names."""

from __future__ import annotations

import pytest

# Codes shops write for the six languages with packs, region and script subtags included.
SERVED = {
    "en": ("en", "EN", "en-GB", "en_US", "en-US", "en-AU"),
    "zh": ("zh", "zh-Hans", "zh-Hant-TW", "zh-CN", "zh-TW", "zh-Hant"),
    "de": ("de", "de-CH", "De-ch", "de-AT", "de-DE"),
    "ja": ("ja", "ja-JP"),
    "es": ("es", "es-419", "es-MX", "es-AR"),
    "fr": ("fr", "fr-CA", "fr-BE", "fr-CH"),
}
# What a shop writes instead, per language: a country's code, the language's name, a
# three-letter code BCP 47 does not use where a two-letter one exists.
MISTAKEN = {
    "en": (("english", "en"), ("English", "en"), ("eng", "en"), ("uk", None)),
    "zh": (("cn", "zh"), ("中文", "zh"), ("Chinese", "zh"), ("zho", "zh")),
    "de": (("Deutsch", "de"), ("deu", "de"), ("ger", None)),
    "ja": (("jp", "ja"), ("日本語", "ja"), ("jap", "ja"), ("jpn", None)),
    "es": (("español", "es"), ("esp", "es"), ("spa", None)),
    "fr": (("français", "fr"), ("fra", "fr"), ("fre", "fr")),
}


@pytest.mark.parametrize("lang", sorted(SERVED))
def test_every_shipped_language_is_served_without_a_word(lang: str) -> None:
    from baton_kafka.agents.policy.vocabulary import language_problem, language_warning

    for tag in SERVED[lang]:
        assert language_problem(tag) is None, tag
        assert language_warning(tag) is None, tag


@pytest.mark.parametrize("lang", sorted(MISTAKEN))
def test_a_country_or_a_name_for_a_language_is_refused_with_the_code(lang: str) -> None:
    from baton_kafka.agents.policy.vocabulary import language_problem

    for tag, meant in MISTAKEN[lang]:
        if tag == "uk":  # Ukrainian's code: a language, served with a warning (no pack)
            continue
        why = language_problem(tag)
        assert why is not None, tag
        if meant:
            assert why.endswith(f"(did you mean {meant!r}?)"), (tag, why)


def test_a_country_code_that_is_a_language_too_is_a_warning_naming_both() -> None:
    from baton_kafka.agents.policy.vocabulary import language_problem, language_warning

    for tag, name, meant in (("se", "Northern Sami", "sv"), ("kr", "Kanuri", "ko")):
        assert language_problem(tag) is None
        warning = language_warning(tag)
        assert warning is not None and f"({name})" in warning and repr(meant) in warning
    assert language_warning("it") == (
        "'it' (Italian) has no language pack (packs ship for en, zh, de, ja, es, fr)"
    )
    assert language_warning("uk") is not None and "(Ukrainian)" in language_warning("uk")


def test_a_turnaround_in_no_language_is_told_once_where_it_is_written() -> None:
    from baton_kafka.agents.policy import PolicyError, parse

    data = (
        b"[shop]\nlanguages = ['en', 'jp']\n[remedies.refund]\ntext = 'a'\n"
        b"turnaround = { en = 'now', jp = 'x' }\n[remedies.exchange]\ntext = 'b'\n"
        b"turnaround = { en = 'soon' }\n"
    )
    with pytest.raises(PolicyError) as caught:
        parse(data, "p.toml")
    assert str(caught.value).splitlines() == [
        "p.toml: shop.languages[1]: 'jp' is not a known language code (did you mean 'ja'?)",
        "p.toml: remedies.refund.turnaround.jp: 'jp' is not a known language code "
        "(did you mean 'ja'?)",
    ]
