"""The grant window of one lease holding: grants capped by the last confirmed contact, the take-over wait."""

from __future__ import annotations

import threading

import pytest

from mirrorspark.replication.worker.lease_window import CONTACT_MARGIN_MS, GrantWindow

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_a_grant_ends_a_margin_before_the_coordinator_could_expire_the_session() -> None:
    clock = Clock(10.0)
    w = GrantWindow(session_timeout_ms=6000, landing_ms=5000, clock=clock)
    w.begin(assigned_at=9.5, contact_at=10.0, first=False)
    cap = 10.0 + 6.0 - CONTACT_MARGIN_MS / 1000
    assert w.grant(3.0) == 13.0
    clock.now = 14.5
    assert w.grant(3.0) == cap  # no contact since 10: capped
    clock.now = cap
    assert w.grant(3.0) is None
    w.contact(12.0)  # a check sent at 12 came back
    assert w.grant(3.0) == 12.0 + 6.0 - CONTACT_MARGIN_MS / 1000
    w.contact(11.0)  # an older check's answer never moves the contact back
    assert w.contact_at == 12.0


def test_the_take_over_waits_landing_ms_after_the_assignment_except_the_first_holding() -> None:
    w = GrantWindow(session_timeout_ms=6000, landing_ms=5000, clock=Clock(0.0))
    w.begin(assigned_at=100.0, contact_at=101.0, first=False)
    assert w.safe_at == 105.0
    w.begin(assigned_at=200.0, contact_at=200.5, first=True)
    assert w.safe_at == 200.5


def test_grants_are_spent_landing_ms_after_the_latest_deadline_unless_voided() -> None:
    clock = Clock(0.0)
    w = GrantWindow(session_timeout_ms=6000, landing_ms=5000, clock=clock)
    w.begin(assigned_at=0.0, contact_at=0.0, first=True)
    assert w.spent_in() == 0.0
    w.grant(3.0)
    clock.now = 1.0
    assert w.spent_in() == 7.0  # the deadline 3, its writes landing by 8
    w.void()
    assert w.spent_in() == 0.0 and w.granted_until == 0.0
    waiter = threading.Thread(target=w.wait_spent)
    waiter.start()
    waiter.join(5)
    assert not waiter.is_alive()
