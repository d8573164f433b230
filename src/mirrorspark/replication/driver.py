"""The driver: every enabled flow in one Spark application (MM2's ``MirrorMaker``).

:meth:`Replicator.start` starts the flows and registers the jobs each component declares (``jobs()``)
on the control :class:`~mirrorspark.replication.connector.scheduler.Scheduler`, each under its flow's
lock (a checkpoint emitter's and its commit follower's: the emitter's own). :meth:`Replicator.run`
starts the copy tasks, runs the control jobs on their own thread and, until stopped, supervises every
flow each :data:`TICK_S` (never held up by a control job), reports stats about once a second and, with
``until_caught_up``, ends once the end offsets listed at start and the groups' checkpoints are reached.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from mirrorspark.client.connect_tasks import transactional_id
from mirrorspark.client.context import ReplicationContext
from mirrorspark.config.model import MirrorConfig
from mirrorspark.config.runnable import runnable_flows, spare_slots
from mirrorspark.errors import ConfigError, DataGapError
from mirrorspark.kafka.admin import PartitionKey
from mirrorspark.kafka.factory import ClientFactory
from mirrorspark.replication.connector.checkpoint_emitter import CheckpointEmitter
from mirrorspark.replication.connector.commit_follower import FOLLOW_TICK_S, CommitFollower
from mirrorspark.replication.connector.connector_clusters import check_connector_clusters
from mirrorspark.replication.connector.failover_watch import FailoverWatcher, SourceMetadata
from mirrorspark.replication.connector.flow import Flow
from mirrorspark.replication.connector.heartbeats import HeartbeatEmitter
from mirrorspark.replication.connector.live_throttle import ThrottleFollowers
from mirrorspark.replication.connector.provenance_ids import learn_cluster_ids
from mirrorspark.replication.connector.scheduler import Scheduler
from mirrorspark.replication.connector.schema_figures_publisher import SchemaFiguresPublisher
from mirrorspark.replication.connector.totals_publisher import TotalsPublisher
from mirrorspark.replication.worker.lease import FlowLease
from mirrorspark.replication.worker.metrics_publisher import MetricsPublisher
from mirrorspark.replication.worker.supervisor import FlowSupervisor, SupervisorState
from mirrorspark.replication.worker.verifier import VerifySampler
from mirrorspark.replication.worker.worker import Worker, first_error

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from mirrorspark.spark_session import DriverJvmWatch

log = logging.getLogger(__name__)
startup_log = logging.getLogger("mirrorspark.start-up")
"""Where the seconds of a start go: INFO, shown by ``mirrorspark run``."""


TICK_S = 0.1
"""Seconds between two supervision rounds of the driver loop."""

REPORT_INTERVAL_S = 1.0
"""Seconds between two stats callbacks (``on_stats``: the stats walk every partition)."""

CONTROL_STOP_S = 60.0
"""Longest wait for a running control job at the end of a run; past it its flow's clients are not released."""

START_THREADS = 4
"""Flows :meth:`Replicator.start` starts at once: each has clients of its own and mostly waits on its clusters."""


class DriverState(StrEnum):
    """Where the driver is: ``created``, ``starting``, ``running``, ``stopping``, ``stopped``."""

    CREATED = "created"
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"


@dataclass(frozen=True)
class TopicStats:
    """Stats of one replicated topic of a flow (this run): bytes of values, lag in records, latency in ms (0: none)."""

    topic: str
    remote_topic: str
    partitions: int
    records: int
    value_bytes: int
    lag: int
    latency_ms_avg: float
    latency_ms_max: int


@dataclass(frozen=True)
class FlowStats:
    """Stats of one flow (this run), with its topics'.

    ``state`` is the driver's (:class:`DriverState`; once stopped ``"caught up"`` for a bounded run that
    reached its end offsets), ``"halted"`` (``mirrorspark.on.gap=stop``) or ``"failed"`` (its supervisor
    gave up; the other flows run on). ``gaps``: source records lost before being copied;
    ``invalid_offsets``: stored source offsets the source partition cannot hold.
    """

    flow: str
    state: str
    records: int
    value_bytes: int
    lag: int
    topics: tuple[TopicStats, ...]
    gaps: int = 0
    invalid_offsets: int = 0


class Replicator:
    """Runs the enabled flows of a configuration on Spark.

    ``spark`` may be set later, before :meth:`run`, so :meth:`start` fails fast on unreachable clusters
    before Spark starts. ``targets`` is MM2's ``--clusters`` (``None``: all); ``on_stats`` is called
    about once a second and at the end; ``context`` (built by the caller, else here from ``config`` and
    ``clients``) holds the flows' policies, filters and clients. Set :attr:`jvm` before :meth:`run` to
    watch the Spark driver JVM yourself. Raises :class:`~mirrorspark.errors.ConfigError` when no flow is
    enabled for ``targets``.
    """

    def __init__(
        self,
        config: MirrorConfig,
        spark: SparkSession | None = None,
        *,
        targets: Sequence[str] | None = None,
        on_stats: Callable[[list[FlowStats]], None] | None = None,
        clients: ClientFactory | None = None,
        context: ReplicationContext | None = None,
    ) -> None:
        self.config = config
        self.spark = spark
        self.jvm: DriverJvmWatch | None = None
        # policies, filters and client settings of every flow, built once (by the caller, or here) and passed down
        if context is None:
            context = ReplicationContext(config) if clients is None else ReplicationContext(config, clients)
        self.context = context
        flows = runnable_flows(config, targets)
        self.flows = [Flow(self.context.of(f), config.data_path) for f in flows]
        # a Connect deployment's checkpoint and heartbeat connectors may run clients of their own (issue #37)
        self.heartbeats = HeartbeatEmitter(
            [self.context.of(f).for_connector("heartbeat") for f in config.heartbeat_flows(targets)]
        )
        by_pair = {(f.config.source, f.config.target): f for f in self.flows}
        self.checkpoints = [
            CheckpointEmitter(
                f.context.for_connector("checkpoint"),
                reverse=self.context.reverse(f.context),
                copied=f.copied,
                reverse_copied=by_pair[(f.config.target, f.config.source)].copied
                if (f.config.target, f.config.source) in by_pair
                else None,
            )
            for f in self.flows
            if f.config.emit_checkpoints_enabled
        ]
        self._checkpoint_targets: list[dict[tuple[str, str, int], int]] = []
        self.totals: list[TotalsPublisher] = []
        # one per flow, in flow order: set .figures to the flow's schema sync figures (default: none published)
        self.schema_figures: list[SchemaFiguresPublisher] = []
        self.metrics: list[MetricsPublisher] = []
        self.control = Scheduler()
        self.background = Scheduler()
        self.failover = Scheduler()  # the failover policy's source checks: a dead source must not stall the rest
        self.schema_syncs = Scheduler()  # Schema Registry calls: a slow registry must not stall the rest either
        self.commit_followers = Scheduler()  # emit.checkpoints.on.commit: never behind a slower control job's turn
        self.verify_samples = Scheduler()  # verify.sampling.enable: a Spark job each, never on the loop's thread
        self.samplers: list[VerifySampler] = []
        self.followers: list[CommitFollower] = []
        self.failover_watchers: list[FailoverWatcher] = []
        self.throttle_followers: list[ThrottleFollowers] = []  # one per target cluster (start)
        self.on_stats = on_stats
        self._stop = threading.Event()
        self._targets: dict[str, dict[PartitionKey, int]] = {}
        self.end_states: dict[str, str] = {}  # how each flow this instance ran ended cleanly (see _end_states)
        self.state = DriverState.CREATED
        self.worker: Worker | None = None
        self.leases: dict[str, FlowLease] = {}  # joined before Spark started (join_leases)
        self._last_stats: dict[str, FlowStats] = {}  # each flow's, for a report while one of its jobs runs

    @property
    def supervisors(self) -> list[FlowSupervisor]:
        """The flows' supervisors once :meth:`run` started the copy tasks (and after), in flow order."""
        return list(self.worker.supervisors) if self.worker is not None else []

    def assignment_applied(self) -> bool:
        """Whether every running flow's copy tasks run the flow's current assignment."""
        return all(s.state != SupervisorState.RUNNING or s.assignment == s.flow.assignment for s in self.supervisors)

    def _supervisor_of(self, flow: Flow) -> FlowSupervisor | None:
        return next((s for s in self.supervisors if s.flow is flow), None)

    def _runs_flow(self, flow: Flow) -> bool:
        """Whether this instance runs ``flow`` now: not a standby of the flow's lease."""
        s = self._supervisor_of(flow)
        return s is None or s.state != SupervisorState.STANDBY

    def task_slots(self) -> int:
        """Copy tasks the flows run now, ``min(tasks.max, partitions)`` per flow (after :meth:`start`)."""
        return sum(min(f.config.tasks_max, len(f.order)) for f in self.flows)

    @property
    def spare_slots(self) -> int:
        """Task slots kept free besides the copy tasks': one for continuous sampling (``verify.sampling.enable``)."""
        return spare_slots(f.config for f in self.flows)

    def request_stop(self) -> None:
        """Ask the loop to end: every copy task commits what the target acknowledged and ends (thread-safe)."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        """Whether a stop was requested."""
        return self._stop.is_set()

    def start(self) -> None:
        """Start every flow and the heartbeats, register their control jobs, join the flows' leases; needs no Spark.

        Raises :class:`~mirrorspark.errors.ClusterUnreachableError` when a cluster does not answer and
        :class:`~mirrorspark.errors.ClusterError` when an internal, remote or lease topic cannot be created.
        """
        began = time.monotonic()
        self.state = DriverState.STARTING
        for flow in self.flows:  # a Connect deployment's connectors with clients of their own: one alias, one cluster
            check_connector_clusters(flow.context)
        learn_cluster_ids(self.flows)  # provenance.header.enable: both clusters' ids, before any task starts
        # the heartbeats topics first: a flow's start then finds its source's (a disabled flow's heartbeats
        # create it, as MM2's do), instead of its first refresh restarting the tasks just started
        self.heartbeats.start()
        self._start_flows()
        for flow in self.flows:  # each component declares its jobs; each runs under its flow's lock
            totals = TotalsPublisher(flow)
            totals.start()
            self.totals.append(totals)
            self.control.add_jobs(totals, lock=flow.lock)
            sync = flow.schemas
            schemas = SchemaFiguresPublisher(flow, figures=sync.figures) if sync else SchemaFiguresPublisher(flow)
            self.schema_figures.append(schemas)
            self.control.add_jobs(schemas, lock=flow.lock)
            self.control.add_jobs(flow, lock=flow.lock)
            if flow.schemas is not None:  # registry calls only, never the flow's state: not under its lock
                self.schema_syncs.add_jobs(flow.schemas)
        emitters = {cp.name: cp for cp in self.checkpoints}
        interval_ms = self.config.data_path.metrics_interval_ms
        for flow in self.flows:
            metrics = MetricsPublisher(
                flow,
                interval_ms=interval_ms,
                supervisor=functools.partial(self._supervisor_of, flow),
                checkpoints=emitters.get(flow.name),
            )
            metrics.start()
            self.metrics.append(metrics)
            self.control.add_jobs(metrics, lock=flow.lock)
        by_name = {flow.name: flow for flow in self.flows}
        for cp in self.checkpoints:
            cp.start(background_syncs=True)
            self.control.add_jobs(cp, lock=cp.lock)
            if cp.flow_config.emit_checkpoints_on_commit:
                flow = by_name[cp.name]
                follower = CommitFollower(
                    cp,
                    copied_to=functools.partial(_copied_to, flow),
                    active=functools.partial(self._runs_flow, flow),
                )
                self.followers.append(follower)
                self.commit_followers.add_jobs(follower, lock=cp.lock)
        if self.followers:
            self.commit_followers.start(name="mirrorspark-commit-followers", tick_s=FOLLOW_TICK_S)
        for flow in self.flows:  # under the flow's lock only while a sample is drawn, never while it is verified
            sampler = VerifySampler(flow, lambda: self.spark, active=functools.partial(self._runs_flow, flow))
            self.samplers.append(sampler)
            self.verify_samples.add_jobs(sampler)
        self.background.add_jobs(self.heartbeats)
        # the throttles' control-topic reads: every second, never behind a long control job; one job per target
        self.throttle_followers = ThrottleFollowers.of(flow.throttle for flow in self.flows)
        for followers in self.throttle_followers:
            self.background.add_jobs(followers)
        self.background.start(name="mirrorspark-heartbeats")
        if self.schema_syncs.jobs:
            self.schema_syncs.start(name="mirrorspark-schema-syncs")
        self._start_failover_watch()
        self.join_leases()
        self.state = DriverState.RUNNING
        startup_log.info("%d flow(s) started in %.1f s; their leases joined", len(self.flows), time.monotonic() - began)

    def _start_flows(self) -> None:
        """Start the flows, :data:`START_THREADS` at once; once none is starting, raise the first failure in flow order.

        A flow after the failed one that had not begun is never started, as in a start one flow at a time.
        """
        if len(self.flows) <= 1:
            for flow in self.flows:
                flow.start()
            return
        with ThreadPoolExecutor(min(START_THREADS, len(self.flows)), thread_name_prefix="mirrorspark-start") as pool:
            futures = [pool.submit(flow.start) for flow in self.flows]
            for future in futures:
                if future.exception() is not None:
                    for later in futures:
                        later.cancel()  # not begun yet: left unstarted
                    break
        for future in futures:  # every start ended (the pool's exit waited for those under way)
            error = None if future.cancelled() else future.exception()
            if error is not None:
                raise error

    def join_leases(self) -> None:
        """Join every flow's lease group (idempotent; needs no Spark), so the take-over wait overlaps Spark's start-up.

        Raises :class:`~mirrorspark.errors.ClusterError` when a lease topic cannot be created.
        """
        for flow in self.flows:
            if flow.name not in self.leases:
                lease = FlowLease(flow.context)
                lease.start()
                self.leases[flow.name] = lease

    def _start_failover_watch(self) -> None:
        """Schedule each flow's ``failover watch S->T`` (:mod:`~mirrorspark.replication.connector.failover_watch`)."""
        metadata = SourceMetadata()  # one Metadata request per source cluster and check, not one per flow
        for flow in self.flows:
            watcher = FailoverWatcher(flow, active=functools.partial(self._runs_flow, flow), metadata=metadata)
            watcher.start()
            self.failover_watchers.append(watcher)
            self.failover.add_jobs(watcher)
        self.failover.start(name="mirrorspark-failover")

    def run(self, *, until_caught_up: bool = False) -> list[FlowStats]:
        """Replicate until stopped (or caught up: ``until_caught_up``); every copy task commits; return final stats.

        Raises :class:`~mirrorspark.errors.ConfigError` (no SparkSession, or fewer task slots than copy
        tasks), ``SparkDriverLostError`` (the driver JVM died; nothing committed), ``DataGapError``
        (``mirrorspark.on.gap=stop`` halted a flow) or, when every flow failed, the first flow's error.
        """
        if self.spark is None:
            raise ConfigError("Replicator.run needs a SparkSession: pass spark= or set .spark first")
        if self.state == DriverState.CREATED:
            self.start()
        if until_caught_up:
            self._targets = {f.name: f.end_snapshot() for f in self.flows}
            self._checkpoint_targets = [cp.snapshot() for cp in self.checkpoints]
        if self._stop.is_set():  # stopped while starting (a standby's SIGTERM): no copy task to start and stop
            self.state = DriverState.STOPPING
            self.close()
            return self._finish()
        stop_at = self._targets if until_caught_up else None
        worker = Worker(
            self.spark, self.flows, stop_at=stop_at, joined=self.leases, jvm=self.jvm, spare_slots=self.spare_slots
        )
        self.worker = worker
        for f in self.flows:
            if f.exactly_once:
                self._log_exactly_once(f)
        failed: list[FlowSupervisor] = []
        try:
            worker.start()
            if self.verify_samples.jobs:
                self.verify_samples.start(name="mirrorspark-verify-samples")
            for pub in self.totals:
                pub.publish_state("running")
            failed = self._loop(worker, until_caught_up=until_caught_up)
            self.end_states = self._end_states(worker, failed, until_caught_up=until_caught_up)
        finally:
            self.state = DriverState.STOPPING
            self.control.stop(timeout_s=0)
            self.verify_samples.stop(timeout_s=0)  # a sample's Spark job under way ends by itself
            try:
                worker.stop()
            finally:
                self.close()
        return self._finish(failed)

    def _loop(self, worker: Worker, *, until_caught_up: bool) -> list[FlowSupervisor]:
        """Supervise until stopped, every flow halted or failed, or caught up; the control jobs run on their thread."""
        reported: set[str] = set()
        self.control.start(name="mirrorspark-control", tick_s=TICK_S)
        try:
            failed = self._supervise(worker, reported, until_caught_up=until_caught_up)
        finally:
            self.control.stop(timeout_s=0)
        self._publish_failed(failed, reported, wait_s=None)
        return failed

    def _supervise(self, worker: Worker, reported: set[str], *, until_caught_up: bool) -> list[FlowSupervisor]:
        next_report = 0.0
        failed: list[FlowSupervisor] = []
        while not self._stop.is_set():
            worker.tick()
            if worker.driver_lost is not None:
                break  # the Spark driver JVM is gone: nothing can copy any more (run() raises it)
            failed = worker.failed
            self._publish_failed(failed, reported, wait_s=0)
            if all(f.halted is not None or s in failed for f, s in zip(self.flows, worker.supervisors, strict=True)):
                break
            if until_caught_up and self._caught_up() and self._checkpoints_done():
                break
            if self.on_stats is not None and time.monotonic() >= next_report:  # a walk of every partition
                next_report = time.monotonic() + REPORT_INTERVAL_S
                self._report(self.stats(wait_s=0))
            self._stop.wait(TICK_S)
        return failed

    def _publish_failed(self, failed: Sequence[FlowSupervisor], reported: set[str], *, wait_s: float | None) -> None:
        """Publish ``failed`` for each failed flow not yet ``reported``; ``wait_s`` for its lock (``None``: waits)."""
        publishers = {pub.flow.name: pub for pub in self.totals}
        for s in failed:
            if s.name in reported or s.name not in publishers:
                continue
            with s.flow.held(wait_s=wait_s) as held:
                if held:
                    reported.add(s.name)
                    publishers[s.name].publish_state("failed", str(s.error))

    def _end_states(self, worker: Worker, failed: Sequence[FlowSupervisor], *, until_caught_up: bool) -> dict[str, str]:
        """How each flow this instance ran ended, ``caught up`` or ``stopped`` (failed, halted, standby: left out)."""
        if worker.driver_lost is not None:
            return {}
        failed_names = {s.name for s in failed}
        out: dict[str, str] = {}
        for f, s in zip(self.flows, worker.supervisors, strict=True):
            if f.halted is not None or f.name in failed_names or s.state == SupervisorState.STANDBY:
                continue
            with f.held():  # a control job of the flow may still be ending
                caught_up = until_caught_up and f.caught_up(self._targets.get(f.name, {}))
            out[f.name] = "caught up" if caught_up else "stopped"
        return out

    def _finish(self, failed: Sequence[FlowSupervisor] = ()) -> list[FlowStats]:
        self.state = DriverState.STOPPED
        if self.worker is not None and self.worker.driver_lost is not None:
            raise self.worker.driver_lost
        stats = self.stats()
        self._report(stats)
        halted = [f.halted for f in self.flows if f.halted is not None]
        if halted:
            raise DataGapError("; ".join(halted))
        if failed:
            raise first_error(failed)
        return stats

    @staticmethod
    def _log_exactly_once(f: Flow) -> None:
        """Say how a flow copies exactly once, and what ``exactly.once.support=requested`` leaves out."""
        cfg = f.config
        log.info(
            "flow %s copies exactly once: each copy task commits its records and source offsets in one "
            "transaction (transaction.boundary=%s, transactional ids %s-<task>)",
            f.name,
            cfg.transaction_boundary,
            transactional_id(cfg, 0).rsplit("-", 1)[0],
        )
        if cfg.exactly_once_support == "requested" and not f.read_committed:
            # MirrorSourceConnector.exactlyOnceSupport: UNSUPPORTED unless the source reads committed data
            log.warning(
                "flow %s: the source consumer reads with isolation.level=%s, so records of aborted source "
                "transactions are copied too (as MM2 does); set %s.consumer.isolation.level=read_committed to "
                "leave them out, and exactly.once.support=required to insist on it",
                f.name,
                f.isolation_level,
                cfg.source,
            )

    def _caught_up(self) -> bool:
        """Whether every flow not halted copied up to its end offsets listed at start (one whose job runs: not yet)."""
        for f in self.flows:
            if f.halted is not None:
                continue
            with f.held(wait_s=0) as held:
                if not held or not f.caught_up(self._targets.get(f.name, {})):
                    return False
        return True

    def _checkpoints_done(self) -> bool:
        """Emit checkpoints (and sync group offsets) once caught up; whether every group offset at start is covered."""
        done = True
        for cp, targets in zip(self.checkpoints, self._checkpoint_targets, strict=True):
            if not targets:
                continue
            with cp.lock:  # the emitter's jobs (and its follower) use it too
                cp.emit()
                if cp.flow_config.sync_group_offsets_enabled:
                    cp.sync_group_offsets()
                done &= cp.covered(targets)
        return done

    def _report(self, stats: list[FlowStats] | None = None) -> None:
        if self.on_stats is not None:
            self.on_stats(stats if stats is not None else self.stats())

    def stats(self, *, wait_s: float | None = None) -> list[FlowStats]:
        """Return every flow's stats, in the driver's order.

        ``wait_s``: seconds to wait for a flow's lock (one of its control jobs runs), past which its previous
        stats are returned again; ``None`` waits.
        """
        failed = {s.name for s in self.supervisors if s.state == SupervisorState.FAILED}
        out = []
        for f in self.flows:
            state = (
                "halted"
                if f.halted is not None
                else "failed"
                if f.name in failed
                else self.end_states.get(f.name, self.state.value)
                if self.state == DriverState.STOPPED
                else self.state.value
            )
            with f.held(wait_s=wait_s) as held:
                if held:
                    self._last_stats[f.name] = _flow_stats(f, state)
            last = self._last_stats.get(f.name) or FlowStats(f.name, state, 0, 0, 0, ())
            out.append(dataclasses.replace(last, state=state))
        return out

    def close(self) -> None:
        """Stop the control jobs, heartbeats and failover watch, publish final totals and metrics, release clients.

        A flow's clients are not released while a control job runs in them (librdkafka crashes the process).
        """
        self.schema_syncs.stop(timeout_s=0)  # a pass under way ends at its registry call's timeout at worst
        self.verify_samples.stop(timeout_s=0)  # a sample under way uses clients of its own
        if not self.control.stop(timeout_s=CONTROL_STOP_S) or not self.commit_followers.stop(timeout_s=CONTROL_STOP_S):
            log.warning(
                "a control job is still running after %.0f s: the flows' clients are left to it, not released",
                CONTROL_STOP_S,
            )
            self.background.stop()
            for lease in self.leases.values():
                lease.close()
            return
        self.background.stop()
        for lease in self.leases.values():  # given up by the supervisors already when run() ran
            lease.close()
        for w in self.failover_watchers:
            w.request_stop()
        # join the failover thread before releasing the watchers' clients: a check still running may be
        # inside one of them (a dead source's call waits up to its timeout), and a librdkafka handle
        # destroyed under a call in flight crashes the process
        wait_s = max((w.stop_timeout_s for w in self.failover_watchers), default=10.0)
        if self.failover.stop(timeout_s=wait_s):
            for w in self.failover_watchers:
                w.close()
        else:
            log.warning(
                "the failover watch is still inside a source call after %.0f s: its clients are left to its "
                "thread, not released",
                wait_s,
            )
        self.heartbeats.close()
        for followers in self.throttle_followers:
            followers.close()
        for follower in self.followers:
            follower.close()
        for cp in self.checkpoints:
            cp.close()
        for closer, what in (
            [
                (functools.partial(p.close, self.end_states.get(p.flow.name)), f"final totals of {p.flow.name}")
                for p in self.totals
            ]
            + [(m.close, f"final metrics of {m.flow.name}") for m in self.metrics]
            + [(s.close, f"final schema figures of {s.flow.name}") for s in self.schema_figures]
        ):
            try:
                closer()
            except Exception as e:  # totals and raw metrics are informational: never fail a clean stop on them
                log.warning("publishing the %s failed: %s", what, e)
        for lease in self.leases.values():  # given up by the supervisors already once run() started them
            lease.close()
        for f in self.flows:
            f.close()


def _copied_to(f: Flow, topic: str, partition: int) -> int | None:
    """Return the copy's position in a source partition of ``f`` (next offset to copy); ``None``: not replicated.

    Read without the flow's lock: one dict lookup and an int, each a consistent value of its own.
    """
    p = f.partitions.get((topic, partition))
    return p.position if p is not None else None


def _flow_stats(f: Flow, state: str) -> FlowStats:
    """``f``'s stats now (its lock held)."""
    topics = tuple(_topic_stats(f, topic, n) for topic, n in sorted(f.topic_partitions.items()))
    return FlowStats(
        flow=f.name,
        state=state,
        records=sum(t.records for t in topics),
        value_bytes=sum(t.value_bytes for t in topics),
        lag=sum(t.lag for t in topics),
        topics=topics,
        gaps=len(f.gaps),
        invalid_offsets=f.invalid_offsets,
    )


def _topic_stats(f: Flow, topic: str, n: int) -> TopicStats:
    ps = [f.partitions[(topic, i)] for i in range(n) if (topic, i) in f.partitions]
    samples = sum(p.latency_samples for p in ps)
    return TopicStats(
        topic=topic,
        remote_topic=f.remote_topics.get(topic, ""),
        partitions=n,
        records=sum(p.records for p in ps),
        value_bytes=sum(p.value_bytes for p in ps),
        lag=sum(p.lag for p in ps),
        latency_ms_avg=(sum(p.latency_ms_sum for p in ps) / samples) if samples else 0.0,
        latency_ms_max=max((p.latency_ms_max for p in ps), default=0),
    )


__all__ = ["DriverState", "FlowStats", "Replicator", "TopicStats", "spare_slots"]
