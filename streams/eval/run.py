"""The eval run: labelled tickets through the real pipeline, phase by phase, and their scores.

The run: a temporary data dir and order store with the eval's orders, an embedded broker, one
worker subprocess, and (for ``--llm echo``) the Messages-API stand-in, whose default responder
can only repeat facts present in its own prompt. Tickets are published phase by phase, labels
stripped: every ticket of phase k is answered before phase k+1 is published (after
``--phase-gap`` seconds), so a later session can refer to finished ones. Time words in the
tickets ("last week") are relative to the latest ``created_at`` of the file: every date of the
orders and tickets is moved by whole weeks so that day falls in the seven days ending today.
Scoring rules: :mod:`streams.eval.score` and docs/eval.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from baton_kafka.agents.testing.standin.weak import STYLES
from baton_kafka.schemas.codec import InvalidRecord, parse
from baton_kafka.schemas.records import Order, Reply
from baton_kafka.streams.eval.score import (
    FACTS,
    Case,
    TicketScore,
    World,
    parse_case,
    score,
    summarize,
)
from baton_kafka.streams.eval.state import final_state, label_problems, render_final_state
from baton_kafka.streams.runtime.faust_app.spawn import spawn_worker, stop_worker
from baton_kafka.streams.settings import OWN_ORDERS, Settings

if TYPE_CHECKING:
    from baton_kafka.streams.batched import BatchOptions
    from baton_kafka.streams.eval.judge import JudgeOptions

STAND_IN_KEY = "sk-eval-stand-in-not-a-key"


class BadInput(ValueError):
    """The eval files cannot be used as they are; the message names the file and line."""


def orders_path_for(tickets: Path) -> Path:
    """The orders file next to a tickets file: ``eval_tickets.jsonl`` -> ``eval_orders.jsonl``."""
    if "tickets" not in tickets.name:
        raise BadInput(f"{tickets}: cannot derive the orders file name; pass --orders")
    return tickets.with_name(tickets.name.replace("tickets", "orders"))


def _lines(path: Path) -> list[tuple[int, bytes]]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror or exc}") from None
    return [(n, line) for n, line in enumerate(raw.splitlines(), start=1) if line.strip()]


def _first(errors: list[str]) -> None:
    if errors:
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        raise BadInput(errors[0] + more)


def _languages(settings: Settings) -> tuple[str, ...]:
    """The languages the evaluated shop serves: the settings', else its policy's."""
    from baton_kafka.agents.policy import load

    return settings.languages or load(settings.policy_file).languages


def _shop(settings: Settings) -> str:
    """The evaluated shop's name, as its policy gives it."""
    from baton_kafka.agents.policy import load

    return load(settings.policy_file).shop.name


def load_cases(path: Path) -> list[Case]:
    """Every line of ``path`` as a case; ``BadInput`` names the first bad line."""
    cases, errors = [], []
    for n, line in _lines(path):
        try:
            cases.append(parse_case(line))
        except ValueError as exc:
            errors.append(f"{path}:{n}: {exc}")
    _first(errors)
    if not cases:
        raise BadInput(f"{path}: no tickets")
    return cases


def load_orders(path: Path) -> list[Order]:
    """Every line of ``path`` as an order; ``BadInput`` names the first bad line."""
    orders, errors = [], []
    for n, line in _lines(path):
        try:
            orders.append(parse(Order, line))
        except InvalidRecord as exc:
            errors.append(f"{path}:{n}: {exc}")
    _first(errors)
    return orders


def check(cases: Sequence[Case], orders: Sequence[Order], source: str) -> None:
    """Cross-line rules of an eval set; ``BadInput`` names the first ticket that breaks one."""
    by_id: dict[str, Order] = {}
    errors = []
    for o in orders:
        if o.order_id in by_id:
            errors.append(f"order {o.order_id} appears twice in the orders file")
        by_id[o.order_id] = o
    seen: set[str] = set()
    sessions: dict[str, Case] = {}
    for c in cases:
        t, label = c.ticket, c.label
        where = f"{source}: ticket {t.ticket_id}"
        if t.ticket_id in seen:
            errors.append(f"{where}: ticket_id appears twice")
        seen.add(t.ticket_id)
        last = sessions.get(t.session_id)
        if last is not None and last.ticket.customer_id != t.customer_id:
            errors.append(f"{where}: session {t.session_id} changes customer")
        if last is not None and last.label.phase > label.phase:
            errors.append(f"{where}: phase {label.phase} comes after phase {last.label.phase}")
        sessions[t.session_id] = c
        errors += [f"{where}: {p}" for p in label_problems(c, by_id)]
        if label.order_id is None:
            continue
        order = by_id.get(label.order_id)
        if order is None:
            errors.append(f"{where}: label.order_id {label.order_id} is not in the orders file")
        elif order.customer_id != t.customer_id:
            errors.append(f"{where}: label.order_id {label.order_id} is not the customer's")
        elif label.product != order.product_name:
            errors.append(f"{where}: label.product must be the order's {order.product_name!r}")
    _first(errors)


def week_shift(cases: Sequence[Case], today: date, orders: Sequence[Order] = ()) -> timedelta:
    """Whole weeks that move the file's latest ``created_at`` into the last five weeks ending
    today, chosen so that each ticket stays the same number of calendar months after each of
    its customer's orders ("last month" keeps meaning the month it was written about)."""
    stamps = [c.ticket.created_at for c in cases if c.ticket.created_at is not None]
    if not stamps:
        return timedelta(0)
    latest = max(_utc(s) for s in stamps)
    weeks = (today - latest.date()).days // 7
    placed = [
        (c.ticket.customer_id, _utc(c.ticket.created_at))
        for c in cases
        if c.ticket.created_at is not None
    ]
    bought = [(o.customer_id, _utc(o.ordered_at)) for o in orders if o.ordered_at is not None]

    def months_moved(shift: timedelta) -> int:
        moved = 0
        for customer, at in placed:
            for owner, when in bought:
                if owner == customer and _months(at, when) != _months(at + shift, when + shift):
                    moved += 1
        return moved

    choices = [timedelta(weeks=w) for w in range(weeks, max(weeks - 5, -1), -1)] or [
        timedelta(weeks=weeks)
    ]
    return min(choices, key=lambda shift: (months_moved(shift), -shift))


def _utc(moment: datetime) -> datetime:
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)


def _months(later: datetime, earlier: datetime) -> int:
    return (later.year - earlier.year) * 12 + later.month - earlier.month


def age_days(cases: Sequence[Case], now: datetime) -> float:
    """Days from the set's oldest ``created_at`` to ``now``, plus one: a
    ``BATON_TICKET_MAX_AGE_DAYS`` that reads every ticket's time as written.

    The bound keeps a producer from moving a message's time words back; the set is a recorded
    history, dated on purpose (up to five weeks back after ``week_shift``), and read against a
    bound of a week its older tickets' "last week" would count from another day.
    """
    stamps = [_utc(c.ticket.created_at) for c in cases if c.ticket.created_at is not None]
    if not stamps:
        return 1.0
    return max(1.0, (now - min(stamps)).total_seconds() / 86400 + 1)


def as_recorded(settings: Settings, cases: Sequence[Case]) -> Settings:
    """``settings`` with the tickets' ages bound no nearer than the set's oldest ticket."""
    days = age_days(cases, datetime.now(UTC))
    return settings.with_(ticket_max_age_days=max(settings.ticket_max_age_days, days))


def shifted(
    cases: Sequence[Case], orders: Sequence[Order], shift: timedelta
) -> tuple[list[Case], list[Order]]:
    """The cases and orders with every date moved by ``shift`` (weekdays are kept)."""

    def move(moment: datetime | None) -> datetime | None:
        return moment + shift if moment is not None else None

    moved_cases = [
        c.model_copy(
            update={"ticket": c.ticket.model_copy(update={"created_at": move(c.ticket.created_at)})}
        )
        for c in cases
    ]
    moved_orders = [
        o.model_copy(
            update={"ordered_at": move(o.ordered_at), "delivered_at": move(o.delivered_at)}
        )
        for o in orders
    ]
    return moved_cases, moved_orders


def _last_line(path: Path) -> str:
    with contextlib.suppress(OSError):
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
        if lines:
            return lines[-1][:300]
    return "(empty)"


class RunFailed(RuntimeError):
    """The pipeline did not answer every ticket."""


def run_pipeline(
    settings: Settings,
    mode: str,
    cases: Sequence[Case],
    orders: Sequence[Order],
    *,
    timeout: float,
    phase_gap: float,
    say: Callable[[str], None],
) -> dict[str, Reply]:
    """Publish the tickets phase by phase through a fresh pipeline; return each one's reply."""
    from baton_kafka.agents.testing.standin import run_in_thread
    from baton_kafka.streams.demo import collect_replies, import_orders
    from baton_kafka.streams.kafka.client import publish_tickets
    from baton_kafka.streams.kafka.embedded import EmbeddedBroker

    replies: dict[str, Reply] = {}
    with tempfile.TemporaryDirectory(prefix="baton-eval-") as tmp, contextlib.ExitStack() as stack:
        # The stand-in speaks the first-party API; any other provider is the run's own.
        llm = "anthropic" if mode in ("anthropic", *STYLES) else mode
        # Each case is scored on its own reply: a phase's tickets are never answered as one turn.
        settings = settings.with_(
            data_dir=Path(tmp), embedded_broker=True, llm=llm, coalesce_window_s=0.0, **OWN_ORDERS
        )
        if mode in STYLES:
            standin = stack.enter_context(run_in_thread(style=STYLES[mode]))
            settings = settings.with_(
                anthropic_base_url=standin.base_url, anthropic_api_key=STAND_IN_KEY
            )
            habit = "as a weak model answers" if mode == "weak" else "echoes prompt facts"
            say(f"model: the Messages-API stand-in on {standin.base_url} ({habit})")
        else:
            say(f"model: {'offline rules' if mode == 'offline' else settings.model}")

        import_orders(settings, orders)
        broker = stack.enter_context(EmbeddedBroker(log=Path(tmp) / "broker.log"))
        settings = settings.with_(broker=broker.url)
        log = Path(tmp) / "worker.log"
        proc = spawn_worker(settings, log)
        stack.callback(stop_worker, proc)
        phases = sorted({c.label.phase for c in cases})
        for i, phase in enumerate(phases):
            tickets = [c.ticket for c in cases if c.label.phase == phase]
            asyncio.run(publish_tickets(settings, tickets))
            say(f"phase {phase}: published {len(tickets)} tickets; waiting for replies")
            try:
                replies |= asyncio.run(
                    collect_replies(settings, {t.ticket_id for t in tickets}, timeout, proc)
                )
            except (TimeoutError, RuntimeError) as exc:
                raise RunFailed(f"{exc} (worker log: {_last_line(log)})") from None
            if i + 1 < len(phases):
                time.sleep(phase_gap)
    return replies


def _mark(value: bool | None) -> str:
    return "." if value is None else "+" if value else "-"


def render_text(report: dict[str, Any]) -> str:
    """The per-ticket table and the summary, for people."""
    rows = report["tickets"]
    width = max([len("ticket"), *(len(r["ticket_id"]) for r in rows)])
    lines = [
        f"{'ticket':<{width}}  ph  lang  status    P Pb D O  order expected -> got  notes",
    ]
    for r in rows:
        marks = " ".join(_mark(r[f]) for f in ("product", "problem", "demand", "order"))
        orders = f"{r['expected_order'] or 'null'} -> {r['order_id'] or 'null'}"
        notes = []
        if r["missing"]:
            notes.append(f"missing {', '.join(r['missing'])}")
        if r["invented"]:
            notes.append(f"invented {', '.join(r['invented'])}")
        if r["leaks"]:
            notes.append(f"leaks {', '.join(r['leaks'])}")
        row = (
            f"{r['ticket_id']:<{width}}  {r['phase']:>2}  {r['language']:<4}  "
            f"{r['status']:<8}  {marks.replace(' ', '  ', 1)}  {orders:<22} {'; '.join(notes)}"
        )
        lines.append(row.rstrip())
    s = report["summary"]
    lines += [
        "",
        "P product, Pb problem, D demand, O order: + carried, - missing, . not labelled",
        "",
    ]

    def pct(rate: float | None) -> str:
        return "n/a" if rate is None else f"{100 * rate:.1f}%"

    lines.append(
        f"amnesia rate: {pct(s['amnesia_rate'])} ({s['amnesic']} of {s['tickets']} tickets "
        f"in {s['sessions']} sessions miss a labelled fact)"
    )
    carried = ", ".join(f"{name} {f['carried']}/{f['labelled']}" for name, f in s["facts"].items())
    lines.append(f"carried: {carried}")
    lines.append(
        f"order resolution: {pct(s['order_accuracy'])} ({s['orders_resolved']}/{s['tickets']})"
    )
    lines.append(
        f"invented orders: {s['invented_orders']} (in {s['tickets_with_invented_orders']} "
        f"tickets); leaks: {s['leaks']} (in {s['tickets_with_leaks']} tickets)"
    )
    for title, groups in (("by tag", s["by_tag"]), ("by language", s["by_language"])):
        parts = [
            f"{name} {g['tickets']}: amnesia {pct(g['amnesia_rate'])}, "
            f"orders {pct(g['order_accuracy'])}"
            for name, g in groups.items()
        ]
        lines.append(f"{title}: " + "; ".join(parts))
    statuses = ", ".join(f"{k} {v}" for k, v in s["statuses"].items())
    lines.append(
        f"statuses: {statuses}; llm: {report['llm']}; dates moved {report['date_shift_days']} "
        f"days; {report['elapsed_s']:.0f}s"
    )
    if "batch" in report:
        from baton_kafka.streams.batched import cost_line

        lines.append(cost_line(report["batch"]))
    if "final_state" in report:
        lines += render_final_state(report["final_state"], pct)
    if "grounding" in report:
        from baton_kafka.streams.eval.grounding import render_grounding

        lines += render_grounding(report["grounding"], pct)
    if "judge" in report:
        from baton_kafka.streams.eval.judge import render_judge

        lines += render_judge(report["judge"], pct)
    return "\n".join(lines)


def evaluate(
    settings: Settings,
    mode: str,
    tickets_file: Path,
    orders_file: Path,
    *,
    timeout: float,
    phase_gap: float,
    say: Callable[[str], None],
    batch: BatchOptions | None = None,
    judge: JudgeOptions | None = None,
) -> dict[str, Any]:
    """Load, check, run and score; the JSON report (with ``batch``: through message batches,
    and what they sent and cost; with ``judge``: each reply graded by a judge model, the
    stand-in's rules when its ``via`` is ``stand-in``)."""
    cases = load_cases(tickets_file)
    orders = load_orders(orders_file)
    check(cases, orders, str(tickets_file))
    shift = week_shift(cases, datetime.now(UTC).date(), orders)
    cases, orders = shifted(cases, orders, shift)
    settings = as_recorded(settings, cases)
    started = time.monotonic()
    batches: dict[str, Any] | None = None
    if batch is not None:
        from baton_kafka.streams.eval.batch import run_in_batches

        replies, tally = run_in_batches(
            settings, mode, cases, orders, tickets_file, batch, say, STAND_IN_KEY
        )
        batches = tally.as_dict()
    else:
        replies = run_pipeline(
            settings, mode, cases, orders, timeout=timeout, phase_gap=phase_gap, say=say
        )
    world = World.build(orders, cases)
    languages = _languages(settings)
    scores: list[TicketScore] = [
        score(c, replies[c.ticket.ticket_id], world, languages) for c in cases
    ]
    judged = _judged(settings, cases, replies, orders, judge, say) if judge else None
    grounded = _grounded(settings, cases, replies, orders, scores)
    return {
        "llm": mode,
        "tickets_file": str(tickets_file),
        "orders_file": str(orders_file),
        "date_shift_days": shift.days,
        "elapsed_s": round(time.monotonic() - started, 1),
        "facts": list(FACTS),
        "summary": summarize(scores),
        "tickets": [s.as_dict() for s in scores],
        "final_state": final_state(cases, replies, languages, shop=_shop(settings)),
        **({"batch": batches} if batches is not None else {}),
        "grounding": grounded,
        **({"judge": judged} if judged is not None else {}),
    }


def _grounded(
    settings: Settings,
    cases: Sequence[Case],
    replies: dict[str, Reply],
    orders: Sequence[Order],
    scores: Sequence[TicketScore],
) -> dict[str, Any]:
    """The grounding section: each reply's facts against the policy, articles and store."""
    from functools import partial

    from baton_kafka.agents.policy import load
    from baton_kafka.streams.eval.grounding import grounding
    from baton_kafka.streams.eval.judge import shown_articles

    policy = load(settings.policy_file).serving(settings.languages)
    languages = {s.ticket_id: s.language for s in scores}
    shown = partial(shown_articles, policy=policy)
    return grounding(cases, replies, orders, policy, languages, shown)


def _judged(
    settings: Settings,
    cases: Sequence[Case],
    replies: dict[str, Reply],
    orders: Sequence[Order],
    judge: JudgeOptions,
    say: Callable[[str], None],
) -> dict[str, Any]:
    """The judge's section of the report: on the Claude API, or the stand-in's judging rules."""
    from dataclasses import replace

    from baton_kafka.agents.policy import load
    from baton_kafka.agents.testing.standin import run_in_thread
    from baton_kafka.streams.eval.judge import judge_replies

    policy = load(settings.policy_file).serving(settings.languages)
    with contextlib.ExitStack() as stack:
        if judge.via == "stand-in":
            standin = stack.enter_context(run_in_thread())
            judge = replace(judge, base_url=standin.base_url, api_key=STAND_IN_KEY)
        say(f"judge: {judge.model} via {judge.via}; grading {len(cases)} replies")
        return asyncio.run(judge_replies(cases, replies, orders, policy, judge))
