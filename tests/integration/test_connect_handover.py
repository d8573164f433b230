"""The hand-over between Apache Kafka's Connect running MM2's connectors and mirrorspark, both ways (issue #25 item 5).

One folder serves both: ``connectors.json`` (the three connectors' REST bodies, as posted to Connect) and
``connect-distributed.properties`` (the worker config Connect is started with). A real Connect worker
(:func:`mirrorspark.kafka.local.connect_worker.start_connect_worker`, one distributed worker from the ``mm2``
jars) copies ``primary``'s topic to ``primary.<topic>`` on ``backup`` and is stopped gracefully; then
``mirrorspark run <folder> --until-caught-up`` resumes from the source offsets Connect committed under the
source connector's name in the worker's ``offset.storage.topic``; then Connect is started again on the same
worker config and connectors and resumes from what mirrorspark committed there.

The bound on records copied twice: each hand-over happens with every offset committed (Connect is stopped
only once its offsets topic holds every partition's last record, which its ``offset.flush.interval.ms`` of 1 s
and the final commit of a graceful stop both see to; ``--until-caught-up`` exits after its copy tasks
committed), so a successor that resumes from its predecessor's commit copies nothing twice: the test asserts
0 each way. One flush interval's worth (at most every record produced in the last second before a hard stop)
is what a kill would allow; a graceful stop allows nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from helpers import consume_all, create_topic, end_offsets, produce, unique_name

from mirrorspark.errors import LocalClusterError
from mirrorspark.kafka.local.connect_worker import ConnectWorkerProcess, start_connect_worker
from mirrorspark.kafka.local.model import LocalClusters

pytestmark = pytest.mark.integration

SOURCE_CONNECTOR = "handover-source"
BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
PARTITIONS = 2
N, M, K = 200, 100, 100  # records copied by Connect, then by mirrorspark, then by Connect again
FLUSH_INTERVAL_MS = 1000
CONNECT_DEADLINE_S = 240.0  # a loaded 2-core machine: the worker's start, group join and first copies


def write_folder(clusters: LocalClusters, folder: Path, topic: str, prefix: str) -> tuple[Path, list[dict[str, Any]]]:
    """The connector configs and the worker config, as a team running MM2 on Connect has them.

    Returns the worker properties file and the connectors' REST bodies.
    """
    p, b = clusters.bootstrap("primary"), clusters.bootstrap("backup")
    worker = {
        "bootstrap.servers": b,
        "group.id": prefix,
        "key.converter": BYTES,
        "value.converter": BYTES,
        "header.converter": BYTES,
        "config.storage.topic": f"{prefix}-configs",
        "offset.storage.topic": f"{prefix}-offsets",
        "status.storage.topic": f"{prefix}-status",
        "offset.storage.partitions": "5",
        # one broker per cluster
        "config.storage.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        # Connect's default is 60 s
        "offset.flush.interval.ms": str(FLUSH_INTERVAL_MS),
    }
    flow = {
        "source.cluster.alias": "primary",
        "source.cluster.bootstrap.servers": p,
        "target.cluster.alias": "backup",
        "target.cluster.bootstrap.servers": b,
        "key.converter": BYTES,
        "value.converter": BYTES,
        "header.converter": BYTES,
    }
    connectors: list[dict[str, Any]] = [
        {
            "name": SOURCE_CONNECTOR,
            "config": {
                **flow,
                "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
                "tasks.max": str(PARTITIONS),
                "topics": topic,
                "sync.topic.acls.enabled": "false",
                "replication.factor": "1",
                "offset-syncs.topic.replication.factor": "1",
            },
        },
        {
            "name": "handover-checkpoint",
            "config": {
                **flow,
                "connector.class": "org.apache.kafka.connect.mirror.MirrorCheckpointConnector",
                "tasks.max": "1",
                "topics": topic,
                "checkpoints.topic.replication.factor": "1",
                "offset-syncs.topic.replication.factor": "1",
            },
        },
        {
            "name": "handover-heartbeat",
            "config": {
                **flow,
                "connector.class": "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector",
                "tasks.max": "1",
                "heartbeats.topic.replication.factor": "1",
            },
        },
    ]
    folder.mkdir()
    (folder / "connectors.json").write_text(json.dumps(connectors, indent=2))
    properties = folder / "connect-distributed.properties"
    properties.write_text("".join(f"{k}={v}\n" for k, v in worker.items()))
    return properties, connectors


def committed(clusters: LocalClusters, offsets_topic: str, topic: str) -> dict[int, int]:
    """The source connector's committed offsets for ``topic``: {partition: last copied upstream offset}.

    Also checks that every record of one source partition has the same key bytes: Connect finds an offset by the
    bytes of the key it serializes itself, and compaction keeps one record per key, so mirrorspark must write
    Connect's very bytes.
    """
    out: dict[int, int] = {}
    keys: dict[int, set[bytes]] = {}
    for r in consume_all(clusters.bootstrap("backup"), offsets_topic):
        name, partition = json.loads(r["key"])
        if name != SOURCE_CONNECTOR or partition.get("cluster") != "primary" or partition.get("topic") != topic:
            continue
        keys.setdefault(partition["partition"], set()).add(r["key"])
        if r["value"] is None:
            out.pop(partition["partition"], None)
        else:
            out[partition["partition"]] = json.loads(r["value"])["offset"]
    assert all(len(k) == 1 for k in keys.values()), f"one source partition under several keys: {keys}"
    return out


def last_offsets(clusters: LocalClusters, topic: str) -> dict[int, int]:
    """{partition: offset of its last record} of ``primary``'s ``topic``."""
    return {p: end - 1 for p, (_, end) in end_offsets(clusters.bootstrap("primary"), topic).items()}


def tally(clusters: LocalClusters, topic: str, produced: Iterable[bytes]) -> tuple[int, int]:
    """(records lost, records copied twice) of the remote topic against the values produced upstream."""
    copies = Counter(r["value"] for r in consume_all(clusters.bootstrap("backup"), f"primary.{topic}"))
    expected = set(produced)
    assert set(copies) <= expected, f"records nobody produced: {sorted(set(copies) - expected)[:5]}"
    return len(expected - set(copies)), sum(n - 1 for n in copies.values())


def wait_while_running(worker: ConnectWorkerProcess, what: str, condition: Callable[[], bool]) -> None:
    """Poll ``condition`` until true while the worker runs (counts only: the deadline is a safety net)."""
    deadline = time.monotonic() + CONNECT_DEADLINE_S
    while not condition():
        if not worker.running:
            pytest.fail(f"Connect exited (status {worker.returncode}) before {what}; log tail:\n{worker.log_tail(40)}")
        if time.monotonic() >= deadline:
            pytest.fail(
                f"Connect did not achieve {what} in {CONNECT_DEADLINE_S:.0f} s; log tail:\n{worker.log_tail(40)}"
            )
        time.sleep(1.0)


def connect_copies(
    clusters: LocalClusters,
    properties: Path,
    connectors: list[dict[str, Any]],
    base_dir: Path,
    *,
    topic: str,
    offsets_topic: str,
    produced: list[bytes],
    first: bool,
) -> None:
    """Start Connect, give it the connectors, wait until it copied and committed everything, stop it gracefully.

    The first time the connectors are posted (``POST /connectors``); after that the worker reads them back from
    its config topic and they are put again unchanged (``PUT /connectors/<name>/config``), as a deployment
    re-applies its configs.
    """
    worker = start_connect_worker(properties, base_dir=base_dir)
    try:
        worker.wait_started(timeout_s=CONNECT_DEADLINE_S)
        for body in connectors:
            if first:
                worker.post_connector(body, timeout_s=CONNECT_DEADLINE_S)
            else:
                worker.put_config(body["name"], body["config"], timeout_s=CONNECT_DEADLINE_S)
        worker.wait_running(SOURCE_CONNECTOR, timeout_s=CONNECT_DEADLINE_S)
        worker.wait_running("handover-heartbeat", timeout_s=CONNECT_DEADLINE_S)
        worker.wait_running("handover-checkpoint", min_tasks=0, timeout_s=CONNECT_DEADLINE_S)
        wait_while_running(
            worker, f"copying all {len(produced)} records", lambda: tally(clusters, topic, produced)[0] == 0
        )
        ends = last_offsets(clusters, topic)
        wait_while_running(
            worker, f"committing offsets {ends}", lambda: committed(clusters, offsets_topic, topic) == ends
        )
        assert worker.stop() == 143, f"Connect did not exit on SIGTERM; log tail:\n{worker.log_tail(40)}"
    finally:
        worker.stop()


def run_mirrorspark(folder: Path) -> None:
    """``mirrorspark run <folder> --until-caught-up``: the connector configs and the worker config of the folder."""
    r = subprocess.run(
        [sys.executable, "-m", "mirrorspark", "run", str(folder), "--until-caught-up", "--quiet"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr


def produce_batch(clusters: LocalClusters, topic: str, phase: str, count: int) -> list[bytes]:
    """``count`` records of unique values ``<phase>-<i>``, spread evenly over the partitions; returns the values."""
    values = [f"{phase}-{i}".encode() for i in range(count)]
    produce(
        clusters.bootstrap("primary"),
        topic,
        [{"value": v, "partition": i % PARTITIONS} for i, v in enumerate(values)],
    )
    return values


def test_connect_and_mirrorspark_hand_over_both_ways(local_clusters: LocalClusters, tmp_path: Path) -> None:
    topic = unique_name("handover")
    prefix = unique_name("handover-connect")
    offsets_topic = f"{prefix}-offsets"
    create_topic(local_clusters.bootstrap("primary"), topic, partitions=PARTITIONS)
    folder = tmp_path / "connect"
    properties, connectors = write_folder(local_clusters, folder, topic, prefix)
    base_dir = tmp_path / "connect-worker"

    # Connect -> mirrorspark
    produced = produce_batch(local_clusters, topic, "connect", N)
    connect_copies(
        local_clusters,
        properties,
        connectors,
        base_dir,
        topic=topic,
        offsets_topic=offsets_topic,
        produced=produced,
        first=True,
    )
    produced += produce_batch(local_clusters, topic, "mirrorspark", M)
    run_mirrorspark(folder)
    lost, twice = tally(local_clusters, topic, produced)
    print(f"\nConnect -> mirrorspark: {N} + {M} records, {lost} lost, {twice} copied twice")
    assert lost == 0
    assert twice == 0, "mirrorspark did not resume from the offsets Connect committed"
    # where Connect will look: the worker's offsets topic, under the source connector's name
    assert committed(local_clusters, offsets_topic, topic) == last_offsets(local_clusters, topic)

    # mirrorspark -> Connect
    produced += produce_batch(local_clusters, topic, "connect-again", K)
    connect_copies(
        local_clusters,
        properties,
        connectors,
        base_dir,
        topic=topic,
        offsets_topic=offsets_topic,
        produced=produced,
        first=False,
    )
    lost, twice_after = tally(local_clusters, topic, produced)
    print(f"mirrorspark -> Connect: {K} more records, {lost} lost, {twice_after - twice} copied twice")
    assert lost == 0
    assert twice_after == 0, "Connect did not resume from the offsets mirrorspark committed"


def test_launcher_reports_a_failed_start(tmp_path: Path) -> None:
    """A worker that exits during start-up (here: a worker config without its required keys) fails wait_started.

    With the exit status and the log tail, which names the first missing key.
    """
    properties = tmp_path / "connect-distributed.properties"
    properties.write_text("bootstrap.servers = 127.0.0.1:1\n")
    worker = start_connect_worker(properties, base_dir=tmp_path)
    try:
        with pytest.raises(
            LocalClusterError, match=r"(?s)exited during start-up with status 2.*Missing required configuration"
        ):
            worker.wait_started(timeout_s=CONNECT_DEADLINE_S)
        assert not worker.running
    finally:
        worker.stop()
    assert worker.returncode == 2
