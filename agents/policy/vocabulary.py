"""The closed vocabularies a policy names (demands, order statuses, channels, languages), and
every name of a policy checked against them: one line per problem, with a near name."""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, get_args

from baton_kafka.agents.languages import DEFAULT_LANGUAGES, LanguageError, code, primary
from baton_kafka.schemas.handoff import HandoffReason
from baton_kafka.schemas.records import OrderStatus, Reason
from baton_kafka.schemas.stages import Demand

if TYPE_CHECKING:
    from baton_kafka.agents.policy.model import Policy

DEMANDS: tuple[str, ...] = get_args(Demand)
STATUSES: tuple[str, ...] = get_args(OrderStatus)
HANDOFF_REASONS: tuple[str, ...] = get_args(HandoffReason)
REASONS: tuple[str, ...] = get_args(Reason)
# The money channels the reply audit (agents.guards.offered) knows by name: a reply naming
# another channel than its offer's is rejected, so a remedy's channel must be one of these. The
# audit imports the policy, so the names are kept here; a test holds them to the audit's.
CHANNELS: tuple[str, ...] = ("original_payment", "store_credit", "voucher", "points")


def channels() -> tuple[str, ...]:
    """The money channels a remedy may name: the ones the reply audit knows."""
    return CHANNELS


def condition_kinds() -> tuple[str, ...]:
    """The condition kinds the language packs have words for (a shop's packs may add some)."""
    from baton_kafka.agents import packs

    found: dict[str, None] = {}
    for words in packs.all_packs("conditions").values():
        kinds = words.get("kinds", {})
        found.update(dict.fromkeys(kinds if isinstance(kinds, Mapping) else ()))
    return tuple(found)


@functools.cache
def countries() -> frozenset[str]:
    """The ISO 3166 country codes baton knows a name for (CLDR's, through Babel)."""
    from babel import Locale

    names: dict[str, str] = dict(Locale("en").territories)
    return frozenset(k for k in names if k.isalpha() and len(k) == 2)


@functools.cache
def known_remedies() -> tuple[str, ...]:
    """The remedies baton's own rules and audits know by name: the demo shop's. A shop may
    name its own, but one spelled like these by a letter or two is almost always a typo."""
    import tomllib
    from pathlib import Path

    data = tomllib.loads(Path(__file__).with_name("default.toml").read_text("utf-8"))
    return tuple(data["remedies"])


@functools.cache
def known_languages() -> frozenset[str]:
    """The ISO 639 language subtags baton knows a name for (CLDR's, through Babel)."""
    from babel import Locale

    names: dict[str, str] = dict(Locale("en").languages)
    return frozenset(k for k in names if "_" not in k)


def with_packs() -> tuple[str, ...]:
    """The languages baton ships language packs for."""
    from baton_kafka.agents.packs import LANGUAGES

    return LANGUAGES


def near(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` when ``known`` has a name close to ``name``, else ``""``."""
    found = difflib.get_close_matches(name, list(known), n=1, cutoff=0.5)
    return f" (did you mean {found[0]!r}?)" if found else ""


def _country_language(subtag: str) -> str | None:
    """The first official language of the country ``subtag`` names ("jp" is Japan's "ja")."""
    from babel.languages import get_official_languages

    found = get_official_languages(subtag.upper())
    return found[0] if found else None


def language_problem(tag: str) -> str | None:
    """Why ``tag`` is not a language baton can serve, or None."""
    try:
        subtag = primary(code(tag))
    except LanguageError as exc:
        named = _by_name().get(tag.strip().casefold())
        return f"{exc}{f' (did you mean {named!r}?)' if named else ''}"
    if subtag in known_languages():
        return None
    country = _country_language(subtag)
    hint = f" (did you mean {country!r}?)" if country else near(subtag, with_packs())
    return f"{tag!r} is not a known language code{hint}"


@functools.cache
def _by_name() -> dict[str, str]:
    """Language names, in English and in each packed language itself, to their codes."""
    from babel import Locale

    names = {str(n).casefold(): c for c, n in Locale("en").languages.items() if "_" not in c}
    for lang in with_packs():
        names[str(Locale(lang).get_display_name(lang)).casefold()] = lang
    return names


def _name(subtag: str) -> str:
    from babel import Locale

    return str(Locale("en").languages.get(subtag, subtag))


def language_warning(tag: str) -> str | None:
    """A served language with no shipped language pack: its words are the model's alone."""
    if language_problem(tag):
        return None
    subtag = primary(code(tag))
    if subtag in with_packs():
        return None
    # A country's code may be a language's too ("se" is Northern Sami, not Sweden's "sv").
    country = _country_language(subtag)
    also = f"; did you mean {country!r}?" if country and country != subtag else ""
    return (
        f"{tag!r} ({_name(subtag)}) has no language pack (packs ship for "
        f"{', '.join(with_packs())}{also})"
    )


def _names(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list | tuple) else []


def _unknown(key: str, value: object, known: tuple[str, ...], what: str) -> Iterator[str]:
    for at, name in enumerate(_names(value)):
        if name not in known:
            yield f"{key}[{at}]: unknown {what} {name!r}{near(name, known)}"


def problems(raw: Mapping[str, Any], served: Sequence[str] = ()) -> list[str]:
    """Every name of the policy ``raw`` (its TOML tables, read before the model validates
    them, so these come with its other errors) outside its vocabulary, and every per-language
    text missing for a language served (``served``, else its own): ``key: message`` lines."""
    lines: list[str] = []
    shop = raw.get("shop")
    own = shop.get("languages", DEFAULT_LANGUAGES) if isinstance(shop, Mapping) else None
    if not served:
        served = _names(own) if own is not None else DEFAULT_LANGUAGES
        for at, tag in enumerate(served):
            if why := language_problem(tag):
                lines.append(f"shop.languages[{at}]: {why}")
    own_channels = raw.get("channels")
    own = tuple(own_channels) if isinstance(own_channels, Mapping) else ()
    known_channels = (*CHANNELS, *own)
    remedies = raw.get("remedies")
    for name, remedy in remedies.items() if isinstance(remedies, Mapping) else ():
        if not isinstance(remedy, Mapping):
            continue
        key = f"remedies.{name}"
        lines += _unknown(f"{key}.demands", remedy.get("demands"), DEMANDS, "demand")
        lines += _unknown(f"{key}.statuses", remedy.get("statuses"), STATUSES, "order status")
        for at, channel in enumerate(_names(remedy.get("channels"))):
            if channel not in known_channels:
                lines.append(
                    f"{key}.channels[{at}]: unknown channel {channel!r}"
                    f"{near(channel, known_channels)}: the reply audit knows "
                    f"{', '.join(known_channels)}"
                )
        lines += _shape(key, remedy)
        turnaround = remedy.get("turnaround")
        if isinstance(turnaround, Mapping) and turnaround:
            for lang in turnaround:
                if why := language_problem(str(lang)):
                    lines.append(f"{key}.turnaround.{lang}: {why}")
            given = {primary(str(lang)) for lang in turnaround}
            # A served language that is no language is told once, above.
            missing = [
                lang for lang in served if primary(lang) not in given and not language_problem(lang)
            ]
            if missing:
                lines.append(f"{key}.turnaround: no text in {', '.join(missing)}")
    lines += _never(raw.get("never"))
    lines += _channels(own_channels, served)
    lines += _shipping(raw.get("shipping"))
    return lines


def _shape(key: str, remedy: Mapping[str, Any]) -> Iterator[str]:
    """A remedy's reasons, windows by reason and conditions, by name."""
    yield from _unknown(f"{key}.reasons", remedy.get("reasons"), REASONS, "reason")
    windows = remedy.get("windows")
    for reason in windows if isinstance(windows, Mapping) else ():
        if reason not in REASONS:
            yield f"{key}.windows.{reason}: unknown reason {reason!r}{near(reason, REASONS)}"
    conditions = remedy.get("conditions")
    kinds = condition_kinds()
    for at, c in enumerate(conditions if isinstance(conditions, list) else ()):
        if not isinstance(c, Mapping):
            continue
        kind = c.get("kind")
        if isinstance(kind, str) and kind not in kinds:
            yield (
                f"{key}.conditions[{at}].kind: unknown condition {kind!r}{near(kind, kinds)}: "
                f"the conditions packs have {', '.join(kinds)}"
            )
        yield from _unknown(f"{key}.conditions[{at}].reasons", c.get("reasons"), REASONS, "reason")


def _never(never: object) -> Iterator[str]:
    for at, name in enumerate(_names(never)):
        if name not in known_remedies():
            yield (
                f"never[{at}]: unknown remedy {name!r}{near(name, known_remedies())}: the reply "
                f"audit knows {', '.join(known_remedies())}"
            )


def _channels(channels: object, served: Sequence[str]) -> Iterator[str]:
    """The shop's own channels: not a shipped one's name, words in every served language."""
    for name, channel in channels.items() if isinstance(channels, Mapping) else ():
        if name in CHANNELS:
            yield f"channels.{name}: a channel baton ships; name your own differently"
        words = channel.get("words") if isinstance(channel, Mapping) else None
        if not isinstance(words, Mapping):
            continue
        for lang in words:
            if why := language_problem(str(lang)):
                yield f"channels.{name}.words.{lang}: {why}"
        given = {primary(str(lang)) for lang in words}
        missing = [
            lang for lang in served if primary(lang) not in given and not language_problem(lang)
        ]
        if missing:
            yield f"channels.{name}.words: no words in {', '.join(missing)}"


def _shipping(shipping: object) -> Iterator[str]:
    """Return terms keyed by a country code, a region the shop names, or ``other``."""
    if not isinstance(shipping, Mapping):
        return
    regions = shipping.get("regions")
    named = tuple(regions) if isinstance(regions, Mapping) else ()
    for region, members in regions.items() if isinstance(regions, Mapping) else ():
        for at, country in enumerate(_names(members)):
            if country not in countries():
                yield (
                    f"shipping.regions.{region}[{at}]: unknown country {country!r}"
                    f"{near(country.upper(), countries())}"
                )
    returns = shipping.get("returns")
    for place in returns if isinstance(returns, Mapping) else ():
        if place != "other" and place not in named and place not in countries():
            choices = (*named, "other", *countries())
            yield (
                f"shipping.returns.{place}: not a country code, a region of shipping.regions or "
                f"'other'{near(place, choices)}"
            )


def warnings(policy: Policy) -> list[str]:
    """What ``policy`` may mean but baton cannot help with: a served language without a pack."""
    lines = [
        f"shop.languages[{at}]: {why}"
        for at, tag in enumerate(policy.languages)
        if (why := language_warning(tag))
    ]
    for name in policy.remedies:
        if name not in known_remedies():
            found = difflib.get_close_matches(name, known_remedies(), n=1, cutoff=0.8)
            if found:
                lines.append(
                    f"remedies.{name}: a name of the shop's own, which baton's rules do not "
                    f"know (did you mean {found[0]!r}?)"
                )
    served = {primary(lang) for lang in policy.languages}
    for language in policy.handoff.triggers:
        if language not in served:
            lines.append(f"handoff.triggers.{language}: not a language the shop serves, unused")
    return lines
