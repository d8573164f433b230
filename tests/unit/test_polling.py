"""The shared test helper ``assert_eventually``: retries assertions and retriable Kafka errors until its deadline."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError, KafkaException

from mirrorspark.errors import ClusterError
from polling import assert_eventually, retriable

pytestmark = pytest.mark.unit


def steps(*outcomes: object) -> Iterator[object]:
    yield from outcomes


def run(outcomes: Iterator[object]) -> object:
    o = next(outcomes)
    if isinstance(o, BaseException):
        raise o
    return o


def test_polls_until_true_and_reports_the_last_failure() -> None:
    calls = iter(range(100))
    assert assert_eventually(lambda: next(calls) >= 3 or None, timeout_s=5, interval_s=0.001) is True

    def never() -> None:
        raise AssertionError("still 0")

    with pytest.raises(AssertionError, match=r"nope.*still 0"):
        assert_eventually(never, timeout_s=0.05, interval_s=0.01, message="nope")


def test_retriable_kafka_errors_are_retried() -> None:
    not_leader = KafkaException(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION))
    cluster = ClusterError("listing offsets failed", kafka_code="NOT_LEADER_OR_FOLLOWER", retriable=True)
    outcomes = steps(not_leader, cluster, AssertionError("not yet"), "done")
    assert assert_eventually(lambda: run(outcomes), timeout_s=5, interval_s=0.001) == "done"


def test_a_retriable_error_is_re_raised_at_the_deadline() -> None:
    err = KafkaException(KafkaError(KafkaError.LEADER_NOT_AVAILABLE))

    def failing() -> None:
        raise err

    with pytest.raises(KafkaException) as e:
        assert_eventually(failing, timeout_s=0.05, interval_s=0.01)
    assert e.value is err


def test_other_errors_propagate_at_once() -> None:
    calls: list[int] = []

    def broken() -> None:
        calls.append(1)
        raise KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))

    with pytest.raises(KafkaException):
        assert_eventually(broken, timeout_s=5, interval_s=0.001)
    assert calls == [1]
    with pytest.raises(ClusterError):
        assert_eventually(lambda: run(steps(ClusterError("no"))), timeout_s=5)
    with pytest.raises(ValueError):
        assert_eventually(lambda: run(steps(ValueError("bug"))), timeout_s=5)


def test_retriable() -> None:
    assert retriable(KafkaException(KafkaError(KafkaError.REQUEST_TIMED_OUT)))
    assert not retriable(KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)))
    assert retriable(ClusterError("x", retriable=True))
    assert not retriable(ClusterError("x"))
    assert not retriable(AssertionError())
