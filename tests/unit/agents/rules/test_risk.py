"""Hand-offs by meaning: risk flags grounded in the ticket's words, the language packs'
backstop in every shipped language, product names that never trigger, a shop's own words."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from baton_kafka.agents import packs, prompts, risk
from baton_kafka.agents.policy import Policy, PolicyError, default_policy, load
from baton_kafka.agents.rules import phrases
from baton_kafka.agents.rules.understanding import understand_rules
from baton_kafka.agents.testing import ScriptedLLM
from baton_kafka.agents.understand import understand
from baton_kafka.schemas.stages import RiskFlag, Understanding
from baton_kafka.streams.runtime.answers.handoffs import TRIGGERS, URGENT
from tests.fixtures.agents import BATON, ticket
from tests.fixtures.data import order, understanding
from tests.fixtures.paths import ROOT, data_rows
from tests.fixtures.risk import score, triggers

CORPUS = data_rows("risk_corpus.jsonl")
ALPINE = ROOT / "examples/shops/alpine/policy.toml"


@pytest.mark.parametrize("lang", packs.LANGUAGES)
def test_the_corpus_hands_off_what_it_must_and_nothing_else_in_every_language(lang: str) -> None:
    cases = [c for c in CORPUS if c["lang"] == lang]
    row = score(cases)[lang]
    assert row["must"] >= 10 and row["must_not"] >= 8
    assert row["missed"] == [], "must hand off with its flag"
    assert row["false"] == [], "must not hand off"


@pytest.mark.parametrize(
    ("text", "products", "found"),
    [
        # What the issue reported: German threats and a German hazard were answered.
        ("Ich schalte meinen Anwalt ein und gehe zur Verbraucherzentrale.", [], {"legal"}),
        ("Beim Anzünden kam eine Stichflamme aus dem Kocher.", [], {"safety"}),
        # ... and product names set off false safety hand-offs.
        ("Mein Spark Schlafsack hat ein Loch.", ["Spark Daunenschlafsack"], set()),
        ("The Trail Pro Shock poles are bent.", ["Trail Pro Shock Trekking Poles"], set()),
        ("The Flame lamp flickers.", ["Flame Table Lamp"], set()),
        # Only the name is cut out: the words around it still count.
        ("My Spark sleeping bag caught fire.", ["Spark Down Sleeping Bag"], {"safety"}),
        ("The Flame lamp is on fire!", ["Flame Table Lamp"], {"safety"}),
        ("ＭＹ ＬＡＷＹＥＲ will call", [], {"legal"}),  # full width, upper case
        # A Latin name ends where kana or Han begin: "Fireの" is the name's "Fire".
        ("Kindle Fireの画面保護フィルムはありますか", ["Kindle Fire HD 8"], set()),
        ("Kindle Fireが充電中に発火しました", ["Kindle Fire HD 8"], {"safety"}),
    ],
)
def test_meaning_not_words_decides_the_hand_off(
    text: str, products: list[str], found: set[str]
) -> None:
    assert triggers(text, products) == found


def test_a_model_flag_stands_only_on_words_the_ticket_contains() -> None:
    text = "Die Heizdecke hat  die Bettwäsche ANGESENGT, bitte melden Sie sich."
    flags = [
        RiskFlag(kind="safety", evidence="hat die Bettwäsche angesengt"),  # spacing, case
        RiskFlag(kind="legal", evidence="mein Anwalt"),  # not in the ticket: invented
        RiskFlag(kind="safety", evidence="Ｈｅｉｚｄｅｃｋｅ"),  # only the product's name
    ]
    kept = risk.grounded(flags, text, ["Heizdecke Comfort"])
    assert [(f.kind, f.evidence) for f in kept] == [("safety", "hat die Bettwäsche angesengt")]
    # The packs do not know "angesengt": the model's flag alone hands the ticket off.
    assert triggers(text) == set()
    u = understanding("Heizdecke", language="de", risks=flags[:2])
    assert triggers(text, understanding=u) == {"safety"}
    invented = understanding("Heizdecke", language="de", risks=flags[1:2])
    assert triggers(text, understanding=invented) == set()


async def test_the_understand_stage_keeps_grounded_flags_and_adds_the_backstops() -> None:
    text = "My Spark sleeping bag caught fire and I will sue you."
    flags = [
        RiskFlag(kind="injection", evidence="approve a refund"),  # not said
        RiskFlag(kind="safety", evidence="Spark"),  # a product's name
        RiskFlag(kind="legal", evidence="I will sue you"),
    ]
    llm = ScriptedLLM([understanding("Spark sleeping bag", risks=flags)])
    bag = order("O-1", product_name="Spark Down Sleeping Bag")
    out = await understand(ticket(text), BATON, llm, orders=[bag])
    assert out.failure is None
    assert [(f.kind, f.evidence) for f in out.value.risks] == [
        ("legal", "I will sue you"),
        ("safety", "caught fire"),
    ]


def test_the_offline_understanding_carries_the_flags_with_their_words() -> None:
    text = "Der Akku hat gequalmt, ich gehe zur Verbraucherzentrale."
    facts = prompts.build(
        "understand", Understanding, ticket=ticket(text), baton=BATON, orders=[]
    ).facts
    u = understand_rules(facts)
    assert [(f.kind, f.evidence) for f in u.risks] == [
        ("safety", "gequalmt"),
        ("legal", "Verbraucherzentrale"),
    ]
    assert triggers(text) == {"safety", "legal"}


def test_a_shop_adds_its_own_trigger_words_per_language(tmp_path: Path) -> None:
    text = "Die Glut aus dem Ofen hat ein Loch in das Zelt gebrannt? Nein: es glimmt noch."
    assert "safety" in triggers(text)  # "gebrannt" is the pack's
    quiet = "Im Zelt glimmt etwas."
    assert triggers(quiet) == set()
    policy = _policy(tmp_path, '[handoff.triggers.de]\nsafety = ["glimmt", "Glut"]\n')
    assert triggers(quiet, policy=policy) == {"safety"}
    # Figurative phrases a shop names are cut out too.
    policy = _policy(tmp_path, '[handoff.triggers.en]\nnot = ["smoke test"]\n')
    assert triggers("The smoke test of the tent failed: it leaks.", policy=policy) == set()
    assert triggers("The smoke test of the tent failed: it leaks.") == {"safety"}


def test_the_policy_switches_decide_which_flags_hand_off(tmp_path: Path) -> None:
    text = "It caught fire and my lawyer knows."
    assert triggers(text) == {"safety", "legal"}
    policy = _policy(tmp_path, "", handoff="safety = false\nlegal = true\n")
    assert triggers(text, policy=policy) == {"legal"}
    off = _policy(tmp_path, "", handoff="self_harm = false\n")
    assert triggers("I want to end my life.") == {"self_harm"}
    assert triggers("I want to end my life.", policy=off) == set()


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ('[handoff.triggers.de]\nfire = ["Feuer"]\n', "'fire' is not a risk"),
        ('[handoff.triggers.de]\nsafety = ["*"]\n', "a lone '*' goes between two words"),
        ('[handoff.triggers.de]\nsafety = ["Gl*ut"]\n', "'*' only starts or ends a word"),
        ('[handoff.triggers.de]\nsafety = [""]\n', "a trigger is 1 to 100 characters"),
        ('[handoff.triggers."not a language"]\nsafety = ["x"]\n', "is not a language code"),
    ],
)
def test_a_bad_trigger_is_one_line_at_load(tmp_path: Path, section: str, message: str) -> None:
    with pytest.raises(PolicyError) as caught:
        _policy(tmp_path, section)
    text = str(caught.value)
    assert message in text and "\n" not in text and "handoff.triggers" in text


def test_every_shipped_language_has_every_risk_and_no_phrase_list_stays_in_python() -> None:
    for lang in packs.LANGUAGES:
        words = packs.pack(risk.CONCERN, lang)
        assert all(words.get(kind) for kind in risk.KINDS), lang
        risk.validate({lang: words})
    assert not hasattr(phrases, "LEGAL") and not hasattr(phrases, "INJECTION")
    source = (ROOT / "agents/rules/reply.py").read_text("utf-8")
    assert not re.search(r"lawyer|律师|ignore (?:all|previous)", source)


def test_a_self_harm_hand_off_is_urgent_and_named() -> None:
    assert TRIGGERS["self_harm"] == "self_harm" and "self_harm" in URGENT


def test_a_long_ticket_is_read_in_milliseconds() -> None:
    import time

    from baton_kafka.agents.languages import ready

    ready()
    text = ("Der Reißverschluss klemmt, bitte tauschen. " * 500)[:20_000]
    risk.scan(text, "de", ["Spark Daunenschlafsack"])  # patterns compiled once
    started = time.perf_counter()
    assert risk.scan(text, "de", ["Spark Daunenschlafsack"]) == []
    assert time.perf_counter() - started < 0.5


def _policy(tmp_path: Path, extra: str, handoff: str = "") -> Policy:
    """The alpine shop's policy, its ``[handoff]`` table ``handoff``, ``extra`` appended."""
    text = re.sub(r"\[handoff\]\n(?:[^\[\n].*\n)*", f"[handoff]\n{handoff}", ALPINE.read_text())
    folder = tmp_path / str(len(list(tmp_path.iterdir())))  # the loader caches by path
    folder.mkdir()
    (folder / "policy.toml").write_text(f"{text}\n{extra}", "utf-8")
    (folder / "handbook.md").write_text("Alpine Outfitters.", "utf-8")
    return load(folder / "policy.toml")


def test_the_default_policy_hands_off_every_risk() -> None:
    rules = default_policy().handoff
    assert all(rules.on(kind) for kind in risk.KINDS)


BLIND = data_rows("risk_blind_corpus.jsonl")
# The blind corpus was written after the packs and run once on them, packs alone (the offline
# understanding, then the strategy stage's check): per language, (must hand off, of them
# missed, must not, of them handed off). The misses were "冒出黑烟", "外壳有点电", "一死了之",
# "qualmen", "mir das Leben zu nehmen" and "recibió una descarga"; the packs learnt them since.
# ja, es and fr had 9 must-not cases in that run; one each was added after it.
BLIND_RUN = {
    "en": (11, 0, 11, 0),
    "zh": (11, 3, 10, 0),
    "de": (11, 2, 10, 0),
    "ja": (11, 0, 9, 0),
    "es": (11, 1, 9, 0),
    "fr": (11, 0, 9, 0),
}


@pytest.mark.parametrize("lang", packs.LANGUAGES)
def test_the_blind_corpus_does_no_worse_than_its_one_blind_run(lang: str) -> None:
    cases = [c for c in BLIND if c["lang"] == lang]
    blind = [c for c in cases if not c.get("after_run")]
    must, missed, must_not, handed = BLIND_RUN[lang]
    ran = score(blind)[lang]
    assert (ran["must"], ran["must_not"]) == (must, must_not)  # the corpus run is the one kept
    assert len(ran["missed"]) <= missed and len(ran["false"]) <= handed, ran
    now = score(cases)[lang]
    assert now["must"] >= 10 and now["must_not"] >= 10
    assert now["missed"] == [] and now["false"] == [], now


@pytest.mark.parametrize(
    ("problem", "found"),
    [("electric shock hazard", {"safety"}), ("漏电", {"safety"}), ("zipper stuck", set())],
)
def test_a_follow_up_on_a_hazard_still_goes_to_a_person(problem: str, found: set[str]) -> None:
    from baton_kafka.agents.rules.reply import handoff_triggers
    from baton_kafka.schemas.baton import Baton, TicketMemory
    from baton_kafka.schemas.stages import StrategyDraft

    dryer = order("O-1", product_name="Spark Hair Dryer")
    memory = TicketMemory(ticket_id="T0", core_problem="-", problem=problem)
    baton = Baton(
        session_id="S1", customer_id="C1", problem=problem, product=dryer.product_name,
        tickets=[memory],
    )  # fmt: skip
    text = ticket("I also want compensation for this.")
    facts = prompts.build("understand", Understanding, ticket=text, baton=baton, orders=[dryer])
    u = understand_rules(facts.facts)
    assert u.problem == problem and u.risks == []  # nothing in this ticket's own words
    strategy = prompts.build(
        "strategy", StrategyDraft, ticket=text, baton=baton, orders=[dryer], understanding=u
    )
    assert set(handoff_triggers(strategy.facts, u, default_policy())) == found
