"""Transactions on the source: committed, aborted and open ones, with either isolation level.

The data path plans and copies with one isolation level, ``<source>.consumer.isolation.level``
(default ``read_uncommitted``, the Java consumer's and so MM2's). Real brokers (the session's
``primary`` and ``backup``) and an in-process
:class:`~mirrorspark.replication.driver.Replicator` on the session's SparkSession.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from helpers import client_config, consume_all, create_topic, produce, unique_name
from pyspark.sql import SparkSession

from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.replication.driver import Replicator

pytestmark = [pytest.mark.integration, pytest.mark.spark]


class Transactions:
    """A transactional producer on one source partition."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.producer = Producer(
            client_config(
                bootstrap,
                **{"transactional.id": unique_name("mirrorspark-tests-txn"), "client.id": "mirrorspark-tests|txn"},
            )
        )
        self.producer.init_transactions(30)
        self.open = False

    def write(self, values: list[str], *, partition: int = 0) -> None:
        """Begin a transaction and write ``values`` to ``partition`` (left open)."""
        self.producer.begin_transaction()
        for v in values:
            self.producer.produce(self.topic, value=v.encode(), partition=partition)
        self.producer.flush(30)
        self.open = True

    def commit(self) -> None:
        self.producer.commit_transaction(30)
        self.open = False

    def abort(self) -> None:
        self.producer.abort_transaction(30)
        self.open = False


@pytest.fixture
def source_topic(local_clusters: LocalClusters) -> Iterator[tuple[str, Transactions]]:
    """A 2-partition source topic holding a committed and an aborted transaction on partition 0."""
    p = local_clusters.bootstrap("primary")
    topic = unique_name("txn")
    create_topic(p, topic, partitions=2)
    txn = Transactions(p, topic)
    txn.write([f"c{i}" for i in range(10)])
    txn.commit()
    txn.write([f"a{i}" for i in range(5)])
    txn.abort()
    produce(p, topic, [{"value": f"plain{i}", "partition": 0} for i in range(3)])
    try:
        yield topic, txn
    finally:
        if txn.open:
            txn.abort()  # a transaction the test left open


def by_partition(bootstrap: str, topic: str) -> dict[int, list[bytes | None]]:
    out: dict[int, list[bytes | None]] = {0: [], 1: []}
    for r in consume_all(bootstrap, topic):
        out[r["partition"]].append(r["value"])
    return out


def test_by_default_every_source_record_is_copied_as_mm2_does_even_of_an_open_transaction(
    local_clusters: LocalClusters, spark: SparkSession, source_topic: tuple[str, Any]
) -> None:
    # Before: plans listed the high watermark while the tasks read committed records only
    # (librdkafka's default): an open transaction held its partition short of the plan until a
    # 120 s stall error stopped every flow.
    topic, txn = source_topic
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    txn.write([f"o{i}" for i in range(4)])  # open
    produce(p, topic, [{"value": f"p1-{i}", "partition": 1} for i in range(20)])
    text = local_clusters.mm2_properties([("primary", "backup")], extra={"topics": topic, "tasks.max": "2"})
    r = Replicator(parse_config(parse_properties(text)), spark)
    r.run(until_caught_up=True)
    remote = by_partition(b, f"primary.{topic}")
    # the Java consumer's read_uncommitted: aborted and open transactions' records too, in order
    expected = [f"c{i}" for i in range(10)] + [f"a{i}" for i in range(5)] + [f"plain{i}" for i in range(3)]
    assert remote[0] == [v.encode() for v in expected + [f"o{i}" for i in range(4)]]
    assert remote[1] == [f"p1-{i}".encode() for i in range(20)]
    assert r.stats()[0].gaps == 0


def test_read_committed_skips_aborted_records_and_an_open_transaction_delays_only_its_partition(
    local_clusters: LocalClusters, spark: SparkSession, source_topic: tuple[str, Any]
) -> None:
    topic, txn = source_topic
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    text = local_clusters.mm2_properties(
        [("primary", "backup")],
        extra={"topics": topic, "tasks.max": "2", "primary.consumer.isolation.level": "read_committed"},
    )
    txn.write([f"o{i}" for i in range(4)])  # open: its partition stops at the last stable offset
    produce(p, topic, [{"value": f"p1-{i}", "partition": 1} for i in range(20)])
    Replicator(parse_config(parse_properties(text)), spark).run(until_caught_up=True)
    remote = by_partition(b, f"primary.{topic}")
    committed = [f"c{i}".encode() for i in range(10)] + [f"plain{i}".encode() for i in range(3)]
    assert remote[0] == committed  # no aborted record; the open transaction's wait
    assert remote[1] == [f"p1-{i}".encode() for i in range(20)]  # the other partition is not held up

    txn.commit()
    r = Replicator(parse_config(parse_properties(text)), spark)
    r.run(until_caught_up=True)
    remote = by_partition(b, f"primary.{topic}")
    assert remote[0] == committed + [f"o{i}".encode() for i in range(4)]
    assert len(remote[1]) == 20
    assert r.stats()[0].gaps == 0
