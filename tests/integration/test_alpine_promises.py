"""The second shop end to end with a model that promises in words: a refund, an exchange or a
repair the offer does not hold (out of window, above approval, on a cancelled or refunded
order), or says a technician already came. Nothing beyond the policy is sent: each such draft
is re-asked with the reason, then handed to a person; a draft whose words are its lines is
answered."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from baton_kafka.agents.testing.standin import Request, StandIn, echo_responder
from baton_kafka.schemas import Order
from baton_kafka.schemas.stages import Understanding
from tests.fixtures import delivery
from tests.fixtures.brokers import Broker
from tests.fixtures.data import days_ago, ticket_record
from tests.fixtures.deployments import open_deployment
from tests.fixtures.paths import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.timeout(400)]

ALPINE = ROOT / "examples/shops/alpine/policy.toml"
CUSTOMER = "c-lena"


def _order(oid: str, name: str, status: str, amount: float, delivered: int | None) -> Order:
    return Order(
        order_id=oid,
        customer_id=CUSTOMER,
        product_name=name,
        status=status,
        amount=amount,
        currency="EUR",
        ordered_at=days_ago((delivered or 0) + 5),
        delivered_at=days_ago(delivered) if delivered is not None else None,
        refunded=amount if status == "refunded" else 0.0,
    )


ORDERS = [
    _order("400700001", "Daunenschlafsack Spark", "delivered", 89.0, 45),
    _order("400700002", "Zelt Dolomit 3", "paid", 250.0, None),
    _order("400700003", "Trail Pro Shock Stöcke", "cancelled", 79.0, None),
    _order("400700004", "Stirnlampe Lux 400", "refunded", 49.0, 20),
    _order("400700005", "Trekkingrucksack 45L", "delivered", 129.0, 3),
    _order("400700006", "Wanderschuh Alpin GTX", "delivered", 159.0, 2),
]
# What the model writes for each ticket's order: the words, and the lines it types.
DRAFTS: dict[str, tuple[str, list[dict[str, Any]]]] = {
    # Out of the 7-day exchange window, no line.
    "400700001": (
        "Wir tauschen Ihren Daunenschlafsack Spark gerne gegen eine andere Größe um.",
        [],
    ),
    # 250 EUR is above the 100 approval threshold: promised in words, no line.
    "400700002": ("Wir erstatten Ihnen den vollen Betrag für Ihr Zelt Dolomit 3 sofort.", []),
    "400700003": ("Den Betrag für die Trail Pro Shock Stöcke erstatten wir Ihnen gerne.", []),
    "400700004": ("Wir erstatten Ihnen die Stirnlampe Lux 400 noch einmal.", []),
    # A deed the records do not show.
    "400700005": (
        "Unser Techniker war bereits bei Ihnen und hat den Trekkingrucksack 45L repariert.",
        [],
    ),
    # Natural: the words are the line.
    "400700006": (
        "Bitte senden Sie den Wanderschuh Alpin GTX mit dem Rücksendeetikett zurück, das wir "
        "Ihnen per E-Mail schicken; wir tauschen ihn kostenlos in die andere Größe um.",
        [{"kind": "exchange", "order_id": "400700006"}],
    ),
}
TICKETS = {
    "400700001": "Mein Schlafsack (Bestellung 400700001) ist zu klein, kann ich ihn umtauschen?",
    "400700002": "Bitte erstatten Sie mir das Zelt, Bestellung 400700002.",
    "400700003": "Ich möchte mein Geld für Bestellung 400700003 zurück.",
    "400700004": "Ich möchte eine Erstattung für die Stirnlampe, Bestellung 400700004.",
    "400700005": "Der Rucksack aus Bestellung 400700005 hat einen gerissenen Reißverschluss.",
    "400700006": "Die Schuhe aus Bestellung 400700006 sind zu groß, ich möchte umtauschen.",
}


# What the customer wants, as a model reads the German ticket (the rules read en and zh only).
DEMANDS = {
    "400700001": "exchange",
    "400700002": "refund",
    "400700003": "refund",
    "400700004": "refund",
    "400700005": "repair",
    "400700006": "exchange",
}


def _scripted(request: Request) -> BaseModel | Mapping[str, Any]:
    """The stand-in's answers: the rules for every stage, with the German ticket's demand, and
    the script above for the strategy."""
    if request.facts is None or request.stage not in ("understand", "strategy"):
        return echo_responder(request)
    oid = next(o for o in DRAFTS if o in request.facts.message)
    if request.stage == "understand":
        read = Understanding.model_validate(echo_responder(request).model_dump())
        return read.model_copy(update={"demand": DEMANDS[oid], "language": "de"})
    reply, offer = DRAFTS[oid]
    return {
        "solution": "Answer the customer.",
        "reply": f"Guten Tag, zu Ihrer Bestellung {oid}: {reply}",
        "internal_note": "Scripted draft.",
        "confidence": 0.9,
        "needs_human": False,
        "offer": offer,
    }


@pytest.fixture
def responder() -> Any:
    return _scripted


async def test_nothing_beyond_the_policy_is_sent_in_words(
    broker: Broker, own_standin: StandIn, tmp_path: Path
) -> None:
    with open_deployment(broker, own_standin.base_url, tmp_path, BATON_POLICY=str(ALPINE)) as d:
        d.import_orders(ORDERS)
        d.start_worker()
        ids = {oid: f"t-{oid}-{d.namespace}" for oid in TICKETS}
        await d.publish_tickets(
            [ticket_record(ids[o], f"s-{o}", CUSTOMER, text) for o, text in TICKETS.items()]
        )
        replies = {r.ticket_id: r for r in await delivery.replies(d, len(TICKETS))}
        letters = await d.dead_letters(len(TICKETS) - 1)
    assert set(replies) == set(ids.values())
    for oid, tid in ids.items():
        reply = replies[tid]
        words, _ = DRAFTS[oid]
        if oid == "400700006":
            assert reply.status == "answered" and words in reply.reply, (
                reply.reply,
                reply.internal_note,
                [(dl.ticket_id, dl.error) for dl, _ in letters],
            )
            assert reply.offer is not None and reply.offer.state == "approved"
            assert [line.kind for line in reply.offer.lines] == ["exchange"]
            continue
        # Re-asked with the reason, then handed to a person: the promise is never sent.
        assert reply.status == "handoff", (oid, reply.status, reply.reply)
        assert words not in reply.reply and reply.offer is None
    errors = {dl.ticket_id: dl.error for dl, _ in letters}
    for oid in ("400700001", "400700002", "400700003", "400700004"):
        assert errors[ids[oid]].startswith("commitment:"), errors[ids[oid]]
    assert errors[ids["400700005"]].startswith("claim:"), errors[ids["400700005"]]
    strategy_calls = own_standin.stats()["by_stage"].get("strategy", 0)
    # Two calls (the draft and its re-ask) for each rejected ticket, one for the natural one.
    assert strategy_calls == 2 * (len(TICKETS) - 1) + 1
    delivery.figures(
        f"promises in words on the second shop, {broker.kind}",
        tickets=len(TICKETS),
        handed_off=sum(r.status == "handoff" for r in replies.values()),
        strategy_calls=strategy_calls,
    )
