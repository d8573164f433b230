"""Process faults: ``kill -9`` of the whole run, of one Spark Python worker, and of a Spark standalone worker.

Each scenario replicates a topic of its own (``primary`` -> ``backup``, the module's own clusters)
with ``mirrorspark run`` as a subprocess (continuous engine) while a feed keeps producing unique
values (:mod:`scenario`), breaks the run while the copy is caught up and growing, and counts
exactly what reached the target: lost (must be 0), duplicated (0 in exactly-once mode as a
``read_committed`` consumer sees it; in at-least-once mode at most what the feed produced in one
``offset.flush.interval.ms`` plus slack, per fault: :func:`scenario.duplicate_bound`), and the
seconds until every partition was copied again. Each runs in both modes and records its figures
(:mod:`figures`) for ``docs/faults.md``.

Sizes (``MIRRORSPARK_FAULTS_SIZE``): ``small`` (``make test``) feeds 200 records/s into 4
partitions (2 copy tasks) with 2 s of copying before each fault; ``full`` (``make faults``)
1 000 records/s into 8 partitions (4 copy tasks) with 10 s.
Not marked ``spark``: the driver is the subprocess, not this process's SparkSession.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from figures import full_size
from helpers import assert_eventually, create_topic, unique_name
from scenario import (
    MODES,
    Counted,
    Feed,
    RunProcess,
    Tail,
    conclude,
    copy_task_workers,
    count_copies,
    high_watermarks,
    mode_properties,
    port_of,
)
from standalone import StandaloneCluster

from mirrorspark.kafka.local.model import LocalClusters


@dataclass(frozen=True)
class Size:
    """How big a scenario is.

    Attributes
    ----------
    rate:
        Records per second the feed produces, all partitions together.
    partitions:
        Source partitions.
    tasks_max:
        ``tasks.max`` (copy tasks of the flow).
    kills:
        Kills of the whole run in a row (4: the issue's scenario, at every size).
    worker_kills:
        Kills of a Python worker (one at a time, spaced by caught-up copying).
    copy_s:
        Seconds of caught-up copying before each fault.
    tail_s:
        Seconds of caught-up copying after the last resume, before the feed stops.
    """

    rate: int
    partitions: int
    tasks_max: int
    kills: int
    worker_kills: int
    copy_s: float
    tail_s: float


SIZE = (
    Size(rate=1000, partitions=8, tasks_max=4, kills=4, worker_kills=4, copy_s=10.0, tail_s=10.0)
    if full_size()
    else Size(rate=200, partitions=4, tasks_max=2, kills=4, worker_kills=2, copy_s=2.0, tail_s=2.0)
)
TIMEOUT_S = 3600 if full_size() else 1800
"""pytest-timeout per scenario, seconds: a bound, not an expectation."""


@dataclass
class Flow:
    """One scenario's replication flow: its topics, ``mm2.properties``, feed, tail and run."""

    clusters: LocalClusters
    mode: str
    topic: str
    props: Path
    feed: Feed
    tail: Tail
    runs: list[RunProcess] = field(default_factory=list)

    @property
    def source(self) -> str:
        return self.clusters.bootstrap("primary")

    @property
    def target(self) -> str:
        return self.clusters.bootstrap("backup")

    @property
    def remote(self) -> str:
        return f"primary.{self.topic}"

    def run(self, log_dir: Path, args: list[str] | None = None) -> RunProcess:
        """A ``mirrorspark run`` of this flow (launched), stopped with the flow."""
        run = RunProcess(self.props, log_dir, args or [])
        self.runs.append(run)
        run.launch()
        return run

    def finish(self, run: RunProcess) -> Counted:
        """Stop the feed, wait until everything arrived, stop the run (exit 0 expected), count the copies."""
        produced = self.feed.finish()
        self.tail.wait_all(produced, alive=run.check)
        code = run.stop()
        assert code == 0, f"mirrorspark run did not stop cleanly ({code}):\n{run.tail()}"
        return count_copies(self.target, self.remote, produced, self.mode, tag=self.topic.encode())


@contextlib.contextmanager
def fault_flow(clusters: LocalClusters, tmp_path: Path, mode: str, prefix: str) -> Iterator[Flow]:
    """A fresh source topic, its flow's ``mm2.properties`` for ``mode``, a running feed and tail.

    On leaving: every run of the flow is stopped (SIGTERM, then SIGKILL), the feed and the tail too.
    """
    topic = unique_name(prefix)
    create_topic(clusters.bootstrap("primary"), topic, partitions=SIZE.partitions)
    props = tmp_path / "mm2.properties"
    props.write_text(
        clusters.mm2_properties(
            [("primary", "backup")],
            extra={
                "topics": topic,
                "tasks.max": str(SIZE.tasks_max),
                "refresh.topics.interval.seconds": "5",
                **mode_properties(mode, "primary", "backup"),
            },
        )
    )
    feed = Feed(clusters.bootstrap("primary"), topic, SIZE.partitions, SIZE.rate)
    tail = Tail(clusters.bootstrap("backup"), f"primary.{topic}", SIZE.partitions, mode)
    flow = Flow(clusters, mode, topic, props, feed, tail)
    tail.start()
    feed.start()
    try:
        yield flow
    finally:
        for run in flow.runs:
            run.stop(timeout_s=30)
        with contextlib.suppress(AssertionError):
            feed.finish()
        tail.stop()


@pytest.mark.timeout(TIMEOUT_S)
@pytest.mark.parametrize("mode", MODES)
def test_whole_run_killed_four_times_in_a_row(fault_clusters: LocalClusters, tmp_path: Path, mode: str) -> None:
    """``kill -9`` of every process of ``mirrorspark run`` (driver, Spark JVM, PySpark daemon, Python workers)
    while it copies, relaunched at once, :attr:`Size.kills` times in a row; the last launch copies everything.

    Each new launch takes the flow's lease once the dead holder's session expires (6 s) and resumes
    from the committed offsets: the records copied since the last commit are copied again
    (at least once) or were in a transaction that its restarted task aborts (exactly once).
    """
    with fault_flow(fault_clusters, tmp_path, mode, "fault-run") as flow:
        run = flow.run(tmp_path)
        resumes = []
        for _ in range(SIZE.kills):
            flow.tail.wait_copying(flow.feed, copy_s=SIZE.copy_s, alive=run.check)
            killed_at = time.monotonic()
            run.kill()
            marks = high_watermarks(flow.target, flow.remote)
            run.launch()
            resumes.append(flow.tail.wait_resumed(marks, killed_at, alive=run.check))
        flow.tail.wait_copying(flow.feed, copy_s=SIZE.tail_s, alive=run.check)
        counted = flow.finish(run)
    conclude(
        f"kill -9 of the whole run, {SIZE.kills} times in a row",
        mode,
        counted,
        faults=SIZE.kills,
        rate=SIZE.rate,
        resumes=resumes,
        notes="relaunched at once; resume includes the lease's 6 s session timeout and Spark's start",
    )


@pytest.mark.timeout(TIMEOUT_S)
@pytest.mark.parametrize("mode", MODES)
def test_one_python_worker_killed_mid_copy(fault_clusters: LocalClusters, tmp_path: Path, mode: str) -> None:
    """``kill -9`` of one Spark Python worker running a copy task, :attr:`Size.worker_kills` times; the driver lives on.

    The driver's supervisor sees the copy task fail and restarts it from its committed offsets
    (after its 1 s backoff); the other copy tasks keep copying.
    """
    with fault_flow(fault_clusters, tmp_path, mode, "fault-worker") as flow:
        run = flow.run(tmp_path)
        source_port = port_of(flow.source)
        resumes = []
        for _ in range(SIZE.worker_kills):
            flow.tail.wait_copying(flow.feed, copy_s=SIZE.copy_s, alive=run.check)
            workers = assert_eventually(
                lambda: run.check() or run.copy_task_workers(source_port),
                timeout_s=60,
                message="no Python worker of the run is connected to the source",
            )
            victim = workers[0]
            killed_at = time.monotonic()
            victim.kill()  # SIGKILL
            victim.wait(30)
            marks = high_watermarks(flow.target, flow.remote)
            resumes.append(flow.tail.wait_resumed(marks, killed_at, alive=run.check))
        flow.tail.wait_copying(flow.feed, copy_s=SIZE.tail_s, alive=run.check)
        counted = flow.finish(run)
    conclude(
        f"kill -9 of one Spark Python worker, {SIZE.worker_kills} times",
        mode,
        counted,
        faults=SIZE.worker_kills,
        rate=SIZE.rate,
        resumes=resumes,
        notes=f"{SIZE.tasks_max} copy tasks, one killed each time; the driver restarts it (1 s backoff)",
    )


@pytest.mark.timeout(TIMEOUT_S)
@pytest.mark.parametrize("mode", MODES)
def test_a_standalone_worker_killed_mid_copy(fault_clusters: LocalClusters, tmp_path: Path, mode: str) -> None:
    """``mirrorspark run --master spark://…`` on 2 standalone workers; one is SIGKILLed with its executor mid-copy.

    One executor per worker with half the copy tasks' slots each (``spark.cores.max`` =
    ``tasks.max``: 1 core each when small, 2 at full size), so each worker runs half the copy
    tasks. Each worker offers twice that: when worker 0 dies with its executor and Python
    workers, the master starts a replacement executor on worker 1 and the driver restarts the
    lost copy tasks there from their committed offsets.
    """
    per_executor = SIZE.tasks_max // 2
    with (
        # generous start deadline: the master's and workers' JVMs start slowly on a loaded machine
        StandaloneCluster(tmp_path / "spark", workers=2, cores=2 * per_executor, start_timeout_s=300) as cluster,
        fault_flow(fault_clusters, tmp_path, mode, "fault-standalone") as flow,
    ):
        conf = {
            "spark.executor.cores": str(per_executor),
            "spark.executor.memory": "512m",  # two executors fit on one worker (1g)
            "spark.cores.max": str(SIZE.tasks_max),
            "spark.scheduler.minRegisteredResourcesRatio": "1.0",  # start once both executors registered
            "spark.ui.enabled": "false",
        }
        args = ["--master", cluster.url, *(a for k, v in conf.items() for a in ("--conf", f"{k}={v}"))]
        run = flow.run(tmp_path, args)
        source_port = port_of(flow.source)
        [worker0, worker1] = cluster.worker_pids

        def copying_on_both_workers() -> bool:
            run.check()
            return bool(copy_task_workers(worker0, source_port)) and bool(copy_task_workers(worker1, source_port))

        flow.tail.wait_copying(flow.feed, copy_s=SIZE.copy_s, alive=run.check)
        assert_eventually(copying_on_both_workers, timeout_s=300, message="no copy task on each worker")
        killed_at = time.monotonic()
        cluster.kill_worker(0)  # the worker JVM, its executor and the executor's Python workers
        marks = high_watermarks(flow.target, flow.remote)
        resume_s = flow.tail.wait_resumed(marks, killed_at, alive=run.check)
        flow.tail.wait_copying(flow.feed, copy_s=SIZE.tail_s, alive=run.check)
        counted = flow.finish(run)
    conclude(
        "kill -9 of a Spark standalone worker (of 2)",
        mode,
        counted,
        faults=1,
        rate=SIZE.rate,
        resumes=[resume_s],
        notes=("worker JVM, its executor and Python workers killed; the lost copy tasks restart on the other worker"),
    )
