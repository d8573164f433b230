"""Running and restarting one flow's copy tasks (what Kafka Connect's worker and herder do for a connector).

Each copy task runs as the one Spark task of its own Spark job (:class:`TaskJob`) and commits its own
offsets. A flow's :class:`FlowSupervisor`, ticked by the driver loop:

* reads the flow's progress channel to follow positions, totals and copied segments;
* restarts a failed or lost task from its committed positions with backoff, failing the flow on an error
  no retry can fix (:func:`fatal_task_error`) or after :data:`MAX_FAILURES` failures in a row of one
  task;
* starts a new **generation** when the assignment changes (a Connect rebalance), and restarts a task
  after a gap;
* follows the flow's lease: takes over when it is held, ends the generation without committing when it
  is lost; take-overs and joins run on the flow's own thread
  (:mod:`~mirrorspark.replication.worker.takeover`), and a stop joins then cancels every task under one
  deadline;
* ends every task without committing once the Spark driver JVM is gone (:meth:`FlowSupervisor.abandon`).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import TYPE_CHECKING

from mirrorspark.errors import ClusterError, DataPathError, MirrorsparkError, SparkDriverLostError
from mirrorspark.kafka.admin import PartitionKey
from mirrorspark.replication.task.commit import GRANT_WAIT_S
from mirrorspark.replication.task.spec import CopyTaskSpec, TaskOutcome
from mirrorspark.replication.worker.fencing import fence_flow
from mirrorspark.replication.worker.grant_server import GrantServer
from mirrorspark.replication.worker.lease import FlowLease
from mirrorspark.replication.worker.restart_policy import (
    BACKOFF_INITIAL_S,
    BACKOFF_MAX_S,
    MAX_FAILURES,
    READ_RETRY_INITIAL_S,
    ReadBackoff,
    TaskFailures,
    assignment_change,
    fatal_task_error,
)
from mirrorspark.replication.worker.takeover import TAKEOVER_MARGIN_S, FlowThread, end_runs
from mirrorspark.replication.worker.task_launcher import CANCEL_WAIT_S, JVM_EXIT_WAIT_S, TaskJob, end_jobs
from mirrorspark.spark_session import DriverJvmWatch

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from mirrorspark.replication.connector.flow import Flow

log = logging.getLogger(__name__)

STOP_TIMEOUT_S = 30.0
"""Seconds a stop waits for tasks to commit and end before cancelling their jobs (one deadline for all)."""

REPORTS_POLL_S = 10.0
"""Seconds a read of the progress channel to its end (a task's last reports) may take."""

LEASE_GRANT_S = 3.0
"""Seconds a grant reaches ahead at most (renewed every second), also capped by the lease's last contact
(lease.py's L2)."""

UNBOUNDED_GRANT_S = 1e9
"""Seconds a grant reaches ahead when a flow runs without a lease (``run`` with leases off: tests, one-offs)."""

RECLAIM_S = 60.0
"""Seconds an at-least-once flow's tasks wait, committing nothing, for a lost lease to come back under
the very next epoch, then commit instead of being copied again (the task's side: ``runner.HOLD_S``)."""

CLUSTER_WARNING_S = 10.0
"""Seconds between two warnings of one flow's supervisor that cannot reach the target (the ticks go on)."""


class SupervisorState(StrEnum):
    """Where a flow's supervisor is: ``created``, ``standby``, ``running``, ``failed`` or ``stopped``."""

    CREATED = "created"
    STANDBY = "standby"
    RUNNING = "running"
    FAILED = "failed"
    STOPPED = "stopped"


class FlowSupervisor:
    """Runs and restarts the copy tasks of one flow (see the module notes).

    ``lease`` ``None`` runs the tasks at once under a grant that never expires; ``stop_at`` (a bounded
    copy's end offsets) ``None`` copies until stopped; ``clock`` is monotonic seconds.
    """

    def __init__(
        self,
        flow: Flow,
        spark: SparkSession,
        grants: GrantServer,
        lease: FlowLease | None = None,
        *,
        stop_at: Mapping[PartitionKey, int] | None = None,
        jvm: DriverJvmWatch | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if flow.reports is None:
            raise DataPathError(f"{flow.name}: the flow is not started")
        self.flow = flow
        self.lease = lease
        self.epoch = 0  # the lease epoch the running generation was started under
        self._grants_from = 0.0  # no grant before (monotonic s): the predecessor's last commit may still land
        self.spark = spark
        self.grants = grants
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
        self.jvm = jvm
        self.clock = clock
        self._reads = ReadBackoff(clock)  # reads (and take-overs) that failed: not tried again before a backoff
        self._fenced = 0  # the most copy tasks a generation of this supervisor ran: ids to fence at the next start
        self._lost_at: float | None = None  # when the running generation's lease was found lost (monotonic s)
        self.background = FlowThread(flow.name)  # the take-over, or the joins of a loss, stop or restart
        self._after_other = False  # the holding followed another instance's: tasks produce nothing before a grant

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
        """Start the tasks, or with a lease wait as a standby until :meth:`tick` sees it held."""
        if self.lease is None:
            self.start()
            return
        if not self.lease.started:  # else joined before Spark started (Replicator.join_leases)
            self.lease.start()
        self.state = SupervisorState.STANDBY

    def start(self) -> None:
        """Start a new generation of the flow's tasks from their committed positions.

        Exactly once, the ids ``0 .. n - 1`` are fenced first (Connect's ``fenceZombies``; ``n`` the
        larger of the most tasks run and :attr:`Flow.fence_count
        <mirrorspark.replication.connector.flow.Flow.fence_count>`). Raises ClusterError when the
        fencing fails (retried at the next tick, unless :func:`fatal_task_error`).
        """
        if self.flow.exactly_once:
            count = max(self._fenced, self.flow.fence_count)
            try:
                took = fence_flow(self.flow, count)
            except ClusterError as e:
                if not fatal_task_error(e, first_start=self.generation == 0):
                    raise
                self.task_failures.failed(0)  # as the first task's own init_transactions would have failed
                self.state = SupervisorState.FAILED
                self.error = e
                log.error("%s: failed, its copy tasks never start (other flows go on): %s", self.name, e)
                return
            log.debug("%s: fenced the transactional ids of tasks 0..%d in %.2f s", self.name, count - 1, took)
        self.generation += 1
        self.assignment = self.flow.assignment
        self.state = SupervisorState.RUNNING
        self.grant()
        specs = self._specs()
        self._fenced = max(self._fenced, len(specs))
        self.grants.throttle(self.name, self.flow.throttle.limit, len(specs))  # before the first record is read
        for spec in specs:
            self._launch(spec)

    def _specs(self) -> list[CopyTaskSpec]:
        specs = self.flow.task_specs(self.generation, self.grants.address, stop_at=self.stop_at, epoch=self.epoch)
        if not self._after_other:
            return specs
        return [dataclasses.replace(s, after_other_holder=True) for s in specs]

    def grant(self) -> None:
        """Renew the running generation's grant: ``LEASE_GRANT_S`` ahead, capped by the lease (L2, L5)."""
        if self.lease is None:
            self.grants.grant(self.name, self.generation, time.monotonic() + UNBOUNDED_GRANT_S)
        elif self.state == SupervisorState.RUNNING and time.monotonic() >= self._grants_from:
            deadline = self.lease.grant(self.epoch, LEASE_GRANT_S)
            if deadline is not None:
                self.grants.grant(self.name, self.generation, deadline)

    def throttle(self) -> None:
        """Send the running tasks an equal share each of the flow's throttle in effect (a changed share only)."""
        if self.state == SupervisorState.RUNNING and self.runs:
            self.grants.throttle(self.name, self.flow.throttle.limit, len(self.runs))

    def _begin_take_over(self) -> None:
        """Start taking the flow over under the lease's new holding, on the flow's thread (:meth:`_take_over`)."""
        assert self.lease is not None
        epoch = self.lease.epoch
        if not self._reads.may("take-over") or not self.lease.may_grant(epoch):
            return  # a failed take-over backs off; no recent contact: the lease may already be another's
        # the holding before this one was another instance's (a standby's take-over, a relaunch after kill -9)
        other = epoch > 1 and not (self.epoch and self.lease.claimed_only_by_self(self.epoch, epoch))
        safe_at = self.lease.safe_at
        self.background.submit("take-over", lambda: self._take_over(epoch, safe_at, other=other), epoch=epoch)

    def _take_over(self, epoch: int, safe_at: float, *, other: bool) -> None:
        """Take the flow over under ``epoch`` (on the flow's thread): read the positions, start the tasks.

        After another instance's holding the reads wait for ``safe_at`` plus :data:`TAKEOVER_MARGIN_S`
        (:mod:`~mirrorspark.replication.worker.takeover`). The lock is held for the reads only.
        """
        assert self.lease is not None
        if other and not self.background.wait_until(safe_at + TAKEOVER_MARGIN_S):
            return  # the holding was lost meanwhile
        with self.flow.held():
            self.flow.reload_positions()  # where the previous holder's tasks committed
            # its reports: their copied runs (exact translation), never its totals (not this instance's copies)
            self.reports.poll(until_end=True, timeout_s=REPORTS_POLL_S, segments_only=True)
        if self.background.cancel.is_set() or not self.lease.holds(epoch):
            return
        self.epoch, self._grants_from, self._after_other = epoch, safe_at, other
        left = safe_at - time.monotonic()
        wait = f"; its first commit waits {left:.1f} s for the previous holder's last commit" if left > 0 else ""
        log.info("%s: this instance holds the flow's lease (epoch %d): copying%s", self.name, epoch, wait)
        self.start()

    def _lost(self) -> None:
        """End the running generation without committing (joined on the flow's thread); standby at once."""
        self._lost_at = None
        log.warning("%s: the flow's lease was lost: its copy tasks end without committing; standby", self.name)
        self.grants.abort(self.name, self.generation)
        self.next_start.clear()
        self.state = SupervisorState.STANDBY
        self.background.submit("loss", self._end_lost)

    def _end_lost(self) -> None:
        runs = list(self.runs.values())
        self._end_runs(self.clock() + STOP_TIMEOUT_S)
        if self.lease is not None and not any(run.is_alive() for run in runs):
            self.lease.void_grants()  # no task of the holding is left to use its grants

    def _abort_tasks(self) -> None:
        """End the running generation without committing (bounded: all cancelled after :data:`STOP_TIMEOUT_S`)."""
        self.grants.abort(self.name, self.generation)
        self._end_runs(self.clock() + STOP_TIMEOUT_S)

    def _end_runs(self, deadline: float) -> None:
        """Join every task until ``deadline``, cancel those still running, all together (:func:`end_jobs`)."""
        runs = list(self.runs.values())  # abandon() may clear them meanwhile (the JVM watch's thread)
        end_runs(self.name, runs, deadline, self.clock)
        for run in runs:
            self.grants.forget(self.name, run.spec.task_index, run.spec.generation)
            if self.runs.get(run.spec.task_index) is run:
                del self.runs[run.spec.task_index]

    def _launch(self, spec: CopyTaskSpec) -> None:
        run = TaskJob(self.spark, spec, self.jvm)
        self.runs[spec.task_index] = run
        run.start()

    def stop_tasks(self, *, timeout_s: float = STOP_TIMEOUT_S, deadline: float | None = None) -> bool:
        """Stop the generation (each task commits and ends), then read its last reports (``False``: backing off).

        ``timeout_s`` from now (default :data:`STOP_TIMEOUT_S`) or a shared ``deadline`` (``clock`` s)
        bounds the joins; the rest is cancelled (:func:`end_jobs`). Raises ClusterError when the
        progress channel cannot be read.
        """
        self.grants.stop(self.name, self.generation)
        end = deadline if deadline is not None else self.clock() + timeout_s
        if any(run.is_alive() for run in self.runs.values()):
            log.info("%s: stopping its copy tasks (each commits what the target acknowledged)", self.name)
        self._end_runs(end)
        with self.flow.held():
            return self._read_reports()

    def _read_reports(self) -> bool:
        """Read the progress channel to its end; ``False`` while a failed read backs off (ClusterError if it fails)."""
        if not self._reads.may("reports"):
            return False
        try:
            self.reports.poll(until_end=True, timeout_s=REPORTS_POLL_S, generation=self.generation)
        except ClusterError:
            self._reads.failed("reports")
            raise
        self._reads.ok("reports")
        return True

    def _restart_all(self, why: str) -> None:
        if self.runs:
            log.info("%s: restarting its copy tasks (%s)", self.name, why)
        self.background.submit("restart", self._restart)

    def _restart(self) -> None:
        """Stop the running generation, then start a new one (on the flow's thread)."""
        if not self.stop_tasks():
            return  # the last reports could not be read yet: the restart waits for them
        self.restarts += 1
        self.start()

    # ------------------------------------------------------------------ the tick

    def tick(self) -> None:
        """Apply new reports; handle ended tasks; restart on an assignment change. Called by the driver loop.

        A ClusterError is logged (at most every :data:`CLUSTER_WARNING_S`) and the step tried again next
        tick.
        """
        try:
            self._tick()
        except ClusterError as e:
            now = time.monotonic()
            if now >= self._quiet_until:
                self._quiet_until = now + CLUSTER_WARNING_S
                log.warning("%s: supervising its copy tasks failed (%s): tried again at the next tick", self.name, e)

    def _tick(self) -> None:
        if self.state in (SupervisorState.FAILED, SupervisorState.STOPPED) or not self._background_ended():
            return
        if self.lease is not None and not self._follow_lease():
            return
        with self.flow.held(wait_s=0) as held:
            if held:  # else a control job of the flow runs: the next tick supervises it
                self._supervise()

    def _background_ended(self) -> bool:
        """Whether the flow's thread is idle; act on a job's end (raise its error), cancel a lost take-over."""
        job = self.background
        if job.idle:
            return True
        if job.pending:
            if job.epoch and self.lease is not None and not self.lease.holds(job.epoch):
                job.cancel.set()
            return False
        what, error = job.what, job.collect()
        if error is None:
            if what == "take-over":
                self._reads.ok("take-over")
            return True
        if what == "take-over":
            self._reads.failed("take-over")
        raise error

    def _supervise(self) -> None:
        """Apply new reports, handle ended tasks, restart on an assignment change (the flow's lock held)."""
        if self.reports.poll(generation=self.generation):
            self.task_failures.clear()  # copying again: earlier failures were recovered from ("in a row" is broken)
        if self.flow.halted is not None:
            self.state = SupervisorState.STOPPED
            self.background.submit("stop", self.stop_tasks)
            return
        now = self.clock()
        ended = [(index, run) for index, run in self.runs.items() if not run.is_alive()]
        # their last reports first, one read for all of them (a ClusterError while the progress channel cannot be
        # read leaves them for a later tick, after a backoff)
        if ended and self._read_reports():
            for index, run in ended:
                if self._ended(index, run, now):
                    return  # the flow failed
        if self.flow.assignment != self.assignment:
            self.next_start.clear()
            self._restart_all(assignment_change(self.assignment, self.flow.assignment))
            return
        self._restart_due(now)

    def _follow_lease(self) -> bool:
        """Act on the lease; tell whether this instance runs the flow's tasks now."""
        assert self.lease is not None
        if self.state == SupervisorState.STANDBY:
            if self.lease.held:
                self._begin_take_over()
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
        # No contact with the coordinator lately (this driver cut off from the target?): the lease
        # may already be another instance's. Start and restart nothing (a restarted exactly-once
        # task would fence the new holder's); the running tasks wait for a grant; the next ticks
        # see the contact back, or the lease lost.
        return self.lease.may_grant(self.epoch)

    def _reclaimed(self) -> bool:
        """Whether the lease came back under the very next epoch, so the running generation goes on under it.

        The next epoch, or one past this instance's own claims only (L4), means no other instance
        committed meanwhile.
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
        """Handle a task whose job ended: restart it or record a gap, or fail the flow (returns ``True`` then)."""
        self.grants.forget(self.name, index, run.spec.generation)
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
                "or its grant link to the driver closed); restarting it from its committed offsets: what it copied "
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
            # A failed read (it may take minutes) is tried again after a backoff, not at every tick.
            if not self._reads.may("offsets"):
                return
            try:
                self.flow.reload_positions()
            except ClusterError as e:
                self._reads.failed("offsets")
                log.warning("%s: reading the committed source offsets failed (%s): restart postponed", self.name, e)
                return
            self._reads.ok("offsets")
        specs = {s.task_index: s for s in self._specs()}
        for index in due:
            del self.next_start[index]
            if index in specs:
                self.restarts += 1
                self._launch(specs[index])

    def _failed(self, index: int, error: MirrorsparkError, now: float) -> bool:
        """Count a task's failure: schedule its restart after a backoff, or fail the flow (``True``)."""
        if isinstance(error, SparkDriverLostError):
            self.abandon(error)  # no task can run any more: none commits, none restarts
            return True
        failures = self.task_failures.failed(index)
        first_start = self.generation == 1 and self.restarts == 0
        if fatal_task_error(error, first_start=first_start) or TaskFailures.exhausted(failures):
            self.state = SupervisorState.FAILED
            self.error = error
            log.error("%s: failed, its copy tasks are stopped (other flows go on): %s", self.name, error)
            self.background.submit("stop", self.stop_tasks)
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

    def abandon(self, error: SparkDriverLostError) -> None:
        """End every task without committing, restart none, wait for none: the Spark driver JVM is gone (idempotent)."""
        if self.state != SupervisorState.FAILED:
            self.state = SupervisorState.FAILED
            self.error = error
        self.background.cancel.set()  # a pending take-over starts nothing
        self.grants.abort(self.name, self.generation)
        for run in self.runs.values():
            self.grants.forget(self.name, run.spec.task_index, run.spec.generation)
        self.runs.clear()
        self.next_start.clear()

    def done(self) -> bool:
        """Tell whether no task runs or waits for a restart (a bounded copy: every one ended ``caught_up``)."""
        return self.state == SupervisorState.RUNNING and not self.runs and not self.next_start

    def close(self, *, deadline: float | None = None) -> None:
        """Stop the tasks (if running) and give the lease up once their grants ran out (L6).

        ``deadline`` (``clock`` s, shared by every flow stopping; ``None``: :data:`STOP_TIMEOUT_S` from
        now) bounds the tasks' end; last reports that cannot be read are only logged.
        """
        self.background.cancel.set()  # a pending take-over starts nothing; a pending join ends first
        end = deadline if deadline is not None else self.clock() + STOP_TIMEOUT_S
        if not self.background.join(end - self.clock()):
            log.warning("%s: its %s is still under way: left behind", self.name, self.background.what)
        runs = list(self.runs.values())
        if self.runs:
            try:
                self.stop_tasks(deadline=end)
            except ClusterError as e:
                log.warning("%s: reading its copy tasks' last reports failed: %s", self.name, e)
        if self.state != SupervisorState.FAILED:
            self.state = SupervisorState.STOPPED
        if self.lease is not None:
            if not any(run.is_alive() for run in runs):
                self.lease.void_grants()
            self.lease.close()


__all__ = [
    "BACKOFF_INITIAL_S",
    "BACKOFF_MAX_S",
    "CANCEL_WAIT_S",
    "CLUSTER_WARNING_S",
    "JVM_EXIT_WAIT_S",
    "LEASE_GRANT_S",
    "MAX_FAILURES",
    "READ_RETRY_INITIAL_S",
    "RECLAIM_S",
    "REPORTS_POLL_S",
    "STOP_TIMEOUT_S",
    "TAKEOVER_MARGIN_S",
    "FlowSupervisor",
    "SupervisorState",
    "TaskFailures",
    "TaskJob",
    "end_jobs",
    "fatal_task_error",
]
