"""The driver's reader of a progress channel waits out a channel not known yet, and fails as a ClusterError.

A stub consumer stands in for the target (no broker): the end-offset lookup, and a read running out of time.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from mirrorspark.errors import ClusterError
from mirrorspark.replication.connector.progress_channel import ProgressChannelReader

pytestmark = pytest.mark.unit


class StubFlow:
    name = "A->B"
    progress_topic = "mm2-task-progress.A.internal"

    def __init__(self) -> None:
        self.fresh: list[StubConsumer] = []  # the consumers a reopen gets, in turn
        self.context = self

    def consumer(self, _side: str, _purpose: str, *, overrides: Any) -> StubConsumer:
        return self.fresh.pop(0) if self.fresh else StubConsumer([])


class StubConsumer:
    """``get_watermark_offsets`` raises ``errors`` in turn, then answers ``(0, end)``."""

    def __init__(self, errors: list[int], end: int = 7) -> None:
        self.errors, self.end, self.calls = list(errors), end, 0

        self.assigned: list[Any] = []
        self.closed = False

    def assign(self, tps: list[Any]) -> None:
        self.assigned = tps

    def close(self) -> None:
        self.closed = True

    def get_watermark_offsets(self, tp: Any, timeout: float) -> tuple[int, int]:
        self.calls += 1
        if self.errors:
            raise KafkaException(KafkaError(self.errors.pop(0)))
        return 0, self.end


def channel(consumer: StubConsumer, *fresh: StubConsumer) -> ProgressChannelReader:
    ch = ProgressChannelReader.__new__(ProgressChannelReader)  # no consumer of its own: the stub's
    flow = StubFlow()
    flow.fresh = list(fresh)
    ch.sink, ch.skipped, ch._consumer, ch._next = flow, 0, consumer, 42  # type: ignore[assignment]
    return ch


def test_a_channel_created_a_moment_ago_is_waited_for() -> None:
    """Right after the channel is created on a 3-broker target, the lookup fails with an unknown topic
    (from the broker) or an unknown partition (from the client's metadata): both are retried. Before,
    the first failure left ``Replicator.start`` as a raw KafkaException."""
    consumer = StubConsumer([KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION])
    fresh = StubConsumer([KafkaError._UNKNOWN_PARTITION])
    assert channel(consumer, fresh)._end_offset(10.0) == 7
    assert (consumer.calls, fresh.calls) == (1, 2)  # asked once, then a fresh consumer (once per call)


def test_a_partition_lost_from_the_clients_metadata_gets_a_fresh_consumer() -> None:
    """After a target outage librdkafka's cached metadata can lack the channel's partition for its 5-minute
    refresh: ``Local: Unknown partition`` at every attempt, every take-over failing. Before, the same
    consumer was asked until the deadline; now a fresh one, at the offset the reader had reached."""
    stale = StubConsumer([KafkaError._UNKNOWN_PARTITION] * 1000)
    ch = channel(stale)
    assert ch._end_offset(10.0) == 7
    assert stale.closed and stale.calls == 1
    assert [(tp.topic, tp.partition, tp.offset) for tp in ch._consumer.assigned] == [  # type: ignore[attr-defined]
        ("mm2-task-progress.A.internal", 0, 42)
    ]


def test_a_dead_leader_is_retried_until_the_deadline_then_a_cluster_error() -> None:
    consumer = StubConsumer([KafkaError._TRANSPORT] * 1000)
    with pytest.raises(ClusterError, match=r"A->B: reading the end of the progress channel .* check that the target"):
        channel(consumer)._end_offset(1.0)
    assert consumer.calls > 1


def test_a_refusal_is_not_retried() -> None:
    consumer = StubConsumer([KafkaError.TOPIC_AUTHORIZATION_FAILED])
    with pytest.raises(ClusterError) as e:
        channel(consumer)._end_offset(10.0)
    assert consumer.calls == 1 and e.value.kafka_code == "TOPIC_AUTHORIZATION_FAILED" and not e.value.retriable


class SlowConsumer(StubConsumer):
    """Hands out nothing: the channel holds reports up to ``end`` that do not arrive before the deadline."""

    def consume(self, num_messages: int, timeout: float) -> list[Any]:
        return []

    def position(self, tps: list[Any]) -> list[Any]:
        return [TopicPartition(tps[0].topic, 0, 42)]


@pytest.mark.parametrize("segments_only", [True, False])
def test_a_read_to_the_end_that_runs_out_of_time_says_so(segments_only: bool, caplog: pytest.LogCaptureFixture) -> None:
    """engine-audit-2 §4: a take-over's or a final read stopped quietly at its deadline (a partial load lowers
    the positions reached and misses other topic ids); now a WARNING names the channel and the unread range."""
    ch = channel(SlowConsumer([], end=50))
    with caplog.at_level(logging.WARNING, logger="mirrorspark.replication.connector.progress_channel"):
        assert ch.poll(until_end=True, timeout_s=0.0, segments_only=segments_only, generation=None) == 0
    [warning] = [r for r in caplog.records if r.levelno == logging.WARNING]
    text = warning.getMessage()
    assert "mm2-task-progress.A.internal" in text and "end offset 50" in text and "offset 42" in text
    assert ("copied runs" in text) == segments_only


def test_a_read_that_reaches_the_end_says_nothing(caplog: pytest.LogCaptureFixture) -> None:
    ch = channel(SlowConsumer([], end=42))
    with caplog.at_level(logging.WARNING, logger="mirrorspark.replication.connector.progress_channel"):
        assert ch.poll(until_end=True, timeout_s=0.0) == 0
    assert not caplog.records
