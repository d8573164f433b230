"""Failures of a flow's copy tasks are counted per task (pure)."""

from __future__ import annotations

import pytest

from mirrorspark.replication.worker.supervisor import BACKOFF_MAX_S, MAX_FAILURES, TaskFailures

pytestmark = pytest.mark.unit


def test_one_lost_broker_failing_every_task_once_does_not_fail_the_flow() -> None:
    """Four tasks, each failing twice while a target broker is replaced: 8 failures, 2 in a row each."""
    f = TaskFailures()
    counts = [f.failed(i) for _ in range(2) for i in range(4)]
    assert counts == [1, 1, 1, 1, 2, 2, 2, 2]
    assert f.worst == 2 and not any(TaskFailures.exhausted(n) for n in counts)


def test_one_task_failing_max_failures_times_in_a_row_fails_the_flow() -> None:
    f = TaskFailures()
    counts = [f.failed(3) for _ in range(MAX_FAILURES)]
    assert counts[-1] == MAX_FAILURES and TaskFailures.exhausted(counts[-1])
    assert not TaskFailures.exhausted(counts[-2])


def test_copying_again_starts_the_counts_over() -> None:
    f = TaskFailures()
    f.failed(0), f.failed(0), f.failed(1)
    f.succeeded(0)
    assert f.worst == 1 and f.failed(0) == 1
    f.clear()
    assert f.worst == 0 and f.failed(1) == 1


def test_the_backoff_doubles_from_one_second_up_to_its_cap() -> None:
    assert [TaskFailures.backoff_s(n) for n in (1, 2, 3, 4, 5)] == [1.0, 2.0, 4.0, 8.0, 16.0]
    assert TaskFailures.backoff_s(10) == BACKOFF_MAX_S
