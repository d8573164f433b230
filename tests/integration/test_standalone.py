"""``mirrorspark run --master spark://...`` on a real Spark standalone cluster (issue #11).

A master and two workers from the pyspark package (:mod:`standalone`), two Kafka clusters of
the test's own, and the ``mirrorspark`` command as a subprocess: its driver ships the mirrorspark
package to the executors as a zip, and the copy tasks of one flow spread over both workers, on
the batch engine (``--until-caught-up``) and on the continuous engine, where one worker is killed
mid-copy and its copy task moves to the other.
Not marked ``spark``: the driver is the subprocess, not this process's SparkSession.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, Message, Producer
from helpers import assert_eventually, client_config, consume_all, create_topic, end_offsets, produce, unique_name
from standalone import StandaloneCluster, free_port

from copy_check import assert_copy, compare_copy, copy_differences
from mirrorspark.core.progress_records import decode_report, record_kind
from mirrorspark.kafka.local.clusters import start_clusters, stop_clusters
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.mm2.connect_offsets import decode_source_offset

pytestmark = pytest.mark.integration

PARTITIONS = 4
RECORDS_PER_PARTITION = 2500
SLOTS = 2  # two workers of one core each: two copy tasks (tasks.max), one per executor


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


def seq_of(record: dict[str, Any]) -> int | None:
    """The source record number a record carries in its ``seq`` header (``None`` without one)."""
    seq = dict(record["headers"]).get("seq")
    return int.from_bytes(seq, "big") if seq is not None else None


def partition_summary(bootstrap: str, topic: str, partition: int, records: list[dict[str, Any]]) -> str:
    """Earliest and latest offsets (read_uncommitted), record count and the first 30 (offset -> seq) pairs."""
    start, end = end_offsets(bootstrap, topic, read_committed=False)[partition]
    rows = [r for r in records if r["partition"] == partition]
    pairs = [(r["offset"], seq_of(r)) for r in rows[:30]]
    return f"{topic}[{partition}]: earliest {start}, latest {end}, {len(rows)} records; first (offset -> seq) {pairs}"


def progress_history(backup: str, topic: str, partition: int) -> list[str]:
    """The flow's progress reports for one source partition, in channel order (every generation, task and epoch)."""
    out = []
    for r in consume_all(backup, "mm2-task-progress.primary.internal", timeout_s=30, read_committed=False):
        if record_kind(r["key"]) != "report":
            continue
        rep = decode_report(r["key"], r["value"])
        if rep.topic == topic and rep.partition == partition:
            segments = [(s.upstream_start, s.downstream_start, s.count) for s in rep.segments]
            out.append(
                f"@{r['offset']} generation {rep.generation} task {rep.task} epoch {rep.epoch} "
                f"next_offset {rep.next_offset} records {rep.records} segments (up, down, n) {segments[:6]}"
            )
    return out


def stored_offset_history(backup: str, topic: str, partition: int) -> list[tuple[int, int | None]]:
    """``(offset in mm2-offsets, stored source offset)`` of every record the flow wrote for one source partition."""
    out = []
    for r in consume_all(backup, "mm2-offsets.primary.internal", timeout_s=30, read_committed=False):
        d = decode_source_offset(r["key"], r["value"])
        if d is not None and d.topic == topic and d.partition == partition:
            out.append((r["offset"], d.offset))
    return out


def failed_spark_tasks(event_log_dir: Path) -> list[str]:
    """Spark tasks that did not succeed or were attempts > 0, from the application's event log."""
    out = []
    for f in event_log_dir.iterdir():
        if not f.is_file() or f.name.startswith("."):
            continue
        for line in f.read_text().splitlines():
            e = json.loads(line)
            if e.get("Event") != "SparkListenerTaskEnd":
                continue
            info, reason = e["Task Info"], e["Task End Reason"]["Reason"]
            if reason != "Success" or info.get("Attempt", 0) > 0:
                out.append(f"stage {e['Stage ID']} task {info['Task ID']} attempt {info.get('Attempt')}: {reason}")
    return out


#: What the run's log says when a copy task failed, restarted, lost its executor or left a gap.
TELLING = ("copy task", "restart", "lost", "ended without", "gap", "error", "warning", "failed")


def copy_evidence(
    primary: str, backup: str, topic: str, partitions: list[int], logs: tuple[Path, Path, Path], event_logs: Path
) -> str:
    """Everything that tells the audit's hypotheses H1-H4 apart for the partitions that differ.

    Per partition: the remote and the source partition (earliest/latest, count, first 30 pairs),
    the flow's progress reports and its ``mm2-offsets`` history; then Spark's failed task attempts
    and the telling lines of the run's log and Spark's (``logs``: stdout, stderr, Spark's log, in the tmp dir).
    """
    remote = consume_all(backup, f"primary.{topic}", timeout_s=60, read_committed=False)
    source = consume_all(primary, topic, timeout_s=60, read_committed=False)
    parts = []
    for p in partitions:
        parts += [
            partition_summary(backup, f"primary.{topic}", p, remote),
            partition_summary(primary, topic, p, source),
            f"progress reports of {topic}[{p}]:",
            *progress_history(backup, topic, p),
            f"mm2-offsets history of {topic}[{p}] (record offset, stored offset): "
            f"{stored_offset_history(backup, topic, p)}",
        ]
    text = logs[1].read_text(errors="replace")
    telling = [line for line in text.splitlines() if any(w in line.lower() for w in TELLING)]
    parts += [f"failed or retried Spark tasks: {failed_spark_tasks(event_logs)[:20]}", f"run's log ({logs[1]}):"]
    parts += [*telling[:80], "... tail:", text[-4000:]]
    spark = logs[2].read_text(errors="replace") if logs[2].exists() else ""
    lost = [line for line in spark.splitlines() if any(w in line for w in ("Lost task", "ERROR", "Exception"))]
    parts += [f"Spark's log ({logs[2]}):", *lost[:40]]
    return "\n".join(parts)


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
    produce(primary, topic, sent, idempotent=True)  # each partition in the order sent (audit 2 §3 H2)

    props = tmp_path / "mm2.properties"
    props.write_text(
        own_clusters.mm2_properties(
            [("primary", "backup")],
            extra={
                "topics": topic,
                "tasks.max": str(SLOTS),
            },
        )
    )
    event_logs = tmp_path / "spark-events"
    event_logs.mkdir()
    spark_conf = {
        # Wait (at most 30 s, Spark's spark.scheduler.maxRegisteredResourcesWaitingTime) until both
        # executors have registered before the first copy task, so that the two tasks use both slots.
        "spark.cores.max": str(SLOTS),
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        # Which executor ran which task, kept after the application ends.
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": event_logs.as_uri(),
        "spark.eventLog.compress": "false",
        "spark.eventLog.rolling.enabled": "false",  # one JSON-lines file (Spark 4 rolls by default)
    }
    logs = (tmp_path / "run.stdout", tmp_path / "run.stderr", tmp_path / "spark.log")  # kept in the tmp dir
    env = {**os.environ, "MIRRORSPARK_SPARK_LOG_LEVEL": "WARN", "MIRRORSPARK_SPARK_LOG": str(logs[2])}
    with logs[0].open("wb") as out, logs[1].open("wb") as err:
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "mirrorspark",
                "-v",  # the log (INFO) tells a failed or restarted copy task apart
                "run",
                str(props),
                "--until-caught-up",
                "--quiet",
                "--json",
                "--master",
                spark_standalone.url,
                *(a for k, v in spark_conf.items() for a in ("--conf", f"{k}={v}")),
            ],
            stdout=out,
            stderr=err,
            env=env,
            timeout=600,  # a bound, not an expectation (about 40 s): a loaded machine starts Spark slowly
        )
    assert run.returncode == 0, logs[1].read_text(errors="replace")[-4000:]
    [stats] = json.loads(logs[0].read_text())
    [own] = [t for t in stats["topics"] if t["topic"] == topic]  # the source's heartbeats are copied too

    # Every record, byte-exact and in order per partition: the remote topic against the source
    # partitions as read back (not only the test's own list), with the evidence on any difference
    source = consume_all(primary, topic, timeout_s=60)
    received = consume_all(backup, f"primary.{topic}", timeout_s=60)
    differing = [p for p, d in compare_copy(source, received).items() if not d.exact]
    wrong_total = own["records"] != PARTITIONS * RECORDS_PER_PARTITION or stats["gaps"] != 0
    evidence = ""
    if differing or wrong_total:
        evidence = "\n" + copy_evidence(primary, backup, topic, differing or [0], logs, event_logs)
    assert not differing, copy_differences(source, received) + evidence
    assert stats["gaps"] == 0, f"the run reported gaps: {stats}" + evidence  # a forward jump fails loudly
    assert own["records"] == PARTITIONS * RECORDS_PER_PARTITION, own
    # The source holds what the test sent, in that order (else the test's producer reordered, not the copy:
    # audit 2 §3 H2, see helpers.produce's idempotent)
    reordered = [p for p, d in compare_copy(sent, source).items() if not d.exact]
    assert not reordered, "the source is not in sent order (the test's producer, not the copy):\n" + "\n".join(
        [copy_differences(sent, source), *(partition_summary(primary, topic, p, source) for p in reordered)]
    )

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


class Producing(threading.Thread):
    """Produce unique values ``<prefix>|<n>`` round-robin over ``partitions`` partitions, about 400 a second,
    until :meth:`finish`; keeps the values the source cluster acknowledged."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        super().__init__(name="test-producer", daemon=True)
        self.bootstrap, self.topic, self.partitions = bootstrap, topic, partitions
        self.acked: list[bytes] = []
        self.errors: list[KafkaError] = []
        self._done = threading.Event()

    def run(self) -> None:
        producer = Producer(  # idempotent: no duplicate on the source, whatever the retries
            client_config(self.bootstrap, **{"client.id": "mirrorspark-tests|producer", "enable.idempotence": True})
        )
        n = 0
        while not self._done.is_set():
            for _ in range(20):
                producer.produce(
                    self.topic, f"{self.topic}|{n}".encode(), partition=n % self.partitions, on_delivery=self._acked
                )
                n += 1
            producer.poll(0)
            self._done.wait(0.05)  # pacing, not a wait for a condition
        producer.flush(30)

    def _acked(self, err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            self.errors.append(err)
        else:
            self.acked.append(msg.value() or b"")

    def halt(self) -> None:
        """Stop producing (every record produced is acknowledged or failed when this returns)."""
        self._done.set()
        self.join(60)

    def finish(self) -> set[bytes]:
        """Stop producing; return every acknowledged value (after checking that every record was)."""
        self.halt()
        assert not self.is_alive() and not self.errors, self.errors[:3]
        return set(self.acked)


def active_tasks_by_worker(cluster: StandaloneCluster, ui: str) -> list[int]:
    """Running Spark tasks per worker, from the driver's REST API and the workers' executor directories."""
    try:
        with urllib.request.urlopen(f"{ui}/api/v1/applications", timeout=5) as r:
            [application] = json.load(r)
        with urllib.request.urlopen(f"{ui}/api/v1/applications/{application['id']}/executors", timeout=5) as r:
            active = {e["id"]: int(e["activeTasks"]) for e in json.load(r)}
    except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError) as e:
        raise AssertionError(f"the driver's UI {ui} does not answer: {e}") from e
    return [sum(active.get(e, 0) for e in executors_of(cluster, w)) for w in range(cluster.workers)]


def committed_positions(backup: str, topic: str) -> dict[int, int]:
    """``{partition: next offset}`` the copy tasks committed for ``topic``, from the flow's progress channel.

    The channel is ``mm2-task-progress.primary.internal`` on the target: one report per commit and
    partition; the driver restarts a task from the newest ones.
    """
    out: dict[int, int] = {}
    for r in consume_all(backup, "mm2-task-progress.primary.internal", timeout_s=30):
        if record_kind(r["key"]) != "report":  # the driver's flow, lag and group records
            continue
        report = decode_report(r["key"], r["value"])
        if report.topic == topic:
            out[report.partition] = max(out.get(report.partition, 0), report.next_offset)
    return out


def remote_ends(bootstrap: str, topic: str) -> dict[int, int]:
    """``{partition: end offset}`` of a remote topic (an ``AssertionError`` while it does not exist, to poll)."""
    try:
        return {p: e for p, (_, e) in end_offsets(bootstrap, topic, timeout_s=5).items()}
    except Exception as e:  # not created yet
        raise AssertionError(f"{topic}: {e}") from e


@pytest.mark.parametrize("spark_standalone", [{"cores": 2}], indirect=True)
def test_continuous_engine_survives_a_killed_worker(
    tmp_path: Path, own_clusters: LocalClusters, spark_standalone: StandaloneCluster
) -> None:
    """`mirrorspark run` (continuous engine) on 2 workers; one is SIGKILLed mid-copy: every record still arrives.

    Two copy tasks (tasks.max=2) of 1-core executors, one per worker (``spark.executor.cores=1``,
    ``spark.cores.max=2``: the master spreads executors over workers), so each worker runs one
    copy task. When worker 0 dies with its executor and Python worker, the master starts a
    replacement executor on worker 1 (2 cores: room for both tasks) and the lost copy task
    resumes there from its committed offsets (Spark's own re-run of the task ends at once and
    mirrorspark's supervisor restarts it). Records produced before, during and after the kill all
    reach the target; a re-copy of what was not committed yet is allowed, of what was committed
    before the kill not. SIGTERM then ends the run with exit code 0.
    """
    cluster = spark_standalone
    primary, backup = own_clusters.bootstrap("primary"), own_clusters.bootstrap("backup")
    topic = unique_name("standalone-cont")
    remote = f"primary.{topic}"
    create_topic(primary, topic, partitions=PARTITIONS)
    props = tmp_path / "mm2.properties"
    props.write_text(
        own_clusters.mm2_properties(
            [("primary", "backup")],
            extra={"topics": topic, "tasks.max": "2"},
        )
    )
    ui = f"http://127.0.0.1:{free_port()}"
    spark_conf = {
        "spark.executor.cores": "1",
        "spark.executor.memory": "512m",  # two executors fit on one worker (1g)
        "spark.cores.max": "2",
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",  # start once both executors registered
        "spark.ui.port": ui.rsplit(":", 1)[1],
    }
    log = tmp_path / "run.log"
    spark_log = tmp_path / "spark.log"  # Spark's own output: its "Lost task" lines
    env = {**os.environ, "MIRRORSPARK_SPARK_LOG_LEVEL": "WARN", "MIRRORSPARK_SPARK_LOG": str(spark_log)}
    producing = Producing(primary, topic, PARTITIONS)
    with log.open("wb") as out:
        run = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mirrorspark",
                "-v",
                "run",
                str(props),
                "--quiet",
                "--master",
                cluster.url,
                *(a for k, v in spark_conf.items() for a in ("--conf", f"{k}={v}")),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )

    def running() -> None:
        assert run.poll() is None, f"the run exited with {run.returncode}:\n{log.read_text(errors='replace')[-4000:]}"

    try:
        producing.start()

        def copying_on_both_workers() -> dict[int, int]:
            running()
            assert active_tasks_by_worker(cluster, ui) == [1, 1]
            ends = remote_ends(backup, remote)
            assert all(e > 0 for e in ends.values()), ends
            return ends

        before = assert_eventually(
            # a bound, not an expectation (about 30 s): on a loaded machine the driver's and the
            # executors' JVMs may take minutes to start
            copying_on_both_workers,
            timeout_s=240,
            interval_s=0.5,
            message="no copy task on each worker",
        )
        # Steady state: the backlog produced while Spark started is copied and committed, the
        # target keeps growing; then the kill
        backlog = {p: e for p, (_, e) in end_offsets(primary, topic).items()}
        assert_eventually(
            lambda: (
                all(committed_positions(backup, topic).get(p, 0) >= e for p, e in backlog.items())
                and all(e > before[p] for p, e in remote_ends(backup, remote).items())
            ),
            timeout_s=120,
            interval_s=0.5,
            message="the backlog was not copied and committed",
        )

        killed_at = time.monotonic()
        cluster.kill_worker(0)  # mid-copy: the producer keeps going
        at_kill = remote_ends(backup, remote)
        committed = committed_positions(backup, topic)  # the killed task's last commits included

        def resumed() -> bool:
            running()
            ends = remote_ends(backup, remote)
            assert all(e > at_kill[p] for p, e in ends.items()), (at_kill, ends)
            assert active_tasks_by_worker(cluster, ui) == [0, 2]
            return True

        assert_eventually(resumed, timeout_s=120, interval_s=0.2, message="the lost copy task did not resume")
        resume_s = time.monotonic() - killed_at
        expected = producing.finish()

        def everything_copied() -> list[bytes]:
            running()
            values = [r["value"] for r in consume_all(backup, remote, timeout_s=30)]
            missing = expected - set(values)
            assert not missing, f"{len(missing)} of {len(expected)} records missing"
            return values

        values = assert_eventually(everything_copied, timeout_s=120, interval_s=1, message="records lost")
        assert set(values) == expected  # nothing else
        # What was committed before the kill is never copied again: the lost task restarted from its
        # committed offsets (not from where it started, as Spark's own re-run of it would)
        source_records = consume_all(primary, topic, timeout_s=60)
        # nothing lost, nothing else, the first copies in source order (a re-copy is allowed)
        assert_copy(source_records, consume_all(backup, remote, timeout_s=60), duplicates=True)
        source = {r["value"]: (r["partition"], r["offset"]) for r in source_records}
        copies = Counter(values)
        recopied = [v for v, n in copies.items() if n > 1 and source[v][1] < committed.get(source[v][0], 0)]
        assert not recopied, f"{len(recopied)} committed records copied again, e.g. {sorted(recopied)[:3]}"

        stopping_at = time.monotonic()
        run.send_signal(signal.SIGTERM)
        try:
            code = run.wait(45)
        except subprocess.TimeoutExpired:
            code = None
        stop_s = time.monotonic() - stopping_at
        text = log.read_text(errors="replace")
        assert code == 0, text[-4000:]
        # mirrorspark's supervisor restarted the lost task from its committed offsets; Spark's own
        # re-run of it (with the positions of the task's start: a re-copy of everything) ended at once
        assert "copy task" in text and "was lost with its Spark executor" in text, text[-4000:]
    finally:
        if producing.is_alive():
            producing.halt()
        if run.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(run.pid, signal.SIGKILL)
            run.wait(30)
    spark_text = spark_log.read_text(errors="replace") if spark_log.exists() else ""
    restarts = [line for line in (text + spark_text).splitlines() if "restart" in line.lower() or "Lost " in line]
    print(
        f"\n{len(expected)} records, {len(values) - len(expected)} duplicates (committed at the kill: "
        f"{sum(committed.values())}), resumed {resume_s:.1f} s after the "
        f"kill, stopped {stop_s:.1f} s after SIGTERM; restarts:\n" + "\n".join(restarts)
    )
