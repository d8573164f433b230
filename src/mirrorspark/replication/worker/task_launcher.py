"""A copy task as the one Spark task of its own Spark job, run from a driver thread, and how such jobs end.

:func:`end_jobs` waits for several jobs under one deadline and cancels the rest together (engine-audit
F7: never N x 30 s).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from mirrorspark.errors import DataPathError, MirrorsparkError, SparkDriverLostError, error_from_info
from mirrorspark.replication.task.job import run_copy_job, warm_worker
from mirrorspark.replication.task.spec import CopyTaskSpec, TaskOutcome, TaskResult
from mirrorspark.spark_session import RESTART_ADVICE, DriverJvmWatch, is_gateway_error

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

CANCEL_WAIT_S = 10.0
"""Seconds a stop or an abort waits for the cancelled jobs of its tasks to end (one deadline for all)."""

JVM_EXIT_WAIT_S = 1.0
"""Seconds a task's job that lost its connection to the Spark driver JVM waits to see the JVM's exit (to name it)."""


WARM_UP_GROUP = "mirrorspark-warm-up"
"""Spark job group of :func:`warm_up`'s job."""

WORKERS_LINE = "%d Python worker(s) started in %.1f s"
"""The ``mirrorspark.start-up`` line of :func:`warm_up` (``bench/startup.py``'s ``Python workers``)."""

DAEMON_LINE = "the Python workers' daemon started with %d worker in %.1f s"
"""The ``mirrorspark.start-up`` line of :func:`start_daemon` (``bench/startup.py``'s ``Python daemon``)."""


def start_daemon(spark: SparkSession) -> threading.Thread:
    """Start Spark's Python daemon with one worker as soon as the session is up (:func:`warm_up` of one).

    Run while the flows may still start: the daemon loads the copy task once (a local master's
    :mod:`~mirrorspark.replication.task.daemon`), so the copy tasks' workers fork from it ready.
    """
    return warm_up(spark, 1, line=DAEMON_LINE)


def warm_up(spark: SparkSession, count: int, *, line: str = WORKERS_LINE) -> threading.Thread:
    """Start ``count`` Spark Python workers with the copy task's modules loaded, on a daemon thread (returned, started).

    Spark reuses them for the first copy tasks (1.2-1.9 s saved on 2 cores); run while a relaunched
    instance waits for the flow's lease. A failure is logged at DEBUG only; ``line`` is logged at the end.
    """

    def run() -> None:
        began = time.monotonic()
        try:
            sc = spark.sparkContext
            sc.setJobGroup(WARM_UP_GROUP, "start the copy tasks' Python workers", interruptOnCancel=True)
            sc.parallelize(range(count), count).map(warm_worker).collect()
        except Exception as e:  # only an optimisation: the copy tasks start their own workers
            log.debug("warming up %d Python worker(s) failed: %s", count, e)
            return
        logging.getLogger("mirrorspark.start-up").info(line, count, time.monotonic() - began)

    thread = threading.Thread(target=run, name="mirrorspark-warm-up", daemon=True)
    thread.start()
    return thread


class TaskJob(threading.Thread):
    """One copy task as the only Spark task of its own Spark job, on a driver thread.

    Ends with :attr:`result`, or :attr:`error`: the task's own error rebuilt as its class, a
    :class:`~mirrorspark.errors.SparkDriverLostError` when the Spark driver JVM died or cannot be
    reached (never retried; ``jvm`` names its pid), or a DataPathError naming a lost task or a failed
    job.
    """

    def __init__(self, spark: SparkSession, spec: CopyTaskSpec, jvm: DriverJvmWatch | None = None) -> None:
        super().__init__(name=f"mirrorspark-task-{spec.flow}-{spec.task_index}", daemon=True)
        self.spark = spark
        self.spec = spec
        self.jvm = jvm
        self.group = f"mirrorspark-{spec.flow}-task-{spec.task_index}-gen-{spec.generation}"
        self.result: TaskResult | None = None
        self.error: MirrorsparkError | None = None

    def run(self) -> None:
        """Run the task's Spark job and keep how it ended."""
        sc = self.spark.sparkContext
        spec = self.spec
        try:
            sc.setJobGroup(self.group, f"copy task {spec.task_index} of {spec.flow}", interruptOnCancel=True)
            [result] = sc.parallelize([spec], 1).map(run_copy_job).collect()
        except Exception as e:  # the job itself failed (cancelled, the JVM gone): only its text is there
            self.error = self.job_error(e)
            return
        if result.outcome == TaskOutcome.FAILED and result.error is not None:
            self.error = error_from_info(result.error)
        elif result.outcome == TaskOutcome.LOST:
            self.error = DataPathError(
                f"flow {spec.flow}: copy task {spec.task_index} was lost with its Spark executor or Python worker",
                retriable=True,
            )
        else:
            self.result = result

    def job_error(self, e: Exception) -> MirrorsparkError:
        """Translate the failure of the task's Spark job: the JVM's death (never retried), or a data-path error."""
        gateway = is_gateway_error(e)
        lost = self.jvm.check() if self.jvm is not None else None
        if lost is None and gateway and self.jvm is not None:
            # the gateway's socket closes as the JVM dies, a moment before its exit can be seen: look again
            deadline = time.monotonic() + JVM_EXIT_WAIT_S
            while lost is None and time.monotonic() < deadline:
                time.sleep(0.05)
                lost = self.jvm.check()
        if lost is not None:
            return lost
        text = str(e).splitlines()[0] if str(e) else type(e).__name__
        if gateway:
            return SparkDriverLostError(f"the Spark driver JVM cannot be reached ({text}): {RESTART_ADVICE}")
        return DataPathError(f"flow {self.spec.flow}: the Spark job of copy task {self.spec.task_index} failed: {text}")

    def cancel(self) -> None:
        """Cancel the task's Spark job (its Python worker killed, nothing more committed); a failure is only logged."""
        if self.jvm is not None and self.jvm.lost is not None:
            return
        try:
            self.spark.sparkContext.cancelJobGroup(self.group)
        except Exception as e:  # a Py4J error: the JVM is going away, and the job with it
            log.debug(
                "cancelling the Spark job of copy task %d of %s failed: %s", self.spec.task_index, self.spec.flow, e
            )


def end_jobs(
    runs: Iterable[TaskJob], deadline: float, clock: Callable[[], float] = time.monotonic
) -> tuple[list[TaskJob], list[TaskJob]]:
    """Wait for jobs to end until ``deadline`` (``clock()`` s), cancel the rest together; return (cancelled, alive).

    The cancels run in parallel and are joined for at most :data:`CANCEL_WAIT_S`: N stuck tasks cost one
    wait, not N.
    """
    runs = list(runs)
    for run in runs:
        run.join(max(0.0, deadline - clock()))
    alive = [run for run in runs if run.is_alive()]
    if not alive:
        return [], []
    cancels = [threading.Thread(target=run.cancel, name="mirrorspark-cancel", daemon=True) for run in alive]
    for t in cancels:
        t.start()
    cancelled = clock() + CANCEL_WAIT_S
    for t in cancels:
        t.join(max(0.0, cancelled - clock()))
    for run in alive:
        run.join(max(0.0, cancelled - clock()))
    return alive, [run for run in alive if run.is_alive()]


__all__ = [
    "CANCEL_WAIT_S",
    "DAEMON_LINE",
    "JVM_EXIT_WAIT_S",
    "WARM_UP_GROUP",
    "WORKERS_LINE",
    "TaskJob",
    "end_jobs",
    "start_daemon",
    "warm_up",
]
