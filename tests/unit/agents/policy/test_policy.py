"""The policy as data: one file read at start, rendered for the model, enforced on the offer."""

from __future__ import annotations

import hashlib
import unicodedata
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from baton_kafka.agents import memory
from baton_kafka.agents.guards.reading import normalise
from baton_kafka.agents.policy import DEFAULT_FILE, PolicyError, default_policy, load, parse
from baton_kafka.agents.policy.offer import OfferContext, problems, settle
from baton_kafka.agents.policy.render import read_back, render
from baton_kafka.agents.prompts import prompt_version, system_prompt
from baton_kafka.schemas import Baton, OfferLine, Order
from baton_kafka.streams.settings import SettingsError
from baton_kafka.streams.settings import load as load_settings
from tests.fixtures.data import reply
from tests.fixtures.paths import ROOT

ALPINE = ROOT / "examples/shops/alpine/policy.toml"
TODAY = date(2026, 11, 30)
# What the prompt's policy data leaves to the prose: the remedies' texts, the shop's words.
RULES_ONLY = {"shop": {"notes"}, "remedies": {"__all__": {"text"}}}


def _order(
    status: str = "delivered", amount: float = 59.0, delivered: int = 20, refunded: float = 0.0
) -> Order:
    return Order(
        order_id="O-1001",
        customer_id="C1",
        product_name="Aurora Kettle",
        status=status,
        amount=amount,
        currency="EUR",
        ordered_at=datetime(2026, 11, 1, tzinfo=UTC),
        delivered_at=datetime(2026, 11, delivered, tzinfo=UTC),
        refunded=refunded,
    )


def _line(kind: str, amount: float | None = None, channel: str | None = None) -> OfferLine:
    money = amount is not None
    return OfferLine(
        kind=kind,
        order_id="O-1001",
        amount=amount,
        currency="EUR" if money else None,
        channel=channel or ("original_payment" if money else None),
    )


def test_the_version_is_the_hash_of_the_file() -> None:
    policy = default_policy()
    assert policy.version == hashlib.sha256(DEFAULT_FILE.read_bytes()).hexdigest()[:12]
    assert load(ALPINE).version != policy.version
    back = read_back(system_prompt("strategy"))
    assert back is not None and back.version == policy.version
    assert back.model_dump(exclude=RULES_ONLY) == policy.model_dump(exclude=RULES_ONLY)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            b"[money]\nrefund_everything = true\n[remedies.x]\ntext='a'",
            "f.toml: money.refund_everything: unknown key",
        ),
        (
            b"[remedies.refund]\ntext='a'\nmoney=true",
            "f.toml: remedies: refund: a money remedy needs",
        ),
        (
            b"[remedies.c]\ntext='a'\nshare=1.5",
            "f.toml: remedies.c.share: Input should be less than or equal to 1",
        ),
        (
            b"[orders]\nid_patterns=['\\d+']\n[remedies.x]\ntext='a'",
            "matches plain small numbers",
        ),
        (b"[remedies.x\ntext='a'", "f.toml: not valid TOML"),
        (b"[shop]\nname='x'", "f.toml: remedies: Field required"),
    ],
)
def test_a_wrong_key_or_value_is_one_line_naming_the_file_and_the_key(
    text: bytes, said: str
) -> None:
    with pytest.raises(PolicyError) as caught:
        parse(text, "f.toml")
    assert said in str(caught.value) and "\n" not in str(caught.value)


def test_a_worker_will_not_start_on_a_bad_policy(tmp_path: Path) -> None:
    bad = tmp_path / "policy.toml"
    bad.write_text("[remedies.refund]\ntext = 'x'\nmoney = true\ncap = 'lots'\n", "utf-8")
    with pytest.raises(SettingsError, match=r"^\S*policy.toml: remedies.refund"):
        load_settings({"BATON_POLICY": str(bad)})
    with pytest.raises(SettingsError, match="cannot read the policy file"):
        load_settings({"BATON_POLICY": str(tmp_path / "missing.toml")})
    assert load_settings({"BATON_POLICY": str(ALPINE)}).policy_file == ALPINE


def test_the_handbook_says_what_the_policy_file_says() -> None:
    demo, alpine = render(default_policy()), render(load(ALPINE))
    assert "at most 10% of the amount paid and 100 in the order's currency" in demo
    assert "paid to original payment only" in demo
    assert "at most 15% of the amount paid and 60 in the order's currency" in alpine
    assert "paid to store credit only" in alpine and "above 100 in the order's currency" in alpine
    assert "alpine-outfitters.example" in alpine
    assert system_prompt("strategy", load(ALPINE)).startswith(system_prompt("strategy")[:200])
    assert prompt_version(load(ALPINE)) != prompt_version()
    back = read_back(system_prompt("understand", load(ALPINE)))
    assert back is not None and back.version == load(ALPINE).version
    assert back.model_dump(exclude=RULES_ONLY) == load(ALPINE).model_dump(exclude=RULES_ONLY)


# The demo shop's rules as prose: a second shop's handbook must not tell its model these.
DEMO_PROSE = (
    "household appliances",
    "Can be cancelled with a full refund",
    "Cannot be cancelled any more",
    "Returns, exchanges, repairs",
    "and compensation apply from here",
    "Cannot be refunded again",
    "gets a refund without returning anything",
    "A shipped order is not cancelled",
    "investigation, not a refund",
    "5-7 business days",
    "2-3 days to ship back",
    "These always go to a person",
)


@pytest.mark.parametrize("stage", ["understand", "lookup", "strategy"])
def test_the_shared_handbook_states_no_shops_rules_but_the_policys(stage: str) -> None:
    alpine = load(ALPINE)
    around = system_prompt(stage, alpine).replace(render(alpine), "")
    assert [p for p in DEMO_PROSE if p in around] == []
    assert "within 3 business days after the item arrives" in system_prompt(stage, alpine)


def test_the_shops_own_words_come_from_its_handbook_file(tmp_path: Path) -> None:
    alpine = system_prompt("strategy", load(ALPINE))
    assert "# About Alpine Outfitters" in alpine and "The Alpine Outfitters team" in alpine
    assert "# About" not in system_prompt("strategy")
    (tmp_path / "policy.toml").write_bytes(ALPINE.read_bytes())
    (tmp_path / "handbook.md").write_text("Sign every reply with 'Cheers, Ana'.", "utf-8")
    copy = load(tmp_path / "policy.toml")
    assert "Cheers, Ana" in system_prompt("strategy", copy)
    assert copy.version != load(ALPINE).version  # the handbook's hash is part of the version
    (tmp_path / "handbook.md").unlink()
    load.cache_clear()
    with pytest.raises(PolicyError, match=r"policy.toml: shop.handbook: cannot read .*handbook.md"):
        load(tmp_path / "policy.toml")


CASES = [
    # (what, lines, order, demand, already, the problem's words; "" for none)
    ("a refund within the price", [_line("refund", 59.0)], _order(), "refund", {}, ""),
    (
        "refund plus a voucher",
        [_line("refund", 59.0), _line("compensation", 15.0, "voucher")],
        _order(),
        "refund",
        {},
        "channel voucher is not allowed",
    ),
    (
        "two refunds each within the price",
        [_line("refund", 40.0), _line("refund", 40.0)],
        _order(),
        "refund",
        {},
        "more than the 59.00 paid",
    ),
    (
        "compensation above 10%",
        [_line("compensation", 20.0)],
        _order(),
        "compensation",
        {},
        "above the policy's limit of 5.90",
    ),
    ("compensation at 10%", [_line("compensation", 5.9)], _order(), "compensation", {}, ""),
    (
        "compensation for a question",
        [_line("compensation", 5.0)],
        _order(),
        "information",
        {},
        "does not answer a information request",
    ),
    (
        "a refund of a refunded order",
        [_line("refund", 59.0)],
        _order("refunded"),
        "refund",
        {},
        "not allowed for an order that is refunded",
    ),
    (
        "a refund of a cancelled order",
        [_line("refund", 10.0)],
        _order("cancelled"),
        "refund",
        {},
        "not allowed for an order that is cancelled",
    ),
    (
        "another currency",
        [
            OfferLine(
                kind="refund",
                order_id="O-1001",
                amount=5,
                currency="USD",
                channel="original_payment",
            )
        ],
        _order(),
        "refund",
        {},
        "USD is not the order's currency",
    ),
    (
        "another order",
        [OfferLine(kind="repair", order_id="O-9")],
        _order(),
        "repair",
        {},
        "not the matched order O-1001",
    ),
    (
        "a remedy the shop does not have",
        [_line("upgrade")],
        _order(),
        "other",
        {},
        "not a remedy of this shop",
    ),
    (
        "an amount on an exchange",
        [_line("exchange", 10.0)],
        _order(),
        "exchange",
        {},
        "carries no amount",
    ),
    (
        "a refund after earlier compensation",
        [_line("refund", 59.0)],
        _order(),
        "refund",
        {"compensation": 5.9},
        "5.90 was offered before",
    ),
    ("the same refund restated", [_line("refund", 59.0)], _order(), "refund", {"refund": 59.0}, ""),
    (
        "what is left after the shop's partial refund",
        [_line("refund", 19.0)],
        _order(refunded=40.0),
        "refund",
        {},
        "",
    ),
    (
        "more than is left after the shop's partial refund",
        [_line("refund", 20.0)],
        _order(refunded=40.0),
        "refund",
        {},
        "more than the 59.00 paid less the 40.00 already refunded",
    ),
    (
        "the rest refunded, then compensation on top",
        [_line("refund", 19.0), _line("compensation", 1.0)],
        _order(refunded=40.0),
        "complaint",
        {},
        "already refunded",
    ),
    (
        "an order the shop refunded in full",
        [_line("refund", 1.0)],
        _order(refunded=59.0),
        "refund",
        {},
        "less the 59.00 already refunded",
    ),
    (
        "a shop's refund and baton's earlier offer together",
        [_line("compensation", 5.0)],
        _order(refunded=40.0),
        "complaint",
        {"refund": 15.0},
        "15.00 was offered before",
    ),
]


@pytest.mark.parametrize(
    ("lines", "order", "demand", "already", "said"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_the_offer_is_checked_as_a_whole(
    lines: list[OfferLine], order: Order, demand: str, already: dict[str, float], said: str
) -> None:
    found = problems(lines, default_policy(), OfferContext(order, demand, TODAY, already))
    if said:
        assert any(said in p for p in found), found
    else:
        assert found == []


def test_what_the_shop_refunded_is_an_amount_within_the_order() -> None:
    assert _order().refunded == 0.0  # absent, as in every order written before it
    with pytest.raises(ValueError, match="more than the order's amount"):
        _order(refunded=60.0)
    with pytest.raises(ValueError, match="not yes or no"):
        Order.model_validate({**_order().model_dump(), "refunded": True})
    context = OfferContext(_order(refunded=40.0), "refund", TODAY, {"compensation": 5.0})
    assert context.left("refund") == 14.0
    assert OfferContext(_order(refunded=59.0), "refund", TODAY).left("refund") == 0.0


def test_nothing_is_offered_without_an_order_or_past_a_window() -> None:
    found = problems([_line("repair")], default_policy(), OfferContext(None, "repair", TODAY))
    assert found and "no order is matched" in found[0]
    alpine = load(ALPINE)
    late = OfferContext(_order(delivered=2), "exchange", TODAY)  # delivered 28 days ago
    assert any("past its 7-day window" in p for p in problems([_line("exchange")], alpine, late))
    soon = OfferContext(_order(delivered=27), "exchange", TODAY)
    assert problems([_line("exchange")], alpine, soon) == []
    refund = OfferContext(_order(delivered=27), "refund", TODAY)
    assert (
        "not allowed for an order that is delivered"
        in problems([_line("refund", 10)], alpine, refund)[0]
    )


def test_an_offer_above_the_threshold_waits_for_a_person() -> None:
    alpine = load(ALPINE)
    order = _order("paid", amount=150.0)
    big = [_line("cancellation"), _line("refund", 150.0)]
    assert problems(big, alpine, OfferContext(order, "cancel", TODAY)) == []
    proposed = settle(big, alpine, order)
    assert proposed is not None and proposed.state == "needs_approval" and proposed.total == 150
    small = settle([_line("refund", 99.0)], alpine, order)
    assert small is not None and small.state == "approved"
    assert settle([], alpine, order) is None


def test_the_session_remembers_what_was_offered_per_order_and_remedy() -> None:
    baton = Baton(session_id="S-1", customer_id="C1")
    offer = settle([_line("refund", 59.0)], default_policy(), _order())
    answered = reply("T-1", "S-1", offer=offer)
    baton = memory.apply_reply(baton, answered)
    baton = memory.apply_reply(baton, reply("T-2", "S-1", offer=offer))  # the same refund again
    assert baton.offered == {"O-1001": {"refund": 59.0}}
    held = reply(
        "T-3",
        "S-1",
        status="handoff",
        offer=settle([_line("compensation", 5.0)], default_policy(), _order()),
    )
    assert memory.apply_reply(baton, held).offered == baton.offered  # not promised


def test_every_format_character_is_removed_before_the_text_is_read() -> None:
    cf = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) == "Cf"]
    assert normalise("5" + "".join(cf) + "9") == "59"
    assert normalise("Ｇ－９００１ ￥５９") == "G-9001 ¥59"
