"""Never silent: records lost before they were copied are gap events; impossible stored offsets are never acted on.

Real brokers (the session's ``primary`` and ``backup``), an in-process
:class:`~mirrorspark.replication.driver.Replicator` on the session's SparkSession, and
``mirrorspark status --json`` as users run it.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException, TopicPartition
from helpers import admin, assert_eventually, consume_all, create_topic, produce, unique_name
from pyspark.sql import SparkSession

from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.errors import DataGapError
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.mm2.connect_offsets import default_partition, source_offset_key, source_offset_value
from mirrorspark.replication.driver import Replicator

pytestmark = [pytest.mark.integration, pytest.mark.spark]

FLOW = "primary->backup"


def properties(clusters: LocalClusters, topic: str, **extra: str) -> str:
    return clusters.mm2_properties(
        [("primary", "backup")],
        extra={"topics": topic, "tasks.max": "2", "emit.heartbeats.interval.seconds": "1", **extra},
    )


def replicate(text: str, spark: SparkSession) -> Replicator:
    r = Replicator(parse_config(parse_properties(text)), spark)
    r.run(until_caught_up=True)
    return r


def status_json(tmp_path: Path, text: str) -> dict[str, Any]:
    path = tmp_path / "mm2.properties"
    path.write_text(text)
    done = subprocess.run(
        [sys.executable, "-m", "mirrorspark", "status", str(path), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def values(bootstrap: str, topic: str) -> list[bytes | None]:
    return [r["value"] for r in consume_all(bootstrap, topic)]


def delete_records(bootstrap: str, topic: str, partition: int, before: int) -> None:
    """``kafka-delete-records``: the partition's log start becomes ``before``."""
    client = admin(bootstrap)
    [fut] = client.delete_records([TopicPartition(topic, partition, before)], request_timeout=30).values()
    fut.result(30)


def test_records_deleted_before_they_were_copied_are_a_gap_in_status(
    local_clusters: LocalClusters, spark: SparkSession, tmp_path: Path
) -> None:
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic = unique_name("gapdel")
    create_topic(p, topic)
    text = properties(local_clusters, topic)
    produce(p, topic, [{"value": f"a{i}"} for i in range(100)])
    replicate(text, spark)  # 0..99 copied
    produce(p, topic, [{"value": f"b{i}"} for i in range(100, 700)])
    delete_records(p, topic, 0, 600)  # 100..599 deleted before they were copied
    r = replicate(text, spark)
    [stats] = r.stats()
    assert stats.gaps == 1
    remote = values(b, f"primary.{topic}")
    assert len(remote) == 200 and remote[-1] == b"b699"  # the rest was copied
    doc = status_json(tmp_path, text)
    gaps = [g for g in doc["gaps"] if g["topic"] == topic]
    assert len(gaps) == 1
    g = gaps[0]
    assert {k: g[k] for k in ("flow", "topic", "partition", "reason", "first_lost", "last_lost")} == {
        "flow": FLOW,
        "topic": topic,
        "partition": 0,
        "reason": "deleted",
        "first_lost": 100,
        "last_lost": 599,
    }
    assert isinstance(g["at"], int) and g["at"] > 1_600_000_000_000
    flow = next(f for f in doc["flows"] if f["flow"] == FLOW)
    assert g in flow["gaps"]
    text_out = subprocess.run(
        [sys.executable, "-m", "mirrorspark", "status", str(tmp_path / "mm2.properties")],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert f"{topic}-0" in text_out and "deleted" in text_out and "599" in text_out


def recreate(bootstrap: str, topic: str, partitions: int) -> None:
    client = admin(bootstrap)
    client.delete_topics([topic], operation_timeout=30)[topic].result(30)

    def created() -> bool:
        try:
            create_topic(bootstrap, topic, partitions=partitions)
        except KafkaException:
            return False  # still marked for deletion
        return True

    assert_eventually(created, timeout_s=60, message=f"{topic} could not be created again")


def test_a_deleted_and_recreated_topic_is_a_gap_and_its_records_are_copied(
    local_clusters: LocalClusters, spark: SparkSession, tmp_path: Path
) -> None:
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic = unique_name("gaprecreate")
    create_topic(p, topic)
    text = properties(local_clusters, topic)
    produce(p, topic, [{"value": f"old{i}"} for i in range(100)])
    replicate(text, spark)
    recreate(p, topic, 1)
    produce(p, topic, [{"value": f"new{i}"} for i in range(50)])
    r = replicate(text, spark)
    assert r.stats()[0].gaps == 1
    remote = values(b, f"primary.{topic}")
    assert remote[100:] == [f"new{i}".encode() for i in range(50)]  # the 50 new records reach the target
    [g] = [g for g in status_json(tmp_path, text)["gaps"] if g["topic"] == topic]
    assert g["reason"] == "recreated" and g["partition"] == 0
    assert g["old_topic_id"] and g["new_topic_id"] and g["old_topic_id"] != g["new_topic_id"]


def test_a_topic_deleted_and_recreated_while_copying_loses_nothing_without_a_gap(
    local_clusters: LocalClusters, spark: SparkSession
) -> None:
    """engine-audit F2: the old incarnation's last reports never move the new topic past records never copied.

    A running flow (topic refresh every second) copies a topic that is deleted and re-created under it;
    records keep flowing into the new topic. Every record of the new topic reaches the target, or lies
    inside a gap the flow names (never a record skipped in silence).
    """
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic = unique_name("gaprecreating")
    create_topic(p, topic)
    text = properties(local_clusters, topic, **{"refresh.topics.interval.seconds": "1"})
    produce(p, topic, [{"value": f"old{i}"} for i in range(3000)])
    r = Replicator(parse_config(parse_properties(text)), spark)
    r.start()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            r.run()
        except BaseException as e:  # surfaced in the test thread
            errors.append(e)

    t = threading.Thread(target=run, name="replicator", daemon=True)
    t.start()
    new = 600
    try:
        assert_eventually(lambda: len(values(b, f"primary.{topic}")) > 0, timeout_s=90, message="nothing copied")
        recreate(p, topic, 1)  # while the flow copies it
        for n in range(0, new, 50):  # the new topic fills while the flow finds out
            produce(p, topic, [{"value": f"new{i}"} for i in range(n, n + 50)])
            time.sleep(0.1)

        def new_records_accounted_for() -> bool:
            copied = set(values(b, f"primary.{topic}"))
            named = {
                o
                for g in r.flows[0].gaps
                if g.topic == topic and g.reason != "recreated" and g.first_lost is not None and g.last_lost is not None
                for o in range(g.first_lost, g.last_lost + 1)
            }
            return all(f"new{i}".encode() in copied or i in named for i in range(new))

        assert_eventually(new_records_accounted_for, timeout_s=120, message="a new record neither copied nor in a gap")
    finally:
        r.request_stop()
        t.join(120)
    assert not t.is_alive() and not errors, errors


def test_an_offsets_record_past_the_end_is_skipped_with_a_warning(
    local_clusters: LocalClusters, spark: SparkSession, caplog: pytest.LogCaptureFixture
) -> None:
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic = unique_name("gapforeign")
    create_topic(p, topic)
    produce(p, topic, [{"value": f"v{i}"} for i in range(100)])
    text = properties(local_clusters, topic)
    offsets_topic = "mm2-offsets.primary.internal"
    if offsets_topic not in admin(b).list_topics(timeout=30).topics:
        create_topic(b, offsets_topic, partitions=25, config={"cleanup.policy": "compact"})
    n = len(admin(b).list_topics(topic=offsets_topic, timeout=30).topics[offsets_topic].partitions)
    key = source_offset_key("primary", topic, 0)
    produce(
        b, offsets_topic, [{"key": key, "value": source_offset_value(5000), "partition": default_partition(key, n)}]
    )
    with caplog.at_level(logging.WARNING, logger="mirrorspark"):
        r = replicate(text, spark)
    assert len(values(b, f"primary.{topic}")) == 100  # all of them
    assert r.stats()[0].invalid_offsets == 1
    assert "5000" in caplog.text and "past the partition's end offset 100" in caplog.text


def test_on_gap_stop_halts_the_flow_and_the_run_fails(local_clusters: LocalClusters, spark: SparkSession) -> None:
    p = local_clusters.bootstrap("primary")
    topic = unique_name("gapstop")
    create_topic(p, topic)
    text = properties(local_clusters, topic, **{"mirrorspark.on.gap": "stop"})
    produce(p, topic, [{"value": b"x"} for _ in range(20)])
    replicate(text, spark)
    produce(p, topic, [{"value": b"y"} for _ in range(30)])
    delete_records(p, topic, 0, 40)
    with pytest.raises(DataGapError, match=rf"{topic}-0: offsets 20\.\.39 .*mirrorspark\.on\.gap=stop"):
        replicate(text, spark)


def test_a_task_whose_position_is_out_of_range_stops_there_and_says_so(local_clusters: LocalClusters) -> None:
    """The data consumer never resets silently: the task ends out of range at once, nothing is skipped."""
    from mirrorspark.replication.task.job import run_copy_task
    from mirrorspark.replication.task.spec import CopyTaskSpec, PartitionAssignment, TaskOutcome
    from mirrorspark.replication.worker.grant_server import GrantServer

    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic = unique_name("gaptask")
    create_topic(p, topic)
    create_topic(b, f"primary.{topic}")
    produce(p, topic, [{"value": b"z"} for _ in range(60)])
    delete_records(p, topic, 0, 50)
    grants = GrantServer()
    grants.grant(FLOW, 1, time.monotonic() + 60.0)
    spec = CopyTaskSpec(
        flow=FLOW,
        source="primary",
        target="backup",
        task_index=0,
        generation=1,
        consumer_conf={"bootstrap.servers": p, "group.id": "gaptask", "auto.offset.reset": "error"},
        producer_conf={"bootstrap.servers": b, "enable.idempotence": True},
        commit_conf={"bootstrap.servers": b, "enable.idempotence": True},
        syncs_conf=None,
        offsets_topic=unique_name("offsets"),
        offsets_partitions=1,
        syncs_topic=unique_name("syncs"),
        progress_topic=unique_name("progress"),
        partitions=(PartitionAssignment(topic, 0, f"primary.{topic}", 10),),
        offset_lag_max=100,
        flush_interval_s=1.0,
        grant_address=grants.address,
        stall_timeout_s=30,
    )
    try:
        result = run_copy_task(spec)
    finally:
        grants.close()
    assert result.outcome == TaskOutcome.OUT_OF_RANGE
    assert result.out_of_range == ((topic, 0),) and result.records == 0
    assert consume_all(b, f"primary.{topic}") == []
