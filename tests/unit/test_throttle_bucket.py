"""The throttle's token bucket and task shares (core/throttle.py), on a fake clock."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorspark.core.throttle import BURST_S, TokenBucket, task_share

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_no_limit_never_waits_and_keeps_no_account() -> None:
    b = TokenBucket(None, clock=Clock())
    assert b.take(10**12) == 0.0 and b.wait_s() == 0.0
    b.set_rate(0)
    assert b.take(10**12) == 0.0


def test_a_full_bucket_lets_a_burst_through_then_the_rate() -> None:
    clock = Clock()
    b = TokenBucket(1000, clock=clock)
    assert b.burst == 1000 * BURST_S
    assert b.take(100) == 0.0  # the burst
    assert b.take(500) == pytest.approx(0.5)  # a debt of 500 bytes at 1000 bytes/s
    clock.now += 0.2
    assert b.wait_s() == pytest.approx(0.3)
    clock.now += 0.3
    assert b.wait_s() == 0.0


def test_a_lowered_rate_pays_the_debt_at_the_new_rate_and_a_raised_one_sooner() -> None:
    clock = Clock()
    b = TokenBucket(1000, clock=clock)
    b.take(1100)  # 1000 bytes of debt
    b.set_rate(500)
    assert b.wait_s() == pytest.approx(2.0)
    b.set_rate(2000)
    assert b.wait_s() == pytest.approx(0.5)
    b.set_rate(None)
    assert b.wait_s() == 0.0
    b.set_rate(1000)  # limited again: starts full
    assert b.take(100) == 0.0


def test_the_level_never_exceeds_the_burst() -> None:
    clock = Clock()
    b = TokenBucket(1000, clock=clock)
    clock.now += 3600
    assert b.take(100) == 0.0
    assert b.take(1) > 0


@settings(max_examples=200, deadline=None)
@given(
    rate=st.integers(min_value=100, max_value=10**7),
    runs=st.lists(
        st.tuples(st.integers(min_value=1, max_value=200_000), st.floats(min_value=0, max_value=0.5)), max_size=80
    ),
    window=st.floats(min_value=0.01, max_value=20),
)
def test_over_any_window_the_bytes_sent_are_at_most_rate_times_window_plus_burst_plus_a_run(
    rate: int, runs: list[tuple[int, float]], window: float
) -> None:
    clock = Clock()
    b = TokenBucket(rate, clock=clock)
    sent: list[tuple[float, int]] = []
    for n, pause in runs:  # wait as told, send, take what was sent; then the caller pauses a while
        clock.now += b.wait_s()
        sent.append((clock.now, n))
        b.take(n)
        clock.now += pause
    for i, (start, _) in enumerate(sent):
        in_window = [n for t, n in sent[i:] if t <= start + window]
        assert sum(in_window) <= rate * window + b.burst + max(in_window) + 1e-6 * rate


def test_task_shares_are_equal_and_no_limit_stays_none() -> None:
    assert task_share(0, 4) == 0
    assert task_share(1_000_000, 4) == 250_000
    assert task_share(1_000_000, 0) == 1_000_000
    assert task_share(3, 4) == 1
