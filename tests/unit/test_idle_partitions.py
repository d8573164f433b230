"""Idle partitions of a copy task paused and woken by end offsets (task/idle.py's I1-I6), on fake clients."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, TopicPartition

from fakes import FakeCluster, FakeTaskConsumer
from mirrorspark.replication.task.idle import (
    CHECK_BATCH,
    IDLE_AFTER_S,
    PAUSE_MIN_PARTITIONS,
    WAKE_MAX_S,
    WAKE_MIN_S,
    IdleConsumer,
)

pytestmark = pytest.mark.unit

TOPIC = "t"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def setup(partitions: int = 2, start: int = 0) -> tuple[FakeCluster, FakeTaskConsumer, IdleConsumer, Clock]:
    cluster = FakeCluster("s")
    cluster.create_topic(TOPIC, partitions)
    inner = FakeTaskConsumer(cluster)
    clock = Clock()
    consumer = IdleConsumer(inner, min_partitions=1, clock=clock)
    consumer.assign([TopicPartition(TOPIC, p, start) for p in range(partitions)])
    return cluster, inner, consumer, clock


def run(consumer: IdleConsumer, clock: Clock, seconds: float, step: float = 0.25) -> list[tuple[int, int, bytes]]:
    """Consume for ``seconds`` of the fake clock; return (partition, offset, value) of every record handed out."""
    out = []
    end = clock.now + seconds
    while clock.now < end:
        for m in consumer.consume(num_messages=100, timeout=0):
            assert m.error() is None
            out.append((m.partition(), m.offset(), m.value()))
        clock.now += step
    return out


def first(consumer: IdleConsumer, clock: Clock, seconds: float) -> list[tuple[int, int, bytes]]:
    """Consume until records come (at most ``seconds``); return them."""
    end = clock.now + seconds
    while clock.now < end:
        got = run(consumer, clock, 0.25)
        if got:
            return got
    return []


def test_i1_i2_a_paused_partition_copies_what_is_written_later_once_in_order() -> None:
    cluster, inner, consumer, clock = setup()
    for i in range(3):
        cluster.append(TOPIC, None, f"a{i}".encode(), partition=0)
    got = run(consumer, clock, IDLE_AFTER_S + 2)
    assert consumer.idle == {(TOPIC, 0), (TOPIC, 1)}  # both paused: nothing for IDLE_AFTER_S
    assert inner.paused == {(TOPIC, 0), (TOPIC, 1)}
    for i in range(3, 6):
        cluster.append(TOPIC, None, f"a{i}".encode(), partition=0)
    got += run(consumer, clock, WAKE_MAX_S + 1)
    assert got == [(0, i, f"a{i}".encode()) for i in range(6)]
    assert (TOPIC, 0) not in consumer.idle and (TOPIC, 1) in consumer.idle  # only the one that moved woke


def test_i5_paused_partitions_are_not_fetched_and_checks_back_off() -> None:
    _, inner, consumer, clock = setup(partitions=50)
    run(consumer, clock, IDLE_AFTER_S + 1)
    assert len(consumer.idle) == 50
    inner.fetched.clear()
    checks = consumer.checks
    run(consumer, clock, 60.0)
    assert inner.fetched == []  # librdkafka fetches nothing of a paused partition
    # one ListOffsets request per check, for all 50 together; backed off 1, 2, 4, 4, ... s
    made = consumer.checks - checks
    assert inner.list_offsets_calls == consumer.checks  # 50 partitions: one call
    assert made <= 60.0 / WAKE_MAX_S + 3
    assert made >= 60.0 / WAKE_MAX_S - 1


def test_i5_a_check_asks_in_batches_and_wakes_the_one_that_moved() -> None:
    cluster, inner, consumer, clock = setup(partitions=2 * CHECK_BATCH + 10)
    run(consumer, clock, IDLE_AFTER_S + 0.5)
    assert len(consumer.idle) == 2 * CHECK_BATCH + 10
    cluster.append(TOPIC, None, b"x", partition=2 * CHECK_BATCH + 5)  # in the last batch
    assert first(consumer, clock, WAKE_MAX_S + 1) == [(2 * CHECK_BATCH + 5, 0, b"x")]
    assert inner.list_offsets_calls == 3 * consumer.checks  # three calls a check, none larger than a batch
    assert inner.list_offsets_most == CHECK_BATCH


def test_i2_a_check_that_wakes_one_checks_again_soon() -> None:
    cluster, _, consumer, clock = setup()
    run(consumer, clock, IDLE_AFTER_S + 20)  # backed off to the longest interval
    cluster.append(TOPIC, None, b"x", partition=1)
    got = first(consumer, clock, WAKE_MAX_S + 0.5)
    assert got == [(1, 0, b"x")]
    checks = consumer.checks
    cluster.append(TOPIC, None, b"y", partition=0)
    got = run(consumer, clock, WAKE_MIN_S + 0.5)  # the check after a wake comes WAKE_MIN_S later
    assert got == [(0, 0, b"y")]
    assert consumer.checks == checks + 1


def test_i2_next_offset_is_the_assigned_one_when_nothing_was_read() -> None:
    cluster, _, consumer, clock = setup(partitions=1, start=5)
    cluster.fill(TOPIC, 0, 5)  # the task copied up to 5 before
    run(consumer, clock, IDLE_AFTER_S + 10)
    assert consumer.idle == {(TOPIC, 0)}  # end 5 == next 5: it stays paused
    cluster.append(TOPIC, None, b"n", partition=0)
    got = run(consumer, clock, WAKE_MAX_S + 1)
    assert got == [(0, 5, b"n")]


def test_i3_unknown_next_offset_and_task_paused_partitions_never_sleep_or_wake() -> None:
    _, inner, consumer, clock = setup(partitions=2, start=-2)  # OFFSET_BEGINNING
    inner._take = lambda n: []  # type: ignore[method-assign]  # nothing fetched: no position
    inner.position = lambda parts: [TopicPartition(tp.topic, tp.partition, -1001) for tp in parts]  # type: ignore[method-assign]
    run(consumer, clock, IDLE_AFTER_S + 5)
    assert consumer.idle == set()
    assert inner.paused == set()
    consumer.pause([TopicPartition(TOPIC, 0)])  # the task's own (out of range)
    run(consumer, clock, IDLE_AFTER_S + 5)
    assert (TOPIC, 0) in inner.paused and (TOPIC, 0) not in consumer.idle


def test_i3_a_task_with_fewer_partitions_than_the_threshold_pauses_none() -> None:
    cluster = FakeCluster("s")
    cluster.create_topic(TOPIC, 3)
    inner = FakeTaskConsumer(cluster)
    clock = Clock()
    consumer = IdleConsumer(inner, min_partitions=4, clock=clock)
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(3)])
    run(consumer, clock, IDLE_AFTER_S + 5)
    assert consumer.idle == set() and inner.paused == set() and consumer.checks == 0
    assert PAUSE_MIN_PARTITIONS > 200  # 100 topics x 4 on two tasks: not paused


def test_i4_the_tasks_pause_is_never_undone_and_a_seek_resumes() -> None:
    cluster, inner, consumer, clock = setup(partitions=2)
    run(consumer, clock, IDLE_AFTER_S + 2)
    consumer.pause([TopicPartition(TOPIC, 0)])  # out of range while idle-paused: the task's pause wins
    cluster.append(TOPIC, None, b"a", partition=0)
    run(consumer, clock, 3 * WAKE_MAX_S)
    assert (TOPIC, 0) in inner.paused
    cluster.append(TOPIC, None, b"b", partition=1)
    consumer.seek(TopicPartition(TOPIC, 1, 0))  # an aborted transaction's rewind of an idle-paused partition
    assert (TOPIC, 1) not in inner.paused
    assert run(consumer, clock, 1.0) == [(1, 0, b"b")]


def test_i6_a_failed_check_resumes_every_paused_partition() -> None:
    _, inner, consumer, clock = setup(partitions=3)
    run(consumer, clock, IDLE_AFTER_S + 0.5)
    assert len(consumer.idle) == 3
    inner.list_offsets_error = KafkaError._TIMED_OUT
    run(consumer, clock, WAKE_MIN_S + 0.5)
    assert consumer.idle == set() and inner.paused == set()


def test_i5_a_checker_of_its_own_asks_the_end_offsets_and_is_closed_with_the_consumer() -> None:
    cluster = FakeCluster("s")
    cluster.create_topic(TOPIC, 2)
    inner, checker = FakeTaskConsumer(cluster), FakeTaskConsumer(cluster)
    clock = Clock()
    built: list[FakeTaskConsumer] = []
    consumer = IdleConsumer(inner, checker=lambda: built.append(checker) or checker, min_partitions=1, clock=clock)
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(2)])
    run(consumer, clock, IDLE_AFTER_S - 1)
    assert built == []  # built at the first check only
    cluster.append(TOPIC, None, b"x", partition=1)
    run(consumer, clock, WAKE_MIN_S + 3)  # partition 0 idle after IDLE_AFTER_S: paused, then checked
    assert built == [checker] and checker.list_offsets_calls >= 1 and inner.list_offsets_calls == 0
    consumer.close()
    assert inner.closed and checker.closed
