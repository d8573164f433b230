"""``mirrorspark run --master spark://...`` on a real Spark standalone cluster (issue #11).

A master and two 1-core workers from the pyspark package (:mod:`standalone`), two Kafka clusters of
the test's own, and the ``mirrorspark`` command as a subprocess: its driver ships the mirrorspark
package to the executors as a zip, and the copy tasks of one flow spread over both workers.
Not marked ``spark``: the driver is the subprocess, not this process's SparkSession.
"""

from __future__ import annotations

import atexit
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import consume_all, create_topic, produce, unique_name
from standalone import StandaloneCluster

from mirrorspark.kafka.local.clusters import start_clusters, stop_clusters
from mirrorspark.kafka.local.model import LocalClusters

pytestmark = pytest.mark.integration

PARTITIONS = 4
RECORDS_PER_PARTITION = 2500
BATCH = 1000  # mirrorspark.batch.max.records.per.partition: three batches, 4 tasks each


@pytest.fixture
def own_clusters(tmp_path: Path) -> Iterator[LocalClusters]:
    """``primary`` and ``backup`` (1 broker each) for this test only, stopped at its end."""
    base_dir = tmp_path / "kafka"

    def stop() -> None:
        stop_clusters(base_dir)

    atexit.register(stop)
    try:
        yield start_clusters(["primary", "backup"], base_dir=base_dir, brokers=1)
    finally:
        stop()
        atexit.unregister(stop)


def records_of(topic: str) -> list[dict[str, Any]]:
    """Unique keys, values, headers and timestamps (the last few seconds: within retention), partition by partition."""
    start_ms = int(time.time() * 1000) - RECORDS_PER_PARTITION
    return [
        {
            "key": f"k-{p}-{i}".encode(),
            "value": f"{topic}|{p}|{i}|".encode() + bytes([i % 256]) * (i % 50),
            "headers": [("seq", i.to_bytes(4, "big")), ("p", bytes([p]))],
            "timestamp_ms": start_ms + i,
            "partition": p,
        }
        for p in range(PARTITIONS)
        for i in range(RECORDS_PER_PARTITION)
    ]


def by_partition(records: list[dict[str, Any]]) -> dict[int, list[tuple[Any, ...]]]:
    out: dict[int, list[tuple[Any, ...]]] = {}
    for r in records:
        out.setdefault(r["partition"], []).append((r["key"], r["value"], list(r["headers"]), r["timestamp_ms"]))
    return out


def finished_tasks_by_executor(event_log_dir: Path) -> dict[str, int]:
    """Count the successful tasks per executor id in the application's Spark event log."""
    counts: dict[str, int] = {}
    files = [f for f in event_log_dir.iterdir() if f.is_file() and not f.name.startswith(".")]
    assert len(files) == 1, f"expected one event log in {event_log_dir}, found {files}"
    for line in files[0].read_text().splitlines():
        event = json.loads(line)
        if event.get("Event") == "SparkListenerTaskEnd" and event["Task End Reason"]["Reason"] == "Success":
            executor = event["Task Info"]["Executor ID"]
            counts[executor] = counts.get(executor, 0) + 1
    return counts


def executors_of(cluster: StandaloneCluster, worker: int) -> dict[str, Path]:
    """The executors worker ``worker`` ran: ``{executor id: its work dir app-<id>/<executor id>}``."""
    return {d.name: d for d in cluster.worker_dir(worker).glob("app-*/*") if d.is_dir()}


def test_run_on_a_standalone_cluster_spreads_tasks_over_both_workers(
    tmp_path: Path, own_clusters: LocalClusters, spark_standalone: StandaloneCluster
) -> None:
    primary, backup = own_clusters.bootstrap("primary"), own_clusters.bootstrap("backup")
    topic = unique_name("standalone")
    create_topic(primary, topic, partitions=PARTITIONS)
    sent = records_of(topic)
    produce(primary, topic, sent)

    props = tmp_path / "mm2.properties"
    props.write_text(
        own_clusters.mm2_properties(
            [("primary", "backup")],
            extra={
                "topics": topic,
                "tasks.max": str(PARTITIONS),
                "mirrorspark.batch.max.records.per.partition": str(BATCH),
            },
        )
    )
    event_logs = tmp_path / "spark-events"
    event_logs.mkdir()
    spark_conf = {
        # Wait (at most 30 s, Spark's spark.scheduler.maxRegisteredResourcesWaitingTime) until both
        # executors have registered before the first job, so that its 4 tasks can use both slots.
        "spark.cores.max": "2",
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        # Which executor ran which task, kept after the application ends.
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": event_logs.as_uri(),
        "spark.eventLog.compress": "false",
        "spark.eventLog.rolling.enabled": "false",  # one JSON-lines file (Spark 4 rolls by default)
    }
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mirrorspark",
            "run",
            str(props),
            "--until-caught-up",
            "--quiet",
            "--json",
            "--master",
            spark_standalone.url,
            *(a for k, v in spark_conf.items() for a in ("--conf", f"{k}={v}")),
        ],
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    [stats] = json.loads(run.stdout)
    assert stats["records"] == PARTITIONS * RECORDS_PER_PARTITION

    # Every record, byte-exact and in order per partition.
    received = consume_all(backup, f"primary.{topic}", timeout_s=60)
    assert by_partition(received) == by_partition(sent)

    # Tasks ran on both workers: each worker hosted one executor (1 core each), and both
    # executors finished copy tasks.
    tasks = finished_tasks_by_executor(event_logs)
    executors = [executors_of(spark_standalone, w) for w in range(2)]
    assert all(len(e) == 1 for e in executors), executors
    for w, ex in enumerate(executors):
        [(executor_id, work_dir)] = ex.items()
        assert tasks.get(executor_id, 0) > 0, f"worker {w} (executor {executor_id}) ran no task: {tasks}"
        # The driver shipped the mirrorspark package to the executor (fetched when a task starts there).
        assert (work_dir / "mirrorspark.zip").is_file(), sorted(p.name for p in work_dir.iterdir())
