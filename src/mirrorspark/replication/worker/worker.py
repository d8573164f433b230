"""Every flow's copy tasks on Spark: task slots, the grant server, the flows' supervisors and their lease grants.

The counterpart of a Kafka Connect worker: one task slot per copy task, one
:class:`~mirrorspark.replication.worker.supervisor.FlowSupervisor` per flow, grants renewed from a
thread of its own, every flow stopped at once under one deadline. Once the Spark driver JVM is gone
(:attr:`Worker.driver_lost`) no grant is renewed, every task is told to abort and no Spark call is made.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from mirrorspark.errors import ConfigError, DataPathError, MirrorsparkError, SparkDriverLostError
from mirrorspark.kafka.admin import PartitionKey
from mirrorspark.replication.worker.grant_server import GrantServer
from mirrorspark.replication.worker.lease import CLOSE_TIMEOUT_S, FlowLease
from mirrorspark.replication.worker.supervisor import CANCEL_WAIT_S, STOP_TIMEOUT_S, FlowSupervisor, SupervisorState
from mirrorspark.replication.worker.task_launcher import warm_up
from mirrorspark.spark_session import DriverJvmWatch

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from mirrorspark.replication.connector.flow import Flow

log = logging.getLogger(__name__)

LEASE_RENEW_S = 1.0
"""Seconds between two grants to the tasks of a flow whose lease this instance holds."""

SLOT_WAIT_S = 60.0
"""Seconds :meth:`Worker.start` waits for a cluster's executors to offer a slot per copy task."""


class Worker:
    """Runs every flow's copy tasks as long-running Spark tasks and supervises them.

    ``leases``: each flow runs only while this instance holds its lease; ``stop_at``: a bounded copy's
    ``{flow: {(topic, partition): end offset}}`` (``None``: until stopped); ``jvm``: the driver JVM
    watch (``None``: the session's, when it can be watched); ``joined``: leases already started, by flow
    name; ``spare_slots``: task slots kept free besides the copy tasks' (continuous sampling's Spark job).
    """

    _lost: SparkDriverLostError | None = None  # set once, when the Spark driver JVM is found gone

    def __init__(
        self,
        spark: SparkSession,
        flows: Sequence[Flow],
        *,
        leases: bool = True,
        stop_at: Mapping[str, Mapping[PartitionKey, int]] | None = None,
        jvm: DriverJvmWatch | None = None,
        joined: Mapping[str, FlowLease] | None = None,
        spare_slots: int = 0,
    ) -> None:
        self.spark = spark
        self.spare_slots = spare_slots
        host = spark.sparkContext.getConf().get("spark.driver.host") or "127.0.0.1"
        self.grants = GrantServer(host)
        self.jvm = jvm if jvm is not None else DriverJvmWatch.of(spark)
        self.supervisors = [
            FlowSupervisor(
                f,
                spark,
                self.grants,
                ((joined or {}).get(f.name) or FlowLease(f.context)) if leases else None,
                stop_at=None if stop_at is None else stop_at.get(f.name, {}),
                jvm=self.jvm,
            )
            for f in flows
        ]
        self._closing = threading.Event()
        self._granter = threading.Thread(target=self._grant_loop, name="mirrorspark-lease-grants", daemon=True)
        if self.jvm is not None:
            self.jvm.on_lost(self._on_driver_lost)

    @property
    def driver_lost(self) -> SparkDriverLostError | None:
        """Why the Spark driver JVM is gone (its watch saw it die, or a task's job could not reach it), or ``None``."""
        if self._lost is None:
            for s in self.supervisors:
                if isinstance(s.error, SparkDriverLostError):
                    self._on_driver_lost(s.error)
                    break
        return self._lost

    def _on_driver_lost(self, error: SparkDriverLostError) -> None:
        """No grant any more, every task told to abort (none commits again): from the watch's thread or the loop's."""
        if self._lost is not None:
            return
        self._lost = error
        log.debug("the Spark driver JVM is gone: every copy task is told to abort")
        for s in list(self.supervisors):
            self.grants.abort(s.name, s.generation)

    def _grant_loop(self) -> None:
        """Renew the grants and throttle shares every :data:`LEASE_RENEW_S`, off the driver loop (no job stalls it)."""
        while not self._closing.wait(LEASE_RENEW_S):
            if self._lost is not None:
                return  # the Spark driver JVM is gone: its tasks must commit nothing more
            for s in self.supervisors:
                try:
                    s.grant()
                    s.throttle()  # the flow's throttle changed live (LiveThrottle), or its task count
                except Exception as e:  # never let the grant thread die
                    log.debug("%s: lease grant or throttle share failed: %s", s.name, e)

    def slots(self) -> int:
        """Task slots Spark offers now (``defaultParallelism``: local[N] → N, a cluster → its executors' cores)."""
        return int(self.spark.sparkContext.defaultParallelism)

    def start(self) -> None:
        """Check the task slots and start every flow's supervisor (as a standby of its lease first).

        Raises ConfigError with fewer slots than copy tasks and spare slots (on a cluster, after :data:`SLOT_WAIT_S`) or
        with Spark speculation on.
        """
        check_speculation(self.spark.sparkContext.getConf().get("spark.speculation"))
        needed = sum(s.task_count() for s in self.supervisors)
        wanted = needed + self.spare_slots
        available = self.slots()
        if wanted > available and not (self.spark.sparkContext.master or "").startswith("local"):
            # A cluster's executors register after the SparkContext started (Spark waits for them
            # only with spark.scheduler.minRegisteredResourcesRatio and spark.cores.max)
            available = wait_for_slots(self.slots, wanted, SLOT_WAIT_S)
        if wanted > available:
            spare = f" and {self.spare_slots} for verify.sampling.enable's Spark job" if self.spare_slots else ""
            raise ConfigError(
                f"the flows need {wanted} Spark task slots (one per copy task: min(tasks.max, partitions) per flow"
                f"{spare}) but Spark offers {available}: lower tasks.max, or give Spark more cores "
                f"(--master local[{wanted}], or more executors or executor cores on a cluster)"
            )
        if needed:
            warm_up(self.spark, needed)  # while the leases are waited for: the first copy tasks start sooner
        for s in self.supervisors:
            if s.lease is None:  # copied runs reported since the flow started (a take-over reads them itself)
                s.reports.poll(until_end=True, timeout_s=10, segments_only=True)
            s.begin()
        self._granter.start()
        if self.jvm is not None:
            self.jvm.start()

    def tick(self) -> None:
        """Supervise every flow once (reports, ended tasks, assignment changes, the lease).

        A flow whose supervision raises anything but a ClusterError (retried) fails alone, its tasks
        stopped; once the driver JVM is gone every flow is abandoned.
        """
        lost = self.driver_lost
        if lost is not None:
            for s in self.supervisors:
                s.abandon(lost)
            return
        for s in self.supervisors:
            try:
                s.tick()
            except Exception as e:
                s.fail(e if isinstance(e, MirrorsparkError) else DataPathError(f"{s.name}: supervising failed: {e!r}"))

    @property
    def failed(self) -> list[FlowSupervisor]:
        """Flows marked failed."""
        return [s for s in self.supervisors if s.state == SupervisorState.FAILED]

    def stop(self) -> None:
        """Stop every flow's tasks (each commits what was acknowledged) and give the leases up: all flows at once.

        One deadline for all (stop, cancels, leases' close): N flows cost one wait, not N. Once the
        Spark driver JVM is gone every task is aborted instead.
        """
        lost = self.driver_lost
        if lost is not None:
            self._closing.set()
            for s in self.supervisors:
                s.abandon(lost)
        else:
            for s in self.supervisors:
                if s.runs:
                    self.grants.stop(s.name, s.generation)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        closers = [
            threading.Thread(target=_close, args=(s, deadline), name=f"mirrorspark-stop-{s.name}", daemon=True)
            for s in self.supervisors
        ]
        for t in closers:
            t.start()
        for t in closers:
            t.join(max(0.0, deadline + CANCEL_WAIT_S + CLOSE_TIMEOUT_S - time.monotonic()))
        for s, t in zip(self.supervisors, closers, strict=True):
            if t.is_alive():
                log.warning(
                    "%s: stopping its copy tasks and giving its lease up is still under way: left behind", s.name
                )
        self._closing.set()
        if self.jvm is not None:
            self.jvm.close()
        self.grants.close()


def _close(supervisor: FlowSupervisor, deadline: float) -> None:
    """Close one flow's supervisor (on a thread of its own): an error is logged, never raised into the thread."""
    try:
        supervisor.close(deadline=deadline)
    except Exception as e:
        log.warning("%s: stopping its copy tasks failed: %s", supervisor.name, e)


def check_speculation(value: str | None) -> None:
    """Refuse Spark speculation (``spark.speculation``, ``None``: unset): it would kill the copy tasks in a loop.

    A speculative attempt of a long-running copy task ends at once as ``lost``, Spark takes its result
    and kills the real one, and the supervisor restarts it (``engine-audit.md`` F8). Raises ConfigError.
    """
    if (value or "false").strip().lower() == "true":
        raise ConfigError(
            "spark.speculation=true: Spark would start a second attempt of every long-running copy task and "
            "kill the first, in a loop; set spark.speculation=false for mirrorspark (--conf spark.speculation=false, "
            "or leave it out of spark-defaults.conf)"
        )


def wait_for_slots(slots: Callable[[], int], needed: int, timeout_s: float, interval_s: float = 0.5) -> int:
    """Poll ``slots()`` every ``interval_s`` until it reaches ``needed`` or ``timeout_s`` passed; return the count."""
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


__all__ = ["LEASE_RENEW_S", "SLOT_WAIT_S", "Worker", "check_speculation", "first_error", "wait_for_slots"]
