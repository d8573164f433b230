"""Every flow's copy tasks on Spark: task slots, the task channel, the flows' supervisors and their lease grants.

The counterpart of a Kafka Connect worker for mirrorspark's one Spark application: it checks
that Spark offers a task slot per copy task (each keeps one slot busy for its whole life), runs
one :class:`~mirrorspark.replication.supervisor.FlowSupervisor` per flow, renews the running
generations' lease grants from a thread of its own (so a long control job never stalls them),
and stops every task through the task channel (each commits what was acknowledged; tasks still
running after :data:`~mirrorspark.replication.supervisor.STOP_TIMEOUT_S` have their Spark job
cancelled).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from mirrorspark.errors import ConfigError, DataPathError, MirrorsparkError
from mirrorspark.kafka.admin import PartitionKey
from mirrorspark.replication.lease import FlowLease
from mirrorspark.replication.supervisor import FlowSupervisor, SupervisorState
from mirrorspark.replication.task_channel import TaskChannel

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from mirrorspark.replication.flow import Flow

log = logging.getLogger(__name__)

LEASE_RENEW_S = 1.0
"""Seconds between two grants to the tasks of a flow whose lease this instance holds."""

SLOT_WAIT_S = 60.0
"""Seconds :meth:`Worker.start` waits for a cluster's executors to offer a slot per copy task."""


class Worker:
    """Runs every flow's copy tasks as long-running Spark tasks and supervises them.

    Parameters
    ----------
    spark:
        The SparkSession (its task slots are checked at :meth:`start`).
    flows:
        The started flows.
    leases:
        Whether each flow runs only while this instance holds its lease (one active instance per flow),
        or the flows' leases by flow name, already started by the driver (joined while Spark started).
    stop_at:
        A bounded copy: ``{flow name: {(topic, partition): end offset}}`` listed at start; each
        flow's tasks end once they read their partitions to them. ``None``: copy until stopped.
    """

    def __init__(
        self,
        spark: SparkSession,
        flows: Sequence[Flow],
        *,
        leases: bool | Mapping[str, FlowLease] = True,
        stop_at: Mapping[str, Mapping[PartitionKey, int]] | None = None,
    ) -> None:
        self.spark = spark
        host = spark.sparkContext.getConf().get("spark.driver.host") or "127.0.0.1"
        self.channel = TaskChannel(host)
        self.supervisors = [
            FlowSupervisor(
                f,
                spark,
                self.channel,
                _lease_of(f, leases),
                stop_at=None if stop_at is None else stop_at.get(f.name, {}),
            )
            for f in flows
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
        """Check the task slots and start every flow's supervisor (as a standby of its lease first).

        Raises
        ------
        ConfigError
            Fewer slots than copy tasks (on a cluster: still, after :data:`SLOT_WAIT_S` of waiting for executors).
        """
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
            # copied runs reported since the flow started (positions are read again at the take-over)
            s.reports.poll(until_end=True, timeout_s=10, segments_only=True)
            s.begin()
        self._granter.start()

    def tick(self) -> None:
        """Supervise every flow once (reports, ended tasks, assignment changes, the lease).

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
        return [s for s in self.supervisors if s.state == SupervisorState.FAILED]

    def stop(self) -> None:
        """Stop every flow's tasks (each commits what was acknowledged; bounded) and give the leases up."""
        for s in self.supervisors:
            if s.runs:
                self.channel.stop(s.name, s.generation)
        for s in self.supervisors:
            s.close()
        self._closing.set()
        self.channel.close()


def _lease_of(flow: Flow, leases: bool | Mapping[str, FlowLease]) -> FlowLease | None:
    """Return the flow's lease: the driver's (already joined), a new one, or none."""
    if isinstance(leases, Mapping):
        return leases.get(flow.name) or FlowLease(flow.context)
    return FlowLease(flow.context) if leases else None


def wait_for_slots(slots: Callable[[], int], needed: int, timeout_s: float, interval_s: float = 0.5) -> int:
    """Poll ``slots()`` until it reaches ``needed`` or ``timeout_s`` passed (executors still registering).

    Parameters
    ----------
    slots:
        Task slots offered now (:meth:`Worker.slots`).
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


__all__ = ["LEASE_RENEW_S", "SLOT_WAIT_S", "Worker", "first_error", "wait_for_slots"]
