"""What the benchmark measures: one :class:`Contender` per way of replicating.

Every contender replicates the whole workload topic from ``source`` to ``target`` into a
fresh flow per run and returns a :class:`RunMeasurement`. Here:

:class:`MirrorsparkContender`
    An in-process ``mirrorspark run --until-caught-up`` with a given
    ``mirrorspark.read.mode``, on the environment's warm SparkSession.

A later MirrorMaker 2 contender runs ``connect-mirror-maker`` as a child JVM and measures
that process tree; a hardware-ceiling contender copies with bare clients. Both only
implement :meth:`Contender.run`.
"""

from __future__ import annotations

import gc
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bench import cpu
from bench.env import TARGET, BenchEnv
from bench.workload import Workload, count_records

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from mirrorspark.spark import CopyTask, PartitionResult

__all__ = ["Contender", "MirrorsparkContender", "RunMeasurement"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunMeasurement:
    """One run of one contender.

    Attributes
    ----------
    contender:
        The contender's name.
    run:
        1-based index of the measured run; ``0`` for the warm-up.
    records:
        Records the contender reports copied (verified against the target when ``verified``).
    payload_bytes:
        Key + value bytes copied.
    wall_s:
        Wall time of the run, in seconds: for mirrorspark, flow start (connect, create the
        remote and internal topics, read committed offsets) plus the loop until caught up
        and the final commit. Excludes Spark start-up.
    start_s:
        Part of ``wall_s`` spent starting the flow, in seconds.
    jobs_s:
        Part of ``wall_s`` spent inside Spark jobs (``DataPath.copy``), in seconds.
    batches:
        Spark jobs (batches) run.
    cpu:
        CPU seconds of the replicator's processes per role (driver-py, spark-jvm, py-workers,
        other); brokers excluded.
    broker_cpu_s:
        CPU seconds of both brokers during the run.
    machine_busy_s, steal_s:
        Whole-machine busy CPU seconds (every process, ours included) and hypervisor steal
        seconds during the run; what is neither the replicator nor the brokers is someone else's.
    idle_before_cores:
        Busy cores of the whole machine in the second before the run (see :func:`bench.cpu.wait_idle`).
    verified:
        Whether the target's remote topic holds exactly the workload's records afterwards.
    error:
        Why the run failed (then the figures are meaningless), else ``""``.
    """

    contender: str
    run: int
    records: int
    payload_bytes: int
    wall_s: float
    start_s: float
    jobs_s: float
    batches: int
    cpu: cpu.CpuDelta = field(default_factory=cpu.CpuDelta)
    broker_cpu_s: float = 0.0
    machine_busy_s: float = 0.0
    steal_s: float = 0.0
    idle_before_cores: float = 0.0
    verified: bool = False
    error: str = ""

    @property
    def ok(self) -> bool:
        """Whether the run succeeded and copied exactly the workload."""
        return not self.error and self.verified

    @property
    def other_cpu_s(self) -> float:
        """CPU seconds of processes that are neither the replicator nor the brokers (other work)."""
        return max(0.0, self.machine_busy_s - self.cpu.total_s - self.broker_cpu_s)

    @property
    def records_per_s(self) -> float:
        """Throughput in records per second of wall time."""
        return self.records / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def mb_per_s(self) -> float:
        """Throughput in MB (10^6 bytes of keys + values) per second of wall time."""
        return self.payload_bytes / 1e6 / self.wall_s if self.wall_s > 0 else 0.0

    def cpu_s_per_gb(self, role: str | None = None) -> float:
        """Replicator CPU seconds per GB (10^9 bytes of keys + values) copied.

        Parameters
        ----------
        role:
            One role only (see :data:`bench.cpu.ROLES`); ``None`` = all of them.
        """
        if self.payload_bytes <= 0:
            return 0.0
        s = self.cpu.total_s if role is None else self.cpu.by_role.get(role, 0.0)
        return s / (self.payload_bytes / 1e9)

    @property
    def broker_cpu_s_per_gb(self) -> float:
        """Both brokers' CPU seconds per GB copied."""
        return self.broker_cpu_s / (self.payload_bytes / 1e9) if self.payload_bytes > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form (for ``bench/results/*.json``)."""
        return {
            "contender": self.contender,
            "run": self.run,
            "records": self.records,
            "payload_bytes": self.payload_bytes,
            "wall_s": round(self.wall_s, 4),
            "start_s": round(self.start_s, 4),
            "jobs_s": round(self.jobs_s, 4),
            "batches": self.batches,
            "cpu_s": {k: round(v, 3) for k, v in self.cpu.by_role.items()},
            "cpu_complete": self.cpu.complete,
            "broker_cpu_s": round(self.broker_cpu_s, 3),
            "machine_busy_s": round(self.machine_busy_s, 3),
            "other_cpu_s": round(self.other_cpu_s, 3),
            "steal_s": round(self.steal_s, 3),
            "idle_before_cores": round(self.idle_before_cores, 3),
            "records_per_s": round(self.records_per_s, 1),
            "mb_per_s": round(self.mb_per_s, 2),
            "cpu_s_per_gb": round(self.cpu_s_per_gb(), 2),
            "verified": self.verified,
            "error": self.error,
        }


class Contender(ABC):
    """A way of replicating the workload topic that the benchmark times.

    Attributes
    ----------
    name:
        Short name used in tables (unique within a case).
    description:
        One line for reports: what runs and how it is configured.
    """

    name: str
    description: str

    def prepare(self, env: BenchEnv) -> None:  # noqa: B027 - optional hook
        """Get ready before the first run (start helpers, warm caches). Default: nothing."""

    @abstractmethod
    def run(self, env: BenchEnv, workload: Workload, run: int) -> RunMeasurement:
        """Replicate ``workload.topic`` into a fresh flow on the target, time it, verify it.

        Parameters
        ----------
        env:
            Clusters and SparkSession.
        workload:
            Already loaded on ``source``.
        run:
            1-based measured run index, ``0`` for the warm-up.
        """

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release what :meth:`prepare` started. Default: nothing."""


class _TimedDataPath:
    """A :class:`mirrorspark.spark.DataPath` that adds up the wall time of its Spark jobs."""

    def __init__(self, spark: SparkSession, read_mode: str) -> None:
        from mirrorspark.spark import DataPath

        self._inner = DataPath(spark, read_mode=read_mode)
        self.jobs_s = 0.0
        self.batches = 0
        self.batch_s: list[float] = []

    def copy(self, tasks: Sequence[CopyTask]) -> list[PartitionResult]:
        t = time.perf_counter()
        try:
            return self._inner.copy(tasks)
        finally:
            dt = time.perf_counter() - t
            self.jobs_s += dt
            self.batch_s.append(dt)
            self.batches += 1


class MirrorsparkContender(Contender):
    """``mirrorspark run --until-caught-up`` in this process, with one read mode.

    Parameters
    ----------
    read_mode:
        ``mirrorspark.read.mode``: ``"consumer"`` or ``"spark-kafka"``.
    tasks_max:
        ``tasks.max`` of the flow (Spark tasks per batch = ``min(tasks.max, partitions)``).
    batch_records:
        ``mirrorspark.batch.max.records.per.partition``; ``None`` keeps mirrorspark's default.
    extra:
        Further ``mm2.properties`` keys for every run.
    """

    def __init__(
        self,
        read_mode: str,
        *,
        tasks_max: int,
        batch_records: int | None = None,
        extra: Mapping[str, str] | None = None,
    ) -> None:
        self.read_mode = read_mode
        self.name = read_mode
        self.tasks_max = tasks_max
        self.batch_records = batch_records
        self.extra = dict(extra or {})
        cap = f", batch cap {batch_records:,} records/partition" if batch_records else ""
        self.description = (
            f"mirrorspark run --until-caught-up, mirrorspark.read.mode={read_mode}, tasks.max={tasks_max}{cap}"
        )

    def properties(self, workload: Workload) -> dict[str, str]:
        """The ``mm2.properties`` keys this contender sets on top of the clusters' own."""
        props = {
            "topics": workload.topic,
            "tasks.max": str(self.tasks_max),
            "mirrorspark.read.mode": self.read_mode,
            "refresh.topics.interval.seconds": "600",
            "emit.checkpoints.enabled": "false",
            "sync.group.offsets.enabled": "false",
        }
        if self.batch_records:
            props["mirrorspark.batch.max.records.per.partition"] = str(self.batch_records)
        props.update(self.extra)
        return props

    def prepare(self, env: BenchEnv) -> None:
        """Make sure the SparkSession is up (its start-up is reported, not measured)."""
        env.spark()

    def run(self, env: BenchEnv, workload: Workload, run: int) -> RunMeasurement:
        from mirrorspark.config import parse_config, parse_properties
        from mirrorspark.driver import Replicator

        alias = env.fresh_alias()
        text = env.mm2_properties(alias, self.properties(workload))
        cfg = parse_config(parse_properties(text), source_name=f"bench run {alias} ({self.name})")
        spark = env.spark()
        data_path = _TimedDataPath(spark, self.read_mode)
        gc.collect()
        meter = cpu.Meter(env.broker_pids())
        meter.start()
        t0 = time.perf_counter()
        replicator = Replicator(cfg, data_path)  # type: ignore[arg-type]
        error = ""
        t1: float | None = None
        try:
            replicator.start()
            t1 = time.perf_counter()
            replicator.run(until_caught_up=True)
        except Exception as e:
            log.exception("%s run %d failed", self.name, run)
            error = f"{type(e).__name__}: {e}"
        meter.stop()

        flow = replicator.flows[0]
        # Only the workload topic: the flow also replicates ``heartbeats`` (MM2 does), which the
        # reverse-pair heartbeats of earlier runs keep on the source.
        progress = [p for (topic, _), p in flow.partitions.items() if topic == workload.topic]
        records = sum(p.records for p in progress)
        payload = sum(p.value_bytes + p.key_bytes for p in progress)
        remote = flow.remote_topics.get(workload.topic, "")
        verified = False
        if not error and remote:
            stored = count_records(env.bootstrap(TARGET), remote, workload.partitions)
            verified = stored == workload.records == records
            if not verified:
                error = f"target holds {stored} records, replicator reports {records}, expected {workload.records}"
        env.delete_flow_topics(alias)
        if not error:
            log.debug("%s run %d: batches %s", self.name, run, [round(s, 3) for s in data_path.batch_s])
        return RunMeasurement(
            contender=self.name,
            run=run,
            records=records,
            payload_bytes=payload,
            wall_s=meter.wall_s,
            start_s=(t1 - t0) if t1 is not None else meter.wall_s,
            jobs_s=data_path.jobs_s,
            batches=data_path.batches,
            cpu=meter.tree,
            broker_cpu_s=meter.broker_s,
            machine_busy_s=meter.machine.busy_s,
            steal_s=meter.machine.steal_s,
            verified=verified,
            error=error,
        )
