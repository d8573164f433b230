"""The driver side of the continuous engine: supervise long-running copy tasks (Kafka Connect's worker and herder).

Each flow's partitions are cut into ``min(tasks.max, partitions)`` :class:`~mirrorspark.replication.stream.StreamTask`
assignments (MM2's ``MirrorSourceConnector.taskConfigs``); each runs as the one Spark task of its own Spark
job, submitted from a driver thread, until the driver stops it. Tasks commit their own offsets; the driver:

* reads the flows' progress channels (:class:`~mirrorspark.replication.reports.ProgressChannel`) to
  follow positions, totals and copied segments;
* restarts a failed task with exponential backoff (:data:`BACKOFF_INITIAL_S` doubling up to
  :data:`BACKOFF_MAX_S`) from its committed positions, also one lost with its executor or Python
  worker (Spark's own re-run ends at once: :func:`~mirrorspark.replication.stream.run_stream_job`);
  a flow whose error cannot be fixed by a retry (a record too large, an authorization failure, no
  transaction coordinator at the flow's first start) or one of whose tasks failed :data:`MAX_FAILURES`
  times in a row without copying anything is marked failed, and the other flows keep running (failures
  are counted per task: one broker lost fails every task of the flow once, which is no reason to give up);
* restarts a flow's tasks when its assignment changes (new topics or partitions, a control-list
  change), like a Connect rebalance, and after a gap (positions out of range);
* stops every task through the task channel (:class:`TaskChannel`): each commits what the target
  acknowledged and ends; tasks still running after :data:`STOP_TIMEOUT_S` have their Spark job
  cancelled.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
import socket
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from mirrorspark.errors import ClusterError, DataPathError, MirrorsparkError, RecordTooLargeError
from mirrorspark.replication.lease import FlowLease
from mirrorspark.replication.stream import NO_TRANSACTION_COORDINATOR, StreamResult, StreamTask, run_stream_job

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
"""Seconds :meth:`ContinuousEngine.stop` waits for tasks to commit and end before cancelling their jobs."""

LEASE_GRANT_S = 3.0
"""Seconds a copy task may commit after the driver's last grant: half the lease group's session timeout
(:class:`~mirrorspark.replication.lease.FlowLease`, 6 s), so a driver that lost its lease (or froze) has
its tasks stop committing before a standby can take the flow over."""

ACCEPT_POLL_S = 0.5
"""Seconds the task channel's accept loop waits before checking whether it was closed."""

LEASE_RENEW_S = 1.0
"""Seconds between two grants to the tasks of a flow whose lease this instance holds."""

SLOT_WAIT_S = 60.0
"""Seconds :meth:`ContinuousEngine.start` waits for a cluster's executors to offer a slot per copy task."""

CLUSTER_WARNING_S = 10.0
"""Seconds between two warnings of one flow's supervisor that cannot reach the target (the ticks go on)."""


class TaskChannel:
    """Commands from the driver to its copy tasks over TCP: ``stop``, or a closed connection when the driver dies.

    The server listens on ``host`` (the driver's address, reachable from every executor) on a
    free port; a task connects, sends ``{"token":..,"flow":..,"task":..,"generation":..}`` and
    waits for a line. The token (random, per driver) keeps foreign connections out; it carries
    no Kafka secret.

    Parameters
    ----------
    host:
        Address to listen on and to give the tasks (``spark.driver.host``).
    """

    def __init__(self, host: str = "127.0.0.1") -> None:
        self._server = socket.create_server((host, 0))
        self.address: tuple[str, int, str] = (host, self._server.getsockname()[1], secrets.token_hex(16))
        self._lock = threading.Lock()
        self._conns: dict[tuple[str, int, int], socket.socket] = {}
        self._stopped: set[tuple[str, int]] = set()  # (flow, generation) told to stop
        self._grants: dict[tuple[str, int], float] = {}  # (flow, generation) -> lease seconds last granted
        self._closed = False
        self._thread = threading.Thread(target=self._accept, name="mirrorspark-task-channel", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        self._server.settimeout(ACCEPT_POLL_S)  # a blocked accept() is not woken by close(): poll
        while not self._closed:
            try:
                conn, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.setblocking(True)
            threading.Thread(target=self._hello, args=(conn,), daemon=True).start()

    def _hello(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(10)
            line = conn.makefile("rb").readline(4096)
            hello = json.loads(line)
            if not isinstance(hello, dict) or hello.get("token") != self.address[2]:
                conn.close()
                return
            key = (str(hello["flow"]), int(hello["task"]), int(hello["generation"]))
        except (OSError, ValueError, KeyError, TypeError):
            conn.close()
            return
        with self._lock:
            if self._closed:  # closed while this task said hello
                conn.close()
                return
            old = self._conns.pop(key, None)
            self._conns[key] = conn
            stop = (key[0], key[2]) in self._stopped
            grant = self._grants.get((key[0], key[2]))
        if old is not None:
            old.close()
        if grant is not None:
            self._send(conn, f"lease {grant}\n".encode())
        if stop:
            self._send(conn, b"stop\n")

    @staticmethod
    def _send(conn: socket.socket, data: bytes) -> None:
        with contextlib.suppress(OSError):
            conn.sendall(data)

    def stop(self, flow: str, generation: int) -> None:
        """Tell every task of ``flow``'s ``generation`` to commit and end (also those not connected yet)."""
        with self._lock:
            self._stopped.add((flow, generation))
            conns = [c for (f, _, g), c in self._conns.items() if f == flow and g == generation]
        for c in conns:
            self._send(c, b"stop\n")

    def _broadcast(self, flow: str, generation: int, data: bytes) -> None:
        with self._lock:
            conns = [c for (f, _, g), c in self._conns.items() if f == flow and g == generation]
        for c in conns:
            self._send(c, data)

    def grant(self, flow: str, generation: int, seconds: float) -> None:
        """Let the tasks of ``flow``'s ``generation`` commit for ``seconds`` from now (renewed while leased)."""
        with self._lock:
            self._grants[(flow, generation)] = seconds
        self._broadcast(flow, generation, f"lease {seconds}\n".encode())

    def abort(self, flow: str, generation: int) -> None:
        """Tell the tasks of ``flow``'s ``generation`` to end without committing (the flow's lease was lost)."""
        with self._lock:
            self._grants.pop((flow, generation), None)
            self._stopped.add((flow, generation))
        self._broadcast(flow, generation, b"abort\n")

    def forget(self, flow: str, task: int, generation: int) -> None:
        """Drop a finished task's connection."""
        with self._lock:
            conn = self._conns.pop((flow, task, generation), None)
        if conn is not None:
            conn.close()

    def close(self) -> None:
        """Close the server and every connection (tasks still running end without committing)."""
        with self._lock:
            self._closed = True
            conns = list(self._conns.values())
            self._conns.clear()
        self._server.close()
        for c in conns:
            c.close()


def fatal_task_error(error: MirrorsparkError, *, first_start: bool) -> bool:
    """Tell whether a copy task's error fails its flow at once, a retry being unable to fix it.

    A record too large, an authorization failure (a topic, group or ``TransactionalId`` ACL), or,
    at the flow's first start, a target without a transaction coordinator (exactly-once: the first
    ``init_transactions`` already waited its full timeout; later, a coordinator moving between
    brokers is retried like any failure). MM2's exactly-once task fails for good on any error
    (``ExactlyOnceWorkerSourceTask``); mirrorspark retries the rest with backoff.

    Parameters
    ----------
    error:
        The task's error, as the driver rebuilt it from the Spark job's failure (its message
        is all that survives).
    first_start:
        Whether the task belonged to the flow's first generation, never restarted.

    Returns
    -------
    bool
    """
    text = str(error)
    return (
        isinstance(error, RecordTooLargeError)
        or "AUTHORIZATION" in text.upper()
        or (first_start and NO_TRANSACTION_COORDINATOR in text)
    )


class _TaskRun(threading.Thread):
    """One copy task as the only Spark task of its own Spark job, on a driver thread."""

    def __init__(self, spark: SparkSession, task: StreamTask) -> None:
        super().__init__(name=f"mirrorspark-task-{task.flow}-{task.task_index}", daemon=True)
        self.spark = spark
        self.task = task
        self.group = f"mirrorspark-{task.flow}-task-{task.task_index}-gen-{task.generation}"
        self.result: StreamResult | None = None
        self.error: MirrorsparkError | None = None
        self.started_at = time.monotonic()

    def run(self) -> None:
        from mirrorspark.replication.datapath import reraise

        sc = self.spark.sparkContext
        try:
            sc.setJobGroup(self.group, f"copy task {self.task.task_index} of {self.task.flow}", interruptOnCancel=True)
            [result] = sc.parallelize([self.task], 1).map(run_stream_job).collect()
            if result.reason == "failed":
                self.error = reraise(RuntimeError(result.error))
            elif result.reason == "lost":
                self.error = DataPathError(
                    f"flow {self.task.flow}: copy task {self.task.task_index} was lost with its Spark executor "
                    "or Python worker"
                )
            else:
                self.result = result
        except MirrorsparkError as e:
            self.error = e
        except Exception as e:
            self.error = reraise(e)

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
    """Runs and restarts the copy tasks of one flow (a Connect herder's job for one connector).

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
        commit only under the grants :class:`ContinuousEngine` renews while it holds. ``None``
        runs the tasks at once, with a grant that never expires.
    """

    def __init__(self, flow: Flow, spark: SparkSession, channel: TaskChannel, lease: FlowLease | None = None) -> None:
        self.flow = flow
        self.lease = lease
        self.epoch = 0  # the lease epoch the running generation was started under
        self.spark = spark
        self.channel = channel
        if flow.reports is None:
            raise DataPathError(f"{flow.name}: the flow is not started")
        self.progress = flow.reports
        self.generation = 0
        self.runs: dict[int, _TaskRun] = {}
        self.assignment: tuple[tuple[str, int], ...] = ()
        self.task_failures = TaskFailures()
        self.restarts = 0
        self.next_start: dict[int, float] = {}
        self.state = "created"
        self.error: MirrorsparkError | None = None
        self._quiet_until = 0.0  # no cluster warning before (monotonic s)

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
        self.lease.start()
        self.state = "standby"

    def start(self) -> None:
        """Start a new generation of the flow's tasks from their committed positions."""
        self.generation += 1
        self.assignment = tuple(self.flow.order)
        self.state = "running"
        self.grant()
        for task in self.flow.stream_tasks(self.generation, self.channel.address):
            self._launch(task)

    def grant(self) -> None:
        """Renew the running generation's permission to commit (while the lease is held)."""
        if self.lease is None:
            self.channel.grant(self.name, self.generation, 1e9)
        elif self.state == "running" and self.lease.holds(self.epoch):
            self.channel.grant(self.name, self.generation, LEASE_GRANT_S)

    def _take_over(self) -> None:
        assert self.lease is not None
        self.epoch = self.lease.epoch
        self.flow.reload_positions()  # where the previous holder's tasks committed
        self.progress.poll(until_end=True, timeout_s=10)
        log.info("%s: this instance holds the flow's lease (epoch %d): copying", self.name, self.epoch)
        self.start()

    def _lost(self) -> None:
        log.warning("%s: the flow's lease was lost: its copy tasks end without committing; standby", self.name)
        self._abort_tasks()
        self.next_start.clear()
        self.state = "standby"

    def _abort_tasks(self) -> None:
        """End the running generation without committing (bounded: cancelled after :data:`STOP_TIMEOUT_S`)."""
        self.channel.abort(self.name, self.generation)
        for run in list(self.runs.values()):
            run.join(STOP_TIMEOUT_S)
            if run.is_alive():
                run.cancel()
            self.channel.forget(self.name, run.task.task_index, run.task.generation)
        self.runs.clear()

    def _launch(self, task: StreamTask) -> None:
        run = _TaskRun(self.spark, task)
        self.runs[task.task_index] = run
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
                    "%s: copy task %d did not stop in %.0f s: cancelled", self.name, run.task.task_index, timeout_s
                )
                run.cancel()
                run.join(10)
            self.channel.forget(self.name, run.task.task_index, run.task.generation)
        self.runs.clear()
        self.progress.poll(until_end=True, timeout_s=10, generation=self.generation)

    def _restart_all(self, why: str) -> None:
        log.info("%s: restarting its copy tasks (%s)", self.name, why)
        self.stop_tasks()
        self.restarts += 1
        self.start()

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
        if self.state in ("failed", "stopped"):
            return
        if self.lease is not None:
            held = self.lease.held
            if self.state == "standby":
                if held:
                    self._take_over()
                elif self.lease.failure is not None:
                    try:
                        self.lease.wait_acquired(0)  # raises the lease thread's failure as a ClusterError
                    except MirrorsparkError as e:
                        self.state = "failed"
                        self.error = e
                        log.error("%s: failed, its copy tasks never start (other flows go on): %s", self.name, e)
                return
            if not self.lease.holds(self.epoch):
                # lost, or lost and taken again between two ticks (a new epoch): the running generation
                # was started under the old epoch and is no longer granted commits; standby, then the
                # next tick takes over under the new epoch
                self._lost()
                return
        if self.progress.poll(generation=self.generation):
            self.task_failures.clear()  # copying again: earlier failures were recovered from ("in a row" is broken)
        if self.flow.halted is not None:
            self.stop_tasks()
            self.state = "stopped"
            return
        now = time.monotonic()
        for index, run in list(self.runs.items()):
            if run.is_alive():
                continue
            # its last reports first (raises ClusterError while the channel cannot be read: the run
            # is then handled at a later tick)
            self.progress.poll(until_end=True, timeout_s=10, generation=self.generation)
            self.channel.forget(self.name, index, run.task.generation)
            self.runs.pop(index, None)
            if run.error is not None:
                self._failed(index, run.error, now)
                if self.state == "failed":
                    return
            elif run.result is not None and run.result.reason == "out_of_range":
                self.task_failures.succeeded(index)
                self.flow.check_positions(run.result.out_of_range)  # records the gap, moves the positions
                self.next_start[index] = now
            elif run.result is not None and run.result.records:
                self.task_failures.succeeded(index)
                self.next_start[index] = now
            else:
                self.next_start[index] = now
        if tuple(self.flow.order) != self.assignment:
            self.next_start.clear()
            self._restart_all("assignment changed")
            return
        due = [i for i, at in self.next_start.items() if at <= now and i not in self.runs]
        if due and self.flow.exactly_once:
            # A task killed after its transaction committed but before its progress report left the
            # positions known here behind the source offsets committed with its records: start the
            # restarted tasks from those (mm2-offsets, read_committed), or they copy that transaction again.
            try:
                self.flow.reload_positions()
            except ClusterError as e:
                log.warning("%s: reading the committed source offsets failed (%s): restart postponed", self.name, e)
                return
        for index, at in list(self.next_start.items()):
            if at <= now and index not in self.runs:
                del self.next_start[index]
                tasks = {t.task_index: t for t in self.flow.stream_tasks(self.generation, self.channel.address)}
                if index in tasks:
                    self.restarts += 1
                    self._launch(tasks[index])

    def _failed(self, index: int, error: MirrorsparkError, now: float) -> None:
        failures = self.task_failures.failed(index)
        first_start = self.generation == 1 and self.restarts == 0
        if fatal_task_error(error, first_start=first_start) or TaskFailures.exhausted(failures):
            self.state = "failed"
            self.error = error
            log.error("%s: failed, its copy tasks are stopped (other flows go on): %s", self.name, error)
            self.stop_tasks()
            return
        delay = TaskFailures.backoff_s(failures)
        log.warning(
            "%s: copy task %d failed (%s); restarting it in %.0f s from its committed offsets",
            self.name,
            index,
            error,
            delay,
        )
        self.next_start[index] = now + delay

    def fail(self, error: MirrorsparkError) -> None:
        """Mark the flow failed with ``error`` and stop its tasks (bounded; their own failures only logged)."""
        self.state = "failed"
        self.error = error
        log.error("%s: failed, its copy tasks are stopped (other flows go on): %s", self.name, error)
        try:
            self._abort_tasks()
        except Exception as e:  # already failing: say so, keep the first error
            log.warning("%s: stopping its copy tasks failed: %s", self.name, e)

    def close(self) -> None:
        """Stop the tasks (if running) and give the lease up (a standby takes over at once)."""
        if self.runs:
            self.stop_tasks()
        if self.state != "failed":
            self.state = "stopped"
        if self.lease is not None:
            self.lease.close()


class ContinuousEngine:
    """Runs every flow's copy tasks as long-running Spark tasks and supervises them.

    Parameters
    ----------
    spark:
        The SparkSession (its task slots are checked at :meth:`start`).
    flows:
        The started flows.

    Raises
    ------
    ConfigError
        At :meth:`start`, when Spark has fewer task slots than the flows need (one per copy task).
    """

    def __init__(self, spark: SparkSession, flows: Sequence[Flow], *, leases: bool = True) -> None:
        self.spark = spark
        host = spark.sparkContext.getConf().get("spark.driver.host") or "127.0.0.1"
        self.channel = TaskChannel(host)
        self.supervisors = [
            FlowSupervisor(f, spark, self.channel, FlowLease(f.context) if leases else None) for f in flows
        ]
        self._closing = threading.Event()
        self._granter = threading.Thread(target=self._grant_loop, name="mirrorspark-lease-grants", daemon=True)

    def _grant_loop(self) -> None:
        """Renew the grants every :data:`LEASE_RENEW_S`, off the driver loop (long control jobs never stall them)."""
        while not self._closing.wait(LEASE_RENEW_S):
            for s in self.supervisors:
                try:
                    s.grant()
                except Exception as e:  # never let the grant thread die
                    log.debug("%s: lease grant failed: %s", s.name, e)

    def slots(self) -> int:
        """Task slots Spark offers now (``defaultParallelism``: local[N] → N, a cluster → its executors' cores)."""
        return int(self.spark.sparkContext.defaultParallelism)

    def start(self) -> None:
        """Check the task slots, restore copied segments and start every flow's tasks.

        Raises
        ------
        ConfigError
            Fewer slots than copy tasks (on a cluster: still, after :data:`SLOT_WAIT_S` of waiting for executors).
        """
        from mirrorspark.errors import ConfigError

        needed = sum(s.task_count() for s in self.supervisors)
        available = self.slots()
        if needed > available and not (self.spark.sparkContext.master or "").startswith("local"):
            # A cluster's executors register after the SparkContext started (Spark waits for them
            # only with spark.scheduler.minRegisteredResourcesRatio and spark.cores.max)
            available = wait_for_slots(self.slots, needed, SLOT_WAIT_S)
        if needed > available:
            raise ConfigError(
                f"the flows need {needed} Spark task slots (one per copy task: min(tasks.max, partitions) per flow) "
                f"but Spark offers {available}: lower tasks.max, or give Spark more cores "
                f"(--master local[{needed}], or more executors or executor cores on a cluster)"
            )
        for s in self.supervisors:
            s.progress.poll(until_end=True, timeout_s=10)  # reports written since the flow started
            s.begin()
        self._granter.start()

    def tick(self) -> None:
        """Supervise every flow once (reports, ended tasks, assignment changes).

        A flow whose supervision raises anything but a :class:`~mirrorspark.errors.ClusterError`
        (which its supervisor retries) is marked failed with that error and its tasks stopped: the
        other flows go on, and the driver loop never ends on one flow's error.
        """
        for s in self.supervisors:
            try:
                s.tick()
            except Exception as e:
                s.fail(e if isinstance(e, MirrorsparkError) else DataPathError(f"{s.name}: supervising failed: {e!r}"))

    @property
    def failed(self) -> list[FlowSupervisor]:
        """Flows marked failed."""
        return [s for s in self.supervisors if s.state == "failed"]

    def stop(self) -> None:
        """Stop every flow's tasks (each commits what was acknowledged; bounded by :data:`STOP_TIMEOUT_S`)."""
        for s in self.supervisors:
            if s.runs:
                self.channel.stop(s.name, s.generation)
        for s in self.supervisors:
            s.close()
        self._closing.set()
        self.channel.close()


def wait_for_slots(slots: Callable[[], int], needed: int, timeout_s: float, interval_s: float = 0.5) -> int:
    """Poll ``slots()`` until it reaches ``needed`` or ``timeout_s`` passed (executors still registering).

    Parameters
    ----------
    slots:
        Task slots offered now (:meth:`ContinuousEngine.slots`).
    needed:
        Slots the copy tasks need.
    timeout_s, interval_s:
        Longest wait and pause between two polls (s).

    Returns
    -------
    int
        The last count seen: ``>= needed``, or less after ``timeout_s``.
    """
    deadline = time.monotonic() + timeout_s
    available = slots()
    while available < needed and time.monotonic() < deadline:
        time.sleep(interval_s)
        available = slots()
    return available


def first_error(supervisors: Sequence[FlowSupervisor]) -> MirrorsparkError:
    """Return the error to exit with when flows failed: the first failed flow's (a :class:`DataPathError` if none)."""
    for s in supervisors:
        if s.error is not None:
            return s.error
    return DataPathError("every flow failed")


__all__ = [
    "BACKOFF_INITIAL_S",
    "BACKOFF_MAX_S",
    "CLUSTER_WARNING_S",
    "LEASE_GRANT_S",
    "LEASE_RENEW_S",
    "MAX_FAILURES",
    "SLOT_WAIT_S",
    "STOP_TIMEOUT_S",
    "ContinuousEngine",
    "FlowSupervisor",
    "TaskChannel",
    "TaskFailures",
    "fatal_task_error",
    "first_error",
    "wait_for_slots",
]
