"""An exactly-once hand-over from MM2's connectors on Kafka Connect to mirrorspark (``engine-audit-2.md`` N2).

A real Connect worker (``exactly.once.source.support=enabled``) runs a ``MirrorSourceConnector``
(``exactly.once.support=required``, 2 tasks, transactions of 3 s) while records flow into the source. At a
moment one of its transactions is open on the remote topic (its high watermark above its last stable offset)
the worker is killed (``SIGKILL``), or frozen (``SIGSTOP``: a zombie, as a worker in a long GC pause or cut off
from its group is). ``mirrorspark run`` on the very same connector and worker configs ``--until-caught-up``
then copies from the offsets Connect committed; a frozen worker is resumed (``SIGCONT``) after the run, and
killed once its tasks failed or it committed.

Connect's task ``i`` holds transactional id ``<worker group.id>-<connector name>-<i>`` (KIP-618). mirrorspark
must fence those ids, all of them (the task count read from the worker's ``config.storage.topic``), before its
copy tasks start: the open transaction is then aborted, and a zombie's commit fails. Fencing other ids (the
dedicated-mode ``<source>-mm2-MirrorSourceConnector-<i>``) leaves the transaction open: a killed worker's holds
the remote topic's last stable offset for its whole ``transaction.timeout.ms`` (a ``read_committed`` consumer
sees none of mirrorspark's copies behind it meanwhile), and a zombie commits it (the consumer sees its records
twice).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from helpers import consume_all, create_topic, end_offsets, unique_name

from mirrorspark.kafka.local.brokers import signal_group
from mirrorspark.kafka.local.connect_worker import ConnectWorkerProcess, start_connect_worker
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.mm2.connect_configs import ConnectTaskCounts

pytestmark = pytest.mark.integration

CONNECTOR = "eos-msc"
BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
PARTITIONS = 2
DEADLINE_S = 240.0  # a loaded 2-core machine: the worker's start, group join and first copies


def write_folder(clusters: LocalClusters, folder: Path, topic: str, group: str) -> tuple[Path, list[dict[str, Any]]]:
    """The connector configs and the Connect worker config, as a team running MM2 on Connect has them.

    Returns the worker properties file and the connectors' REST bodies (source first).
    """
    b = clusters.bootstrap("backup")
    worker = {
        "bootstrap.servers": b,
        "group.id": group,
        "key.converter": BYTES,
        "value.converter": BYTES,
        "header.converter": BYTES,
        "config.storage.topic": f"{group}-configs",
        "offset.storage.topic": f"{group}-offsets",
        "status.storage.topic": f"{group}-status",
        "offset.storage.partitions": "5",
        "config.storage.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        "offset.flush.interval.ms": "1000",
        "exactly.once.source.support": "enabled",
        # the zombie outlives mirrorspark's run: neither its transaction nor its group membership expires meanwhile
        "producer.transaction.timeout.ms": "600000",
        "session.timeout.ms": "300000",
    }
    flow = {
        "source.cluster.alias": "primary",
        "source.cluster.bootstrap.servers": clusters.bootstrap("primary"),
        "target.cluster.alias": "backup",
        "target.cluster.bootstrap.servers": b,
        "key.converter": BYTES,
        "value.converter": BYTES,
        "header.converter": BYTES,
    }
    source = {
        "name": CONNECTOR,
        "config": {
            **flow,
            "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
            "tasks.max": str(PARTITIONS),
            "topics": topic,
            "sync.topic.acls.enabled": "false",
            "sync.topic.configs.enabled": "false",
            "replication.factor": "1",
            "offset-syncs.topic.replication.factor": "1",
            "source.consumer.isolation.level": "read_committed",
            "exactly.once.support": "required",
            "transaction.boundary": "interval",
            "transaction.boundary.interval.ms": "3000",
        },
    }
    checkpoint = {  # its replication factors serve mirrorspark's own topics on the target too (one broker)
        "name": f"{CONNECTOR}-checkpoint",
        "config": {
            **flow,
            "connector.class": "org.apache.kafka.connect.mirror.MirrorCheckpointConnector",
            "tasks.max": "1",
            "topics": topic,
            "checkpoints.topic.replication.factor": "1",
            "offset-syncs.topic.replication.factor": "1",
        },
    }
    folder.mkdir()
    (folder / "connectors.json").write_text(json.dumps([source, checkpoint], indent=2))
    properties = folder / "connect-distributed.properties"
    properties.write_text("".join(f"{k}={v}\n" for k, v in worker.items()))
    return properties, [source, checkpoint]


class Feeder(threading.Thread):
    """Produces ``live-<i>`` records to both source partitions until stopped; ``values`` holds every one sent."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.topic = topic
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self.values: list[bytes] = []
        self.halt = threading.Event()

    def run(self) -> None:
        i = 0
        while not self.halt.is_set():
            value = f"live-{i}".encode()
            self.producer.produce(self.topic, value, partition=i % PARTITIONS)
            self.values.append(value)
            self.producer.poll(0)
            i += 1
            time.sleep(0.01)

    def finish(self) -> list[bytes]:
        self.halt.set()
        self.join()
        assert self.producer.flush(DEADLINE_S) == 0, "source records left unacknowledged"
        return self.values


def copies(clusters: LocalClusters, topic: str) -> Counter[bytes]:
    """How many times a ``read_committed`` consumer of the remote topic sees each value."""
    return Counter(r["value"] for r in consume_all(clusters.bootstrap("backup"), f"primary.{topic}"))


def open_transaction(clusters: LocalClusters, topic: str) -> bool:
    """Whether a transaction is open on the remote topic (some partition's high watermark above its LSO)."""
    b = clusters.bootstrap("backup")
    stable = end_offsets(b, f"primary.{topic}", read_committed=True)
    high = end_offsets(b, f"primary.{topic}", read_committed=False)
    return any(high[p][1] > stable[p][1] for p in high)


def wait_for(what: str, condition: Any, worker: ConnectWorkerProcess) -> None:
    """Poll ``condition`` until true (counts only: the deadline is a safety net)."""
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() >= deadline:
            pytest.fail(f"no {what} in {DEADLINE_S:.0f} s; Connect's log tail:\n{worker.log_tail(40)}")
        time.sleep(0.5)


def freeze_mid_transaction(worker: ConnectWorkerProcess, clusters: LocalClusters, topic: str) -> None:
    """``SIGSTOP`` the worker at a moment one of its transactions is open on the remote topic."""
    for _ in range(60):
        signal_group(worker.pid, signal.SIGSTOP)
        if open_transaction(clusters, topic):
            return
        signal_group(worker.pid, signal.SIGCONT)
        time.sleep(0.3)
    pytest.fail(f"never caught Connect with an open transaction; log tail:\n{worker.log_tail(40)}")


def resume_zombie(worker: ConnectWorkerProcess, clusters: LocalClusters, topic: str) -> None:
    """``SIGCONT`` the frozen worker; ``SIGKILL`` it once its tasks failed (fenced) or it committed its transaction."""
    before = copies(clusters, topic)
    signal_group(worker.pid, signal.SIGCONT)
    wait_for(
        "sign of the zombie (a FAILED task, or its transaction committed)",
        lambda: failed_tasks(worker) or (not open_transaction(clusters, topic) and copies(clusters, topic) != before),
        worker,
    )
    print(f"\nConnect's tasks after SIGCONT: FAILED {failed_tasks(worker)}")
    signal_group(worker.pid, signal.SIGKILL)


def failed_tasks(worker: ConnectWorkerProcess) -> list[str]:
    """The traces of the source connector's FAILED tasks."""
    try:
        status = worker.connector_status(CONNECTOR)
    except Exception:  # the worker may be rejoining its group: ask again later
        return []
    return [t.get("trace", "")[:300] for t in status.get("tasks", []) if t.get("state") == "FAILED"]


@pytest.mark.parametrize("how", ["killed", "zombie"])
def test_an_exactly_once_hand_over_from_connect_fences_its_tasks(
    local_clusters: LocalClusters, tmp_path: Path, how: str
) -> None:
    """``killed``: the worker is killed (``SIGKILL``) mid-transaction; ``zombie``: frozen, then resumed after the run.

    Killed, its open transaction holds the remote topic's last stable offset until its coordinator aborts it
    (``transaction.timeout.ms``, 10 min here): unfenced, a ``read_committed`` reader sees none of mirrorspark's
    copies behind it. A zombie commits it: unfenced, the reader sees its records twice.
    """
    p = local_clusters.bootstrap("primary")
    topic = unique_name("eos-connect")
    group = unique_name("eos-connect-group")
    create_topic(p, topic, partitions=PARTITIONS)
    folder = tmp_path / "connect"
    properties, connectors = write_folder(local_clusters, folder, topic, group)
    feeder = Feeder(p, topic)
    worker = start_connect_worker(properties, base_dir=tmp_path / "connect-worker")
    try:
        worker.wait_started(timeout_s=DEADLINE_S)
        for body in connectors:
            worker.post_connector(body, timeout_s=DEADLINE_S)
        worker.wait_running(CONNECTOR, min_tasks=PARTITIONS, timeout_s=DEADLINE_S)
        worker.wait_running(f"{CONNECTOR}-checkpoint", min_tasks=0, timeout_s=DEADLINE_S)
        feeder.start()
        wait_for("records copied by Connect", lambda: sum(copies(local_clusters, topic).values()) >= 200, worker)
        freeze_mid_transaction(worker, local_clusters, topic)
        if how == "killed":
            signal_group(worker.pid, signal.SIGKILL)
        time.sleep(1.0)  # records Connect never reads: mirrorspark's alone
        produced = feeder.finish()

        # Connect's config topic, as mirrorspark reads it: the connector ran 2 tasks
        counts = ConnectTaskCounts(CONNECTOR)
        for r in consume_all(local_clusters.bootstrap("backup"), f"{group}-configs"):
            counts.add(r["key"], r["value"])
        assert counts.task_count == PARTITIONS, (counts.task_configs, counts.committed, counts.fenced)

        run = subprocess.run(
            [sys.executable, "-m", "mirrorspark", "run", str(folder), "--until-caught-up", "--quiet"],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert run.returncode == 0, run.stderr
        if how == "zombie":
            resume_zombie(worker, local_clusters, topic)
        still_open = open_transaction(local_clusters, topic)
        print(f"\n{how}: a transaction of Connect still open on the remote topic after the run: {still_open}")
    finally:
        if feeder.is_alive():
            feeder.finish()
        signal_group(worker.pid, signal.SIGCONT)
        signal_group(worker.pid, signal.SIGKILL)
        worker.stop()

    seen = copies(local_clusters, topic)
    lost = sorted(set(produced) - set(seen))
    twice = {v: n for v, n in seen.items() if n > 1}
    print(f"{len(produced)} source records: {len(lost)} lost, {sum(n - 1 for n in twice.values())} seen twice")
    assert set(seen) <= set(produced), f"records nobody produced: {sorted(set(seen) - set(produced))[:5]}"
    assert not lost, f"not seen by a read_committed consumer (an open transaction holds the LSO?): {lost[:10]}"
    assert not twice, f"a read_committed consumer sees records twice (the zombie committed): {sorted(twice)[:10]}"
