"""Driver faults: ``kill -9`` of the Spark driver JVM under a running ``mirrorspark run``, and of its Python driver.

Each scenario runs ``mirrorspark run`` as a subprocess (local master) copying a topic of its own
(``primary`` -> ``backup``) while a feed keeps producing (:mod:`scenario`), waits until the copy
is caught up and growing, then kills one process of the run with SIGKILL:

* the Spark driver JVM (the ``java`` child of the run's Python process): the run must end within
  a bounded time with one error line naming the Spark driver JVM, a non-zero exit, no Python
  traceback, no retry storm, and nothing committed to ``mm2-offsets`` after the death;
* the Python driver (the run's own process): its JVM (PySpark's gateway watches its stdin), the
  PySpark daemon and the copy tasks' Python workers must go away, and nothing is committed after
  the death (the tasks' grant link to the driver closed: they end without committing).

At-least-once mode only: a commit there is a plain write to ``mm2-offsets``, which is what these
scenarios look for (an exactly-once commit is the same write inside the task's transaction, under
the same grant). Seconds are measured and printed, never asserted.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from confluent_kafka import Consumer, TopicPartition
from helpers import assert_eventually, client_config, create_topic, end_offsets, unique_name
from scenario import AT_LEAST_ONCE, Feed, RunProcess, Tail

from mirrorspark.kafka.local.model import LocalClusters

PARTITIONS = 4
TASKS_MAX = 2
RATE = 200
"""Records per second the feed produces (all partitions)."""
COPY_S = 3.0
"""Seconds of caught-up copying (several commits) before the kill."""
EXIT_WAIT_S = 30.0
"""Longest wait for the run to exit after its JVM died (a bound for the test, not the expectation: 5 s)."""
QUIET_S = 5.0
"""Seconds after the death during which ``mm2-offsets`` is watched for a new record of the flow."""
CHECK_SLACK_MS = 100
"""A commit record created (producer timestamp) this long after the death counts as written after it: a
task checks its JVM and grants right before it produces a commit, and on a loaded machine the records of
a commit checked just before the death are timestamped a little after it. Without the check, commits go
on every ``offset.flush.interval.ms`` (250 ms) until the run exits."""
OFFSETS_TOPIC = "mm2-offsets.primary.internal"


@contextlib.contextmanager
def copying_run(clusters: LocalClusters, tmp_path: Path, prefix: str) -> Iterator[tuple[RunProcess, str]]:
    """A fresh topic, a feed, and ``mirrorspark run`` copying it, caught up and growing; stopped on leaving."""
    topic = unique_name(prefix)
    create_topic(clusters.bootstrap("primary"), topic, partitions=PARTITIONS)
    props = tmp_path / "mm2.properties"
    props.write_text(
        clusters.mm2_properties(
            [("primary", "backup")],
            extra={"topics": topic, "tasks.max": str(TASKS_MAX), "refresh.topics.interval.seconds": "5"},
        )
    )
    feed = Feed(clusters.bootstrap("primary"), topic, PARTITIONS, RATE)
    tail = Tail(clusters.bootstrap("backup"), f"primary.{topic}", PARTITIONS, AT_LEAST_ONCE)
    run = RunProcess(props, tmp_path)
    tail.start()
    feed.start()
    try:
        run.launch()
        tail.wait_copying(feed, copy_s=COPY_S, alive=run.check)
        yield run, topic
    finally:
        run.stop(timeout_s=30)
        with contextlib.suppress(AssertionError):
            feed.finish()
        tail.stop()


def driver_jvm(run: RunProcess) -> psutil.Process:
    """The Spark driver JVM of ``run``: the ``java`` process below the run's Python process running SparkSubmit."""
    assert run.proc is not None
    for proc in psutil.Process(run.proc.pid).children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            if "java" in proc.name() and any("SparkSubmit" in a for a in proc.cmdline()):
                return proc
    raise AssertionError(f"no Spark driver JVM below mirrorspark run (pid {run.proc.pid})")


def offsets_ends(clusters: LocalClusters) -> dict[int, int]:
    """``{partition: end offset}`` of ``mm2-offsets.primary.internal`` on the target."""
    return {p: end for p, (_, end) in end_offsets(clusters.bootstrap("backup"), OFFSETS_TOPIC).items()}


def commits_since(clusters: LocalClusters, marks: dict[int, int], topic: str, after_ms: float) -> list[str]:
    """The ``mm2-offsets`` records for ``topic`` past ``marks`` (``{partition: offset}``) created (producer
    timestamp, ms since the epoch) after ``after_ms``: each one's key and how long after."""
    ends = offsets_ends(clusters)
    consumer = Consumer(client_config(clusters.bootstrap("backup"), **{"group.id": unique_name("offsets-reader")}))
    found: list[str] = []
    try:
        todo = {p: e for p, e in ends.items() if e > marks.get(p, 0)}
        consumer.assign([TopicPartition(OFFSETS_TOPIC, p, marks.get(p, 0)) for p in todo])
        deadline = time.monotonic() + 30
        while todo and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error() is not None:
                continue
            key = (msg.key() or b"").decode(errors="replace")
            if topic in key and msg.timestamp()[1] > after_ms:
                found.append(f"{key} created {msg.timestamp()[1] - after_ms:.0f} ms after the bound")
            if msg.offset() + 1 >= todo.get(msg.partition(), 0):
                todo.pop(msg.partition(), None)
        assert not todo, f"mm2-offsets could not be read to its end offsets: {todo}"
    finally:
        consumer.close()
    return found


def death_ms(proc: psutil.Process, timeout_s: float) -> float:
    """Wait for ``proc`` to be gone or a zombie; return when that was seen (ms since the epoch, to a few ms).

    SIGKILL is not instant: the kernel still runs a large JVM's threads for a while after the signal.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(psutil.NoSuchProcess):
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                time.sleep(0.002)
                continue
        return time.time() * 1000
    raise AssertionError(f"pid {proc.pid} outlived SIGKILL by {timeout_s:.0f} s")


def wait_gone(procs: list[psutil.Process], timeout_s: float) -> list[psutil.Process]:
    """Wait until every process of ``procs`` is gone (or a zombie); return those still running after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    alive = procs
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    return alive


@pytest.mark.timeout(900)
def test_the_spark_driver_jvm_killed_mid_copy(fault_clusters: LocalClusters, tmp_path: Path) -> None:
    """``kill -9`` of the Spark driver JVM: the run names it in one error line and exits non-zero, fast,
    with no traceback, no copy task restart and no commit after the death."""
    with copying_run(fault_clusters, tmp_path, "fault-jvm") as (run, topic):
        assert run.proc is not None
        jvm = driver_jvm(run)
        marks = offsets_ends(fault_clusters)  # a commit of the flow past these is looked at
        killed_at, killed_ms = time.monotonic(), time.time() * 1000
        jvm.kill()
        dead_ms = death_ms(jvm, EXIT_WAIT_S)
        code = run.proc.wait(EXIT_WAIT_S)
        exit_s = time.monotonic() - killed_at
        print(
            f"\nthe Spark driver JVM (pid {jvm.pid}) was dead {dead_ms - killed_ms:.0f} ms after SIGKILL; "
            f"mirrorspark run exited {code} {exit_s:.1f} s after the signal"
        )
        log = run.log.read_text(errors="replace")
        run.proc = None
        time.sleep(QUIET_S)  # a zombie task's late commit would land by now
        late = commits_since(fault_clusters, marks, topic, dead_ms + CHECK_SLACK_MS)
    print(log[-3000:])
    assert code not in (0, None), f"mirrorspark run exited {code} after its JVM died:\n{log[-3000:]}"
    assert "Traceback" not in log, f"a traceback after the JVM died:\n{log[-6000:]}"
    errors = [line for line in log.splitlines() if line.startswith("error [")]
    assert len(errors) == 1 and "Spark driver JVM" in errors[0] and str(jvm.pid) in errors[0], log[-3000:]
    assert "; restarting it in" not in log, f"copy tasks were restarted after the JVM died:\n{log[-3000:]}"
    assert not late, f"{len(late)} source offset commits of the flow after its Spark driver JVM died"


@pytest.mark.timeout(900)
def test_the_python_driver_killed_mid_copy(fault_clusters: LocalClusters, tmp_path: Path) -> None:
    """``kill -9`` of the run's Python driver alone: its Spark driver JVM, PySpark daemon and Python workers
    go away, and the copy tasks end without committing."""
    with copying_run(fault_clusters, tmp_path, "fault-pydriver") as (run, topic):
        assert run.proc is not None
        below = psutil.Process(run.proc.pid).children(recursive=True)
        jvm = driver_jvm(run)
        driver = psutil.Process(run.proc.pid)
        marks = offsets_ends(fault_clusters)  # a commit of the flow past these is looked at
        killed_at = time.monotonic()
        run.proc.kill()
        dead_ms = death_ms(driver, 30)
        run.proc.wait(30)
        left = wait_gone(below, EXIT_WAIT_S)
        gone_s = time.monotonic() - killed_at
        print(f"\nthe run's {len(below)} processes (JVM pid {jvm.pid}) gone {gone_s:.1f} s after its Python driver")
        time.sleep(QUIET_S)
        late = commits_since(fault_clusters, marks, topic, dead_ms + CHECK_SLACK_MS)
        run.proc = None
        for p in left:  # never outlive the test
            with contextlib.suppress(psutil.NoSuchProcess):
                p.kill()
    assert not left, f"still running {EXIT_WAIT_S:.0f} s after the Python driver died: {[p.pid for p in left]}"
    assert not late, f"{len(late)} source offset commits of the flow after its Python driver died"
    assert_eventually(lambda: not jvm.is_running() or jvm.status() == psutil.STATUS_ZOMBIE, timeout_s=5)
