"""How batches are cut: tasks that follow their partitions, the idle watch, batched topic creation.

Real brokers (the session's ``primary`` and ``backup``) and, where a batch runs, the session's
SparkSession.
"""

from __future__ import annotations

import threading

import pytest
from helpers import admin, assert_eventually, consume_all, create_topic, produce, unique_name

from mirrorspark.config.model import MirrorConfig
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.errors import ClusterError
from mirrorspark.kafka.admin import TopicSpec, create_topics
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.replication import flow as flows
from mirrorspark.replication.copy import run_copy_task
from mirrorspark.replication.datapath import DataPath
from mirrorspark.replication.driver import Replicator
from mirrorspark.replication.tasks import CopyTask, PartitionRange

pytestmark = [pytest.mark.integration]


def _config(clusters: LocalClusters, topics: str, **extra: str) -> MirrorConfig:
    props = clusters.mm2_properties(
        [("primary", "backup")],
        extra={"topics": topics, "heartbeats.replication.enabled": "false", "tasks.max": "2", **extra},
    )
    return parse_config(parse_properties(props))


def _task(clusters: LocalClusters, topic: str, start: int, end: int, limit: int | None, follow_s: float) -> CopyTask:
    return CopyTask(
        flow="primary->backup",
        task_index=0,
        consumer_conf={
            "bootstrap.servers": clusters.bootstrap("primary"),
            "group.id": "mirrorspark-tests",
            "enable.auto.commit": False,
            "log_level": 3,
        },
        producer_conf={"bootstrap.servers": clusters.bootstrap("backup"), "enable.idempotence": True, "log_level": 3},
        ranges=(PartitionRange(topic, 0, f"primary.{topic}", start, end, limit=limit),),
        offset_lag_max=100,
        follow_s=follow_s,
    )


def test_a_task_follows_records_that_arrive_after_planning(local_clusters: LocalClusters) -> None:
    """With follow_s, records produced while the task runs go out in the same batch, up to the limit."""
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic = unique_name("follow")
    create_topic(p, topic)
    create_topic(b, f"primary.{topic}")
    produce(p, topic, [{"value": b"planned-%d" % i} for i in range(5)])

    def late_records() -> None:
        # once the planned records are on the target, the task is past its planned end
        assert_eventually(lambda: len(consume_all(b, f"primary.{topic}")) >= 5, timeout_s=30)
        produce(p, topic, [{"value": b"late-%d" % i} for i in range(10)])

    producer = threading.Thread(target=late_records)
    producer.start()
    [result] = run_copy_task(_task(local_clusters, topic, 0, 5, limit=12, follow_s=8.0))
    producer.join()
    # followed up to the limit: 5 planned + 7 of the 10 late records; the rest is the next batch's
    assert result.next_offset == 12
    assert result.records == 12
    assert [r["value"] for r in consume_all(b, f"primary.{topic}")] == [b"planned-%d" % i for i in range(5)] + [
        b"late-%d" % i for i in range(7)
    ]
    # without follow_s the task stops at the planned end, even though more records are there
    [stop] = run_copy_task(_task(local_clusters, topic, 12, 13, limit=15, follow_s=0.0))
    assert (stop.next_offset, stop.records) == (13, 1)


def test_plans_follow_except_when_catching_up(local_clusters: LocalClusters) -> None:
    p = local_clusters.bootstrap("primary")
    topic = unique_name("plan")
    create_topic(p, topic)
    produce(p, topic, [{"value": b"x"}] * 3)
    cfg = _config(
        local_clusters,
        topic,
        **{"mirrorspark.batch.follow.ms": "1500", "mirrorspark.batch.max.records.per.partition": "100"},
    )
    r = Replicator(cfg)
    r.start()
    try:
        flow = r.flows[0]
        [task] = flow.plan()
        assert task.follow_s == 1.5
        assert (task.ranges[0].start, task.ranges[0].end, task.ranges[0].limit) == (0, 3, 100)
        [task] = flow.plan(follow=False)
        assert task.follow_s == 0.0
        assert task.ranges[0].limit is None
    finally:
        r.close()


def test_idle_watch_wakes_caught_up_partitions(
    local_clusters: LocalClusters, data_path: DataPath, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Caught-up partitions are not listed per plan; a new record on one of them still gets planned."""
    monkeypatch.setattr(flows, "FULL_REFRESH_MIN_S", 3600.0)  # only the first plan lists every partition
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic = unique_name("idle")
    create_topic(p, topic, partitions=3)
    produce(p, topic, [{"value": b"first", "partition": 0}])
    r = Replicator(_config(local_clusters, topic), data_path)
    r.start()
    try:
        flow = r.flows[0]
        tasks = flow.plan(follow=False)
        assert [(x.source_topic, x.partition) for t in tasks for x in t.ranges] == [(topic, 0)]
        assert flow.idle_partitions == {(topic, 1), (topic, 2)}  # nothing to copy: watched, not listed
        flow.commit(data_path.copy(tasks))
        assert flow.plan(follow=False) == []
        assert flow.idle_partitions == {(topic, 0), (topic, 1), (topic, 2)}

        produce(p, topic, [{"value": b"woken", "partition": 2}])
        tasks = assert_eventually(lambda: flow.plan(follow=False) or None, timeout_s=30, message="p2 never woke")
        assert [(x.partition, x.start, x.end) for t in tasks for x in t.ranges] == [(2, 0, 1)]
        assert flow.idle_partitions == {(topic, 0), (topic, 1)}
        flow.commit(data_path.copy(tasks))
        assert flow.plan(follow=False) == []
        assert flow.idle_partitions == {(topic, 0), (topic, 1), (topic, 2)}
        assert sorted((m["partition"], m["value"]) for m in consume_all(b, f"primary.{topic}")) == [
            (0, b"first"),
            (2, b"woken"),
        ]
    finally:
        r.close()


def test_topics_are_created_in_batches(local_clusters: LocalClusters) -> None:
    b = local_clusters.bootstrap("backup")
    prefix = unique_name("many")
    client = admin(b)
    specs = [TopicSpec(f"{prefix}.{i:03d}", 2, -1, {"retention.ms": "3600000"}) for i in range(40)]
    assert create_topics(client, "backup", specs) == [s.name for s in specs]
    md = client.list_topics(timeout=30).topics
    assert all(len(md[s.name].partitions) == 2 for s in specs)
    # existing topics are skipped; a failing one is named, and the others of the call are still created
    more = [*specs[:3], TopicSpec(f"{prefix}.new", 1, -1), TopicSpec(f"{prefix}.bad", 1, 7)]
    with pytest.raises(ClusterError, match=rf"'{prefix}\.bad' on cluster 'backup'.*replication factor"):
        create_topics(client, "backup", more)
    md = client.list_topics(timeout=30).topics
    assert f"{prefix}.new" in md and f"{prefix}.bad" not in md
    assert create_topics(client, "backup", more[:4]) == []
