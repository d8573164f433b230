"""Broker faults (issue #12): the target's partition leader killed, the target or the source paused.

A 1-broker source (the fault suite's ``primary``) and a 3-broker target (``min.insync.replicas=2``; the
copy tasks' producers are idempotent, hence ``acks=all``; remote and internal topics on the target have
3 replicas), the target started once for the module. Each scenario runs both modes at once
(:mod:`faultkit`): a workload with unique values keeps producing through the fault; afterwards nothing
may be lost, a ``read_committed`` consumer sees no duplicate of the exactly-once flow, and the
at-least-once flow's duplicates stay within one flush interval's worth per task restart.
"""

from __future__ import annotations

import atexit
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from faultkit import (
    MODES,
    copy_more,
    drained,
    finish,
    pause,
    remote_topic,
    restarts_by_mode,
    resume_seconds,
    scenario,
    size,
)
from helpers import admin, assert_eventually
from pyspark.sql import SparkSession

from mirrorspark.kafka.local.brokers import pid_alive, signal_group
from mirrorspark.kafka.local.clusters import (
    load_clusters,
    restart_cluster,
    start_clusters,
    stop_broker,
    stop_clusters,
)
from mirrorspark.kafka.local.model import LocalCluster, LocalClusters

# A scenario at full size runs for minutes, and a loaded machine starts brokers and Spark slowly.
pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.timeout(1800)]


def _start(base_dir: Path, alias: str, brokers: int, extra: dict[str, str]) -> LocalClusters:
    def stop() -> None:
        stop_clusters(base_dir)

    atexit.register(stop)
    # generous: the suite runs on loaded machines
    return start_clusters([alias], base_dir=base_dir, brokers=brokers, extra_broker_props=extra, timeout_s=300)


@pytest.fixture(scope="module")
def source(fault_clusters: LocalClusters) -> LocalCluster:
    """The source: one broker, the fault suite's ``primary`` (started once for the suite's worker)."""
    return fault_clusters.cluster("primary")


@pytest.fixture(scope="module")
def target_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalClusters]:
    """The target: three brokers, ``min.insync.replicas=2`` (node 0 is also the KRaft controller)."""
    base_dir = tmp_path_factory.mktemp("faults-target")
    try:
        yield _start(base_dir, "tgt", 3, {"min.insync.replicas": "2"})
    finally:
        stop_clusters(base_dir)


def leaders(bootstrap: str, topic: str) -> dict[int, int]:
    """``{partition: leader node id}`` of a topic."""
    meta = admin(bootstrap).list_topics(topic=topic, timeout=10).topics[topic]
    return {p: m.leader for p, m in meta.partitions.items()}


def test_the_targets_partition_leader_is_killed(
    source: LocalCluster, target_cluster: LocalClusters, spark: SparkSession
) -> None:
    src, tgt = source, target_cluster.cluster("tgt")
    tgt_dir = target_cluster.base_dir
    sz = size()
    with scenario(src, tgt, spark, prefix="faults-leader", max_s=600) as (topic, work, r):
        led = {mode: leaders(tgt.bootstrap_servers, remote_topic(mode, topic)) for mode in MODES}
        # Node 0 is the cluster's only controller (it elects the new leaders): the victim is the broker
        # among 1 and 2 leading the most remote partitions (two partitions per topic have two leaders).
        victim = max((1, 2), key=lambda n: sum(list(m.values()).count(n) for m in led.values()))
        hit = {mode: {p for p, n in led[mode].items() if n == victim} for mode in MODES}
        broker = next(b for b in tgt.brokers if b.node_id == victim)
        signal_group(broker.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        try:
            assert_eventually(lambda: not pid_alive(broker.pid), timeout_s=30, message="the leader survived SIGKILL")
            # Resumes where the killed broker led, once the controller fenced it and elected another leader.
            resumed = resume_seconds(
                tgt.bootstrap_servers, topic, killed_at, partitions={m: hit[m] or set(led[m]) for m in MODES}
            )
            copy_more(tgt.bootstrap_servers, topic, int(sz.rate * sz.settle_s))  # on two of three brokers
        finally:
            # stop_broker records it as stopped (nothing is left to stop); restart_cluster starts it again.
            restart_cluster(stop_broker(load_clusters(tgt_dir), "tgt", victim), "tgt", timeout_s=300)
        copy_more(tgt.bootstrap_servers, topic, int(sz.rate * sz.settle_s))
        expected = work.stop()
        outcomes = drained(tgt.bootstrap_servers, topic, expected)
        restarts = restarts_by_mode(r)
    finish(
        "target's partition leader killed (kill -9; 3 brokers, min.insync.replicas=2)",
        expected=expected,
        outcomes=outcomes,
        resumed=resumed,
        restarts=restarts,
        unreachable_s=max(resumed.values()),  # its partitions had no leader until then
        notes=(
            f"node {victim} killed, restarted once {int(sz.rate * sz.settle_s)} more records were copied;"
            " resume from the kill, on its partitions"
        ),
    )


def test_the_target_is_unreachable(source: LocalCluster, target_cluster: LocalClusters, spark: SparkSession) -> None:
    src, tgt = source, load_clusters(target_cluster.base_dir).cluster("tgt")
    sz = size()
    with scenario(src, tgt, spark, prefix="faults-tgt-pause", max_s=600) as (topic, work, r):
        pause([b.pid for b in tgt.brokers], sz.outage_s)
        resumed_at = time.monotonic()
        resumed = resume_seconds(tgt.bootstrap_servers, topic, resumed_at)
        copy_more(tgt.bootstrap_servers, topic, int(sz.rate * sz.settle_s))
        expected = work.stop()
        outcomes = drained(tgt.bootstrap_servers, topic, expected)
        restarts = restarts_by_mode(r)
    finish(
        f"target unreachable for {sz.outage_s:.0f} s (all 3 brokers SIGSTOP, then SIGCONT)",
        expected=expected,
        outcomes=outcomes,
        resumed=resumed,
        restarts=restarts,
        unreachable_s=sz.outage_s,
        notes="resume from SIGCONT",
    )


def test_the_source_is_unreachable(source: LocalCluster, target_cluster: LocalClusters, spark: SparkSession) -> None:
    src, tgt = source, load_clusters(target_cluster.base_dir).cluster("tgt")
    sz = size()
    with scenario(src, tgt, spark, prefix="faults-src-pause", max_s=600) as (topic, work, r):
        pause([b.pid for b in src.brokers], sz.outage_s)
        resumed_at = time.monotonic()
        resumed = resume_seconds(tgt.bootstrap_servers, topic, resumed_at)
        copy_more(tgt.bootstrap_servers, topic, int(sz.rate * sz.settle_s))
        expected = work.stop()
        outcomes = drained(tgt.bootstrap_servers, topic, expected)
        restarts = restarts_by_mode(r)
    finish(
        f"source unreachable for {sz.outage_s:.0f} s (its broker SIGSTOP, then SIGCONT)",
        expected=expected,
        outcomes=outcomes,
        resumed=resumed,
        restarts=restarts,
        notes="resume from SIGCONT; the workload's producer waits out the outage too",
    )
