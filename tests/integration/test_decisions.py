"""A session parked on an approval survives a kill -9 of its worker: the later ticket is
answered while it waits, ``baton decide`` (a signed record on the decisions topic) confirms
the offer once, and the same record sent again is a dead letter, not a second confirmation."""

from __future__ import annotations

from collections import Counter

import pytest

from baton_kafka.schemas import Reply
from tests.fixtures import delivery
from tests.fixtures.data import jacket, ticket_record
from tests.fixtures.deployments import Deployment
from tests.fixtures.paths import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

ALPINE = ROOT / "examples/shops/alpine/policy.toml"
KEYS = "k1:a-signing-secret-of-32-characters"
JACKET = jacket("c-ana")


async def test_a_parked_approval_survives_a_kill_and_is_confirmed_once(
    deployment: Deployment,
) -> None:
    d = deployment
    d.env_extra.update(BATON_POLICY=str(ALPINE), BATON_SIGNING_KEYS=KEYS)
    d.import_orders([JACKET])
    d.start_worker()
    t1, t2 = f"t1-{d.namespace}", f"t2-{d.namespace}"
    await d.publish_tickets(
        [ticket_record(t1, "s-park", "c-ana", "Please cancel my jacket order.")]
    )
    [held] = await delivery.replies(d, 1)
    assert held.status == "handoff" and held.offer is not None
    assert held.offer.state == "needs_approval" and held.offer.total == 150

    # While parked, the session's next ticket is answered, and promises nothing either.
    await d.publish_tickets([ticket_record(t2, "s-park", "c-ana", "Any news about my jacket?")])
    _, later = await delivery.replies(d, 2)
    assert later.ticket_id == t2 and (later.offer is None or later.offer.state != "approved")

    d.workers[0].kill()
    d.start_worker()
    done = d.baton("decide", "s-park", t1, "approve", "--by", "ana", "--id", "d-1")
    assert done.returncode == 0, done.stderr.decode()
    after = await delivery.replies(d, 3)
    confirmed = [r for r in after if r.decision_id == "d-1"]
    assert len(confirmed) == 1, after
    assert confirmed[0].status == "answered" and confirmed[0].offer is not None
    assert confirmed[0].offer.state == "approved" and confirmed[0].offer.total == 150

    # The very record again (its signature still valid): a replay, dead-lettered.
    [(value, headers)] = await d.read("support.decisions", lambda vs: len(vs) >= 1)
    await d.publish([("s-park", value)], topic="support.decisions", headers=headers)
    letters = await d.dead_letters(1)
    assert [dl.reason for dl, _ in letters] == ["decision_replayed"]
    # Forged: the same decision under another id, unsigned.
    forged = value.replace(b'"d-1"', b'"d-2"')
    await d.publish([("s-park", forged)], topic="support.decisions")
    letters = await d.dead_letters(2)
    # An unsigned record names no session, so its letter is keyed by nothing and may sit on
    # another partition than the replay's: the topic holds both, in no order between them.
    assert sorted(dl.reason for dl, _ in letters) == ["decision_replayed", "untrusted_record"]
    final = await delivery.replies(d, 3)
    counts = Counter((r.ticket_id, r.decision_id) for r in final)
    assert counts == Counter({(t1, None): 1, (t2, None): 1, (t1, "d-1"): 1})
    assert [r.ticket_id for r in final] == [t1, t2, t1]  # one session, one partition, in order
    assert all(isinstance(r, Reply) for r in final)
    delivery.figures(
        f"parked approval across a kill -9, {d.broker.kind}",
        decisions_sent=1,
        confirmations=len(confirmed),
        dead_letters=len(letters),
    )
