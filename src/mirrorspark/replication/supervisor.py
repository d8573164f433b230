"""Running and restarting one flow's copy tasks (what Kafka Connect's worker and herder do for a connector).

Each copy task (:class:`~mirrorspark.replication.task.spec.CopyTaskSpec`) runs as the one Spark task
of its own Spark job (:class:`TaskJob`), submitted from a driver thread, until the driver stops
it. Tasks commit their own offsets; a flow's :class:`FlowSupervisor`, ticked by the driver loop:

* reads the flow's progress channel to follow positions, totals and copied segments;
* restarts a failed task with exponential backoff (:data:`BACKOFF_INITIAL_S` doubling up to
  :data:`BACKOFF_MAX_S`) from its committed positions, also one lost with its executor or Python
  worker (Spark's own re-run ends at once: :func:`~mirrorspark.replication.task.job.run_copy_job`);
  a flow whose error no retry can fix (:func:`fatal_task_error`) or one of whose tasks failed
  :data:`MAX_FAILURES` times in a row without copying anything is marked failed, and the other
  flows keep running (failures are counted per task: one broker lost fails every task of the flow
  once, which is no reason to give up);
* starts a new **generation** of the flow's tasks when its assignment changes (new topics or
  partitions, a control-list change), like a Connect rebalance, and restarts a task after a gap;
* follows the flow's lease (one active instance per flow): takes over when it is held, ends the
  running generation without committing when it is lost.

A bounded copy (``run --until-caught-up``) gives the tasks the end offsets listed at start: a
task that read its partitions to them commits and ends ``caught_up`` and is not restarted.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from enum import StrEnum
from typing import TYPE_CHECKING

from mirrorspark.errors import (
    ClusterError,
    DataPathError,
    MirrorsparkError,
    TransactionCoordinatorError,
    error_from_info,
)
from mirrorspark.kafka.admin import PartitionKey
from mirrorspark.replication.lease import FlowLease
from mirrorspark.replication.task.commit import GRANT_WAIT_S
from mirrorspark.replication.task.job import run_copy_job
from mirrorspark.replication.task.spec import CopyTaskSpec, TaskOutcome, TaskResult
from mirrorspark.replication.task_channel import TaskChannel

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from mirrorspark.replication.flow import Flow

log = logging.getLogger(__name__)

BACKOFF_INITIAL_S = 1.0
"""Seconds before the first restart of a failed copy task; doubled at each further failure."""

BACKOFF_MAX_S = 30.0
"""Longest wait between two restarts of a failing copy task (s)."""

MAX_FAILURES = 6
"""Failures of one copy task in a row, with no record copied in between, after which its flow is marked failed."""

STOP_TIMEOUT_S = 30.0
"""Seconds a stop waits for tasks to commit and end before cancelling their jobs."""

LEASE_GRANT_S = 3.0
"""Seconds a copy task may commit after the driver's last grant: half the lease group's session timeout
(:class:`~mirrorspark.replication.lease.FlowLease`, 6 s), so a driver that lost its lease (or froze) has
its tasks stop committing before a standby can take the flow over."""

RECLAIM_S = 60.0
"""Seconds an at-least-once flow's running copy tasks wait, committing nothing, for a lost lease to come back
under the very next epoch (no other holder in between: the target, where the lease group lives, was
stopped or cut off); they then commit what the target acknowledged instead of a new generation copying
it again. Past it, or with another holder in between, they are aborted as at any loss
(:data:`~mirrorspark.replication.task.runner.HOLD_S` on the task's side)."""

CLUSTER_WARNING_S = 10.0
"""Seconds between two warnings of one flow's supervisor that cannot reach the target (the ticks go on)."""


class SupervisorState(StrEnum):
    """Where a flow's supervisor is.

    ``created``, ``standby`` (another instance holds the lease), ``running``, ``failed`` (given up:
    the error is kept) or ``stopped``.
    """

    CREATED = "created"
    STANDBY = "standby"
    RUNNING = "running"
    FAILED = "failed"
    STOPPED = "stopped"


def fatal_task_error(error: MirrorsparkError, *, first_start: bool) -> bool:
    """Tell whether a copy task's error fails its flow at once, a retry being unable to fix it.

    A record too large or an authorization failure (a topic, group or ``TransactionalId`` ACL:
    :attr:`~mirrorspark.errors.MirrorsparkError.fatal`), or, at the flow's first start, a target
    without a transaction coordinator (exactly-once: the first ``init_transactions`` already
    waited its full timeout; later, a coordinator moving between brokers is retried like any
    failure). MM2's exactly-once task fails for good on any error (``ExactlyOnceWorkerSourceTask``);
    mirrorspark retries the rest with backoff.

    Parameters
    ----------
    error:
        The task's error, rebuilt on the driver from its :class:`~mirrorspark.errors.ErrorInfo`.
    first_start:
        Whether the task belonged to the flow's first generation, never restarted.
    """
    return error.fatal or (first_start and isinstance(error, TransactionCoordinatorError))


class TaskJob(threading.Thread):
    """One copy task as the only Spark task of its own Spark job, on a driver thread.

    Parameters
    ----------
    spark:
        The SparkSession.
    spec:
        The task.

    Attributes
    ----------
    result:
        How the task ended, unless it failed.
    error:
        Why it failed: the task's own error rebuilt as its class, or a :class:`DataPathError`
        naming a lost task or a failed Spark job.
    """

    def __init__(self, spark: SparkSession, spec: CopyTaskSpec) -> None:
        super().__init__(name=f"mirrorspark-task-{spec.flow}-{spec.task_index}", daemon=True)
        self.spark = spark
        self.spec = spec
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
            text = str(e).splitlines()[0] if str(e) else type(e).__name__
            self.error = DataPathError(f"flow {spec.flow}: the Spark job of copy task {spec.task_index} failed: {text}")
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

    def cancel(self) -> None:
        """Cancel the task's Spark job (the Python worker is killed; nothing more is committed)."""
        self.spark.sparkContext.cancelJobGroup(self.group)


class TaskFailures:
    """Failures in a row of each copy task of a flow, and the backoff before each restart.

    Counted per task (Kafka Connect restarts and counts each task on its own): a broker lost
    under the target fails every task of the flow once, which must not add up to a failed flow.
    Any progress of the flow clears every count (:meth:`clear`); a task that ends having copied
    records clears its own (:meth:`succeeded`).
    """

    def __init__(self) -> None:
        self.by_task: dict[int, int] = {}

    def failed(self, index: int) -> int:
        """Count one more failure of task ``index``; return its failures in a row (>= 1)."""
        n = self.by_task[index] = self.by_task.get(index, 0) + 1
        return n

    def succeeded(self, index: int) -> None:
        """Start the count of task ``index`` over: it copied again."""
        self.by_task.pop(index, None)

    def clear(self) -> None:
        """Start every count over: the flow copied again."""
        self.by_task.clear()

    @property
    def worst(self) -> int:
        """Failures in a row of the most failing task (0 when none failed)."""
        return max(self.by_task.values(), default=0)

    @staticmethod
    def backoff_s(failures: int) -> float:
        """Seconds before restarting a task after its ``failures``-th failure in a row.

        :data:`BACKOFF_INITIAL_S` doubling up to :data:`BACKOFF_MAX_S`.
        """
        return float(min(BACKOFF_MAX_S, BACKOFF_INITIAL_S * 2 ** (max(1, failures) - 1)))

    @staticmethod
    def exhausted(failures: int) -> bool:
        """Whether ``failures`` in a row of one task fail its flow (:data:`MAX_FAILURES`)."""
        return failures >= MAX_FAILURES


class FlowSupervisor:
    """Runs and restarts the copy tasks of one flow (see the module notes).

    Parameters
    ----------
    flow:
        The started flow.
    spark:
        The SparkSession.
    channel:
        The driver's task channel.
    lease:
        The flow's lease (one active instance per flow): tasks run only while it is held, and
        commit only under the grants the worker renews while it holds. ``None`` runs the tasks at
        once, with a grant that never expires.
    stop_at:
        A bounded copy's end offsets (``run --until-caught-up``): tasks end once they read their
        partitions to them. ``None``: the tasks copy until stopped.
    """

    def __init__(
        self,
        flow: Flow,
        spark: SparkSession,
        channel: TaskChannel,
        lease: FlowLease | None = None,
        *,
        stop_at: Mapping[PartitionKey, int] | None = None,
    ) -> None:
        if flow.reports is None:
            raise DataPathError(f"{flow.name}: the flow is not started")
        self.flow = flow
        self.lease = lease
        self.epoch = 0  # the lease epoch the running generation was started under
        self.spark = spark
        self.channel = channel
        self.stop_at = stop_at
        self.reports = flow.reports
        self.generation = 0
        self.runs: dict[int, TaskJob] = {}
        self.assignment: tuple[tuple[PartitionKey, ...], int] = ((), 0)
        self.task_failures = TaskFailures()
        self.restarts = 0
        self.next_start: dict[int, float] = {}
        self.state = SupervisorState.CREATED
        self.error: MirrorsparkError | None = None
        self._quiet_until = 0.0  # no cluster warning before (monotonic s)
        self._lost_at: float | None = None  # when the running generation's lease was found lost (monotonic s)

    @property
    def failures(self) -> int:
        """Failures in a row of the flow's most failing copy task (0 once copying again)."""
        return self.task_failures.worst

    @property
    def name(self) -> str:
        """The flow's name."""
        return self.flow.name

    def task_count(self) -> int:
        """Copy tasks the flow runs now, ``min(tasks.max, partitions)``."""
        return min(self.flow.config.tasks_max, len(self.flow.order))

    # ------------------------------------------------------------------ generations and the lease

    def begin(self) -> None:
        """Start the tasks; with a lease, join the lease group and wait as a standby until :meth:`tick` sees it held.

        Raises
        ------
        ClusterError
            The lease topic cannot be created.
        """
        if self.lease is None:
            self.start()
            return
        if not self.lease.started:  # the driver joins it early, while Spark starts
            self.lease.start()
        self.state = SupervisorState.STANDBY

    def start(self) -> None:
        """Start a new generation of the flow's tasks from their committed positions."""
        self.generation += 1
        self.assignment = self.flow.assignment
        self.state = SupervisorState.RUNNING
        self.grant()
        for spec in self._specs():
            self._launch(spec)

    def _specs(self) -> list[CopyTaskSpec]:
        return self.flow.task_specs(self.generation, self.channel.address, stop_at=self.stop_at)

    def grant(self) -> None:
        """Renew the running generation's permission to commit (while the lease is held)."""
        if self.lease is None:
            self.channel.grant(self.name, self.generation, 1e9)
        elif self.state == SupervisorState.RUNNING and self.lease.holds(self.epoch):
            self.channel.grant(self.name, self.generation, LEASE_GRANT_S)

    def _take_over(self) -> None:
        assert self.lease is not None
        self.epoch = self.lease.epoch
        self.flow.reload_positions()  # where the previous holder's tasks committed
        # its reports: their copied runs (exact translation), never its totals (not this instance's copies)
        self.reports.poll(until_end=True, timeout_s=10, segments_only=True)
        log.info("%s: this instance holds the flow's lease (epoch %d): copying", self.name, self.epoch)
        self.start()

    def _lost(self) -> None:
        self._lost_at = None
        log.warning("%s: the flow's lease was lost: its copy tasks end without committing; standby", self.name)
        self._abort_tasks()
        self.next_start.clear()
        self.state = SupervisorState.STANDBY

    def _abort_tasks(self) -> None:
        """End the running generation without committing (bounded: cancelled after :data:`STOP_TIMEOUT_S`)."""
        self.channel.abort(self.name, self.generation)
        for run in list(self.runs.values()):
            run.join(STOP_TIMEOUT_S)
            if run.is_alive():
                run.cancel()
            self.channel.forget(self.name, run.spec.task_index, run.spec.generation)
        self.runs.clear()

    def _launch(self, spec: CopyTaskSpec) -> None:
        run = TaskJob(self.spark, spec)
        self.runs[spec.task_index] = run
        run.start()

    def stop_tasks(self, *, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """Stop the current generation: each task commits what was acknowledged and ends (bounded)."""
        self.channel.stop(self.name, self.generation)
        deadline = time.monotonic() + timeout_s
        for run in list(self.runs.values()):
            run.join(max(0.0, deadline - time.monotonic()))
        for run in self.runs.values():
            if run.is_alive():
                log.warning(
                    "%s: copy task %d did not stop in %.0f s: cancelled", self.name, run.spec.task_index, timeout_s
                )
                run.cancel()
                run.join(10)
            self.channel.forget(self.name, run.spec.task_index, run.spec.generation)
        self.runs.clear()
        self.reports.poll(until_end=True, timeout_s=10, generation=self.generation)

    def _restart_all(self, why: str) -> None:
        log.info("%s: restarting its copy tasks (%s)", self.name, why)
        self.stop_tasks()
        self.restarts += 1
        self.start()

    # ------------------------------------------------------------------ the tick

    def tick(self) -> None:
        """Apply new reports; handle ended tasks; restart on an assignment change. Called by the driver loop.

        A :class:`~mirrorspark.errors.ClusterError` on the way (the target's broker that led the
        progress channel or ``mm2-offsets`` just died, the lease group's coordinator moves) is logged,
        at most every :data:`CLUSTER_WARNING_S`, and the same step is tried again at the next tick:
        the driver loop, which supervises every flow, never ends on it.
        """
        try:
            self._tick()
        except ClusterError as e:
            now = time.monotonic()
            if now >= self._quiet_until:
                self._quiet_until = now + CLUSTER_WARNING_S
                log.warning("%s: supervising its copy tasks failed (%s): tried again at the next tick", self.name, e)

    def _tick(self) -> None:
        if self.state in (SupervisorState.FAILED, SupervisorState.STOPPED):
            return
        if self.lease is not None and not self._follow_lease():
            return
        if self.reports.poll(generation=self.generation):
            self.task_failures.clear()  # copying again: earlier failures were recovered from ("in a row" is broken)
        if self.flow.halted is not None:
            self.stop_tasks()
            self.state = SupervisorState.STOPPED
            return
        now = time.monotonic()
        for index, run in list(self.runs.items()):
            if not run.is_alive() and self._ended(index, run, now):
                return  # the flow failed
        if self.flow.assignment != self.assignment:
            self.next_start.clear()
            self._restart_all("assignment changed")
            return
        self._restart_due(now)

    def _follow_lease(self) -> bool:
        """Act on the lease; tell whether this instance runs the flow's tasks now."""
        assert self.lease is not None
        if self.state == SupervisorState.STANDBY:
            if self.lease.held:
                self._take_over()
            elif self.lease.failure is not None:
                try:
                    self.lease.wait_acquired(0)  # raises the lease thread's failure as a ClusterError
                except MirrorsparkError as e:
                    self.state = SupervisorState.FAILED
                    self.error = e
                    log.error("%s: failed, its copy tasks never start (other flows go on): %s", self.name, e)
            return False
        if not self.lease.holds(self.epoch):
            if self._reclaimed():
                return True
            # lost, or lost and taken again between two ticks (a new epoch): the running generation
            # was started under the old epoch and is no longer granted commits; standby, then the
            # next tick takes over under the new epoch
            if not self._reclaim_pending():
                self._lost()
            return False
        self._lost_at = None
        return True

    def _reclaimed(self) -> bool:
        """Whether the lease came back under the very next epoch: the running generation goes on under it.

        Epochs are claim offsets + 1: the next one, or one past claims of this instance only (a claim
        whose commit failed, e.g. ``NOT_COORDINATOR`` while the target came back), means no other
        instance claimed the lease in between, so no other copy task committed; the running tasks (at
        least once, waiting for a grant) then commit what the target acknowledged during the loss
        instead of a new generation copying it again.
        """
        assert self.lease is not None
        lease = self.lease
        if self.flow.exactly_once or not lease.held or lease.epoch <= self.epoch:
            return False
        if not lease.claimed_only_by_self(self.epoch, lease.epoch):
            return False
        log.info(
            "%s: took the flow's lease back (epoch %d, no other holder since epoch %d): its copy tasks commit again",
            self.name,
            self.lease.epoch,
            self.epoch,
        )
        self.epoch = self.lease.epoch
        self._lost_at = None
        self.grant()
        return True

    def _reclaim_pending(self) -> bool:
        """Whether the running at-least-once generation still waits (:data:`RECLAIM_S` at most) for its lease."""
        assert self.lease is not None
        if self.flow.exactly_once or self.lease.held or self.lease.standby:
            # exactly once: the tasks' open transactions are aborted; held: another epoch came in between;
            # standby: a member of the group again without the lease: another instance holds it
            return False
        now = time.monotonic()
        if self._lost_at is None:
            self._lost_at = now
            log.warning(
                "%s: the flow's lease was lost: its copy tasks commit nothing, waiting up to %.0f s for it to return",
                self.name,
                RECLAIM_S,
            )
        return now - self._lost_at < RECLAIM_S

    def _ended(self, index: int, run: TaskJob, now: float) -> bool:
        """Handle a task whose job ended: read its last reports, then restart it or record a gap; or fail the flow.

        Returns ``True`` when the flow failed.
        """
        # its last reports first (raises ClusterError while the channel cannot be read: handled at a later tick)
        self.reports.poll(until_end=True, timeout_s=10, generation=self.generation)
        self.channel.forget(self.name, index, run.spec.generation)
        self.runs.pop(index, None)
        result = run.result
        if run.error is not None or result is None:
            error = run.error or DataPathError(f"{self.name}: copy task {index} ended without a result")
            return self._failed(index, error, now)
        if result.records or result.out_of_range:
            self.task_failures.succeeded(index)
        if result.out_of_range:
            self.flow.check_positions(result.out_of_range)  # records the gap, moves the positions
        elif result.outcome == TaskOutcome.ORPHANED:  # not told to abort
            log.warning(
                "%s: copy task %d ended without its last commit (no valid grant from the driver within %.0f s, "
                "or its channel to the driver closed); restarting it from its committed offsets: what it copied "
                "since is copied again",
                self.name,
                index,
                GRANT_WAIT_S,
            )
        elif result.outcome == TaskOutcome.CAUGHT_UP:
            return False  # a bounded copy's task read its partitions to their end offsets: done
        self.next_start[index] = now
        return False

    def _restart_due(self, now: float) -> None:
        due = [i for i, at in self.next_start.items() if at <= now and i not in self.runs]
        if not due:
            return
        if self.flow.exactly_once:
            # A task killed after its transaction committed but before its progress report left the
            # positions known here behind the source offsets committed with its records: start the
            # restarted tasks from those (mm2-offsets, read_committed), or they copy that transaction again.
            try:
                self.flow.reload_positions()
            except ClusterError as e:
                log.warning("%s: reading the committed source offsets failed (%s): restart postponed", self.name, e)
                return
        specs = {s.task_index: s for s in self._specs()}
        for index in due:
            del self.next_start[index]
            if index in specs:
                self.restarts += 1
                self._launch(specs[index])

    def _failed(self, index: int, error: MirrorsparkError, now: float) -> bool:
        """Count a task's failure: schedule its restart after a backoff, or fail the flow (``True``)."""
        failures = self.task_failures.failed(index)
        first_start = self.generation == 1 and self.restarts == 0
        if fatal_task_error(error, first_start=first_start) or TaskFailures.exhausted(failures):
            self.state = SupervisorState.FAILED
            self.error = error
            log.error("%s: failed, its copy tasks are stopped (other flows go on): %s", self.name, error)
            self.stop_tasks()
            return True
        delay = TaskFailures.backoff_s(failures)
        log.warning(
            "%s: copy task %d failed (%s); restarting it in %.0f s from its committed offsets",
            self.name,
            index,
            error,
            delay,
        )
        self.next_start[index] = now + delay
        return False

    def fail(self, error: MirrorsparkError) -> None:
        """Mark the flow failed with ``error`` and stop its tasks (bounded; their own failures only logged)."""
        self.state = SupervisorState.FAILED
        self.error = error
        log.error("%s: failed, its copy tasks are stopped (other flows go on): %s", self.name, error)
        try:
            self._abort_tasks()
        except Exception as e:  # already failing: say so, keep the first error
            log.warning("%s: stopping its copy tasks failed: %s", self.name, e)

    def done(self) -> bool:
        """Tell whether no task runs or waits for a restart (a bounded copy: every one ended ``caught_up``)."""
        return self.state == SupervisorState.RUNNING and not self.runs and not self.next_start

    def close(self) -> None:
        """Stop the tasks (if running) and give the lease up (a standby takes over at once)."""
        if self.runs:
            self.stop_tasks()
        if self.state != SupervisorState.FAILED:
            self.state = SupervisorState.STOPPED
        if self.lease is not None:
            self.lease.close()


__all__ = [
    "BACKOFF_INITIAL_S",
    "BACKOFF_MAX_S",
    "CLUSTER_WARNING_S",
    "LEASE_GRANT_S",
    "MAX_FAILURES",
    "RECLAIM_S",
    "STOP_TIMEOUT_S",
    "FlowSupervisor",
    "SupervisorState",
    "TaskFailures",
    "TaskJob",
    "fatal_task_error",
]
