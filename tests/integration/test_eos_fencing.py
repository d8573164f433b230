"""Exactly-once as KIP-618 means it, on real brokers (``engine-audit.md`` F3, F4, F6).

``mm2-offsets`` is read ``read_committed`` whatever ``consumer.isolation.level`` says (Connect
forces it), and before a new generation's tasks start every transactional id the flow's tasks
may have used is fenced (Connect's ``fenceZombies``): a partition that moved to another task
index is never copied twice because its previous owner's transaction committed late. A task
reads its own start offsets after ``init_transactions``: a source offset committed without a
progress report never makes a new generation copy its records again.
"""

from __future__ import annotations

import contextlib
import threading

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient
from helpers import assert_eventually, create_topic, produce, unique_name
from pyspark.sql import SparkSession
from test_exactly_once import EOS, assert_exactly_once, committed_values
from test_replication import make_config, running

from mirrorspark.client.control_store import ControlStore
from mirrorspark.client.source_offset_reader import read_source_offset_history
from mirrorspark.kafka.admin import ClusterAdmin
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.mm2.connect_offsets import (
    default_partition,
    source_offset_key,
    source_offset_value,
    task_transactional_id,
)
from mirrorspark.replication.driver import Replicator
from mirrorspark.replication.task.spec import CopyTaskSpec, PartitionAssignment

pytestmark = [pytest.mark.integration]


def release(producer: Producer) -> None:
    """Close a test's producer now, not when the session's clusters are already gone (a fenced one may raise)."""
    with contextlib.suppress(Exception):
        producer.close()


def test_source_offsets_of_an_aborted_transaction_are_never_adopted(local_clusters: LocalClusters) -> None:
    """F6: with ``consumer.isolation.level=read_uncommitted`` on the target, an offset written in a transaction
    that was then aborted (an exactly-once task killed mid-commit; its restart aborts it) is not read back."""
    b = local_clusters.bootstrap("backup")
    topic, offsets = unique_name("eos-f6"), unique_name("eos-f6-offsets")
    create_topic(b, offsets, partitions=3, config={"cleanup.policy": "compact"})
    cfg = make_config(
        local_clusters,
        [("primary", "backup")],
        topics=topic,
        **EOS,
        **{"backup.consumer.isolation.level": "read_uncommitted"},
    )
    flow = cfg.flow("primary", "backup")
    assert flow.target_consumer.get("isolation.level") == "read_uncommitted"
    key = source_offset_key("primary", topic, 0)
    part = default_partition(key, 3)
    produce(b, offsets, [{"key": key, "value": source_offset_value(9), "partition": part}])
    p = Producer({"bootstrap.servers": b, "transactional.id": unique_name("eos-f6-txn")})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(offsets, source_offset_value(99), key, partition=part)
    p.flush(30)
    p.abort_transaction(30)
    release(p)
    history = read_source_offset_history(
        flow.target_consumer, flow.target_admin, "backup", offsets, "primary", client_id="primary->backup|test|f6"
    )
    assert history[(topic, 0)].offsets == [9]


@pytest.mark.spark
def test_a_partition_moved_to_another_task_index_is_not_copied_twice(
    local_clusters: LocalClusters, spark: SparkSession
) -> None:
    """F4: partition 1 was task 1's (``tasks.max=2``); task 1 lives on as a zombie whose transaction holds
    partition 1's next records and their source offset, not yet committed. The flow restarts with
    ``tasks.max=1``: partition 1 moves to task 0, whose ``init_transactions`` fences only id 0. Without fencing
    every previous id the zombie commits after the new task copied the same records: a read_committed
    consumer sees them twice. With it, the zombie's transaction is aborted and its commit fails."""
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic = unique_name("eos-moved")
    remote = f"primary.{topic}"
    create_topic(p, topic, partitions=2)
    produce(p, topic, [{"value": f"a{i}-{i % 2}".encode(), "partition": i % 2} for i in range(100)])
    Replicator(make_config(local_clusters, [("primary", "backup")], topics=topic, **EOS), spark).run(
        until_caught_up=True
    )
    assert len(committed_values(b, remote)) == 100
    new = [{"value": f"b{i}-{i % 2}".encode(), "partition": i % 2} for i in range(100)]
    produce(p, topic, new)
    # The zombie: task 1 of the first run, still copying partition 1 (records 50..99) in an open transaction.
    offsets_topic = "mm2-offsets.primary.internal"
    partitions = len(
        AdminClient({"bootstrap.servers": b}).list_topics(offsets_topic, timeout=30).topics[offsets_topic].partitions
    )
    # a long transaction timeout: the broker does not abort the zombie's transaction while the test runs
    zombie = Producer(
        {
            "bootstrap.servers": b,
            "transactional.id": task_transactional_id("primary-mm2", "MirrorSourceConnector", 1),
            "transaction.timeout.ms": 600000,
        }
    )
    zombie.init_transactions(30)
    zombie.begin_transaction()
    for r in new:
        if r["partition"] == 1:
            zombie.produce(remote, r["value"], partition=1)
    key = source_offset_key("primary", topic, 1)
    zombie.produce(offsets_topic, source_offset_value(99), key, partition=default_partition(key, partitions))
    zombie.flush(30)
    cfg = make_config(local_clusters, [("primary", "backup")], topics=topic, **EOS, **{"tasks.max": "1"})
    Replicator(cfg, spark).run(until_caught_up=True)
    try:
        zombie.commit_transaction(30)
    except KafkaException as e:
        print(f"the zombie's commit failed: {e}")  # fenced: its transaction was aborted before the new tasks started
    release(zombie)
    expected = {f"{x}{i}-{i % 2}".encode() for x in "ab" for i in range(100)}
    assert_exactly_once(b, remote, expected)


@pytest.mark.spark
def test_a_generation_change_starts_after_offsets_committed_without_a_report(
    local_clusters: LocalClusters, spark: SparkSession
) -> None:
    """F3: a topic allowed while the flow runs starts a new generation. Meanwhile records 0..29 of it were copied
    and their source offset committed in one transaction with no progress report (another instance's copy
    before a hand-over, or a report lost after its commit): the driver's position (0, from what it read at
    start) is stale. The new task reads the committed offset after its ``init_transactions`` and starts at 30;
    without that read it copies 0..29 again and a read_committed consumer sees them twice."""
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    prefix = unique_name("eos-gen")
    first, second = f"{prefix}.a", f"{prefix}.b"
    first_re, second_re = rf"{prefix}\.a", rf"{prefix}\.b"
    for t in (first, second):
        create_topic(p, t)
        produce(p, t, [{"value": f"{t[-1]}{i}".encode()} for i in range(50)])
    cfg = make_config(local_clusters, [("primary", "backup")], topics=first_re, **EOS)
    with running(cfg, spark):
        assert_eventually(lambda: len(committed_values(b, f"primary.{first}")) == 50, timeout_s=90)
        # the commit the driver never heard of: records 0..29 of the second topic and their source offset
        remote = f"primary.{second}"
        create_topic(b, remote)
        offsets_topic = "mm2-offsets.primary.internal"
        md = AdminClient({"bootstrap.servers": b}).list_topics(offsets_topic, timeout=30)
        partitions = len(md.topics[offsets_topic].partitions)
        other = Producer({"bootstrap.servers": b, "transactional.id": unique_name("eos-gen-other")})
        other.init_transactions(30)
        other.begin_transaction()
        for i in range(30):
            other.produce(remote, f"b{i}".encode(), partition=0)
        key = source_offset_key("primary", second, 0)
        other.produce(offsets_topic, source_offset_value(29), key, partition=default_partition(key, partitions))
        other.commit_transaction(30)
        release(other)
        with ControlStore(cfg, "primary", "backup") as store:
            store.apply("topics", add=[second_re])
        try:
            produce(p, second, [{"value": f"b{i}".encode()} for i in range(50, 60)])
            expected = {f"b{i}".encode() for i in range(60)}
            assert_eventually(lambda: set(committed_values(b, remote)) >= expected, timeout_s=90)
        finally:
            with ControlStore(cfg, "primary", "backup") as store:
                store.apply("topics", remove=[second_re])
    assert_exactly_once(b, remote, expected)


def test_a_task_reads_its_stored_offsets_to_the_high_watermark_not_the_last_stable_offset(
    local_clusters: LocalClusters,
) -> None:
    """Another producer's transaction holding a source offset of this task's partition is still open when the read
    starts, and commits 2 s later: a read to the last stable offset stops before it and misses the offset; the
    read ``read_committed`` to the high watermark waits for the commit and sees it."""
    from mirrorspark.replication.task.stored_offsets import read_stored_offsets  # here: the file runs on main too

    b = local_clusters.bootstrap("backup")
    topic, offsets = unique_name("eos-hwm"), unique_name("eos-hwm-offsets")
    create_topic(b, offsets, partitions=3, config={"cleanup.policy": "compact"})
    key = source_offset_key("primary", topic, 0)
    part = default_partition(key, 3)
    produce(b, offsets, [{"key": key, "value": source_offset_value(9), "partition": part}])
    other = Producer({"bootstrap.servers": b, "transactional.id": unique_name("eos-hwm-txn")})
    other.init_transactions(30)
    other.begin_transaction()
    other.produce(offsets, source_offset_value(49), key, partition=part)
    other.flush(30)
    committer = threading.Timer(2.0, lambda: other.commit_transaction(30))
    spec = CopyTaskSpec(
        flow="primary->backup",
        source="primary",
        target="backup",
        task_index=0,
        generation=1,
        consumer_conf={},
        producer_conf={},
        commit_conf={},
        syncs_conf=None,
        offsets_topic=offsets,
        offsets_partitions=3,
        syncs_topic="unused",
        progress_topic="unused",
        partitions=(PartitionAssignment(topic, 0, f"primary.{topic}", 0),),
        offset_lag_max=100,
        flush_interval_s=1.0,
        grant_address=("127.0.0.1", 0, "unused"),
    )
    consumer = Consumer(
        {"bootstrap.servers": b, "group.id": unique_name("eos-hwm"), "isolation.level": "read_committed"}
    )
    committer.start()
    try:
        admin = ClusterAdmin(AdminClient({"bootstrap.servers": b}), "backup")
        stored = read_stored_offsets(spec, [(topic, 0)], consumer=consumer, admin=admin, timeout_s=60)
    finally:
        committer.join()
        consumer.close()
        release(other)
    assert stored[(topic, 0)].offsets == [9, 49]
