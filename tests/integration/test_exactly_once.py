"""Exactly-once mode (KIP-618's ``<target>.exactly.once.source.support=enabled``) on real brokers and Spark.

Each copy task writes its records and its source offsets (``mm2-offsets.<source>.internal``) in
one transaction; a ``read_committed`` consumer of the target sees every source record once, in
order per partition, whatever happens to the tasks: a killed Python worker, or a zombie fenced
by a producer that took its transactional id. Settings that cannot hold are refused at start.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Producer
from helpers import Bootstrap, assert_eventually, consume_all, create_topic, produce, unique_name
from pyspark.sql import SparkSession
from test_continuous import python_workers
from test_replication import make_config, running, topics_of

from copy_check import assert_copy
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.errors import ClusterError
from mirrorspark.kafka.local.clusters import start_clusters, stop_clusters
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.mm2.connect_offsets import decode_source_offset, task_transactional_id
from mirrorspark.replication.driver import Replicator

pytestmark = [pytest.mark.integration, pytest.mark.spark]

EOS = {"backup.exactly.once.source.support": "enabled"}


def committed_values(bootstrap: Bootstrap, topic: str) -> list[bytes | None]:
    """Values a read_committed consumer sees (empty while the topic does not exist)."""
    if topic not in topics_of(bootstrap):
        return []
    return [r["value"] for r in consume_all(bootstrap, topic, read_committed=True)]


def assert_exactly_once(bootstrap: Bootstrap, topic: str, expected: set[bytes]) -> None:
    """Every expected value exactly once, nothing else."""
    counts = Counter(committed_values(bootstrap, topic))
    duplicated = {v: n for v, n in counts.items() if n > 1}
    missing = expected - set(counts)
    assert not duplicated, f"{len(duplicated)} value(s) seen more than once by read_committed: {list(duplicated)[:5]}"
    assert not missing, f"{len(missing)} value(s) lost: {sorted(missing)[:5]}"
    assert set(counts) == expected


def test_records_and_source_offsets_commit_together(local_clusters: LocalClusters, spark: SparkSession) -> None:
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic = unique_name("eos-copy")
    create_topic(p, topic, partitions=3)
    produce(p, topic, [{"value": f"a{i}".encode(), "partition": i % 3, "headers": [("h", b"1")]} for i in range(300)])
    cfg = make_config(local_clusters, [("primary", "backup")], topics=topic, **EOS)
    r = Replicator(cfg, spark)
    r.run(until_caught_up=True)
    remote = f"primary.{topic}"
    assert_copy(consume_all(p, topic), consume_all(b, remote, read_committed=True))
    # The source offsets are committed records of the same transactions, in Connect's layout.
    offsets: dict[int, int] = {}
    for rec in consume_all(b, "mm2-offsets.primary.internal", read_committed=True):
        decoded = decode_source_offset(rec["key"], rec["value"])
        if decoded is not None and decoded.topic == topic:
            offsets[decoded.partition] = decoded.offset
    assert offsets == {0: 99, 1: 99, 2: 99}
    # A restart resumes from them: nothing copied twice.
    produce(p, topic, [{"value": f"b{i}".encode(), "partition": i % 3} for i in range(60)])
    Replicator(cfg, spark).run(until_caught_up=True)
    assert_exactly_once(b, remote, {f"{x}{i}".encode() for x, n in (("a", 300), ("b", 60)) for i in range(n)})


def test_a_killed_python_worker_duplicates_nothing(local_clusters: LocalClusters, spark: SparkSession) -> None:
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic = unique_name("eos-kill")
    create_topic(p, topic, partitions=2)
    produce(p, topic, [{"value": f"a{i}".encode(), "partition": i % 2} for i in range(200)])
    # Long transactions (10 s, up to 60 s allowed) so that the kill lands inside one with records in it.
    cfg = make_config(
        local_clusters,
        [("primary", "backup")],
        topics=topic,
        **EOS,
        **{"transaction.boundary": "interval", "transaction.boundary.interval.ms": "10000"},
    )
    remote = f"primary.{topic}"
    with running(cfg, spark) as r:
        assert_eventually(lambda: len(r.supervisors) == 1, message="the engine did not start")
        [sup] = r.supervisors
        assert_eventually(lambda: len(committed_values(b, remote)) >= 200, timeout_s=60)
        produce(p, topic, [{"value": f"b{i}".encode(), "partition": i % 2} for i in range(2000)])
        # The records are in the remote topic, in a transaction not yet committed.
        assert_eventually(
            lambda: len(consume_all(b, remote, read_committed=False)) >= 2200, message="the copy did not start"
        )
        for w in python_workers():
            w.kill()  # kill -9 mid-transaction: the restarted tasks' init aborts it, then they copy again
        produce(p, topic, [{"value": f"c{i}".encode(), "partition": i % 2} for i in range(500)])
        expected = {f"{x}{i}".encode() for x, n in (("a", 200), ("b", 2000), ("c", 500)) for i in range(n)}
        assert_eventually(lambda: set(committed_values(b, remote)) >= expected, timeout_s=120)
        assert sup.restarts >= 1
        assert sup.state == "running"
    assert_exactly_once(b, remote, expected)


def test_a_zombie_is_fenced_and_its_transaction_never_seen(local_clusters: LocalClusters, spark: SparkSession) -> None:
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic = unique_name("eos-fence")
    create_topic(p, topic, partitions=1)
    produce(p, topic, [{"value": f"a{i}".encode()} for i in range(100)])
    cfg = make_config(local_clusters, [("primary", "backup")], topics=topic, **EOS)
    remote = f"primary.{topic}"
    with running(cfg, spark) as r:
        assert_eventually(lambda: len(committed_values(b, remote)) >= 100, timeout_s=60)
        [sup] = r.supervisors
        # Another producer takes task 0's transactional id (what a second replicator's task does): it
        # fences the running task, writes a transaction of its own and leaves it open.
        usurper = Producer(
            {
                "bootstrap.servers": b,
                "transactional.id": task_transactional_id("primary-mm2", "MirrorSourceConnector", 0),
            }
        )
        usurper.init_transactions(30)
        usurper.begin_transaction()
        usurper.produce(remote, b"zombie", partition=0)
        usurper.flush(30)
        produce(p, topic, [{"value": f"b{i}".encode()} for i in range(100)])
        # The fenced task fails its next commit; the restarted one fences the usurper and aborts its transaction.
        expected = {f"{x}{i}".encode() for x in "ab" for i in range(100)}
        assert_eventually(lambda: set(committed_values(b, remote)) >= expected, timeout_s=120)
        assert sup.restarts >= 1
    assert_exactly_once(b, remote, expected)
    assert b"zombie" in [rec["value"] for rec in consume_all(b, remote, read_committed=False)]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"primary->backup.exactly.once.support": "required"}, "primary.consumer.isolation.level = read_committed"),
        ({"primary->backup.transaction.boundary": "connector"}, "defines no transaction boundaries"),
        (
            {
                "primary->backup.transaction.boundary.interval.ms": "5000",
                "backup.producer.transaction.timeout.ms": "4000",
            },
            "transaction.timeout.ms is 4000 ms",
        ),
        ({"mirrorspark.engine": "batch"}, "the batch engine was removed"),
    ],
)
def test_settings_that_cannot_hold_exit_2(
    local_clusters: LocalClusters, tmp_path: Path, extra: dict[str, str], message: str
) -> None:
    text = local_clusters.mm2_properties([("primary", "backup")], extra={"topics": "eos-none", **EOS, **extra})
    props = tmp_path / "mm2.properties"
    props.write_text(text)
    done = subprocess.run(
        [sys.executable, "-m", "mirrorspark", "run", str(props), "--until-caught-up"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert message in done.stderr


def test_a_target_without_a_transaction_coordinator_fails_the_run(
    local_clusters: LocalClusters, spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """No transaction coordinator on the target (``__transaction_state`` wants more replicas than it has
    brokers, so it is never created): the first ``init_transactions`` times out (after the target producer's
    ``max.block.ms``), the flow fails at once
    and the run ends with a ClusterError (exit 3) naming the cause and the fix, instead of retrying for minutes."""
    base = tmp_path_factory.mktemp("no-coordinator")
    try:
        started = start_clusters(
            ["notxn"], base_dir=base, extra_broker_props={"transaction.state.log.replication.factor": "2"}
        )
        both = LocalClusters(base, {"primary": local_clusters.cluster("primary"), "notxn": started.cluster("notxn")})
        p = local_clusters.bootstrap("primary")
        topic = unique_name("eos-no-coordinator")
        create_topic(p, topic)
        produce(p, topic, [{"value": f"a{i}".encode()} for i in range(10)])
        # max.block.ms bounds init_transactions, as in Java (default 60 s); 10 s keeps the test short
        extra = {
            "topics": topic,
            "notxn.exactly.once.source.support": "enabled",
            "notxn.producer.max.block.ms": "10000",
        }
        cfg = parse_config(parse_properties(both.mm2_properties([("primary", "notxn")], extra=extra)))
        r = Replicator(cfg, spark)
        with pytest.raises(ClusterError) as e:
            r.run(until_caught_up=True)
        print(e.value)
        expected = (
            "no transaction coordinator: cluster 'notxn' did not initialise transactional id "
            "'primary-mm2-MirrorSourceConnector-0' within 10 s"
        )
        message = str(e.value)
        assert expected in message and "transaction.state.log.replication.factor" in message, message
        assert e.value.exit_code == 3
        [sup] = r.supervisors
        assert (sup.state, sup.failures, sup.restarts) == ("failed", 1, 0)  # failed at its first start, not retried
        assert committed_values(started.bootstrap("notxn"), f"primary.{topic}") == []
    finally:
        stop_clusters(base)
