"""An order id the customer writes is tried first, in every shipped language."""

from __future__ import annotations

import random
import re
import unicodedata

import pytest

from baton_kafka.agents.lookup import look_up
from baton_kafka.agents.rules.order_ids import SHORT_ID, SHORT_NUMBER, written_ids
from baton_kafka.agents.testing import ScriptedLLM
from baton_kafka.schemas.baton import Baton
from baton_kafka.schemas.records import Order
from tests.fixtures.data import order, ticket, understanding
from tests.fixtures.pipelines import in_memory

IDS = ["2026-004502", "2026-004503", "O-1001", "450789469", "727", "#1002", "JD-7"]

# (language, message, the ids it writes)
WRITTEN = [
    ("de", "Best. 2026-004502 ist noch nicht da.", ["2026-004502"]),
    ("de", "Bestellnummer: 2026-004503, Größe 42 passt nicht", ["2026-004503"]),
    ("en", "Where is order O-1001? I ordered 2 of them.", ["O-1001"]),
    ("en", "order #727 arrived broken", ["727"]),
    ("en", "my orders 450789469 and 2026-004502 both", ["450789469", "2026-004502"]),
    ("zh", "订单2026-004502还没到，怎么回事？", ["2026-004502"]),
    ("zh", "订单号：o-1001，尺码42码", ["O-1001"]),
    ("ja", "注文番号２０２６-００４５０２の商品がまだ届きません", ["2026-004502"]),
    ("ja", "注文#727について", ["727"]),
    ("es", "Pedido 450789469: la talla 40 no me queda.", ["450789469"]),
    ("es", "Mi pedido #1002 llegó roto", ["#1002"]),
    ("fr", "Commande 2026-004502.", ["2026-004502"]),
    ("fr", "Ma commande n° O-1001, taille 38", ["O-1001"]),
]

# Numbers that are not the customer's order ids: part of a longer token, a quantity, a size.
NOT_WRITTEN = [
    ("de", "Ich habe 727 Euro bezahlt, Größe 1002"),
    ("de", "Rechnung 12026-004502 und Artikel 2026-004502-1"),
    ("en", "I ordered 727 units of product O-10010"),
    ("en", "tracking 450789469123 says delivered"),
    ("zh", "我买了727个，尺码1002"),
    ("ja", "注文番号2026-0045020の件"),
    ("es", "Pagué 727,50 euros por el pedido"),
    ("fr", "J'ai payé 450789469,50 pour la commande"),
]


# Written after the matcher, as a blind check (one surprise, kept: "A-77", four characters with
# a letter, is read without its "#", as every id of four characters or more is).
BLIND_IDS = ["2026-004502", "O-1001", "450789469", "727", "SO123456", "A-77"]
BLIND = [
    ("en", "Hi, order no. SO123456 hasn't shipped", ["SO123456"]),
    ("en", "re: #SO123456", ["SO123456"]),
    ("en", "order (2026-004502) is late", ["2026-004502"]),
    ("en", "2026-004502's box was crushed", ["2026-004502"]),
    ("en", "it cost 450,789,469 dong", []),
    ("en", "A-77 is my order", ["A-77"]),
    ("de", "Bestellung Nr.2026-004502", ["2026-004502"]),
    ("de", "Bestellung „2026-004502“", ["2026-004502"]),
    ("de", "am 2026-00-45 bestellt", []),
    ("zh", "单号450789469", ["450789469"]),
    ("zh", "订单号是SO123456吗", ["SO123456"]),
    ("zh", "我买了727件", []),
    ("ja", "注文番号：SO123456", ["SO123456"]),
    ("ja", "４５０７８９４６９番の注文", ["450789469"]),
    ("es", "pedido nº 2026-004502, talla M", ["2026-004502"]),
    ("es", "pagué 4507894690 pesos", []),
    ("fr", "commande «2026-004502»", ["2026-004502"]),
    ("fr", "réf. O-1001/2", []),
]


@pytest.mark.parametrize(("lang", "text", "ids"), WRITTEN)
def test_an_id_written_in_any_language_is_found(lang: str, text: str, ids: list[str]) -> None:
    assert written_ids(text, IDS) == ids, lang


@pytest.mark.parametrize(("lang", "text", "ids"), BLIND)
def test_the_blind_corpus(lang: str, text: str, ids: list[str]) -> None:
    assert written_ids(text, BLIND_IDS) == ids, lang


@pytest.mark.parametrize(("lang", "text"), NOT_WRITTEN)
def test_a_number_that_is_not_an_id_of_theirs_is_not_one(lang: str, text: str) -> None:
    assert written_ids(text, IDS) == [], lang


class Orders:
    """A customer's orders, read-only, in memory."""

    def __init__(self, *orders: Order) -> None:
        self.orders = list(orders)

    async def for_customer(self, customer_id: str, limit: int = 50) -> list[Order]:
        mine = [o for o in self.orders if o.customer_id == customer_id]
        return sorted(mine, key=lambda o: o.ordered_at, reverse=True)[:limit]

    async def get(self, order_id: str) -> Order | None:
        return next((o for o in self.orders if o.order_id == order_id), None)

    async def close(self) -> None:
        pass


STORE = Orders(
    order("2026-004502", day=2, product_name="Summit Down Jacket", status="paid"),
    order("2026-004510", day=20, product_name="Trail Backpack 30L", status="shipped"),
    order("2026-004520", day=25, product_name="Basecamp Tent 2P", status="delivered"),
)
BATON = Baton(session_id="S1", customer_id="C1", order_id="2026-004520")


@pytest.mark.parametrize(
    "text",
    [
        "Best. 2026-004502 ist noch nicht da.",
        "Where is 2026-004502?",
        "订单2026-004502呢？",
        "注文2026-004502はどこですか",
        "¿Dónde está el pedido 2026-004502?",
        "Où en est la commande 2026-004502 ?",
    ],
)
async def test_a_written_id_wins_without_a_product_over_the_session_order(text: str) -> None:
    llm = ScriptedLLM()
    out = await look_up(ticket("T-1", text), understanding(None), BATON, STORE, llm)
    assert out.value.order_id == "2026-004502" and out.value.method == "deterministic"
    assert "wrote the order id" in out.value.reason and llm.calls == []


async def test_a_written_id_wins_over_another_product_named() -> None:
    u = understanding("Basecamp Tent 2P")
    out = await look_up(ticket("T-1", "Tent? no: 2026-004502"), u, BATON, STORE, ScriptedLLM())
    assert out.value.order_id == "2026-004502"


async def test_an_id_of_another_customer_is_never_chosen() -> None:
    theirs = Orders(*STORE.orders, order("2026-009999", customer="C2", product_name="Stove"))
    out = await look_up(
        ticket("T-1", "2026-009999?"), understanding(None), BATON, theirs, ScriptedLLM()
    )
    assert out.value.order_id != "2026-009999"


async def test_the_reply_is_about_the_order_written_in_the_message() -> None:
    pipeline = in_memory(STORE)
    *_, tent = await pipeline.send(ticket("T-1", "Das Zelt Basecamp Tent 2P hat einen Riss."))
    assert tent.order_id == "2026-004520"
    # The same session: the tent is its order, and the message names another by its id alone.
    *_, reply = await pipeline.send(ticket("T-2", "Best. 2026-004502 ist noch nicht da."))
    assert reply.order_id == "2026-004502" and "Summit Down Jacket" in reply.reply


def _by_pattern(text: str, order_ids: list[str]) -> list[str]:
    """The ids found by one pattern per id: what the hand-written search must find."""
    edge = r"0-9a-z\u00c0-\u024f_/\-"
    norm = unicodedata.normalize("NFKC", text).casefold()
    found = []
    for oid in dict.fromkeys(order_ids):
        bare = unicodedata.normalize("NFKC", oid).casefold().strip().lstrip("#")
        if not bare:
            continue
        short = len(bare) < (SHORT_NUMBER if bare.isdigit() else SHORT_ID)
        mark = "#" if short else "#?"
        rx = re.compile(f"(?<![{edge}#]){mark}{re.escape(bare)}(?![{edge}]|[.,:][0-9a-z])")
        if hit := rx.search(norm):
            found.append((hit.start(), oid))
    return [oid for _, oid in sorted(found)]


def test_the_search_finds_what_a_pattern_per_id_finds() -> None:
    ids = ["O-1001", "#77", "1234", "12345", "ab", "EV-101", "Ä-12", "ｏ-2002", "x/9", "#"]
    alphabet = ["O-1001", "o-1001", "#", "77", "1234", "12345", "ab", "ev-101", "ä-12", "o-2002"]
    alphabet += [" ", ".", ",", ":", "-", "/", "_", "a", "9", "é", "订单", "x/9", "\u0250"]
    rng = random.Random(7)
    for _ in range(4000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        assert written_ids(text, ids) == _by_pattern(text, ids), text
