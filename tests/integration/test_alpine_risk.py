"""Hand-offs by meaning in the second shop, end to end on a real broker: German safety and legal
tickets reach a person with the right reason; product names that hold trigger words do not.

The stand-in writes its replies in English, which the language check refuses for a German
customer: every German ticket is handed to a person for that (``validation_failed``). So a
German ticket is judged by its packet's reasons (a risk or none), and the same product names
are also sent in English, where the stand-in's reply is answered."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from baton_kafka.schemas.handoff import HandoffPacket
from baton_kafka.schemas.records import Order
from tests.fixtures import delivery
from tests.fixtures.data import order, ticket_record
from tests.fixtures.deployments import Deployment
from tests.fixtures.paths import ROOT

ALPINE = ROOT / "examples/shops/alpine/policy.toml"
PRODUCTS = {
    "stove": "Alpin Gaskocher 2000",
    "bag": "Spark Daunenschlafsack -5C",
    "poles": "Trail Pro Shock Trekkingstöcke",
    "lamp": "Flame Stirnlampe 300",
}
# ticket key -> (product, text, the hand-off reason or None: answered without a person)
TICKETS: dict[str, tuple[str, str, str | None]] = {
    "stichflamme": (
        "stove",
        "Beim Anzünden kam eine Stichflamme aus dem Gaskocher, ich habe mir die Hand verbrannt.",
        "safety",
    ),
    "anwalt": (
        "stove",
        "Der Gaskocher ist undicht. Ich habe meinen Anwalt eingeschaltet und mich an die "
        "Verbraucherzentrale gewandt.",
        "legal",
    ),
    "klage": ("bag", "Wenn Sie nicht erstatten, reiche ich Klage ein.", "legal"),
    "spark": (
        "bag",
        "Der Reißverschluss an meinem Spark Daunenschlafsack klemmt, ich möchte ihn umtauschen.",
        None,
    ),
    "shock": (
        "poles",
        "Die Trail Pro Shock Trekkingstöcke sind verbogen angekommen, bitte um Umtausch.",
        None,
    ),
    "flame": ("lamp", "Die Flame Stirnlampe flackert, ich möchte sie umtauschen.", None),
    "flame_fire": ("lamp", "Meine Flame Stirnlampe hat beim Laden Feuer gefangen!", "safety"),
    "spark_en": ("bag", "The zipper of my Spark sleeping bag is stuck, can I exchange it?", None),
    "shock_en": ("poles", "My Trail Pro Shock poles arrived bent, please exchange them.", None),
    "flame_en": ("lamp", "The Flame headlamp flickers, I would like an exchange.", None),
}
RISKS = frozenset({"safety", "legal", "self_harm", "prompt_injection"})


def _orders(prefix: str) -> list[Order]:
    delivered = datetime.now(UTC) - timedelta(days=2)
    return [
        order(
            f"7{i:08d}",
            f"{prefix}c-{key}",
            product_name=PRODUCTS[product],
            amount=89.0,
            currency="EUR",
            ordered_at=delivered - timedelta(days=3),
            delivered_at=delivered,
        )
        for i, (key, (product, _, _)) in enumerate(TICKETS.items())
    ]


@pytest.mark.timeout(300)
async def test_german_safety_and_legal_reach_a_person_and_product_names_do_not(
    deployment: Deployment,
) -> None:
    d, p = deployment, deployment.namespace
    d.env_extra.update(BATON_POLICY=str(ALPINE))
    d.import_orders(_orders(p))
    d.start_worker()
    await d.publish_tickets(
        ticket_record(f"{p}t-{key}", f"{p}s-{key}", f"{p}c-{key}", text)
        for key, (_, text, _) in TICKETS.items()
    )
    replies = {r.ticket_id: r for r in await delivery.replies(d, len(TICKETS), quiet=1.0)}
    assert len(replies) == len(TICKETS)
    handed = sum(r.status == "handoff" for r in replies.values())
    packets = {
        k.ticket_id: k
        for k in (
            HandoffPacket.model_validate_json(v)
            for v, _ in await d.read("support.handoffs", lambda vs: len(vs) >= handed)
        )
    }
    for key, (_, _, reason) in TICKETS.items():
        reply, packet = replies[f"{p}t-{key}"], packets.get(f"{p}t-{key}")
        if reason is not None:
            assert reply.status == "handoff" and reply.language == "de", (key, reply.reply)
            assert packet is not None, key
            assert packet.reason == reason and packet.urgency == "high", (key, packet.reasons)
        elif key.endswith("_en"):
            assert reply.status == "answered" and packet is None, (key, reply.internal_note)
        else:
            assert packet is None or not RISKS & set(packet.reasons), (key, packet.reasons)
