"""The packs' markers and dates led by their first characters, and a language's read skipped
for a text without its words: the same matches and the same reading as the plain patterns."""

from __future__ import annotations

import functools
import json
import random
import re
from typing import Any

import pytest

from baton_kafka.agents import packs
from baton_kafka.agents.guards import (
    claims,
    clauses,
    commitments,
    facts,
    number_words,
    reading,
    words,
)
from baton_kafka.agents.guards import language as reply_language
from tests.fixtures.paths import TEST_DATA

CORPORA = (
    "commitments_corpus.jsonl",
    "commitments_blind_corpus.jsonl",
    "facts_corpus.jsonl",
    "facts_blind_corpus.jsonl",
    "policy_corpus.jsonl",
    "multilingual_corpus.jsonl",
    "multilingual_blind_corpus.jsonl",
    "lines_corpus.jsonl",
    "packs_corpus.jsonl",
    "packs_blind_corpus.jsonl",
)
FIELDS = ("reply", "solution", "internal_note", "message", "text")
GROUPS = (("commitments", "kinds"), ("claims", "claims"))
# Letters a case-insensitive ASCII literal takes outside ASCII, quotes, stops and breaks.
GLUE = [" ", " ", " ", ", ", ". ", "? ", "; ", "\n", "。", "，", "？", "“", "”", "「", "」"]
ODD = ["\u212a", "\u017f", "\u0130", "ＲＥＦＵＮＤ", "1", "12", "2026", "3-5", "14.", "12月"]


@functools.cache
def _corpus() -> list[str]:
    texts = []
    for corpus in CORPORA:
        for line in (TEST_DATA / corpus).read_text("utf-8").splitlines():
            if line.strip():
                case = json.loads(line)
                texts += [str(case[f]) for f in FIELDS if isinstance(case.get(f), str)]
    return texts


@functools.cache
def _texts() -> list[str]:
    """The corpora's texts, and texts made of their words in another order, case and glue."""
    texts = list(_corpus())
    vocabulary = sorted({w for t in texts for w in re.split(r"[\s,.;?。，？]+", t) if w})
    vocabulary += ODD
    rng = random.Random(40)
    for _ in range(1500):
        parts = []
        for _ in range(rng.randrange(1, 14)):
            word = rng.choice(vocabulary)
            word = rng.choice((word, word.upper(), word.title(), word.lower()))
            parts += [word, rng.choice(GLUE)]
        texts.append("".join(parts))
    return texts


def _plain(entries: list[str]) -> re.Pattern[str]:
    """A pack's entries as one alternation, as the packs write them (no lead)."""
    return re.compile("|".join(f"(?:{e})" for e in entries), re.I)


def _spans(matches: Any) -> list[tuple[int, int]]:
    return [m.span() for m in matches]


def _pack_patterns() -> list[tuple[str, re.Pattern[str], re.Pattern[str]]]:
    found = []
    for concern, group in GROUPS:
        for language in packs.LANGUAGES:
            marks = clauses.marks(concern, language, group)
            raw = packs.pack(concern, language)
            if marks is None:
                continue
            for kind, entries in raw[group].items():
                found.append((f"{concern}.{language}.{kind}", marks.words[kind], _plain(entries)))
            for name, entries in raw.get("markers", {}).items():
                pattern = marks.markers[name]
                assert pattern is not None
                found.append((f"{concern}.{language}.{name}", pattern, _plain(entries)))
            every = [e for entries in raw[group].values() for e in entries]
            assert marks.any_word is not None
            found.append((f"{concern}.{language}.any", marks.any_word, _plain(every)))
    return found


def test_the_long_markers_are_led_and_the_scanned_ones_left_as_they_are() -> None:
    patterns = {name: pattern for name, pattern, _ in _pack_patterns()}
    # English markers start with \b or a cased letter: nothing for the engine to scan for.
    assert patterns["commitments.en.promise"].pattern.startswith("(?=[")
    # Chinese words are literals the engine scans for itself: a lead would only slow it.
    assert not patterns["commitments.zh.promise"].pattern.startswith("(?=[")
    assert sum(p.pattern.startswith("(?=[") for p in patterns.values()) > 40


@pytest.mark.parametrize(
    ("name", "pattern", "bare"), _pack_patterns(), ids=[n for n, _, _ in _pack_patterns()]
)
def test_a_led_marker_finds_what_the_packs_alternation_finds(
    name: str, pattern: re.Pattern[str], bare: re.Pattern[str]
) -> None:
    texts = _texts()
    assert len(texts) > 2500
    for text in texts:
        text = clauses.readable(text)
        assert _spans(pattern.finditer(text)) == _spans(bare.finditer(text)), (name, text)
        for part in (text[: len(text) // 2], text[len(text) // 3 :]):
            got, want = pattern.search(part), bare.search(part)
            assert (got and got.span()) == (want and want.span()), (name, part)


def test_a_led_date_finds_what_the_packs_date_pattern_finds() -> None:
    w = facts._w()
    months = [
        str(n)
        for _, pack in words.languages("facts")
        for value in dict(pack.get("months", {})).values()
        for n in (value if isinstance(value, list) else [value])
    ]
    every = "|".join(months)
    bare = [
        re.compile(p.replace("{month}", f"(?:{every})"), re.I)
        for p in words.entries("facts", "dates.patterns")
    ]
    assert len(bare) == len(w.dates) and any(p.pattern.startswith("(?=[") for p in w.dates)
    rng = random.Random(41)
    dated = [
        f"{rng.randrange(40)}{rng.choice(['. ', '.', ' de ', ' of ', 'st ', 'er ', '/'])}"
        f"{rng.choice(months).replace(chr(92), '')}{rng.choice(['', ' 2026', ', 2027'])}"
        for _ in range(500)
    ]
    dated += [f"{rng.choice(months).replace(chr(92), '')} {rng.randrange(40)}" for _ in range(500)]
    found = 0
    for text in [*_texts(), *dated]:
        text = reading.normalise(text)
        for led_one, plain_one in zip(w.dates, bare, strict=True):
            got = [(m.span(), m.groupdict()) for m in led_one.finditer(text)]
            assert got == [(m.span(), m.groupdict()) for m in plain_one.finditer(text)], text
            found += len(got)
    assert found > 500


def _read_unsieved(module: Any, text: str, language: str, monkeypatch: Any) -> list[Any]:
    with monkeypatch.context() as m:
        m.setattr(clauses.Marks, "may_read", lambda self, text: True)
        return list(module.read(text, [language]))


@pytest.mark.parametrize("module", [commitments, claims], ids=["commitments", "claims"])
def test_a_language_skipped_for_a_text_would_have_read_nothing_in_it(
    module: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    concern, group = GROUPS[0] if module is commitments else GROUPS[1]
    skipped = read = 0
    for text in _texts():
        for language in packs.LANGUAGES:
            marks = clauses.marks(concern, language, group)
            assert marks is not None
            body = clauses.readable(text)
            if marks.may_read(body):
                continue
            skipped += 1
            # No sentence or clause of a text the sieve passes over holds one of its words ...
            for sentence in clauses.sentences(body, marks):
                assert not any(marks.may_hold(c) for c in (sentence.text, *sentence.clauses))
            # ... so reading it in that language finds what the full reading finds: nothing.
            assert module.read(text, [language]) == []
            assert _read_unsieved(module, text, language, monkeypatch) == []
        read += 1
    assert skipped > 1500 and read > 1500
    # Every reading, sieved or not, is the same.
    for text in _texts()[::7]:
        for language in packs.LANGUAGES:
            got = module.read(text, [language])
            assert got == _read_unsieved(module, text, language, monkeypatch), (language, text)


def test_the_number_word_scans_find_what_their_plain_patterns_find() -> None:
    tokens = [w.tokens.pattern for w in number_words.languages().values()]
    any_word = words.compiled(number_words._any_word)
    assert any_word.pattern.startswith("(?=[")
    bare_any = re.compile("|".join(f"(?:{p})" for p in tokens), re.I)
    ambiguous = number_words.ambiguous()
    parts = re.fullmatch(r"(\(\?=\[[^\]]+\]\))(\(\?<!\[\^\\W\\d_\]\))(.*)", ambiguous.pattern)
    assert parts is not None
    first, behind, tail = parts.groups()
    # The same look behind and first letter, in the order of the words' own patterns.
    unswapped = re.compile(behind + first + tail, re.I)
    spelled = ["once", "ONCE", "Elf", "un", "une", "mil", "null", "seis", "einS", "mille"]
    rng = random.Random(42)
    texts = [*_texts()]
    texts += [
        " ".join(rng.choice([*spelled, "x", "1", "我", "-"]) for _ in range(6)) for _ in range(500)
    ]
    found = 0
    for text in texts:
        assert _spans(any_word.finditer(text)) == _spans(bare_any.finditer(text)), text
        got = _spans(ambiguous.finditer(text))
        assert got == _spans(unswapped.finditer(text)), text
        found += len(got)
    assert found > 300


def _commitments_as_read_before(text: str, pack: clauses.Marks) -> list[Any]:
    """Every sentence asked about first, every clause's report and promise before its words."""
    found = []
    for sentence in clauses.sentences(text, pack):
        if pack.has("question", sentence.text):
            continue
        mode = None
        for clause in sentence.clauses:
            if pack.has("reported", clause) or not pack.has("promise", clause):
                continue
            if not pack.may_hold(clause):
                continue
            deeds = clauses.marks("claims", pack.language, "claims")
            told = [
                m.span()
                for p in (deeds.words.values() if deeds else ())
                for m in p.finditer(clause)
            ]
            for kind, pattern in pack.words.items():
                for hit in pattern.finditer(clause):
                    if any(a <= hit.start() and hit.end() <= b for a, b in told):
                        continue  # a deed told as done: a claim
                    if not clauses.denied(pack, clause, hit.start(), hit.end()):
                        mode = mode or commitments._mode(pack, sentence.text)
                        words_ = hit.group().strip()
                        found.append(commitments.Commitment(kind, words_, pack.language, mode))
                        break
    return found


def _claims_as_read_before(
    text: str, words_: clauses.Marks, markers: clauses.Marks
) -> list[claims.Claim]:
    found = []
    for sentence in clauses.sentences(text, markers):
        if markers.has("question", sentence.text):
            continue
        for clause in sentence.clauses:
            if markers.has("reported", clause) or not words_.may_hold(clause):
                continue
            for kind, pattern in words_.words.items():
                for hit in pattern.finditer(clause):
                    if markers.has("conditional", clause[: hit.start()]):
                        continue
                    if not clauses.denied(markers, clause, hit.start(), hit.end()):
                        found.append(
                            claims.Claim(kind, hit.group().strip(), words_.language, sentence.text)
                        )
                        break
    return found


def test_a_clause_read_for_its_words_first_reads_what_every_marker_first_read() -> None:
    said = {"commitments": 0, "claims": 0}
    for text in _texts():
        body = clauses.readable(text)
        for language in packs.LANGUAGES:
            pack = clauses.marks("commitments", language, "kinds")
            claimed = clauses.marks("claims", language, "claims")
            assert pack is not None and claimed is not None
            got = list(commitments._read(body, pack))
            assert got == _commitments_as_read_before(body, pack), (language, text)
            said["commitments"] += len(got)
            found = list(claims._read(body, claimed, pack))
            assert found == _claims_as_read_before(body, claimed, pack), (language, text)
            said["claims"] += len(found)
    assert said["commitments"] > 500 and said["claims"] > 100, said


@functools.cache
def _plain_kinds() -> dict[str, re.Pattern[str]]:
    return {
        k: re.compile(words.alternation("facts", f"kinds.{k}", end=False), re.I)
        for k in ("delivery", "dispatch", "validity", "price")
    }


def _kinds_as_read_before(text: str, at: int) -> frozenset[str]:
    """The kinds around ``at`` as each fact read them: the text split anew, plain patterns."""
    plain = _plain_kinds()
    sentences = facts.spans(text, facts._SENTENCE)
    sentence = next(((a, b) for a, b in sentences if a <= at <= b), (0, len(text)))
    part = text[sentence[0] : sentence[1]]
    offset = at - sentence[0]
    clause = next(
        (part[a:b] for a, b in facts.spans(part, facts._CLAUSE) if a <= offset <= b), part
    )
    for piece in (clause, part):
        found = frozenset(k for k, p in plain.items() if p.search(piece))
        if found:
            return found
    return frozenset()


def test_the_kinds_around_each_fact_of_a_text_read_with_one_split_are_the_kinds_read_anew() -> None:
    assert all(p.pattern.startswith("(?=[") for p in facts._w().kinds.values())
    marked = 0
    rng = random.Random(43)
    for text in _texts()[::3]:
        text = reading.normalise(text)
        kinds = facts._Kinds(text)
        # Positions in any order, each several times, as a text's facts ask for them.
        for at in rng.sample(range(len(text) + 1), min(len(text) + 1, 40)) * 2:
            got = kinds.at(at)
            assert got == _kinds_as_read_before(text, at) == facts.kinds_at(text, at), (text, at)
            marked += bool(got)
    assert marked > 1000


def _names_left_out_one_by_one(text: str) -> str:
    for name in reply_language._NAMES:
        text = re.sub(rf"(?<![A-Za-z]){name}(?![A-Za-z])", " ", text)
    return text


def test_the_carrier_names_left_out_in_one_pass_are_those_left_out_one_by_one() -> None:
    rng = random.Random(44)
    pieces = [
        *reply_language._NAMES,
        "ups",
        "OKAY",
        "XUPS",
        "UPSX",
        "Fed",
        "Ex",
        "-",
        "1",
        " ",
        "。",
    ]
    texts = [*_texts()[::5]]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randrange(1, 10))) for _ in range(3000)]
    left_out = 0
    for text in texts:
        got = reply_language._NAMED.sub(" ", text)
        assert got == _names_left_out_one_by_one(text), text
        left_out += got != text
    assert left_out > 500
