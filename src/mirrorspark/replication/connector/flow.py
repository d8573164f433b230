"""One replication flow ``source->target`` on the driver (MM2's ``MirrorSourceConnector``), cut into rooms.

:class:`~mirrorspark.replication.connector.topic_sync.TopicSync` (internal topics, discovery, remote
topics, config sync), :class:`~mirrorspark.replication.connector.positions.Positions` (positions,
stored offsets, gaps), :class:`~mirrorspark.replication.connector.task_configs.TaskConfigs`
(``taskConfigs``) and :class:`~mirrorspark.replication.connector.progress_channel.ProgressChannelReader`
(the tasks' progress reports); the flow coordinates them. The copy tasks run in
:mod:`mirrorspark.replication.worker.supervisor`.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

from mirrorspark.client.connect_tasks import previous_tasks_to_fence, read_previous_task_count
from mirrorspark.client.context import FlowContext
from mirrorspark.client.source_offset_reader import check_connector_name, read_source_offset_history
from mirrorspark.config.model import DataPathConfig
from mirrorspark.core.gaps import GapEvent
from mirrorspark.core.progress_records import PartitionReport
from mirrorspark.kafka.admin import ClusterAdmin, PartitionKey
from mirrorspark.mm2.connect_offsets import OffsetHistory
from mirrorspark.mm2.translation import CopiedRanges
from mirrorspark.replication.connector.acl_sync import TopicAclSync
from mirrorspark.replication.connector.gap_ledger import GapLedger
from mirrorspark.replication.connector.live_throttle import LiveThrottle
from mirrorspark.replication.connector.positions import PartitionPosition, Positions
from mirrorspark.replication.connector.progress_channel import ProgressChannelReader
from mirrorspark.replication.connector.scheduler import PeriodicJob
from mirrorspark.replication.connector.schema_sync import SchemaSync
from mirrorspark.replication.connector.task_configs import TaskConfigs
from mirrorspark.replication.connector.topic_sync import TopicSync

if TYPE_CHECKING:
    from mirrorspark.replication.task.spec import CopyTaskSpec, ProvenanceSpec

log = logging.getLogger(__name__)

LAG_COST_FACTOR = 50
"""End offsets (lag) are listed at most once per this many times the listing's own duration."""

LAG_INTERVAL_S = 5.0
"""Seconds between two listings of the source end offsets (lag)."""


class Flow:
    """Driver-side runtime of one replication flow (see the module notes).

    The driver loop and the control thread each hold :attr:`lock` while they read or change the flow
    (:meth:`held`); the loop never waits for it, so a slow job holds up only this flow's supervision.
    """

    def __init__(self, context: FlowContext, data_path: DataPathConfig) -> None:
        cfg = context.flow_config
        self.context = context
        self.config = cfg
        self.name = cfg.name
        self.source = context.cluster("source")
        self.target = context.cluster("target")
        self.policy = context.policy
        self.source_admin: ClusterAdmin = context.cluster_admin("source", "replication-source-admin")
        self.target_admin: ClusterAdmin = context.cluster_admin("target", "replication-target-admin")
        self.topics = TopicSync(context, self.source_admin, self.target_admin)
        self.ledger = GapLedger(context, self.target_admin)
        self.positions = Positions(
            cfg.name,
            self.source_admin,
            offsets_topic=context.internal_topics.offsets,
            auto_offset_reset=(cfg.source_consumer.get("auto.offset.reset") or "earliest").lower(),
            read_committed=self.read_committed,
            on_gap=data_path.on_gap,
            ledger=self.ledger,
        )
        self.tasks = TaskConfigs(context, isolation_level=self.isolation_level)
        self.schemas = SchemaSync.for_flow(context, lambda: self.topics.topic_filter)  # None: bytes as they are
        self.throttle = LiveThrottle(context)  # its job runs apart from the flow's (Replicator.start), off its lock
        self.provenance: ProvenanceSpec | None = None  # the header's cluster ids, from learn_cluster_ids at start
        self.copied = CopiedRanges()  # exact upstream->downstream knowledge, for checkpoints
        self.task_count_seen = 0  # 1 + the highest task index in the flow's progress reports (ids to fence)
        self.previous_tasks = 0  # task indexes of the replicator taken over from, to fence (exactly once)
        self._reported: set[PartitionKey] = set()  # partitions the flow's own progress reports name
        self.reports: ProgressChannelReader | None = None  # the progress channel's reader, from start()
        self.started_at = time.time()
        self._next_end_listing = 0.0
        self.lock = threading.RLock()
        """Held by whoever reads or changes the flow's state (positions, topics, reports, copied ranges)."""

    @contextlib.contextmanager
    def held(self, *, wait_s: float | None = None) -> Iterator[bool]:
        """Hold :attr:`lock` in a ``with`` block, waiting ``wait_s`` (``None``: forever); yield whether it was taken."""
        taken = self.lock.acquire() if wait_s is None else self.lock.acquire(timeout=wait_s)
        try:
            yield taken
        finally:
            if taken:
                self.lock.release()

    # ------------------------------------------------------------------ views

    @property
    def progress_topic(self) -> str:
        """The flow's progress channel on the target."""
        return self.context.internal_topics.progress_channel

    @property
    def partitions(self) -> dict[PartitionKey, PartitionPosition]:
        """Every replicated partition's progress (see :attr:`Positions.by_key`)."""
        return self.positions.by_key

    @property
    def order(self) -> list[PartitionKey]:
        """The replicated partitions in discovery order."""
        return self.positions.order

    @property
    def topic_partitions(self) -> dict[str, int]:
        """``{replicated source topic: partition count}``."""
        return self.topics.topic_partitions

    @property
    def remote_topics(self) -> dict[str, str]:
        """``{replicated source topic: remote topic}``."""
        return self.topics.remote_topics

    @property
    def halted(self) -> str | None:
        """Why ``mirrorspark.on.gap=stop`` halted the flow, or ``None``."""
        return self.positions.halted

    @property
    def gaps(self) -> list[GapEvent]:
        """Gap events found by this process."""
        return self.positions.gaps

    @property
    def invalid_offsets(self) -> int:
        """Stored source offsets skipped as impossible (past the source's end)."""
        return self.positions.invalid_offsets

    @property
    def last_commit_at(self) -> float | None:
        """When a copy task last committed a position of the flow (epoch s), ``None`` before."""
        return self.positions.last_commit_at

    @property
    def exactly_once(self) -> bool:
        """Whether the flow copies exactly once: ``<target>.exactly.once.source.support=enabled`` (KIP-618)."""
        return self.tasks.exactly_once

    @property
    def fence_count(self) -> int:
        """Task indexes to fence before a generation starts (KIP-618 ``fenceZombies``): max of tasks now and before."""
        return max(self.config.tasks_max, self.task_count_seen, self.previous_tasks)

    @property
    def isolation_level(self) -> str:
        """The data path's ``<source>.consumer.isolation.level``, default ``read_uncommitted`` (as MM2)."""
        return (self.config.source_consumer.get("isolation.level") or "").strip() or "read_uncommitted"

    @property
    def read_committed(self) -> bool:
        """Whether the data path reads only committed records (:attr:`isolation_level`)."""
        return self.isolation_level == "read_committed"

    def should_replicate(self, topic: str) -> bool:
        """MM2's ``MirrorSourceConnector.shouldReplicateTopic`` for this flow (:meth:`TopicSync.should_replicate`)."""
        return self.topics.should_replicate(topic)

    # ------------------------------------------------------------------ start-up

    def start(self) -> None:
        """Connect, create internal topics, read stored offsets and copied runs, discover topics.

        Raises ``ClusterUnreachableError``, ``ClusterError`` (an internal topic), ``SourceConnectorNameError``
        (offsets stored only under another connector name), ``ConfigError`` (exactly once, another
        replicator's task count unknown: :func:`~mirrorspark.client.connect_tasks.previous_tasks_to_fence`) or
        ``SchemaRegistryError`` (schema replication: :meth:`SchemaSync.start`).
        """
        self.source_admin.check_reachable()
        self.target_admin.check_reachable()
        self.topics.create_internal_topics()
        ledger = self.ledger.start()
        others: dict[str, dict[PartitionKey, int]] = {}
        history = self._offset_history(others)
        cfg = self.config
        check_connector_name(
            history,
            others,
            flow=self.name,
            connector_name=cfg.source_connector_name,
            offsets_topic=self.context.internal_topics.offsets,
            target=cfg.target,
            auto_offset_reset=self.positions.auto_offset_reset,
            # not heartbeats: every flow of the source copies them, under every connector name sharing the topic
            replicates=lambda t: self.should_replicate(t) and not self.policy.is_heartbeats_topic(t),
        )
        self.positions.restore(history, ledger.topic_ids)
        # before the positions are set: the flow's own reports tell a truncated source log from a foreign offset
        self.reports = ProgressChannelReader(self)
        restored = self.reports.load()
        if restored:
            log.info(
                "%s: restored the copied segments of %d report(s) from %s", self.name, restored, self.progress_topic
            )
        if self.exactly_once:
            foreign = any(k not in self._reported for k in history)
            self.previous_tasks = previous_tasks_to_fence(
                self.config, read_previous_task_count(self.context), foreign=foreign
            )
        self.refresh_topics()
        if self.schemas is not None:
            if any(k not in self._reported for k in history):
                log.warning(
                    "%s: records another replicator (MirrorMaker 2?) copied before this run keep the source "
                    "registry's schema ids; those copied from now on carry the target's (docs/schemas.md)",
                    self.name,
                )
            self.schemas.start()

    def _offset_history(
        self, others: dict[str, dict[PartitionKey, int]] | None = None
    ) -> dict[PartitionKey, OffsetHistory]:
        """Read the flow's stored source offsets (newest last); fill ``others`` with those of other connector names."""
        cfg = self.config
        return read_source_offset_history(
            cfg.target_consumer,
            cfg.target_admin,
            cfg.target,
            self.context.internal_topics.offsets,
            cfg.source,
            client_id=self.context.client_id("offsets-target-consumer"),
            clients=self.context.clients,
            connector_name=cfg.source_connector_name,
            others=others,
        )

    def reload_positions(self) -> None:
        """Move positions forward to the newest source offsets in ``mm2-offsets``; raises ``ClusterError``."""
        self.positions.reload(self._offset_history())

    # ------------------------------------------------------------------ control jobs

    def jobs(self) -> list[PeriodicJob]:
        """Declare the source connector's enabled jobs: config sync, ACL sync (at once), topic refresh, end offsets."""
        cfg, name = self.config, self.name
        jobs = []
        if cfg.sync_topic_configs_enabled:
            every = cfg.sync_topic_configs_interval_s
            jobs.append(PeriodicJob(f"sync topic configs {name}", every, self.sync_configs, initial_delay_s=every))
        if cfg.sync_topic_acls_enabled:
            acls = TopicAclSync.for_flow(self)
            jobs.append(PeriodicJob(f"sync topic ACLs {name}", cfg.sync_topic_acls_interval_s, acls.sync))
        if cfg.refresh_topics_enabled:
            every = cfg.refresh_topics_interval_s
            jobs.append(PeriodicJob(f"refresh topics {name}", every, self.refresh, initial_delay_s=every))
        lag = LAG_INTERVAL_S
        return [*jobs, PeriodicJob(f"list end offsets {name}", lag, self.list_end_offsets, initial_delay_s=lag)]

    def refresh(self) -> None:
        """Run the scheduled topic-refresh job (see :meth:`refresh_topics`); nothing once the flow is halted."""
        if self.halted is None:
            self.refresh_topics()

    def refresh_topics(self) -> list[PartitionKey]:
        """Find new source topics and partitions, create or grow their remote topics, check ids; return those added.

        A topic no longer matching stops being copied, its positions kept for a return; a re-created topic is
        a gap and starts over at its log start. Raises ``ClusterError``.
        """
        found = self.topics.refresh()
        for topic in found.dropped:
            self.positions.drop_topic(topic, on_source=topic in found.on_source)
            log.info("%s: stopped replicating %s", self.name, topic)
        for topic in self.positions.check_topic_ids(found.wanted):
            self.topics.forget(topic)
            self.copied.forget_topic(topic)  # the old incarnation's copies translate nothing of the new one
        if self.halted is not None:
            return []
        added = self.topics.add(found.wanted)
        if added:
            self.positions.add(added)
            log.info("%s: replicating %d new partitions", self.name, len(added))
        return added

    def sync_configs(self) -> None:
        """Run the scheduled config-sync job (:meth:`TopicSync.sync_configs`)."""
        self.topics.sync_configs()

    def check_positions(self, keys: Iterable[PartitionKey]) -> list[GapEvent]:
        """Check ``keys``' positions against their source partitions now; return the gaps (a new topic id: refresh).

        Raises ``ClusterError`` when the source or the gap ledger cannot be reached.
        """
        keys = sorted({k for k in keys if k in self.partitions})
        if not keys or self.halted is not None:
            return []
        before = len(self.gaps)
        recreated = self.positions.recreated(self.positions.current_topic_ids({k[0] for k in keys}))
        if recreated:
            self.refresh_topics()  # records the gaps and adds the new topics' partitions from their log start
            keys = [k for k in keys if k[0] not in recreated and k in self.partitions]
        self.positions.check_ranges(keys)
        return self.gaps[before:]

    def list_end_offsets(self) -> None:
        """List every partition's source end offset (at most 1/:data:`LAG_COST_FACTOR` of a core).

        Raises ``ClusterError`` when the source's end offsets cannot be listed.
        """
        now = time.monotonic()
        if self.halted is not None or not self.order or now < self._next_end_listing:
            return
        behind = self.positions.list_ends()
        self._next_end_listing = time.monotonic() + LAG_COST_FACTOR * (time.monotonic() - now)
        if behind:  # the source log lost records we copied: truncated, or the topic was re-created
            self.check_positions(behind)

    def end_snapshot(self) -> dict[PartitionKey, int]:
        """Return ``{(topic, partition): end offset}`` now (where a bounded run ends); raises ``ClusterError``."""
        behind = self.positions.list_ends()
        if behind:
            self.check_positions(behind)
        return {k: self.partitions[k].end_offset for k in self.order}

    def caught_up(self, targets: Mapping[PartitionKey, int]) -> bool:
        """Whether every partition in ``targets`` reached its target position (:meth:`Positions.caught_up`)."""
        return self.positions.caught_up(targets)

    # ------------------------------------------------------------------ copy tasks

    @property
    def assignment(self) -> tuple[tuple[PartitionKey, ...], int]:
        """What the copy tasks run: partitions in order and re-created topics; a change is a new generation (F2)."""
        return tuple(self.order), self.positions.resets

    def task_specs(
        self,
        generation: int,
        grant_address: tuple[str, int, str],
        *,
        stop_at: Mapping[PartitionKey, int] | None = None,
        epoch: int = 0,
    ) -> list[CopyTaskSpec]:
        """Cut the partitions into copy tasks from their positions (:class:`TaskConfigs`); ``[]`` once halted.

        Records ``generation`` as started (for :attr:`PartitionPosition.from_generation`); ``epoch`` is the lease epoch.
        """
        if self.halted is not None:
            return []
        self.positions.started_generation = max(self.positions.started_generation, generation)
        return self.tasks.specs(
            self.order,
            positions={k: p.position for k, p in self.partitions.items()},
            remote_topics=self.remote_topics,
            offsets_partitions=self.topics.offsets_partitions,
            generation=generation,
            grant_address=grant_address,
            stop_at=stop_at,
            topic_ids=self.positions.topic_ids,
            restarted=frozenset(k for k, p in self.partitions.items() if p.restarted),
            epoch=epoch,
            run=self.positions.run,
            schemas=self.schemas.task_spec() if self.schemas is not None else None,
            provenance=self.provenance,
        )

    def apply_report(
        self, report: PartitionReport, *, generation: int | None = None, segments_only: bool = False
    ) -> bool:
        """Apply one copy task's progress report: position, totals and copied segments.

        Positions move only on reports of ``generation`` (``None``: any) of this run (``engine-audit-2.md``
        N6); ``segments_only`` takes only segments and the position reached (reports read at start). A
        report of another topic incarnation is dropped (F2). Returns whether the flow replicates its partition.
        """
        self._reported.add((report.topic, report.partition))  # its offsets are the flow's own (exactly once)
        if not self.positions.same_incarnation(report):
            if segments_only:
                self.positions.note_other_incarnation(report)  # an earlier run's: it may tell a re-created topic
            return False
        if report.segments:
            self.copied.add(report.topic, report.partition, report.segments, epoch=report.epoch)
        self.task_count_seen = max(self.task_count_seen, report.task + 1)
        return self.positions.apply_report(report, generation=generation, segments_only=segments_only)

    def close(self) -> None:
        """Release every client of the flow."""
        self.topics.close()
        self.throttle.close()
        if self.reports is not None:
            self.reports.close()
            self.reports = None
        self.ledger.close()
        if self.schemas is not None:
            self.schemas.close()
        self.source_admin = self.target_admin = None  # type: ignore[assignment]


__all__ = ["Flow"]
