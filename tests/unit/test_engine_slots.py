"""What the worker checks of Spark before it starts the copy tasks: slots (a counting function), no speculation."""

from __future__ import annotations

import itertools

import pytest

from mirrorspark.errors import ConfigError
from mirrorspark.replication.worker.worker import check_speculation, wait_for_slots

pytestmark = pytest.mark.unit


def test_waits_until_the_executors_offer_enough_slots() -> None:
    # defaultParallelism on a cluster: 2 (Spark's floor) until executors register, then their cores
    counts = itertools.chain([2, 2, 3], itertools.repeat(4))
    assert wait_for_slots(lambda: next(counts), 4, timeout_s=30, interval_s=0.001) == 4


def test_returns_at_once_when_there_are_enough() -> None:
    calls = []
    assert wait_for_slots(lambda: calls.append(1) or 8, 4, timeout_s=30) == 8
    assert len(calls) == 1


def test_gives_up_after_the_timeout_with_the_last_count() -> None:
    assert wait_for_slots(lambda: 2, 4, timeout_s=0.01, interval_s=0.001) == 2


@pytest.mark.parametrize("value", ["true", "TRUE", " true "])
def test_spark_speculation_is_refused(value: str) -> None:
    """engine-audit F8: a speculative attempt of a copy task would end as lost and kill the real one, in a loop."""
    with pytest.raises(ConfigError, match=r"spark\.speculation=true.*set spark\.speculation=false"):
        check_speculation(value)


@pytest.mark.parametrize("value", [None, "false", "False"])
def test_spark_without_speculation_is_accepted(value: str | None) -> None:
    check_speculation(value)
