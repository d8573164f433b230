"""The continuous engine: long-running copy tasks that commit their own offsets, supervised by the driver.

Real brokers (the session's ``primary`` and ``backup``) and the session's SparkSession (local, 12 slots).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import psutil
import pytest
from confluent_kafka.admin import NewPartitions
from helpers import admin, assert_eventually, consume_all, create_topic, produce, unique_name
from pyspark.sql import SparkSession
from test_replication import make_config, running, topics_of

from copy_check import assert_copy
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.errors import RecordTooLargeError
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.replication.driver import Replicator
from mirrorspark.replication.task.daemon import is_daemon_command

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def test_restart_resumes_from_the_offsets_the_tasks_committed(
    local_clusters: LocalClusters, spark: SparkSession
) -> None:
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic = unique_name("cont-restart")
    create_topic(p, topic, partitions=3)
    produce(p, topic, [{"value": f"a{i}".encode(), "partition": i % 3} for i in range(90)])
    cfg = make_config(local_clusters, [("primary", "backup")], topics=topic)
    r = Replicator(cfg, spark)
    r.run(until_caught_up=True)

    produce(p, topic, [{"value": f"b{i}".encode(), "partition": i % 3} for i in range(30)])
    Replicator(cfg, spark).run(until_caught_up=True)
    assert_copy(consume_all(p, topic), consume_all(b, f"primary.{topic}"))


def test_two_bounded_runs_of_one_flow_never_copy_at_once(local_clusters: LocalClusters, spark: SparkSession) -> None:
    """``run --until-caught-up`` holds the flow's lease: a second bounded run started meanwhile waits as a
    standby, takes over where the first committed, and copies nothing twice. (The batch engine held no
    lease: two bounded runs both copied the backlog.)"""
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic = unique_name("bounded-lease")
    create_topic(p, topic, partitions=2)
    produce(p, topic, [{"value": f"v{i}".encode(), "partition": i % 2} for i in range(4000)])
    cfg = make_config(local_clusters, [("primary", "backup")], topics=topic)
    runs = [Replicator(cfg, spark), Replicator(cfg, spark)]
    errors: list[BaseException] = []

    def bounded(r: Replicator) -> None:
        try:
            r.run(until_caught_up=True)
        except BaseException as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=bounded, args=(r,), daemon=True) for r in runs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(240)
    assert not errors and not any(t.is_alive() for t in threads)
    assert_copy(consume_all(p, topic), consume_all(b, f"primary.{topic}"))  # each record once
    copied = [sum(part.records for (t, _), part in r.flows[0].partitions.items() if t == topic) for r in runs]
    assert sorted(copied) == [0, 4000]  # one run copied everything, the other waited and found it done


def python_workers() -> list[psutil.Process]:
    """This test process's own Spark Python workers running now: the children of its PySpark worker daemon.

    Only in this process's tree (its Spark JVM's daemon): tests of other pytest workers run their own
    Spark, whose workers a kill here must never reach.
    """
    out = []
    for proc in psutil.Process(os.getpid()).children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            parent = proc.parent()
            if parent is not None and is_daemon_command(parent.cmdline()):
                out.append(proc)
    return out


def remote_values(bootstrap: str, topic: str) -> list[bytes | None]:
    return [r["value"] for r in consume_all(bootstrap, topic)] if topic in topics_of(bootstrap) else []


def test_a_killed_python_worker_is_restarted_and_nothing_is_lost(
    local_clusters: LocalClusters, spark: SparkSession
) -> None:
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic = unique_name("cont-kill")
    create_topic(p, topic, partitions=2)
    produce(p, topic, [{"value": f"a{i}".encode(), "partition": i % 2} for i in range(200)])
    cfg = make_config(local_clusters, [("primary", "backup")], topics=topic)
    with running(cfg, spark) as r:
        assert_eventually(lambda: len(remote_values(b, f"primary.{topic}")) >= 200, timeout_s=60)
        assert_eventually(lambda: len(r.supervisors) == 1, message="the engine did not start")
        [sup] = r.supervisors
        assert_eventually(lambda: len(sup.runs) == 2 and python_workers(), message="no copy task running")
        for w in python_workers():
            w.kill()  # kill -9 of the Python workers that run the copy tasks
        produce(p, topic, [{"value": f"b{i}".encode(), "partition": i % 2} for i in range(200)])
        expected = {f"{x}{i}".encode() for x in "ab" for i in range(200)}
        assert_eventually(lambda: set(remote_values(b, f"primary.{topic}")) >= expected, timeout_s=90)
        assert sup.restarts >= 1
        assert sup.state == "running"
    assert set(remote_values(b, f"primary.{topic}")) == expected
    # nothing lost, nothing else, first copies in source order (a re-copy is allowed)
    assert_copy(consume_all(p, topic), consume_all(b, f"primary.{topic}"), duplicates=True)


def test_a_failing_flow_is_marked_failed_while_the_other_flow_keeps_copying(
    local_clusters: LocalClusters, spark: SparkSession, tmp_path: Path
) -> None:
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    big, fine = unique_name("cont-big"), unique_name("cont-fine")
    create_topic(p, big)
    create_topic(b, f"primary.{big}", config={"max.message.bytes": "20000"})
    create_topic(b, fine)
    produce(p, big, [{"value": b"small"}, {"value": b"x" * 50_000}])
    text = local_clusters.mm2_properties(
        [("primary", "backup"), ("backup", "primary")],
        extra={"topics": f"{big}|{fine}", "tasks.max": "2", "emit.heartbeats.interval.seconds": "1"},
    )
    cfg = parse_config(parse_properties(text))
    with pytest.raises(RecordTooLargeError, match=r"max\.message\.bytes"), running(cfg, spark) as r:
        assert_eventually(lambda: len(r.supervisors) == 2, message="the engine did not start")
        failing, other = r.supervisors
        assert_eventually(lambda: failing.state == "failed", timeout_s=60, message="the flow was not marked failed")
        assert other.state == "running"
        produce(b, fine, [{"value": f"f{i}".encode()} for i in range(20)])  # after the other flow failed
        assert_eventually(
            lambda: remote_values(p, f"backup.{fine}") == [f"f{i}".encode() for i in range(20)], timeout_s=60
        )
        assert [(f.flow, f.state) for f in r.stats()] == [("primary->backup", "failed"), ("backup->primary", "running")]
        props = tmp_path / "mm2.properties"
        props.write_text(text)
        done = subprocess.run(
            [sys.executable, "-m", "mirrorspark", "status", str(props), "--json"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        states = {f["flow"]: (f["state"], f["error"]) for f in json.loads(done.stdout)["flows"]}
        assert states["primary->backup"][0] == "failed" and "max.message.bytes" in states["primary->backup"][1]
        assert states["backup->primary"] == ("running", None)


def test_exact_translation_survives_a_restart(local_clusters: LocalClusters, spark: SparkSession) -> None:
    """The copied segments are in the progress channel: a new process translates inside them with 0 re-reads."""
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic = unique_name("cont-segments")
    create_topic(p, topic, partitions=2)
    produce(p, topic, [{"value": f"a{i}".encode(), "partition": i % 2} for i in range(400)])
    cfg = make_config(local_clusters, [("primary", "backup")], topics=topic)
    Replicator(cfg, spark).run(until_caught_up=True)
    fresh = Replicator(cfg, spark)
    fresh.start()
    try:
        [flow] = fresh.flows
        dst = {(r["partition"], r["value"]): r["offset"] for r in consume_all(b, f"primary.{topic}")}
        for r in consume_all(p, topic):
            if r["offset"] in (0, 17, 150, 199):
                exact = dst[(r["partition"], r["value"])]
                # a committed offset (next to read) inside a copied run maps to the copy's next offset
                assert flow.copied.translate_downstream(topic, r["partition"], r["offset"] + 1) == exact + 1
    finally:
        fresh.close()


def start_run(props: Path, log: Path) -> subprocess.Popen[bytes]:
    """``mirrorspark run`` (continuous engine) in its own process group, its output in ``log``."""
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "mirrorspark", "run", str(props), "--quiet"],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def test_a_standby_instance_takes_over_when_the_active_one_is_killed(
    local_clusters: LocalClusters, tmp_path: Path
) -> None:
    """Two `mirrorspark run` on one config: one copies, the other waits; kill -9 of the first hands the flow over."""
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic = unique_name("cont-standby")
    create_topic(p, topic, partitions=2)
    props = tmp_path / "mm2.properties"
    props.write_text(
        local_clusters.mm2_properties(
            [("primary", "backup")], extra={"topics": topic, "tasks.max": "2", "refresh.topics.interval.seconds": "2"}
        )
    )
    remote = f"primary.{topic}"
    first = start_run(props, tmp_path / "first.log")
    second: subprocess.Popen[bytes] | None = None
    try:
        produce(p, topic, [{"value": f"a{i}".encode(), "partition": i % 2} for i in range(100)])
        assert_eventually(lambda: len(remote_values(b, remote)) >= 100, timeout_s=120, message="the first run copies")
        second = start_run(props, tmp_path / "second.log")
        assert_eventually(
            lambda: "standby" in (tmp_path / "second.log").read_text(errors="replace") or second.poll() is not None,
            timeout_s=120,
            message="the second run did not report waiting as a standby",
        )
        assert second.poll() is None, (tmp_path / "second.log").read_text(errors="replace")
        produce(p, topic, [{"value": f"b{i}".encode(), "partition": i % 2} for i in range(100)])
        assert_eventually(lambda: len(remote_values(b, remote)) >= 200, timeout_s=60)
        os.killpg(first.pid, signal.SIGKILL)  # kill -9 of the active instance: driver, JVM, Python workers
        first.wait(30)
        produce(p, topic, [{"value": f"c{i}".encode(), "partition": i % 2} for i in range(100)])
        # the killed run's PySpark daemon (a process group of its own) ends its workers once the JVM is
        # gone: the c records must be copied by the second run, after it took the lease over
        assert_eventually(
            lambda: "holds the lease" in (tmp_path / "second.log").read_text(errors="replace"),
            timeout_s=90,
            message="the second run did not take the lease over",
        )
        expected = {f"{x}{i}".encode() for x in "abc" for i in range(100)}
        assert_eventually(lambda: set(remote_values(b, remote)) >= expected, timeout_s=90, message="no takeover")
        second.send_signal(signal.SIGTERM)
        assert second.wait(60) == 0, (tmp_path / "second.log").read_text(errors="replace")
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(30)
    assert set(remote_values(b, remote)) == expected
    assert_copy(consume_all(p, topic), consume_all(b, remote), duplicates=True)  # first copies in order


def test_a_new_partition_restarts_only_its_flows_tasks(local_clusters: LocalClusters, spark: SparkSession) -> None:
    """An assignment change (a partition added) is a rebalance of that flow only: a new generation of its tasks."""
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    grow, other = unique_name("cont-grow"), unique_name("cont-other")
    create_topic(p, grow, partitions=1)
    create_topic(b, other, partitions=1)
    produce(p, grow, [{"value": b"g0"}])
    produce(b, other, [{"value": b"o0"}])
    cfg = make_config(local_clusters, [("primary", "backup"), ("backup", "primary")], topics=f"{grow}|{other}")
    with running(cfg, spark) as r:
        assert_eventually(lambda: len(r.supervisors) == 2, message="the engine did not start")
        growing, steady = r.supervisors
        assert_eventually(lambda: remote_values(b, f"primary.{grow}") == [b"g0"], timeout_s=60)
        assert_eventually(lambda: remote_values(p, f"backup.{other}") == [b"o0"], timeout_s=60)
        before = (growing.generation, steady.generation)
        client = admin(p)  # kept until the future completes
        client.create_partitions([NewPartitions(grow, 2)])[grow].result(30)
        assert_eventually(lambda: growing.generation > before[0], timeout_s=60, message="no new generation")
        produce(p, grow, [{"value": b"g1", "partition": 1}])
        assert_eventually(lambda: sorted(remote_values(b, f"primary.{grow}")) == [b"g0", b"g1"], timeout_s=60)
        assert steady.generation == before[1]  # the other flow's tasks were not restarted
        produce(b, other, [{"value": b"o1"}])
        assert_eventually(lambda: remote_values(p, f"backup.{other}") == [b"o0", b"o1"], timeout_s=60)
