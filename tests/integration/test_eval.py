"""``baton eval`` end to end: the labelled set through the real pipeline and the stand-in."""

from __future__ import annotations

import re
from typing import Any

import orjson
import pytest

from tests.fixtures.evals import eval_report
from tests.fixtures.paths import TEST_DATA

pytestmark = pytest.mark.integration


def _lines(name: str) -> list[dict[str, Any]]:
    return [orjson.loads(x) for x in (TEST_DATA / name).read_bytes().splitlines() if x.strip()]


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    """One echo run of the shipped eval set (its own broker, worker and stand-in), judged by
    the stand-in's judging rules."""
    return eval_report("--judge")


@pytest.mark.timeout(660)
def test_every_labelled_ticket_is_scored_once_in_file_order(report: dict[str, Any]) -> None:
    lines = _lines("eval_tickets.jsonl")
    assert report["llm"] == "echo"
    assert [t["ticket_id"] for t in report["tickets"]] == [x["ticket_id"] for x in lines]
    summary = report["summary"]
    assert summary["tickets"] == len(lines)
    assert summary["sessions"] == len({x["session_id"] for x in lines})
    assert sum(summary["statuses"].values()) == len(lines)
    # The worker answered through the Messages API (the stand-in), not the offline rules.
    assert {t["llm"] for t in report["tickets"]} == {"anthropic"}
    for t, x in zip(report["tickets"], lines, strict=True):
        assert (t["phase"], t["expected_order"]) == (x["label"]["phase"], x["label"]["order_id"])


@pytest.mark.timeout(660)
def test_verdicts_agree_with_the_replies(report: dict[str, Any]) -> None:
    labels = {x["ticket_id"]: x["label"] for x in _lines("eval_tickets.jsonl")}
    customers = {x["ticket_id"]: x["customer_id"] for x in _lines("eval_tickets.jsonl")}
    own: dict[str, set[str]] = {}
    for o in _lines("eval_orders.jsonl"):
        own.setdefault(o["customer_id"], set()).add(o["order_id"])
    for t in report["tickets"]:
        label, text = labels[t["ticket_id"]], t["reply"].casefold()
        terms = [label["product"], *label.get("product_terms", [])] if label["product"] else []
        if not terms:
            assert t["product"] is None
        elif not any(term.casefold() in text for term in terms):
            assert t["product"] is False, t["ticket_id"]
        if t["product"]:
            assert any(term.casefold() in text for term in terms), t["ticket_id"]
        if t["problem"]:
            assert any(term.casefold() in text for term in label["problem"]), t["ticket_id"]
        expected = label["order_id"]
        assert t["order_resolved"] == (t["order_id"] == expected)
        named = expected is None or re.search(
            rf"(?<![\w-]){re.escape(expected)}(?![\w-])", t["reply"]
        )
        assert t["order"] == (t["order_id"] == expected and bool(named))
        assert t["missing"] == [
            f for f in ("product", "problem", "demand", "order") if t[f] is False
        ]
        assert t["amnesia"] == bool(t["missing"])
        mine = own.get(customers[t["ticket_id"]] or "", set())
        if t["order_id"] is not None and t["order_id"] not in mine:
            assert t["order_id"] in t["invented"]
        assert not set(t["invented"]) & mine
        texts = f"{t['reply']}\n{t['solution']}\n{t['internal_note']}".casefold()
        assert all(leak.casefold() in texts for leak in t["leaks"])


@pytest.mark.timeout(660)
def test_summary_figures_follow_from_the_tickets(report: dict[str, Any]) -> None:
    tickets, summary = report["tickets"], report["summary"]
    n = len(tickets)
    amnesic = sum(t["amnesia"] for t in tickets)
    assert summary["amnesic"] == amnesic
    assert summary["amnesia_rate"] == round(amnesic / n, 4)
    assert summary["order_accuracy"] == round(sum(t["order_resolved"] for t in tickets) / n, 4)
    assert summary["invented_orders"] == sum(len(t["invented"]) for t in tickets)
    assert summary["leaks"] == sum(len(t["leaks"]) for t in tickets)
    for fact, figures in summary["facts"].items():
        labelled = [t for t in tickets if t[fact] is not None]
        assert figures["labelled"] == len(labelled)
        assert figures["carried"] == sum(bool(t[fact]) for t in labelled)
    cross = [t for t in tickets if "cross_session" in t["tags"]]
    assert summary["by_tag"]["cross_session"]["tickets"] == len(cross)


def test_the_echo_model_shows_no_amnesia_no_leaks_and_no_invented_orders(
    report: dict[str, Any],
) -> None:
    """The stand-in can only repeat its prompt, so any missing fact was lost by the pipeline."""
    summary = report["summary"]
    assert [t["ticket_id"] for t in report["tickets"] if t["amnesia"]] == []
    assert summary["amnesia_rate"] == 0.0
    assert summary["order_accuracy"] == 1.0
    assert summary["invented_orders"] == 0 and summary["leaks"] == 0


def test_the_judge_grades_every_reply_and_names_the_worst(report: dict[str, Any]) -> None:
    judge = report["judge"]
    assert judge["via"] == "stand-in" and judge["prompt_version"].startswith("j-")
    assert judge["judged"] == len(report["tickets"]) and judge["unjudged"] == []
    assert set(judge["tickets"]) == {t["ticket_id"] for t in report["tickets"]}
    scores = judge["scores"]
    assert all(0.0 <= scores[n] <= 1.0 for n in ("remedy", "understood", "grounded", "tone"))
    worst = judge["worst"]
    assert len(worst) == 5
    totals = [sum(w[n] for n in ("remedy", "understood", "grounded", "tone")) for w in worst]
    assert totals == sorted(totals)
    graded = judge["tickets"]
    best_left = min(
        sum(v[n] for n in ("remedy", "understood", "grounded", "tone"))
        for k, v in graded.items()
        if k not in {w["ticket_id"] for w in worst}
    )
    assert totals[-1] <= best_left
