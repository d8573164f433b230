"""Replication flows end to end: real brokers, real Spark, MM2's formats.

Every test replicates its own uniquely named topics (``topics=<prefix>.*``)
between the session's ``primary`` and ``backup`` clusters with an in-process
:class:`~mirrorspark.replication.driver.Replicator` on the session's SparkSession.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from confluent_kafka.admin import ConfigResource, NewPartitions
from helpers import Bootstrap, admin, assert_eventually, consume_all, create_topic, produce, unique_name
from pyspark.sql import SparkSession

from copy_check import assert_copy
from mirrorspark.config.model import MirrorConfig
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.errors import RecordTooLargeError
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.mm2.connect_offsets import (
    decode_source_offset,
    default_partition,
    source_offset_key,
    source_offset_value,
)
from mirrorspark.mm2.records import Heartbeat, OffsetSync
from mirrorspark.replication.driver import Replicator

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def make_config(clusters: LocalClusters, flows: list[tuple[str, str]], **extra: str) -> MirrorConfig:
    """An mm2.properties for the session clusters with fast intervals, parsed."""
    props = parse_properties(
        clusters.mm2_properties(
            flows,
            extra={
                "refresh.topics.interval.seconds": "1",
                "emit.heartbeats.interval.seconds": "1",
                "tasks.max": "2",
                "offset.lag.max": "10",
                **extra,
            },
        )
    )
    return parse_config(props)


def replicate(cfg: MirrorConfig, spark: SparkSession) -> Replicator:
    """Run every enabled flow until caught up with the end offsets seen at start."""
    r = Replicator(cfg, spark)
    r.run(until_caught_up=True)
    return r


@contextlib.contextmanager
def running(cfg: MirrorConfig, spark: SparkSession) -> Iterator[Replicator]:
    """Run the flows on a background thread while the block runs; stop cleanly at its end."""
    r = Replicator(cfg, spark)
    r.start()
    errors: list[BaseException] = []

    def target() -> None:
        try:
            r.run()
        except BaseException as e:  # surfaced in the test thread at the block's end; logged at once
            logging.getLogger("mirrorspark.tests").exception("the replicator's run ended with an error")
            errors.append(e)

    t = threading.Thread(target=target, name="replicator", daemon=True)
    t.start()
    try:
        yield r
    finally:
        r.request_stop()
        t.join(120)
    assert not t.is_alive(), "the replicator did not stop"
    if errors:
        raise errors[0]


def topic_config(bootstrap: Bootstrap, topic: str) -> Mapping[str, str]:
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    client = admin(bootstrap)  # keep a reference until the future completes
    entries = client.describe_configs([res])[res].result(30)
    return {k: v.value for k, v in entries.items()}


def values_if_exists(bootstrap: Bootstrap, topic: str) -> list[tuple[int, bytes | None]]:
    """(partition, value) of every record of a topic, or [] while the topic does not exist yet."""
    if topic not in topics_of(bootstrap):
        return []
    return [(r["partition"], r["value"]) for r in consume_all(bootstrap, topic)]


def topics_of(bootstrap: Bootstrap) -> set[str]:
    return set(admin(bootstrap).list_topics(timeout=30).topics)


def test_records_are_copied_exactly(local_clusters: LocalClusters, spark: SparkSession) -> None:
    """Key, value, headers, timestamp, partition and order survive; null keys, tombstones, binary headers."""
    record_parity_scenario(local_clusters, spark)


def record_parity_scenario(clusters: LocalClusters, spark: SparkSession) -> None:
    """Replicate a 3-partition topic and a compacted one; assert every record field and the topic configs.

    Shared by the plaintext clusters and the TLS / SASL_SSL clusters (test_security).
    """
    p, b = clusters.cluster("primary").client_config(), clusters.cluster("backup").client_config()
    prefix = unique_name("parity")
    events, table = f"{prefix}.events", f"{prefix}.table"
    create_topic(p, events, partitions=3)
    create_topic(p, table, partitions=2, config={"cleanup.policy": "compact", "retention.ms": "86400000"})
    # Recent timestamps: records older than retention.ms (7 days by default) are deleted at the
    # broker's next retention check, even from the active segment.
    base_ms = int(time.time() * 1000) - 3_600_000
    recs = []
    for i in range(600):
        recs.append(
            {
                "key": None if i % 7 == 0 else f"k{i % 50}".encode(),
                "value": bytes([i % 256]) * (i % 40) if i % 11 else b"",
                "headers": [("bin", bytes([0, 255, i % 256])), ("dup", b"1"), ("dup", b"2")] if i % 3 else None,
                "timestamp_ms": base_ms + i * 1000,
                "partition": i % 3,
            }
        )
    produce(p, events, recs)
    produce(
        p,
        table,
        [
            {
                "key": f"id{i % 20}".encode(),
                "value": None if i % 5 == 0 else f"v{i}".encode(),
                "partition": i % 2,
                "timestamp_ms": base_ms + i,
            }
            for i in range(200)
        ],
    )
    cfg = make_config(clusters, [("primary", "backup")], topics=f"{prefix}.*")
    replicate(cfg, spark)

    assert_copy(consume_all(p, events), consume_all(b, f"primary.{events}"))
    assert_copy(consume_all(p, table), consume_all(b, f"primary.{table}"))
    assert len(consume_all(b, f"primary.{events}")) == 600
    # the remote topic carries the source's topic configs (minus MM2's exclusions)
    conf = topic_config(b, f"primary.{table}")
    assert conf["cleanup.policy"] == "compact"
    assert conf["retention.ms"] == "86400000"
    assert len(admin(b).list_topics(timeout=10).topics[f"primary.{events}"].partitions) == 3


def test_progress_and_offset_syncs_in_mm2_layout(local_clusters: LocalClusters, spark: SparkSession) -> None:
    """mm2-offsets.<source>.internal and mm2-offset-syncs.<target>.internal decode as MM2 writes them."""
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic = unique_name("layout")
    create_topic(p, topic, partitions=2)
    produce(p, topic, [{"key": b"k", "value": str(i).encode(), "partition": i % 2} for i in range(100)])
    cfg = make_config(local_clusters, [("primary", "backup")], topics=topic)
    replicate(cfg, spark)

    # progress: Connect's key/value layout, in murmur2(key) % 25's partition, value = last copied offset
    stored = {}
    for r in consume_all(b, "mm2-offsets.primary.internal"):
        decoded = decode_source_offset(r["key"], r["value"])
        if decoded is not None and decoded[1] == topic:
            stored[decoded[2]] = (decoded[3], r["partition"], r["key"], r["value"])
    assert set(stored) == {0, 1}
    for part, (offset, in_partition, key, value) in stored.items():
        assert offset == 49
        assert key == source_offset_key("primary", topic, part)
        assert (
            key
            == json.dumps(
                ["MirrorSourceConnector", {"cluster": "primary", "partition": part, "topic": topic}],
                separators=(",", ":"),
            ).encode()
        )
        assert value == source_offset_value(49) == b'{"offset":49}'
        assert in_partition == default_partition(key, 25)

    # offset syncs on the source, for the upstream topic, each pointing at the copy of its record
    syncs = [OffsetSync.decode(r["key"], r["value"]) for r in consume_all(p, "mm2-offset-syncs.backup.internal")]
    mine = [s for s in syncs if s.topic == topic]
    assert mine, "no offset syncs were written"
    src = {(r["partition"], r["offset"]): r["value"] for r in consume_all(p, topic)}
    dst = {(r["partition"], r["offset"]): r["value"] for r in consume_all(b, f"primary.{topic}")}
    for s in mine:
        assert src[(s.partition, s.upstream_offset)] == dst[(s.partition, s.downstream_offset)]
    # the last record of each partition is synced (delayed sync promoted at commit)
    assert {(s.partition, s.upstream_offset) for s in mine} >= {(0, 49), (1, 49)}


def test_restart_loses_nothing_and_copies_only_new_records(local_clusters: LocalClusters, spark: SparkSession) -> None:
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic = unique_name("restart")
    create_topic(p, topic, partitions=2)
    produce(p, topic, [{"value": f"a{i}".encode(), "partition": i % 2} for i in range(50)])
    cfg = make_config(local_clusters, [("primary", "backup")], topics=topic)
    replicate(cfg, spark)
    produce(p, topic, [{"value": f"b{i}".encode(), "partition": i % 2} for i in range(30)])
    replicate(cfg, spark)  # a new Replicator: positions come from the offsets topic
    assert_copy(consume_all(p, topic), consume_all(b, f"primary.{topic}"))
    assert len(consume_all(b, f"primary.{topic}")) == 80


def test_resumes_where_mm2_stopped(local_clusters: LocalClusters, spark: SparkSession) -> None:
    """A source offset written in MM2's layout (as MM2's Connect worker writes it) is where the flow resumes."""
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic = unique_name("takeover")
    create_topic(p, topic, partitions=1)
    produce(p, topic, [{"value": f"r{i}".encode()} for i in range(20)])
    cfg = make_config(local_clusters, [("primary", "backup")], topics=topic)
    # MM2 copied offsets 0..9 (we pretend) and stored 9, the last replicated upstream offset
    key = source_offset_key("primary", topic, 0)
    create_topic(
        b, "mm2-offsets.primary.internal", partitions=25, config={"cleanup.policy": "compact"}
    ) if "mm2-offsets.primary.internal" not in topics_of(b) else None
    produce(
        b,
        "mm2-offsets.primary.internal",
        [{"key": key, "value": b'{"offset":9}', "partition": default_partition(key, 25)}],
    )
    replicate(cfg, spark)
    copied = consume_all(b, f"primary.{topic}")
    assert [r["value"] for r in copied] == [f"r{i}".encode() for i in range(10, 20)]


def test_policies_name_remote_topics(local_clusters: LocalClusters, spark: SparkSession) -> None:
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic = unique_name("identity")
    create_topic(p, topic)
    produce(p, topic, [{"value": b"x"}])
    cfg = make_config(
        local_clusters,
        [("primary", "backup")],
        topics=topic,
        **{"replication.policy.class": "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"},
    )
    replicate(cfg, spark)
    assert [r["value"] for r in consume_all(b, topic)] == [b"x"]
    assert f"primary.{topic}" not in topics_of(b)


def test_allow_and_deny_lists(local_clusters: LocalClusters, spark: SparkSession) -> None:
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    prefix = unique_name("filters")
    for name in ("keep1", "keep2", "skip1", "internal"):
        create_topic(p, f"{prefix}.{name}")
        produce(p, f"{prefix}.{name}", [{"value": name.encode()}])
    create_topic(p, f"{prefix}-other")
    cfg = make_config(
        local_clusters,
        [("primary", "backup")],
        topics=f"{prefix}[.].*",
        **{"topics.exclude": ".*skip.*, .*[-.]internal"},
    )
    replicate(cfg, spark)
    on_backup = topics_of(b)
    assert {f"primary.{prefix}.keep1", f"primary.{prefix}.keep2"} <= on_backup
    assert f"primary.{prefix}.skip1" not in on_backup
    assert f"primary.{prefix}.internal" not in on_backup
    assert f"primary.{prefix}-other" not in on_backup


def test_two_flows_both_ways_never_loop(local_clusters: LocalClusters, spark: SparkSession) -> None:
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    prefix = unique_name("loop")
    create_topic(p, f"{prefix}.a")
    create_topic(b, f"{prefix}.b")
    produce(p, f"{prefix}.a", [{"value": b"from-primary"}])
    produce(b, f"{prefix}.b", [{"value": b"from-backup"}])
    cfg = make_config(local_clusters, [("primary", "backup"), ("backup", "primary")], topics=f".*{prefix}.*")
    replicate(cfg, spark)
    replicate(cfg, spark)  # a second pass sees the remote topics and must not copy them back
    assert [r["value"] for r in consume_all(b, f"primary.{prefix}.a")] == [b"from-primary"]
    assert [r["value"] for r in consume_all(p, f"backup.{prefix}.b")] == [b"from-backup"]
    assert not {t for t in topics_of(p) | topics_of(b) if t.startswith(("primary.backup.", "backup.primary."))}


def test_topics_and_partitions_added_while_running(local_clusters: LocalClusters, spark: SparkSession) -> None:
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    prefix = unique_name("midrun")
    create_topic(p, f"{prefix}.first", partitions=1)
    produce(p, f"{prefix}.first", [{"value": b"1"}])
    cfg = make_config(local_clusters, [("primary", "backup")], topics=f"{prefix}.*")
    with running(cfg, spark):
        assert_eventually(lambda: values_if_exists(b, f"primary.{prefix}.first") == [(0, b"1")], timeout_s=60)
        # a topic created mid-run
        create_topic(p, f"{prefix}.second", partitions=2)
        produce(p, f"{prefix}.second", [{"value": b"s", "partition": 1}])
        assert_eventually(lambda: values_if_exists(b, f"primary.{prefix}.second") == [(1, b"s")], timeout_s=60)
        # a partition added mid-run
        client = admin(p)
        client.create_partitions([NewPartitions(f"{prefix}.first", 3)])[f"{prefix}.first"].result(30)
        assert_eventually(lambda: len(admin(p).list_topics(timeout=10).topics[f"{prefix}.first"].partitions) == 3)
        produce(p, f"{prefix}.first", [{"value": b"p2", "partition": 2}])
        assert_eventually(
            lambda: values_if_exists(b, f"primary.{prefix}.first") == [(0, b"1"), (2, b"p2")], timeout_s=60
        )
    assert len(admin(b).list_topics(timeout=10).topics[f"primary.{prefix}.first"].partitions) == 3


def test_heartbeats_reach_the_target_upstream(local_clusters: LocalClusters, spark: SparkSession) -> None:
    """MM2's driver rule: A->B enabled ⇒ heartbeats (B,A) on A, replicated to B as `primary.heartbeats`."""
    b = local_clusters.bootstrap("backup")
    cfg = make_config(local_clusters, [("primary", "backup")], topics="nothing-matches-this")
    with running(cfg, spark):

        def seen() -> set[tuple[str, str]]:
            if "primary.heartbeats" not in topics_of(b):
                return set()
            hbs = [Heartbeat.decode(r["key"], r["value"]) for r in consume_all(b, "primary.heartbeats")]
            return {(h.source_cluster_alias, h.target_cluster_alias) for h in hbs}

        assert_eventually(lambda: ("backup", "primary") in seen(), timeout_s=60)
    own = {
        (h.source_cluster_alias, h.target_cluster_alias)
        for h in (Heartbeat.decode(r["key"], r["value"]) for r in consume_all(b, "heartbeats"))
    }
    assert ("primary", "backup") in own


def test_record_over_the_target_limit_fails_cleanly(local_clusters: LocalClusters, spark: SparkSession) -> None:
    """A record the remote topic refuses stops the flow with RECORD_TOO_LARGE and commits nothing of the batch."""
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic = unique_name("toolarge")
    create_topic(p, topic)
    create_topic(b, f"primary.{topic}", config={"max.message.bytes": "20000"})
    produce(p, topic, [{"value": b"small"}, {"value": b"x" * 50_000}])
    cfg = make_config(local_clusters, [("primary", "backup")], topics=topic)
    with pytest.raises(RecordTooLargeError, match=r"max\.message\.bytes"):
        replicate(cfg, spark)
    stored = [decode_source_offset(r["key"], r["value"]) for r in consume_all(b, "mm2-offsets.primary.internal")]
    assert not [s for s in stored if s is not None and s[1] == topic]


@pytest.mark.parametrize(("tasks_max", "expected"), [(2, 2), (8, 3)])
def test_parallelism_is_min_of_tasks_max_and_partitions(
    local_clusters: LocalClusters, spark: SparkSession, tasks_max: int, expected: int
) -> None:
    """One Spark task per MM2 task: min(tasks.max, replicated partitions), round-robin."""
    p = local_clusters.bootstrap("primary")
    topic = unique_name("tasks")
    create_topic(p, topic, partitions=3)
    produce(p, topic, [{"value": b"x", "partition": i % 3} for i in range(30)])
    cfg = make_config(
        local_clusters,
        [("primary", "backup")],
        topics=topic,
        **{"tasks.max": str(tasks_max), "heartbeats.replication.enabled": "false"},
    )
    r = Replicator(cfg, spark)
    r.start()
    assert r.flows[0].order == [(topic, 0), (topic, 1), (topic, 2)]
    specs = r.flows[0].task_specs(1, ("127.0.0.1", 1, "token"))
    assert len(specs) == expected
    assert [[p.partition for p in s.partitions] for s in specs] == _round_robin(3, expected)
    # one Spark job (of one Spark task) per copy task, for the whole run (earlier tests' jobs left out)
    tracker = spark.sparkContext.statusTracker()
    groups = [f"mirrorspark-primary->backup-task-{i}-gen-1" for i in range(expected + 1)]
    before = {g: set(tracker.getJobIdsForGroup(g) or []) for g in groups}
    r.run(until_caught_up=True)
    jobs = [sorted(set(tracker.getJobIdsForGroup(g) or []) - before[g]) for g in groups]
    assert [len(j) for j in jobs] == [1] * expected + [0]
    for [job] in jobs[:expected]:
        [stage] = tracker.getJobInfo(job).stageIds
        assert tracker.getStageInfo(stage).numTasks == 1
    assert sum(p.records for p in r.flows[0].partitions.values()) == 30


def _round_robin(n: int, k: int) -> list[list[int]]:
    groups: list[list[int]] = [[] for _ in range(k)]
    for i in range(n):
        groups[i % k].append(i)
    return groups


def test_topic_config_changes_reach_the_remote_topic(local_clusters: LocalClusters, spark: SparkSession) -> None:
    """Config sync: changed values are set, reset ones deleted, excluded ones never touched."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry

    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic = unique_name("configs")
    create_topic(p, topic, config={"retention.ms": "3600000", "max.message.bytes": "200000"})
    produce(p, topic, [{"value": b"x"}])
    cfg = make_config(
        local_clusters,
        [("primary", "backup")],
        topics=topic,
        **{"sync.topic.configs.interval.seconds": "1"},
    )
    remote = f"primary.{topic}"
    with running(cfg, spark):
        assert_eventually(lambda: values_if_exists(b, remote) == [(0, b"x")], timeout_s=60)
        assert topic_config(b, remote)["retention.ms"] == "3600000"

        def alter(bootstrap: str, name: str, entries: dict[str, str | None]) -> None:
            client = admin(bootstrap)
            res = ConfigResource(
                ConfigResource.Type.TOPIC,
                name,
                incremental_configs=[
                    ConfigEntry(
                        k, v, incremental_operation=AlterConfigOpType.DELETE if v is None else AlterConfigOpType.SET
                    )
                    for k, v in entries.items()
                ],
            )
            client.incremental_alter_configs([res])[res].result(30)

        # a target-side override of an excluded property survives
        alter(b, remote, {"min.insync.replicas": "2"})  # no record is copied after this
        alter(
            p,
            topic,
            {
                "retention.ms": "7200000",
                "max.message.bytes": None,
                "cleanup.policy": "compact",
                "min.insync.replicas": "1",
            },
        )
        assert_eventually(
            lambda: (
                topic_config(b, remote)["retention.ms"] == "7200000"
                and topic_config(b, remote)["cleanup.policy"] == "compact"
            ),
            timeout_s=30,
        )
        assert_eventually(lambda: topic_config(b, remote)["max.message.bytes"] != "200000", timeout_s=30)
    assert topic_config(b, remote)["min.insync.replicas"] == "2"


def test_status_shows_flows_and_upstream_clusters(
    local_clusters: LocalClusters, spark: SparkSession, tmp_path: Any
) -> None:
    import subprocess
    import sys

    p = local_clusters.bootstrap("primary")
    topic = unique_name("status")
    create_topic(p, topic, partitions=2)
    produce(p, topic, [{"value": b"x", "partition": i % 2} for i in range(40)])
    extra = {"topics": topic, "emit.heartbeats.interval.seconds": "1", "tasks.max": "2"}
    props = tmp_path / "mm2.properties"
    props.write_text(local_clusters.mm2_properties([("primary", "backup")], extra=extra))
    cfg = make_config(local_clusters, [("primary", "backup")], topics=topic)

    def status() -> dict[str, Any]:
        r = subprocess.run(
            [sys.executable, "-m", "mirrorspark", "status", str(props), "--json"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 0, r.stderr
        return dict(json.loads(r.stdout))

    with running(cfg, spark):

        def caught_up() -> bool:
            s = status()
            (flow,) = s["flows"]
            keys = ("topic", "remote_topic", "partitions", "records", "lag", "copied_records", "copied_bytes")
            mine = [{k: t[k] for k in keys} for t in flow["topics"] if t["topic"] == topic]
            return flow["state"] == "running" and mine == [
                {
                    "topic": topic,
                    "remote_topic": f"primary.{topic}",
                    "partitions": 2,
                    "records": 40,
                    "lag": 0,
                    "copied_records": 40,
                    "copied_bytes": 40,  # 40 one-byte values, no keys
                }
            ]

        assert_eventually(caught_up, timeout_s=90)
    clusters = {c["cluster"]: c for c in status()["clusters"]}
    assert "primary" in clusters["backup"]["upstream_clusters"]
    assert clusters["backup"]["replication_hops"]["primary"] == 1
