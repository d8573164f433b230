"""What the benchmark measures: one :class:`Contender` per way of replicating.

Every contender moves the whole workload (from ``source`` to ``target`` into a fresh flow,
or one half of that for the ceiling) once per run and returns a :class:`RunMeasurement`,
measured by a :class:`bench.sampler.Sampler` in the same way for all:

:class:`MirrorsparkContender`
    An in-process ``mirrorspark run --until-caught-up`` on the environment's warm SparkSession:
    the flow's copy tasks (``min(tasks.max, partitions)`` long-running Spark tasks) copy up to the
    end offsets listed at start, commit and end; ``mirrorspark`` (and ``mirrorspark-eos``, the same
    with exactly-once on the target).
:class:`MirrorMakerContender`
    Apache Kafka's MirrorMaker 2, dedicated mode, a child JVM per run; ``mm2`` at MM2's
    defaults and ``mm2-tuned`` (data producer with 1 MiB batches and ``linger.ms=5``).
:class:`CeilingConsumeContender`, :class:`CeilingProduceContender`
    librdkafka consumers reading the source topic and librdkafka producers writing the same
    number and size of records into the target (:mod:`bench.share`, the copy tasks' client
    settings), each with as many parallel processes as a replicator runs copy tasks
    (``min(tasks.max, partitions)``), each on its share of the partitions: what the brokers and
    the copy tasks' own client library reach doing only half a replicator's work each.
"""

from __future__ import annotations

import gc
import logging
import os
import subprocess
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from bench import cpu
from bench.env import SOURCE, TARGET, BenchEnv
from bench.sampler import EndOffsets, Sampler, Window
from bench.workload import Workload, count_committed, count_records

if TYPE_CHECKING:
    from mirrorspark.config.model import MirrorConfig
    from mirrorspark.replication.connector.flow import Flow
    from mirrorspark.replication.driver import Replicator

__all__ = [
    "MM2_TUNED_PRODUCER",
    "CeilingConsumeContender",
    "CeilingProduceContender",
    "Contender",
    "MirrorMakerContender",
    "MirrorsparkContender",
    "RunMeasurement",
    "client_shares",
    "records_in",
]

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
        Wall time of the run, in seconds, from launch (mirrorspark: flow start, Spark
        session already up; MM2 and the perf tools: JVM launch) until the target held every
        record.
    start_s:
        Seconds from launch until the copy window opened (start-up: JVM, Connect herders
        and tasks, flow start, topic creation, first fetch).
    copy_s:
        The copy window, seconds: from the last moment the output topic was seen empty to
        the first moment it held every record (see :mod:`bench.sampler`); throughput and
        CPU s/GB are over this window. ``0`` = unknown (then ``wall_s`` is used).
    peak_rss_bytes:
        Largest resident memory of the contender's process tree during the run, bytes.
    cpu:
        CPU seconds of the replicator's processes per role (driver-py, spark-jvm, py-workers,
        jvm, other) over the copy window; brokers excluded.
    broker_cpu_s:
        CPU seconds of both brokers during the run.
    run_cpu_s:
        CPU seconds of the contender's processes over the whole run (start-up included).
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
    copy_s: float = 0.0
    peak_rss_bytes: int = 0
    cpu: cpu.CpuDelta = field(default_factory=cpu.CpuDelta)
    broker_cpu_s: float = 0.0
    run_cpu_s: float = 0.0
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
        return max(0.0, self.machine_busy_s - self.run_cpu_s - self.broker_cpu_s)

    @property
    def seconds(self) -> float:
        """The measured seconds: the copy window if known, else the wall time."""
        return self.copy_s if self.copy_s > 0 else self.wall_s

    @property
    def records_per_s(self) -> float:
        """Throughput in records per second of the copy window."""
        return self.records / self.seconds if self.seconds > 0 else 0.0

    @property
    def mb_per_s(self) -> float:
        """Throughput in MB (10^6 bytes of keys + values) per second of the copy window."""
        return self.payload_bytes / 1e6 / self.seconds if self.seconds > 0 else 0.0

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
            "copy_s": round(self.copy_s, 4),
            "peak_rss_bytes": self.peak_rss_bytes,
            "start_s": round(self.start_s, 4),
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


class MirrorsparkContender(Contender):
    """``mirrorspark run --until-caught-up`` in this process.

    The flow's copy tasks (``min(tasks.max, partitions)`` long-running Spark tasks, one task slot
    each) get the source end offsets the driver listed at start, copy up to them, commit and end;
    the run ends once their commits (and the checkpoints) are written. Heartbeats and checkpoints
    stay on (mirrorspark's defaults, as for MM2).

    Parameters
    ----------
    tasks_max:
        ``tasks.max`` of the flow (copy tasks = ``min(tasks.max, partitions)``).
    extra:
        Further ``mm2.properties`` keys for every run (named in the description), e.g.
        :data:`EXACTLY_ONCE`.
    flow_extra:
        Further keys of the run's flow, written as ``<source alias>->target.<key>`` (the source
        alias is new every run), e.g. its ``transforms``.
    drops_tagged:
        Whether ``flow_extra``'s transforms drop the workload's tagged records: the target then
        holds :attr:`~bench.workload.Workload.untagged_records` records, and the run counts every
        source record it read (copied + dropped) in its throughput.
    name:
        Name in tables (default ``"mirrorspark"``).
    """

    def __init__(
        self,
        *,
        tasks_max: int,
        extra: Mapping[str, str] | None = None,
        flow_extra: Mapping[str, str] | None = None,
        drops_tagged: bool = False,
        name: str = "mirrorspark",
    ) -> None:
        self.name = name
        self.tasks_max = tasks_max
        self.extra = dict(extra or {})
        self.flow_extra = dict(flow_extra or {})
        self.drops_tagged = drops_tagged
        self.transactional = self.extra.get(f"{TARGET}.exactly.once.source.support") == "enabled"
        keys = "".join(f", {k}={v}" for k, v in self.extra.items())
        self.description = (
            f"mirrorspark run --until-caught-up on the copy tasks, tasks.max={tasks_max}{keys}"
            + _described(self.flow_extra)
        )

    def properties(self, workload: Workload, alias: str = "source") -> dict[str, str]:
        """The ``mm2.properties`` keys this contender sets on top of the clusters' own (flow ``<alias>->target``)."""
        props = {
            "topics": workload.topic,
            "tasks.max": str(self.tasks_max),
        }
        props.update(self.extra)
        props.update(_flow_keys(alias, self.flow_extra))
        return props

    def prepare(self, env: BenchEnv) -> None:
        """Make sure the SparkSession is up (its start-up is reported, not measured)."""
        env.spark()

    def run(self, env: BenchEnv, workload: Workload, run: int) -> RunMeasurement:
        from mirrorspark.config.parse import parse_config
        from mirrorspark.config.properties import parse_properties
        from mirrorspark.replication.driver import Replicator

        alias = env.fresh_alias()
        expected = workload.untagged_records if self.drops_tagged else workload.records
        text = env.mm2_properties(alias, self.properties(workload, alias))
        cfg = parse_config(parse_properties(text), source_name=f"bench run {alias} ({self.name})")
        spark = env.spark()
        gc.collect()
        remote = f"{alias}.{workload.topic}"
        meter = cpu.Meter(env.broker_pids())
        sampler = Sampler(
            os.getpid(),
            exclude=env.broker_pids(),
            progress=EndOffsets(env.bootstrap(TARGET), remote, workload.partitions, read_committed=self.transactional),
        )
        meter.start()
        sampler.start()
        t0 = time.perf_counter()
        replicator = Replicator(cfg, spark)
        error = ""
        t1: float | None = None
        try:
            replicator.start()
            t1 = time.perf_counter()
            replicator.run(until_caught_up=True)
            sampler.wait_for(expected, 30.0)
        except Exception as e:
            log.exception("%s run %d failed", self.name, run)
            error = f"{type(e).__name__}: {e}"
        finally:
            sampler.stop()
            meter.stop()
            replicator.close()
        window = sampler.window(expected)
        copied = _Copied.of(replicator.flows[0], workload.topic)
        if not error:
            error = self._check(env, remote, workload, expected, copied, window)
        if not error:
            error = self.inspect(cfg, replicator, workload, run)
        if not error and self.drops_tagged:  # throughput counts what was read: every source record
            copied = _Copied(workload.records, 0, workload.payload_bytes)
        env.delete_flow_topics(alias)
        return RunMeasurement(
            contender=self.name,
            run=run,
            records=copied.records,
            payload_bytes=copied.payload_bytes,
            wall_s=window.end_s if window else meter.wall_s,
            start_s=window.start_s if window else ((t1 - t0) if t1 is not None else 0.0),
            copy_s=window.seconds if window else 0.0,
            peak_rss_bytes=sampler.peak_rss_bytes,
            cpu=window.cpu if window else meter.tree,
            run_cpu_s=meter.tree.total_s,
            broker_cpu_s=meter.broker_s,
            machine_busy_s=meter.machine.busy_s,
            steal_s=meter.machine.steal_s,
            verified=not error,
            error=error,
        )

    def inspect(self, cfg: MirrorConfig, replicator: Replicator, workload: Workload, run: int) -> str:
        """Read what else a verified run is to report, before its flow's topics go; return why it fails (``""``: ok)."""
        return ""

    def _check(
        self, env: BenchEnv, remote: str, workload: Workload, expected: int, copied: _Copied, window: Window | None
    ) -> str:
        """Why the run does not count (``""`` if the target holds exactly what the copy tasks report copying)."""
        stored = _stored(env, remote, workload, transactional=self.transactional, expected=expected)
        if (
            stored == expected == copied.records
            and copied.records + copied.dropped == workload.records
            and window is not None
        ):
            return ""
        return (
            f"target holds {stored} records, replicator reports {copied.records} copied and {copied.dropped} dropped, "
            f"expected {expected} copied of {workload.records}" + ("" if window else " (no copy window)")
        )


@dataclass(frozen=True)
class _Copied:
    """What a mirrorspark run's copy tasks report for the workload topic: records copied and dropped, key +
    value bytes copied."""

    records: int
    dropped: int
    payload_bytes: int

    @classmethod
    def of(cls, flow: Flow, topic: str) -> _Copied:
        """The flow's progress of ``topic`` only: the flow also replicates ``heartbeats`` (MM2 does),
        which the reverse-pair heartbeats of earlier runs keep on the source."""
        progress = [p for (t, _), p in flow.partitions.items() if t == topic]
        return cls(
            records=sum(p.records for p in progress),
            dropped=sum(p.dropped for p in progress),
            payload_bytes=sum(p.value_bytes + p.key_bytes for p in progress),
        )


MM2_HEAP = "-Xms256M -Xmx2G"
"""MirrorMaker's heap, as Kafka's ``bin/connect-mirror-maker.sh`` sets it."""

MM2_TUNED_PRODUCER = {f"{TARGET}.producer.batch.size": str(1 << 20), f"{TARGET}.producer.linger.ms": "5"}
"""The ``mm2-tuned`` contender's data producer: 1 MiB batches, ``linger.ms=5`` (the ceiling's produce pass
settings). MM2's data producer is the Connect worker's, configured by ``<target>.producer.<key>``
(mm2.md §2.1: "data-producer settings come from the worker")."""


class MirrorMakerContender(Contender):
    """Apache Kafka's MirrorMaker 2 in dedicated mode, one fresh JVM per run.

    ``org.apache.kafka.connect.mirror.MirrorMaker`` from the ``mm2`` jar set, serving only
    the flow into ``target`` (``--clusters target``), with the same ``tasks.max`` and topic
    filter as mirrorspark, heartbeats and checkpoints on, MM2's defaults otherwise, and
    ``plugin.discovery=service_load`` (skips Connect's plugin scan: start-up only). Timed
    until the remote topic holds every record; then stopped with ``SIGTERM``.

    Parameters
    ----------
    tasks_max:
        ``tasks.max``.
    extra:
        Further ``mm2.properties`` keys (named in the description), e.g. the data producer's
        settings as worker keys of the target, ``target.producer.linger.ms``
        (:data:`MM2_TUNED_PRODUCER`).
    flow_extra, drops_tagged:
        As :class:`MirrorsparkContender`'s (MM2 reads ``transforms`` only per flow).
    timeout_s:
        Give up on a run after this many seconds.
    name:
        Name in tables (default ``"mm2"``).
    """

    def __init__(
        self,
        *,
        tasks_max: int,
        extra: Mapping[str, str] | None = None,
        flow_extra: Mapping[str, str] | None = None,
        drops_tagged: bool = False,
        timeout_s: float = 900.0,
        name: str = "mm2",
    ) -> None:
        self.name = name
        self.tasks_max = tasks_max
        self.extra = dict(extra or {})
        self.flow_extra = dict(flow_extra or {})
        self.drops_tagged = drops_tagged
        self.transactional = self.extra.get(f"{TARGET}.exactly.once.source.support") == "enabled"
        self.timeout_s = timeout_s
        tuned = ", ".join(f"{k}={v}" for k, v in self.extra.items())
        self.description = (
            f"Apache Kafka MirrorMaker 2 (connect-mirror {_jar_version('mm2', 'connect-mirror')}), dedicated mode, "
            f"tasks.max={tasks_max}, heap {MM2_HEAP}"
            + (f", {tuned}" if tuned else ", MM2's defaults" if not self.flow_extra else "")
            + _described(self.flow_extra)
        )

    def properties(self, workload: Workload, alias: str = "source") -> dict[str, str]:
        """The ``mm2.properties`` keys set on top of the clusters' own (flow ``<alias>->target``)."""
        props = {
            "topics": workload.topic,
            "tasks.max": str(self.tasks_max),
            "emit.heartbeats.enabled": "true",
            "emit.checkpoints.enabled": "true",
            "plugin.discovery": "service_load",
            f"{TARGET}.plugin.discovery": "service_load",
        }
        props.update(self.extra)
        props.update(_flow_keys(alias, self.flow_extra))
        return props

    def run(self, env: BenchEnv, workload: Workload, run: int) -> RunMeasurement:
        from mirrorspark.kafka.local.mirror_maker import start_mirror_maker

        alias = env.fresh_alias()
        path = env.work_dir / f"mm2-{alias}.properties"
        path.write_text(env.mm2_properties(alias, self.properties(workload, alias)))
        expected = workload.untagged_records if self.drops_tagged else workload.records
        remote = f"{alias}.{workload.topic}"
        meter = cpu.Meter(env.broker_pids(), root=os.getpid())
        progress = EndOffsets(env.bootstrap(TARGET), remote, workload.partitions, read_committed=self.transactional)
        error = ""
        meter.start()
        mm = start_mirror_maker(path, base_dir=env.work_dir, clusters=[TARGET], heap=MM2_HEAP)
        sampler = Sampler(mm.pid, exclude=env.broker_pids(), progress=progress)
        try:
            sampler.start()
            if not sampler.wait_for(expected, self.timeout_s, alive=lambda: mm.running):
                error = (
                    f"MirrorMaker did not copy {expected} records within {self.timeout_s:.0f} s "
                    f"(running: {mm.running}); log tail:\n{mm.log_tail(10)}"
                )
        finally:
            sampler.stop()
            run_cpu = sampler.samples[-1].cpu.total_s if sampler.samples else 0.0
            # A transactional copy is counted while MM2 still runs: its last transaction commits on its
            # own schedule (a graceful stop may abort it), and markers make the progress end early.
            stored = _stored(env, remote, workload, transactional=True, expected=expected) if self.transactional else -1
            mm.stop()
            meter.stop()
        window = sampler.window(expected)
        if stored < 0:
            stored = _stored(env, remote, workload, transactional=False)
        env.delete_flow_topics(alias)
        return _jvm_measurement(
            self.name, run, workload, stored, "target holds", window, sampler, meter, run_cpu, error, expected=expected
        )


EXACTLY_ONCE: Final = {f"{TARGET}.exactly.once.source.support": "enabled"}
"""The ``*-eos`` contenders' key: KIP-618 exactly-once on the target (records and source offsets in transactions)."""


def _stored(env: BenchEnv, remote: str, workload: Workload, *, transactional: bool, expected: int | None = None) -> int:
    """Records the target holds: watermarks, or a ``read_committed`` count for a transactional copy
    (waiting for ``expected`` records, default the workload's)."""
    if transactional:
        want = workload.records if expected is None else expected
        return count_committed(env.bootstrap(TARGET), remote, workload.partitions, expected=want)
    return count_records(env.bootstrap(TARGET), remote, workload.partitions)


def _flow_keys(alias: str, keys: Mapping[str, str]) -> dict[str, str]:
    """``keys`` as keys of the flow ``<alias>->target``."""
    return {f"{alias}->{TARGET}.{k}": v for k, v in keys.items()}


def _described(flow_extra: Mapping[str, str]) -> str:
    """``flow_extra`` for a description: ``", flow keys: k=v, ..."`` (``""`` when empty)."""
    return (", flow keys: " + ", ".join(f"{k}={v}" for k, v in flow_extra.items())) if flow_extra else ""


def _jvm_measurement(
    name: str,
    run: int,
    workload: Workload,
    records: int,
    counted: str,
    window: Window | None,
    sampler: Sampler,
    meter: cpu.Meter,
    run_cpu_s: float,
    error: str,
    *,
    expected: int | None = None,
) -> RunMeasurement:
    """The :class:`RunMeasurement` of a contender outside this process (MM2, the ceiling's clients):
    without a copy window, the wall time is the meter's and the CPU figures are empty.

    ``records`` is what was counted afterwards, ``counted`` says how (``"target holds"``):
    the run is verified when it is ``expected`` (default: the workload's count), there is a
    copy window and no ``error``; otherwise, without an error yet, ``error`` names the
    shortfall. A verified run is measured over every source record (a filtering run read them all).
    """
    want = workload.records if expected is None else expected
    verified = not error and records == want and window is not None
    if not error and not verified:
        error = f"{counted} {records} records, expected {want}"
    return RunMeasurement(
        contender=name,
        run=run,
        records=workload.records if verified else records,
        payload_bytes=workload.payload_bytes,
        wall_s=window.end_s if window else meter.wall_s,
        start_s=window.start_s if window else 0.0,
        copy_s=window.seconds if window else 0.0,
        peak_rss_bytes=sampler.peak_rss_bytes,
        cpu=window.cpu if window else cpu.CpuDelta(),
        run_cpu_s=run_cpu_s,
        broker_cpu_s=meter.broker_s,
        machine_busy_s=meter.machine.busy_s,
        steal_s=meter.machine.steal_s,
        verified=verified,
        error=error,
    )


def _jar_version(jar_set: str, prefix: str) -> str:
    from mirrorspark.kafka.jars import jar_dir

    try:
        jars = sorted(jar_dir(jar_set).glob(f"{prefix}-[0-9]*.jar"))
    except Exception:
        return "?"
    return jars[0].stem[len(prefix) + 1 :] if jars else "?"


def _wait_unreaped(proc: subprocess.Popen[bytes], timeout_s: float) -> bool:
    """Wait for ``proc`` to exit but leave it a zombie, so its final CPU times can still be read.

    Returns ``False`` on timeout. Reap it afterwards with ``proc.wait()``.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None:
                return True
        except ChildProcessError:
            return True
        time.sleep(0.01)
    return False


def _java(args: Sequence[str], *, heap: str = "-Xms256M -Xmx1G", classpath_extra: str = "") -> list[str]:
    from mirrorspark.kafka.jars import classpath, java_executable

    cp = classpath("kafka") + (os.pathsep + classpath_extra if classpath_extra else "")
    return [java_executable(), *heap.split(), "-cp", cp, *args]


def _launch_clients(commands: Sequence[Sequence[str]], logs: Sequence[Path]) -> subprocess.Popen[bytes]:
    """Start one process per command at once, under one ``sh`` that waits for them all.

    The ``sh`` is the root of the clients' process tree (what the sampler measures: its reaped
    children's CPU moves into its own ``children_*`` times) and leads its own session, so a
    timeout kills every client with one ``killpg``.
    """
    import shlex

    script = " ".join(
        f"{shlex.join(list(cmd))} >{shlex.quote(str(log))} 2>&1 &" for cmd, log in zip(commands, logs, strict=True)
    )
    return subprocess.Popen(
        ["/bin/sh", "-c", f"{script} wait"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _kill_clients(proc: subprocess.Popen[bytes]) -> None:
    import contextlib
    import signal

    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def client_shares(partitions: int, clients: int) -> list[list[int]]:
    """The partitions of each of ``min(clients, partitions)`` parallel clients, round-robin.

    Client ``i`` gets partitions ``i, i + n, i + 2n, ...`` (``n`` clients), as MM2's
    ``MirrorSourceConnector.taskConfigs`` and mirrorspark's copy tasks split a flow.
    """
    n = max(1, min(clients, partitions))
    return [list(range(i, partitions, n)) for i in range(n)]


def records_in(workload: Workload, partitions: Sequence[int]) -> int:
    """Records :func:`bench.workload.load_topic` wrote into these partitions (round-robin: ``i mod P``)."""
    base, extra = divmod(workload.records, workload.partitions)
    return sum(base + (1 if p < extra else 0) for p in partitions)


class _CeilingContender(Contender):
    """One pass of the ceiling: ``min(tasks.max, partitions)`` parallel client processes of :mod:`bench.share`.

    The clients are librdkafka's through confluent-kafka with the copy tasks' settings, the
    clients a copy task runs, each doing one half of a copy: neither pass does less than a
    replicator with those clients must, so the slower pass bounds it on this machine.
    (Kafka's Java clients bounded nothing here: on two cores shared with the brokers they
    need about three times librdkafka's CPU per GB, and mirrorspark outran them.) The produce
    pass is timed as the replicators are, by the target's end offsets; the consume pass from
    the first client's first record to the last client's last (their own clocks). The sampler
    gives CPU and RSS over the window.
    """

    mode = ""

    def __init__(self, *, tasks_max: int, timeout_s: float = 900.0) -> None:
        self.tasks_max = tasks_max
        self.timeout_s = timeout_s

    def shares(self, workload: Workload) -> list[list[int]]:
        """Partitions per client for this workload (as many clients as a replicator's copy tasks)."""
        return client_shares(workload.partitions, self.tasks_max)

    def client_args(self, env: BenchEnv, workload: Workload, topic: str, share: list[int]) -> list[str]:
        """The :mod:`bench.share` arguments of one client (after the mode)."""
        raise NotImplementedError

    def topic(self, env: BenchEnv, workload: Workload, alias: str) -> str:
        """The topic the clients read or write."""
        raise NotImplementedError

    def counted(self, env: BenchEnv, workload: Workload, topic: str, read: int) -> int:
        """Records the pass verifiably moved (``read``: what the clients reported)."""
        return read

    def progress(self, env: BenchEnv, workload: Workload, topic: str) -> EndOffsets | None:
        """What the sampler polls to time the pass as the replicators are timed; ``None``: the clients' clocks."""
        return None

    def cleanup(self, env: BenchEnv, topic: str) -> None:
        """Remove what the pass created."""

    def run(self, env: BenchEnv, workload: Workload, run: int) -> RunMeasurement:
        import sys

        alias = env.fresh_alias()
        topic = self.topic(env, workload, alias)
        shares = self.shares(workload)
        meter = cpu.Meter(env.broker_pids(), root=os.getpid())
        logs = [env.work_dir / f"ceiling-{self.mode}-{alias}-{i}.log" for i in range(len(shares))]
        commands = [
            [sys.executable, "-m", "bench.share", self.mode, *self.client_args(env, workload, topic, share)]
            for share in shares
        ]
        meter.start()
        proc = _launch_clients(commands, logs)
        sampler = Sampler(proc.pid, exclude=env.broker_pids(), progress=self.progress(env, workload, topic))
        error = ""
        try:
            sampler.start()
            if not _wait_unreaped(proc, self.timeout_s):
                _kill_clients(proc)
                error = f"the {self.mode} clients did not finish within {self.timeout_s:.0f} s"
            sampler.sample()
        finally:
            sampler.stop()
            proc.wait()
            meter.stop()
        stats = [_share_stats(log.read_text(errors="replace")) for log in logs]
        window = None
        moved = 0
        if any(s is None for s in stats):
            error = error or f"no result line from a {self.mode} client; logs: {', '.join(map(str, logs))}"
        else:
            moved = sum(s["records"] for s in stats if s is not None)
            if sampler.progress is not None:
                window = sampler.window(workload.records)
            else:
                start = min(s["start.ms"] for s in stats if s is not None) / 1000.0
                end = max(s["end.ms"] for s in stats if s is not None) / 1000.0
                window = sampler.window_between(start, end)
                window = replace(window, start_s=window.end_s - (end - start))
        run_cpu = sampler.samples[-1].cpu.total_s if sampler.samples else 0.0
        records = self.counted(env, workload, topic, moved)
        self.cleanup(env, topic)
        return _jvm_measurement(
            self.name, run, workload, records, f"the {self.mode} clients moved", window, sampler, meter, run_cpu, error
        )


class CeilingProduceContender(_CeilingContender):
    """The produce-only bound: one librdkafka producer process per copy task a replicator would run.

    ``n = min(tasks.max, partitions)`` processes of ``python -m bench.share produce`` at once
    into one fresh target topic with the workload's partitions, process ``i`` writing as many
    records of the workload's size as its share of the source partitions
    (:func:`client_shares`) holds into those partitions. The copy tasks' producer settings
    (idempotent, so ``acks=all``; ``linger.ms=5``; 1 MB batches; no compression). Verified by
    counting the target topic afterwards.
    """

    name = "ceiling-produce"
    mode = "produce"

    def __init__(self, *, tasks_max: int, timeout_s: float = 900.0) -> None:
        super().__init__(tasks_max=tasks_max, timeout_s=timeout_s)
        self.description = (
            "librdkafka producers (bench/share.py: confluent-kafka, the copy tasks' producer settings: idempotent, "
            f"acks=all, linger.ms=5) into target, min(tasks.max={tasks_max}, partitions) processes in parallel, "
            "each into its share of the partitions"
        )

    def topic(self, env: BenchEnv, workload: Workload, alias: str) -> str:
        topic = f"{alias}.ceiling-{workload.topic}"
        env.create_topic(TARGET, topic, workload.partitions)
        return topic

    def client_args(self, env: BenchEnv, workload: Workload, topic: str, share: list[int]) -> list[str]:
        return [
            env.bootstrap(TARGET), topic, ",".join(map(str, share)), str(records_in(workload, share)),
            str(workload.record_size), str(int(self.timeout_s * 1000)),
        ]  # fmt: skip

    def counted(self, env: BenchEnv, workload: Workload, topic: str, read: int) -> int:
        return count_records(env.bootstrap(TARGET), topic, workload.partitions)

    def progress(self, env: BenchEnv, workload: Workload, topic: str) -> EndOffsets | None:
        # timed exactly as the replicators: by the target topic's end offsets
        return EndOffsets(env.bootstrap(TARGET), topic, workload.partitions)

    def cleanup(self, env: BenchEnv, topic: str) -> None:
        env.delete_topics(TARGET, [topic])


class CeilingConsumeContender(_CeilingContender):
    """The consume-only bound: one librdkafka consumer process per copy task a replicator would run.

    ``n = min(tasks.max, partitions)`` processes of ``python -m bench.share consume`` at once,
    each assigned its share of the source topic's partitions (:func:`client_shares`), reading
    from the beginning in batches of up to 10,000 records, as the copy tasks do, until it has
    its share's records.
    """

    name = "ceiling-consume"
    mode = "consume"

    def __init__(self, *, tasks_max: int, timeout_s: float = 900.0) -> None:
        super().__init__(tasks_max=tasks_max, timeout_s=timeout_s)
        self.description = (
            "librdkafka consumers (bench/share.py: confluent-kafka, assign(), batches of 10,000) over the source "
            f"topic, min(tasks.max={tasks_max}, partitions) processes in parallel, each on its share of the partitions"
        )

    def topic(self, env: BenchEnv, workload: Workload, alias: str) -> str:
        return workload.topic

    def client_args(self, env: BenchEnv, workload: Workload, topic: str, share: list[int]) -> list[str]:
        return [
            env.bootstrap(SOURCE), topic, ",".join(map(str, share)), str(records_in(workload, share)),
            str(int(self.timeout_s * 1000)),
        ]  # fmt: skip


class CeilingCopyContender(CeilingProduceContender):
    """The floor of a copy on the copy tasks' client: one bare Python copy loop per copy task a replicator would run.

    ``n = min(tasks.max, partitions)`` processes of ``python -m bench.share copy`` at once, each reading its
    share of the source partitions (:func:`client_shares`) and producing every record to the same
    partition of one fresh target topic with a per-record delivery callback that keeps the target offset
    (what exact offset syncs need), in one thread, with the copy tasks' consumer and producer settings;
    no commits, no offset syncs, no progress. Timed as the replicators are, by the target's end offsets:
    a replicator on this client pays at least this per record, so ``mirrorspark/ceiling-copy`` is how
    close the copy tasks are to the Python client's floor.
    """

    name = "ceiling-copy"
    mode = "copy"

    def __init__(self, *, tasks_max: int, timeout_s: float = 900.0) -> None:
        super().__init__(tasks_max=tasks_max, timeout_s=timeout_s)
        self.description = (
            "bare Python copy loops (bench/share.py copy: confluent-kafka consume, produce with a delivery callback "
            f"per record, the copy tasks' settings), min(tasks.max={tasks_max}, partitions) processes in parallel, "
            "each on its share of the partitions"
        )

    def client_args(self, env: BenchEnv, workload: Workload, topic: str, share: list[int]) -> list[str]:
        return [
            env.bootstrap(SOURCE), workload.topic, ",".join(map(str, share)), env.bootstrap(TARGET), topic,
            str(records_in(workload, share)), str(int(self.timeout_s * 1000)),
        ]  # fmt: skip


def _share_stats(output: str) -> dict[str, int] | None:
    """Parse a :mod:`bench.share` client's result line (``records=.. bytes=.. start.ms=.. end.ms=..``).

    ``None`` if absent or malformed.
    """
    for line in reversed(output.splitlines()):
        if line.startswith("records="):
            try:
                return {k: int(v) for k, v in (item.split("=", 1) for item in line.split())}
            except ValueError:
                return None
    return None
