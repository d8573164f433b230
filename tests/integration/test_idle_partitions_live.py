"""Idle partitions paused and woken by end offsets (task/idle.py) with real brokers, and in a run on Spark.

The session's ``primary`` and ``backup`` clusters; the run's test uses the session's SparkSession too.
"""

from __future__ import annotations

import logging
import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from helpers import assert_eventually, client_config, consume_all, create_topic, produce, unique_name
from pyspark.sql import SparkSession
from test_replication import make_config, running

from copy_check import assert_copy
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.replication.task.idle import IDLE_AFTER_S, PAUSE_MIN_PARTITIONS, WAKE_MAX_S, IdleConsumer

pytestmark = pytest.mark.integration


class FetchLog(logging.Handler):
    """librdkafka's ``debug=fetch`` lines: which partitions a fetch request carried."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def fetched(self, topic: str, partition: int) -> int:
        """Fetch requests that carried ``topic [partition]`` so far."""
        needle = f"Fetch topic {topic} [{partition}]"
        return sum(needle in line for line in self.lines)


def test_i1_i2_i5_a_paused_partition_is_not_fetched_and_copies_a_later_record(local_clusters: LocalClusters) -> None:
    p = local_clusters.bootstrap("primary")
    topic = unique_name("idle-real")
    create_topic(p, topic, partitions=2)
    produce(p, topic, [{"value": b"first", "partition": 0}])
    fetches = FetchLog()
    log = logging.getLogger(f"rdkafka.{topic}")
    log.setLevel(logging.DEBUG)
    log.addHandler(fetches)
    skew = [0.0]
    inner = Consumer(
        {
            **client_config(p),
            "group.id": topic,
            "enable.auto.commit": False,
            "debug": "fetch",
            "fetch.wait.max.ms": 100,
        },
        logger=log,
    )
    # skew: idle sooner than in real time; two partitions: no threshold
    consumer = IdleConsumer(inner, min_partitions=1, clock=lambda: time.monotonic() + skew[0])
    consumer.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
    try:
        got = []
        assert_eventually(lambda: got.extend(consumer.consume(10, 0.2)) or len(got) == 1, timeout_s=30)
        assert got[0].value() == b"first"
        skew[0] += IDLE_AFTER_S + 1
        assert_eventually(lambda: consumer.consume(10, 0.1) == [] and len(consumer.idle) == 2, timeout_s=30)
        before = (fetches.fetched(topic, 0), fetches.fetched(topic, 1))
        assert min(before) > 0, "librdkafka's fetch lines were not seen: the check below would prove nothing"
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            assert consumer.consume(10, 0.2) == []
        # paused: no fetch request carried either partition (polled 3 s at fetch.wait.max.ms 100 without it)
        assert (fetches.fetched(topic, 0), fetches.fetched(topic, 1)) == before
        assert consumer.checks >= 1  # the end offsets were asked instead (ListOffsets at the latest offset)
        produce(p, topic, [{"value": b"later \x00\xff", "key": b"k", "partition": 1}])
        later: list = []
        assert_eventually(lambda: later.extend(consumer.consume(10, 0.2)) or bool(later), timeout_s=WAKE_MAX_S + 30)
        assert [(m.partition(), m.offset(), m.key(), m.value()) for m in later] == [(1, 0, b"k", b"later \x00\xff")]
        assert consumer.idle == {(topic, 0)}
    finally:
        consumer.close()


@pytest.mark.spark
def test_a_run_copies_a_record_written_after_its_partitions_went_idle(
    local_clusters: LocalClusters, spark: SparkSession
) -> None:
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic = unique_name("idle-run")
    create_topic(p, topic, partitions=PAUSE_MIN_PARTITIONS)  # one task with enough partitions to pause idle ones
    produce(p, topic, [{"value": f"a{i}".encode(), "partition": i % 2} for i in range(10)])
    cfg = make_config(local_clusters, [("primary", "backup")], topics=topic, **{"tasks.max": "1"})
    remote = f"primary.{topic}"
    with running(cfg, spark):
        assert_eventually(lambda: len(consume_all(b, remote)) >= 10, timeout_s=90)
        time.sleep(IDLE_AFTER_S + 3)  # both partitions idle: paused in the copy tasks
        produce(p, topic, [{"value": b"\x00late\xff", "key": b"late", "partition": 1}])
        assert_eventually(lambda: len(consume_all(b, remote)) >= 11, timeout_s=WAKE_MAX_S + 60)
    # byte-exact, once, in source order
    assert_copy(consume_all(p, topic), consume_all(b, remote))
