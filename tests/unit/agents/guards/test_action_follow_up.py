"""The customer is told what is true: an ended action's follow-up, in every shipped language,
carries the figures and the reference of the typed action; a failed one apologises, promises
nothing new and hands the action to a person."""

from __future__ import annotations

import pytest

from baton_kafka.agents.guards.language import language_of
from baton_kafka.schemas.action import Action, LedgerEntry
from baton_kafka.streams.actions.follow_up import follow_up, packet, tells

LANGUAGES = ("en", "zh", "de", "ja", "es", "fr")
NAMES = ("A-1042", "EUR", "RF-900001")


def entry(state: str = "confirmed", language: str | None = "en", **changes: object) -> LedgerEntry:
    action = Action(
        idempotency_key="bt-0123",
        session_id="S1",
        customer_id="C1",
        ticket_id="t1",
        line=0,
        kind="refund",
        order_id="A-1042",
        amount=39.9,
        currency="EUR",
        language=language,
    )
    fields: dict[str, object] = {"attempts": 1, **changes}
    return LedgerEntry(action=action, state=state, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_confirmation_carries_the_reference_and_the_amount_of_the_action(language: str) -> None:
    reply = follow_up(entry("confirmed", language, remote_id="RF-900001"))
    assert reply.status == "action_confirmed" and reply.language == language
    assert "RF-900001" in reply.reply and "39.90 EUR" in reply.reply and "A-1042" in reply.reply
    assert reply.ticket_ids == ["t1"] and reply.ticket_id == "action:bt-0123"
    assert language_of(reply.reply, NAMES, LANGUAGES) == language, reply.reply


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_failure_apologises_without_a_reference_or_a_new_promise(language: str) -> None:
    reply = follow_up(entry("failed", language, detail="HTTP 422: cannot be refunded"))
    assert reply.status == "action_failed"
    assert "A-1042" in reply.reply and "39.90 EUR" in reply.reply
    assert "422" not in reply.reply and "bt-0123" not in reply.reply
    assert language_of(reply.reply, NAMES, LANGUAGES) == language, reply.reply


def test_the_figures_come_from_the_action_not_from_its_detail() -> None:
    reply = follow_up(entry("confirmed", remote_id="77", detail="refunded 999.00 EUR"))
    assert "999" not in reply.reply and "39.90 EUR" in reply.reply and "77" in reply.reply


def test_an_action_without_a_language_is_told_in_the_shops_default() -> None:
    assert follow_up(entry("confirmed", None, remote_id="9"), "de").language == "de"


def test_a_failed_action_gets_one_urgent_packet_for_a_person() -> None:
    failed = entry("needs_person", detail="not done after 3 sends")
    reply = follow_up(failed)
    handed = packet(failed, reply, 600)
    assert handed.reason == "action_failed" and handed.urgency == "high"
    assert handed.packet_id == "action:bt-0123" and handed.ticket_id == "t1"
    assert "not done after 3 sends" in handed.reason_text and handed.reply == reply.reply


def test_only_a_sent_action_that_ended_and_was_not_told_is_told() -> None:
    assert tells(entry("confirmed")) and tells(entry("failed"))
    assert not tells(entry("sent")) and not tells(entry("confirmed", told=True))
    # Refused before it was sent (not backed by the session): a dead letter, not a follow-up.
    assert not tells(entry("needs_person", attempts=0))
