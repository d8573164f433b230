"""The runtime of one replication flow ``source->target`` (MM2 ``MirrorSourceConnector``).

A :class:`Flow` owns everything of a flow that lives on the driver:

* **discovery** — which source topics to replicate (MM2's
  ``shouldReplicateTopic``: topic filter, heartbeats always, never internal
  topics, never a cycle), refreshed every ``refresh.topics.interval.seconds``;
* **remote topics** — created on the target with the source's partition count
  and topic configs (MM2's filter), grown when the source gains partitions;
* **progress** — the committed source position of every partition, loaded at
  start from Kafka Connect's offsets topic ``mm2-offsets.<source>.internal``
  on the target (MM2's layout, so MM2 and mirrorspark resume each other) and
  written back after every batch;
* **offset syncs** — written to ``mm2-offset-syncs.<other alias>.internal``
  after the batch's records are acknowledged, never before;
* **planning** — the ranges ``[position, end offset)`` of the next batch,
  split over ``min(tasks.max, partitions)`` tasks round-robin;
* **gaps** — every position is checked against the partition's log start and end and its
  topic's id (at start, at every topic refresh, when a task finds its offset out of range and
  when an end offset falls below a position): records lost before they were copied are
  recorded as gap events (:mod:`mirrorspark.mm2.gaps`) in the gap ledger on the target,
  logged at ERROR and counted; then the flow follows ``mirrorspark.on.gap``. A stored source
  offset past the source's end is the flow's own when its progress reports reached past it
  (the source log was truncated while it was stopped: a ``truncated`` gap); otherwise it is a
  foreign or corrupt ``mm2-offsets`` record, skipped with a WARNING and counted, never acted on.

Commit order after a batch: records (acknowledged in the tasks) → offset syncs
→ source offsets. A crash between steps only repeats the last batch.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from confluent_kafka.admin import AdminClient

from mirrorspark.client.context import FlowContext, Side
from mirrorspark.client.source_offsets import read_source_offset_history
from mirrorspark.config.model import DataPathConfig
from mirrorspark.errors import ClusterError
from mirrorspark.kafka.admin import (
    PartitionKey,
    TopicSpec,
    alter_topic_configs,
    check_reachable,
    create_partitions,
    create_topics,
    describe_topic_configs,
    describe_topics,
    end_offsets,
    ensure_topic,
    list_topics,
    start_offsets,
    topic_configs,
)
from mirrorspark.kafka.delivery import Outgoing, deliver
from mirrorspark.mm2.config_sync import topic_config_changes
from mirrorspark.mm2.connect_offsets import (
    OffsetHistory,
    default_partition,
    last_valid_offset,
    source_offset_key,
    source_offset_value,
    task_transactional_id,
)
from mirrorspark.mm2.filters import should_replicate_topic
from mirrorspark.mm2.gaps import GapEvent, check_position, recreated_gap
from mirrorspark.mm2.internal_topics import TASK_PROGRESS_PREFIX, mirrorspark_topic
from mirrorspark.mm2.policy import ReplicationPolicy
from mirrorspark.mm2.records import OffsetSync
from mirrorspark.mm2.task_progress import PartitionReport, encode_report, newest_segments
from mirrorspark.mm2.translation import CopiedRanges
from mirrorspark.replication.control import LiveFilters
from mirrorspark.replication.gaps import GapLedger
from mirrorspark.replication.partitions import (
    IdleWatch,
    PartitionProgress,
)
from mirrorspark.replication.remote_placement import RemotePlacement
from mirrorspark.replication.reports import ProgressChannel
from mirrorspark.replication.stream import COMMIT_TIMEOUT_MS, StreamTask, init_transactions_timeout_s
from mirrorspark.replication.tasks import CopyTask, PartitionRange, PartitionResult, assign_round_robin

log = logging.getLogger(__name__)

FULL_REFRESH_MIN_S = 5.0
"""Least seconds between two listings of the end offsets of *every* partition of a flow."""

LAG_COST_FACTOR = 50
"""The continuous engine lists all end offsets (lag) at most once per this many times the listing's own duration."""

FULL_REFRESH_COST_FACTOR = 20
"""A full end-offset listing waits at least this many times its own last duration (≤ 5% of a core)."""


class Flow:
    """Driver-side runtime of one replication flow.

    Parameters
    ----------
    context:
        The flow's context (configuration, policy, filters, client factory), built once at start.
    data_path:
        mirrorspark's data-path settings (batch caps).

    Not thread-safe: the driver loop calls every method.
    """

    def __init__(self, context: FlowContext, data_path: DataPathConfig) -> None:
        config = context.flow
        self.context = context
        self.config = config
        self.source = context.cluster("source")
        self.target = context.cluster("target")
        self.data_path = data_path
        self.name = config.name
        self.policy: ReplicationPolicy = context.policy
        self.topic_filter = context.topic_filter
        # the lists in effect = the config file's + `mirrorspark control` changes, re-read at every topic refresh
        self.live_filters = LiveFilters(context)
        self.config_filter = context.config_filter
        self.partitions: dict[PartitionKey, PartitionProgress] = {}
        self.order: list[PartitionKey] = []  # discovery order (MM2 assigns round-robin in it)
        self.topic_partitions: dict[str, int] = {}  # replicated source topics -> partition count
        self.remote_topics: dict[str, str] = {}  # source topic -> remote topic
        self._stored: dict[PartitionKey, int] = {}
        self._history: dict[PartitionKey, list[int]] = {}  # stored offsets to fall back on, oldest first
        self._reached: dict[PartitionKey, int] = {}  # furthest position the flow's own progress reports name
        self._topic_ids: dict[str, str] = {}  # source topic -> id last recorded in the gap ledger
        self._from_start: set[str] = set()  # re-created topics: their partitions start at the log start
        self._ledger: GapLedger | None = None
        self.gaps: list[GapEvent] = []  # gap events found by this process
        self.invalid_offsets = 0  # stored source offsets skipped as impossible (past the source's end)
        self.halted: str | None = None  # why mirrorspark.on.gap=stop halted the flow
        self._src_admin: AdminClient = context.admin("source", "replication-source-admin")
        self._tgt_admin: AdminClient = context.admin("target", "replication-target-admin")
        self._placement = (
            None
            if config.replica_placement is None
            else RemotePlacement(
                config.replica_placement, self._tgt_admin, config.target, timeout_s=config.admin_timeout_ms / 1000
            )
        )
        self._task_confs: tuple[dict[str, Any], dict[str, Any]] | None = None
        self._offsets_producer: Any = None
        self._syncs_producer: Any = None
        self._offsets_partitions = config.offset_storage_partitions
        self.copied = CopiedRanges()  # exact upstream->downstream knowledge, for checkpoints
        self._hot: set[PartitionKey] = set()  # end offsets listed at every plan (the rest: IdleWatch)
        self._watch: IdleWatch | None = None
        self.reports: ProgressChannel | None = None  # the progress channel's reader, from start()
        self._next_full_refresh = 0.0
        self._next_end_listing = 0.0
        self.batches = 0
        self.started_at = time.time()
        self.last_commit_at: float | None = None

    @property
    def source_admin(self) -> AdminClient:
        """The flow's admin client of the source cluster (shared with its ACL sync); released by :meth:`close`."""
        return self._src_admin

    @property
    def target_admin(self) -> AdminClient:
        """The flow's admin client of the target cluster (shared with its ACL sync and progress publisher)."""
        return self._tgt_admin

    @property
    def idle_partitions(self) -> frozenset[PartitionKey]:
        """Caught-up partitions left to the :class:`IdleWatch` (their end offsets are not listed per plan)."""
        return frozenset(self._watch.watched) if self._watch is not None else frozenset()

    # ------------------------------------------------------------------ start-up

    @property
    def offset_syncs_topic(self) -> str:
        """Name of the flow's offset-syncs topic (the alias in it is the *other* cluster's)."""
        if self.config.offset_syncs_topic_location == "source":
            return self.policy.offset_syncs_topic(self.config.target)
        return self.policy.offset_syncs_topic(self.config.source)

    @property
    def progress_topic(self) -> str:
        """Name of the flow's progress channel on the target (:mod:`mirrorspark.mm2.task_progress`)."""
        return mirrorspark_topic(TASK_PROGRESS_PREFIX, self.policy, self.config.source)

    @property
    def exactly_once(self) -> bool:
        """Whether the flow copies exactly once: ``<target>.exactly.once.source.support=enabled`` (KIP-618).

        Its copy tasks then write records and source offsets in one transaction each
        (:func:`~mirrorspark.replication.stream.commit_transaction`). ``preparing`` is KIP-618's
        rolling-upgrade step, at least once, as in MM2.
        """
        return self.config.exactly_once_source_support == "enabled"

    @property
    def isolation_level(self) -> str:
        """The data path's source isolation level: ``<source>.consumer.isolation.level``, default ``read_uncommitted``.

        Planning (end offsets), the copy tasks' consumers and the idle watch all read with
        this one level. The default is the Java consumer's, so mirrorspark copies what MM2
        copies: records of aborted and still-open transactions too (librdkafka's own default,
        ``read_committed``, would stop a task at an open transaction's last stable offset while
        its plan waited for the high watermark). With ``read_committed`` an open transaction
        delays only its own partition, at its last stable offset.
        """
        return (self.config.source_consumer.get("isolation.level") or "").strip() or "read_uncommitted"

    @property
    def read_committed(self) -> bool:
        """Whether the data path reads only committed records (:attr:`isolation_level`)."""
        return self.isolation_level == "read_committed"

    def start(self) -> None:
        """Connect, create internal topics, load committed offsets, discover topics.

        Raises
        ------
        ClusterUnreachableError
            Either cluster does not answer.
        ClusterError
            An internal topic cannot be created.
        """
        cfg = self.config
        admin_timeout_s = cfg.admin_timeout_ms / 1000
        check_reachable(self._src_admin, cfg.source, self.source.bootstrap_servers)
        check_reachable(self._tgt_admin, cfg.target, self.target.bootstrap_servers)
        if self._placement is not None:
            self._placement.check()  # mirrorspark.replica.placement against the target's racks
        ensure_topic(
            self._tgt_admin,
            cfg.target,
            cfg.offset_storage_topic,
            partitions=cfg.offset_storage_partitions,
            replication_factor=cfg.offset_storage_replication_factor,
            config={"cleanup.policy": "compact"},
            timeout_s=admin_timeout_s,
        )
        self._offsets_partitions = list_topics(self._tgt_admin, cfg.target, timeout_s=admin_timeout_s).get(
            cfg.offset_storage_topic, cfg.offset_storage_partitions
        )
        self._offsets_producer = self.context.producer(
            "target",
            "offsets-target-producer",
            overrides={"enable.idempotence": True, "linger.ms": 0},
        )
        if cfg.emit_offset_syncs_enabled:
            on_source = cfg.offset_syncs_topic_location == "source"
            ensure_topic(
                self._src_admin if on_source else self._tgt_admin,
                cfg.source if on_source else cfg.target,
                self.offset_syncs_topic,
                partitions=1,
                replication_factor=cfg.offset_syncs_topic_replication_factor,
                config={"cleanup.policy": "compact"},
                timeout_s=admin_timeout_s,
            )
            side: Side = "source" if on_source else "target"
            self._syncs_producer = self.context.producer(
                side,
                f"offset-syncs-{side}-producer",
                overrides={"enable.idempotence": True, "linger.ms": 0},
            )
        ensure_topic(
            self._tgt_admin,
            cfg.target,
            self.progress_topic,
            partitions=1,
            replication_factor=cfg.offset_storage_replication_factor,
            # the last hour of reports stays a readable stream; the newest per partition is kept for good
            config={"cleanup.policy": "compact", "min.compaction.lag.ms": "3600000"},
            timeout_s=admin_timeout_s,
        )
        self._ledger = GapLedger(self.context, self._tgt_admin)
        self._topic_ids = dict(self._ledger.start().topic_ids)
        history = self._offset_history()
        self._stored = {k: h.offsets[-1] for k, h in history.items()}
        self._history = {k: list(h.offsets) for k, h in history.items()}
        self._watch = IdleWatch(self.context, isolation_level=self.isolation_level)
        # before the positions are set: the flow's own reports tell a truncated source log from a foreign offset
        self.reports = ProgressChannel(self)
        restored = self.reports.load()
        if restored:
            log.info(
                "%s: restored the copied segments of %d report(s) from %s", self.name, restored, self.progress_topic
            )
        self.refresh_topics()

    # ------------------------------------------------------------------ discovery

    def should_replicate(self, topic: str) -> bool:
        """MM2's ``MirrorSourceConnector.shouldReplicateTopic`` for this flow."""
        return should_replicate_topic(
            topic,
            topic_filter=self.topic_filter,
            policy=self.policy,
            target_alias=self.config.target,
            heartbeats_replication_enabled=self.config.heartbeats_replication_enabled,
        )

    def refresh(self) -> None:
        """Run the scheduled topic-refresh job (see :meth:`refresh_topics`); nothing once the flow is halted."""
        if self.halted is None:
            self.refresh_topics()

    def refresh_topics(self) -> list[PartitionKey]:
        """Find new source topics and partitions; create or grow their remote topics.

        The topic filter is rebuilt first from the config file's lists and the
        changes in the control topic (:class:`~mirrorspark.replication.control.LiveFilters`).
        Topics no longer matching (e.g. after an allow-list change) stop being
        replicated; their remote topics are left alone and their positions are
        kept, so a topic allowed again resumes where it stopped. Returns the
        partitions added by this call.
        """
        cfg = self.config
        admin_timeout_s = cfg.admin_timeout_ms / 1000
        self.live_filters.poll()
        self.topic_filter = self.live_filters.topic_filter(self.topic_filter)
        source_topics = list_topics(self._src_admin, cfg.source, timeout_s=admin_timeout_s)
        wanted = {t: n for t, n in sorted(source_topics.items()) if n > 0 and self.should_replicate(t)}
        target_topics = list_topics(self._tgt_admin, cfg.target, timeout_s=admin_timeout_s)
        new_topics = [t for t in wanted if self.policy.format_remote_topic(cfg.source, t) not in target_topics]
        configs = (
            topic_configs(
                self._src_admin,
                cfg.source,
                new_topics,
                include_defaults=cfg.use_defaults_from == "source",
                timeout_s=admin_timeout_s,
            )
            if new_topics
            else {}
        )
        grow: dict[str, int] = {}
        grow_assignments: dict[str, Sequence[Sequence[int]]] = {}
        create: list[TopicSpec] = []
        placement = self._placement
        if placement is not None:
            placement.begin_refresh()
        for topic, n in wanted.items():
            remote = self.policy.format_remote_topic(cfg.source, topic)
            if remote not in target_topics:
                conf = {
                    k: v
                    for k, v in configs.get(topic, {}).items()
                    if self.config_filter.should_replicate_config_property(k)
                }
                placed = placement.assignment(remote, n) if placement is not None else None
                create.append(TopicSpec(remote, n, cfg.replication_factor, conf, placed))
            elif target_topics[remote] < n:
                grow[remote] = n
                have = target_topics[remote]
                placed = placement.assignment(remote, n - have, first_partition=have) if placement is not None else None
                if placed is not None:
                    grow_assignments[remote] = placed
        if create:
            created = create_topics(
                self._tgt_admin, cfg.target, create, wait_for_leaders=False, timeout_s=admin_timeout_s
            )
            if created:
                log.info(
                    "%s: created %d remote topic(s): %s",
                    self.name,
                    len(created),
                    ", ".join(created[:10]) + (" …" if len(created) > 10 else ""),
                )
        if grow:
            create_partitions(
                self._tgt_admin, cfg.target, grow, assignments=grow_assignments, timeout_s=admin_timeout_s
            )
            log.info("%s: grew remote topics %s", self.name, grow)
        # Drop topics that no longer match (remote topics are kept).
        for topic in [t for t in self.topic_partitions if t not in wanted]:
            del self.topic_partitions[topic]
            self.remote_topics.pop(topic, None)
            for key in [k for k in self.order if k[0] == topic]:
                self.order.remove(key)
                self._hot.discard(key)
                if self._watch is not None:
                    self._watch.unwatch([key])
                dropped = self.partitions.pop(key, None)
                if dropped is not None and dropped.position > 0 and topic in source_topics:
                    self._stored[key] = dropped.position - 1  # filtered out, not deleted: resume here if allowed again
                    self._history.pop(key, None)
                    self._reached[key] = max(self._reached.get(key, -1), dropped.position)  # the flow's own
            log.info("%s: stopped replicating %s", self.name, topic)
        self._check_topic_ids(wanted)
        if self.halted is not None:
            return []
        added: list[PartitionKey] = []
        for topic, n in wanted.items():
            self.remote_topics[topic] = self.policy.format_remote_topic(cfg.source, topic)
            have = self.topic_partitions.get(topic, 0)
            if n > have:
                added.extend((topic, p) for p in range(have, n))
                self.topic_partitions[topic] = n
        if added:
            self._init_positions(added)
            log.info("%s: replicating %d new partitions", self.name, len(added))
        return added

    def sync_topic_configs(self) -> dict[str, dict[str, str | None]]:
        """Bring remote topics' configs in line with their source topics (MM2 ``syncTopicConfigs``, KIP-894).

        For every replicated topic whose remote topic exists, the changes of
        :func:`~mirrorspark.mm2.config_sync.topic_config_changes` are sent (only differences).

        Returns
        -------
        dict[str, dict[str, str | None]]
            The changes applied, ``{remote topic: {name: value or None (deleted)}}``.
        """
        cfg = self.config
        topics = sorted(self.topic_partitions)
        if not topics:
            return {}
        admin_timeout_s = cfg.admin_timeout_ms / 1000
        source = describe_topic_configs(self._src_admin, cfg.source, topics, timeout_s=admin_timeout_s)
        remote_of = {t: self.remote_topics[t] for t in topics if t in source}
        target = describe_topic_configs(self._tgt_admin, cfg.target, remote_of.values(), timeout_s=admin_timeout_s)
        changes: dict[str, dict[str, str | None]] = {}
        for topic, remote in remote_of.items():
            have = target.get(remote)
            if have is None:
                continue
            delta = topic_config_changes(source[topic], have, self.config_filter)
            if delta:
                changes[remote] = delta
        if changes:
            alter_topic_configs(self._tgt_admin, cfg.target, changes, timeout_s=admin_timeout_s)
            log.info("%s: synced topic configs %s", self.name, changes)
        return changes

    def _offset_history(self) -> dict[PartitionKey, OffsetHistory]:
        """Read the flow's stored source offsets from ``mm2-offsets`` (newest last per partition)."""
        cfg = self.config
        return read_source_offset_history(
            cfg.target_consumer,
            cfg.target_admin,
            cfg.target,
            cfg.offset_storage_topic,
            cfg.source,
            client_id=self.context.client_id("offsets-target-consumer"),
            clients=self.context.clients,
        )

    def reload_positions(self) -> None:
        """Move positions forward to the newest source offsets in ``mm2-offsets`` (another instance's commits).

        Called when this instance takes a flow's lease over: the previous holder's tasks
        committed past the positions this instance knew. Positions never move backwards.

        Raises
        ------
        ClusterError
            The offsets topic cannot be read.
        """
        history = self._offset_history()
        for k, h in history.items():
            p = self.partitions.get(k)
            if p is not None and h.offsets and h.offsets[-1] + 1 > p.position:
                p.position = h.offsets[-1] + 1

    def sync_configs(self) -> None:
        """Run the scheduled config-sync job (see :meth:`sync_topic_configs`)."""
        self.sync_topic_configs()

    def _init_positions(self, keys: Sequence[PartitionKey]) -> None:
        """Set the starting positions of newly replicated partitions.

        A partition with a stored source offset resumes after the newest stored offset the source
        partition can hold, or held when the flow's own progress reports reached past it (offsets
        past its end and past what the flow reached are foreign or corrupt: skipped with a WARNING
        and counted in :attr:`invalid_offsets`; none left = the log start); a resumed position
        below the log start, or beyond the end (the source log was truncated, e.g. by an unclean
        leader election), is a gap. ``auto.offset.reset`` applies only to partitions with no stored offset at all
        (``latest`` = the end offset, anything else = the log start); partitions of a re-created
        topic start at its log start.
        """
        cfg = self.config
        keys = list(keys)
        reset = (cfg.source_consumer.get("auto.offset.reset") or "earliest").lower()
        starts = start_offsets(self._src_admin, cfg.source, keys)
        ends = end_offsets(self._src_admin, cfg.source, keys)  # high watermarks: what the source holds
        fresh = [k for k in keys if k not in self._stored and k[0] not in self._from_start]
        latest = (
            end_offsets(self._src_admin, cfg.source, fresh, read_committed=self.read_committed)
            if reset == "latest" and fresh
            else {}
        )
        now = int(time.time() * 1000)
        for k in keys:
            log_start, log_end = starts.get(k, 0), ends.get(k, 0)
            if k[0] in self._from_start:
                pos = log_start
            elif k in self._stored:
                history = self._history.pop(k, None) or [self._stored[k]]
                off, skipped = last_valid_offset(history, log_end, reached=self._reached.get(k))
                if skipped:
                    self.invalid_offsets += len(skipped)
                    log.warning(
                        "%s: ignoring %d stored source offset(s) of %s-%d in '%s' (%s) past the partition's end "
                        "offset %d and past what the flow's progress reports reached (a foreign or corrupt record); "
                        "resuming at %s",
                        self.name,
                        len(skipped),
                        k[0],
                        k[1],
                        cfg.offset_storage_topic,
                        ", ".join(map(str, skipped)),
                        log_end,
                        f"the last valid one, offset {off + 1}" if off is not None else f"the log start, {log_start}",
                    )
                pos = off + 1 if off is not None else log_start
                if k in starts and k in ends and log_start <= log_end:
                    r = check_position(self.name, k[0], k[1], pos, log_start, log_end, at=now)
                    if r.gap is not None and self._on_gap(r.gap):
                        pos = r.position
            else:
                pos = latest.get(k, log_end) if reset == "latest" else log_start
            self.partitions[k] = PartitionProgress(position=pos)
            self.order.append(k)
            self._hot.add(k)
        self._from_start.difference_update(k[0] for k in keys)

    # ------------------------------------------------------------------ gaps

    def _on_gap(self, event: GapEvent) -> bool:
        """Log, count and record a gap; tell whether the flow goes on (``mirrorspark.on.gap=continue``).

        Raises
        ------
        ClusterError
            The gap ledger did not acknowledge the event (nothing moves on).
        """
        stop = self.data_path.on_gap == "stop"
        log.error(
            "%s; %s",
            event.describe(),
            "mirrorspark.on.gap=stop: the flow halts"
            if stop
            else (
                "resuming at the new topic's beginning"
                if event.reason == "recreated"
                else "resuming at the source's log start"
                if event.reason == "deleted"
                else "resuming at the source's log end"
            ),
        )
        if self._ledger is not None:
            self._ledger.record_gap(event)
        self.gaps.append(event)
        if stop:
            if self.halted is None:
                self.halted = (
                    f"{event.describe()}; mirrorspark.on.gap=stop halted flow {self.name}: set "
                    "mirrorspark.on.gap=continue to resume after the gap (the gap is kept in "
                    f"'{self._ledger.topic if self._ledger else 'mm2-gaps'}' and shown by mirrorspark status)"
                )
            return False
        return True

    def _current_topic_ids(self, topics: Iterable[str]) -> dict[str, str]:
        timeout_s = self.config.admin_timeout_ms / 1000
        described = describe_topics(self._src_admin, self.config.source, topics, timeout_s=timeout_s)
        return {t: d.topic_id for t, d in described.items() if d.topic_id}

    def _check_topic_ids(self, topics: Iterable[str]) -> None:
        """Compare the ids of ``topics`` with those recorded; a changed id is a re-created topic.

        The partitions of a re-created topic are dropped (the caller adds the new topic's
        partitions, from its log start); the new ids are recorded in the gap ledger after the gap
        events, and not at all when ``mirrorspark.on.gap=stop`` halts the flow.
        """
        ids = self._current_topic_ids(topics)
        now = int(time.time() * 1000)
        changed: dict[str, str] = {}
        for topic, tid in sorted(ids.items()):
            known = self._topic_ids.get(topic)
            if known == tid:
                continue
            if known is not None:
                in_process = [k for k in self.order if k[0] == topic]
                stored = sorted(k for k in self._stored if k[0] == topic and k not in self.partitions)
                go_on = True
                for k in in_process:
                    p = self.partitions[k]
                    end = p.end_offset if p.end_offset >= 0 else None
                    go_on &= self._on_gap(recreated_gap(self.name, topic, k[1], p.position, end, known, tid, now))
                for k in stored:
                    go_on &= self._on_gap(
                        recreated_gap(self.name, topic, k[1], self._stored[k] + 1, None, known, tid, now)
                    )
                if not go_on:
                    continue
                self._forget_topic(topic)
                self._from_start.add(topic)
            changed[topic] = tid
        if changed and self.halted is None:
            if self._ledger is not None:
                self._ledger.record_topic_ids(changed)
            self._topic_ids.update(changed)

    def _forget_topic(self, topic: str) -> None:
        """Drop every partition and stored offset of ``topic`` (it will be added again as new)."""
        self.topic_partitions.pop(topic, None)
        for key in [k for k in self.order if k[0] == topic]:
            self.order.remove(key)
            self._hot.discard(key)
            if self._watch is not None:
                self._watch.unwatch([key])
            self.partitions.pop(key, None)
        for key in [k for k in self._stored if k[0] == topic]:
            del self._stored[key]
            self._history.pop(key, None)
        for key in [k for k in self._reached if k[0] == topic]:
            del self._reached[key]

    def check_positions(self, keys: Iterable[PartitionKey]) -> list[GapEvent]:
        """Check the positions of ``keys`` against their source partitions now; act on any gap.

        Called when a task found a position out of range and when an end offset fell below a
        position. A changed topic id is handled as a re-created topic (a topic refresh runs);
        otherwise a position below the log start or above the end is a gap
        (:func:`~mirrorspark.mm2.gaps.check_position`).

        Parameters
        ----------
        keys:
            Partitions of the flow (others are ignored).

        Returns
        -------
        list[GapEvent]
            The gaps found.

        Raises
        ------
        ClusterError
            The source cannot be described or listed, or the gap ledger cannot be written.
        """
        keys = sorted({k for k in keys if k in self.partitions})
        if not keys or self.halted is not None:
            return []
        before = len(self.gaps)
        topics = {k[0] for k in keys}
        ids = self._current_topic_ids(topics)
        recreated = {t for t, i in ids.items() if self._topic_ids.get(t) not in (None, i)}
        if recreated:
            self.refresh_topics()  # records the gaps and adds the new topics' partitions from their log start
            keys = [k for k in keys if k[0] not in recreated and k in self.partitions]
        cfg = self.config
        starts = start_offsets(self._src_admin, cfg.source, keys)
        ends = end_offsets(self._src_admin, cfg.source, keys)
        now = int(time.time() * 1000)
        for k in keys:
            if k not in starts or k not in ends or starts[k] > ends[k] or self.halted is not None:
                continue
            p = self.partitions[k]
            r = check_position(self.name, k[0], k[1], p.position, starts[k], ends[k], at=now)
            if r.gap is not None and self._on_gap(r.gap):
                p.position = r.position
                self._hot.add(k)
        return self.gaps[before:]

    # ------------------------------------------------------------------ batches

    def refresh_end_offsets(self, *, full: bool = True) -> None:
        """Fetch source end offsets (one admin call) of every replicated partition, or of the busy ones only.

        With ``full=False`` only the busy partitions' end offsets are listed (see
        :class:`IdleWatch`), unless a full listing is due. Partitions found caught up are
        handed to the idle watch.

        Parameters
        ----------
        full:
            List every replicated partition (the default), not only the busy ones.

        Raises
        ------
        ClusterError
            If the source's end offsets cannot be listed.
        """
        now = time.monotonic()
        if self._watch is not None:
            self._hot |= self._watch.woken()
        full = full or self._watch is None or now >= self._next_full_refresh
        keys = self.order if full else [k for k in self.order if k in self._hot]
        if not keys:
            return
        ends = end_offsets(self._src_admin, self.config.source, keys, read_committed=self.read_committed)
        if full:
            cost = time.monotonic() - now
            self._next_full_refresh = time.monotonic() + max(FULL_REFRESH_MIN_S, FULL_REFRESH_COST_FACTOR * cost)
        cold: dict[PartitionKey, int] = {}
        behind = [k for k, e in ends.items() if k in self.partitions and e < self.partitions[k].position]
        if behind:  # the source log lost records we copied: truncated, or the topic was re-created
            self.check_positions(behind)
        for k, e in ends.items():
            p = self.partitions.get(k)
            if p is None:
                continue
            p.end_offset = e
            if e > p.position:
                self._hot.add(k)
            else:
                self._hot.discard(k)
                cold[k] = p.position
        if self._watch is not None:
            self._watch.unwatch([k for k in ends if k in self._hot])
            self._watch.watch(cold)

    def list_end_offsets(self) -> None:
        """List every replicated partition's source end offset (lag, caught-up checks) without the idle watch.

        The continuous engine's tasks poll their partitions themselves; the driver only needs the
        end offsets for lag and ``--until-caught-up``. An end below a position is checked for a gap.

        Raises
        ------
        ClusterError
            The source's end offsets cannot be listed.
        """
        now = time.monotonic()
        if self.halted is not None or not self.order or now < self._next_end_listing:
            return
        ends = end_offsets(self._src_admin, self.config.source, self.order, read_committed=self.read_committed)
        # at most 1/LAG_COST_FACTOR of a core: thousands of partitions are listed less often
        self._next_end_listing = time.monotonic() + LAG_COST_FACTOR * (time.monotonic() - now)
        behind = [k for k, e in ends.items() if k in self.partitions and e < self.partitions[k].position]
        for k, e in ends.items():
            p = self.partitions.get(k)
            if p is not None:
                p.end_offset = e
        if behind:
            self.check_positions(behind)

    def plan(self, *, follow: bool = True) -> list[CopyTask]:
        """Plan the next batch: ranges for partitions behind their end offset, over ≤ ``tasks.max`` tasks.

        The range of one partition is capped at
        ``mirrorspark.batch.max.records.per.partition`` records. Tasks are cut
        from *all* replicated partitions round-robin (MM2's assignment), so a
        partition stays with the same task index from batch to batch; tasks
        left without work this batch are dropped. With ``follow`` (and
        ``mirrorspark.batch.follow.ms`` > 0) the tasks keep copying what arrives on their
        partitions after planning, up to the same cap (:attr:`CopyTask.follow_s`).
        """
        if self.halted is not None:
            return []
        self.refresh_end_offsets(full=False)
        cap = self.data_path.max_records_per_partition
        cfg = self.config
        consumer_conf, producer_conf = self.task_confs()
        follow_s = self.data_path.follow_ms / 1000.0 if follow else 0.0
        tasks: list[CopyTask] = []
        for index, keys in enumerate(assign_round_robin(self.order, cfg.tasks_max)):
            ranges = []
            for k in keys:
                p = self.partitions[k]
                if p.end_offset > p.position:
                    ranges.append(
                        PartitionRange(
                            source_topic=k[0],
                            partition=k[1],
                            target_topic=self.remote_topics[k[0]],
                            start=p.position,
                            end=min(p.end_offset, p.position + cap),
                            sync_state=p.sync_state,
                            limit=p.position + cap if follow_s else None,
                            transforms=self.context.bound_transforms(k[0]),
                        )
                    )
            if ranges:
                tasks.append(
                    CopyTask(
                        flow=cfg.name,
                        task_index=index,
                        consumer_conf=consumer_conf,
                        producer_conf=producer_conf,
                        ranges=tuple(ranges),
                        offset_lag_max=cfg.offset_lag_max,
                        follow_s=follow_s,
                    )
                )
        return tasks

    def task_confs(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """Return the Spark tasks' client configurations, built at the first batch and shared by every batch.

        Returns
        -------
        tuple[dict[str, Any], dict[str, Any]]
            ``(consumer conf, producer conf)``: librdkafka configurations of the data consumer
            on the source and the data producer on the target (``client.id`` by the flow
            context's rule: ``A->B|mirrorspark|replication-consumer`` and
            ``...|replication-producer``, a user's ``client.id`` kept as prefix). Not to be changed.
        """
        if self._task_confs is None:
            ctx = self.context
            consumer_conf = ctx.client_conf(
                "source_consumer",
                "replication-consumer",
                # "error": an offset out of range is reported to the task, never silently reset (a gap)
                overrides={
                    "enable.auto.commit": False,
                    "enable.partition.eof": False,
                    "auto.offset.reset": "error",
                    "isolation.level": self.isolation_level,
                },
            )
            consumer_conf.setdefault("group.id", f"mirrorspark-{self.name}")
            producer_conf = ctx.client_conf(
                "target_producer",
                "replication-producer",
                defaults={"linger.ms": 5, "queue.buffering.max.messages": 500000},
                overrides={"enable.idempotence": True},
            )
            self._task_confs = (consumer_conf, producer_conf)
        return self._task_confs

    def stream_tasks(self, generation: int, channel: tuple[str, int, str]) -> list[StreamTask]:
        """Cut the flow's partitions into ``min(tasks.max, partitions)`` long-running copy tasks (continuous engine).

        Partitions are assigned round-robin in discovery order, as MM2's
        ``MirrorSourceConnector.taskConfigs`` does; each starts at its committed position.

        Parameters
        ----------
        generation:
            The driver's generation of the flow's tasks (reports of older ones are ignored).
        channel:
            ``(host, port, token)`` of the driver's task channel.

        Returns
        -------
        list[StreamTask]
            One per non-empty assignment, in task-index order (empty when the flow is halted).
        """
        if self.halted is not None:
            return []
        cfg = self.config
        ctx = self.context
        consumer_conf, producer_conf = self.task_confs()
        # commit records land within COMMIT_TIMEOUT_MS or fail the task: never late, after a lease moved on
        idempotent = {"enable.idempotence": True, "linger.ms": 0, "message.timeout.ms": COMMIT_TIMEOUT_MS}
        commit_conf = ctx.client_conf("target_producer", "offsets-target-producer", overrides=idempotent)
        syncs_conf = None
        if cfg.emit_offset_syncs_enabled:
            on_source = cfg.offset_syncs_topic_location == "source"
            side = "source" if on_source else "target"
            syncs_conf = ctx.client_conf(
                "source_producer" if on_source else "target_producer",
                f"offset-syncs-{side}-producer",
                overrides=idempotent,
            )
        eos = self.exactly_once
        flush_interval_ms = cfg.offset_flush_interval_ms
        if eos:
            flush_interval_ms = cfg.transaction_boundary_interval_ms or flush_interval_ms
        init_timeout_s = init_transactions_timeout_s(ctx.settings("target_producer").properties)
        tasks = []
        for index, keys in enumerate(assign_round_robin(self.order, cfg.tasks_max)):
            if not keys:
                continue
            tasks.append(
                StreamTask(
                    flow=cfg.name,
                    source=cfg.source,
                    target=cfg.target,
                    task_index=index,
                    generation=generation,
                    consumer_conf=consumer_conf,
                    producer_conf=producer_conf,
                    commit_conf=commit_conf,
                    syncs_conf=syncs_conf,
                    offsets_topic=cfg.offset_storage_topic,
                    offsets_partitions=self._offsets_partitions,
                    syncs_topic=self.offset_syncs_topic,
                    progress_topic=self.progress_topic,
                    partitions=tuple(
                        PartitionRange(
                            source_topic=k[0],
                            partition=k[1],
                            target_topic=self.remote_topics[k[0]],
                            start=self.partitions[k].position,
                            end=-1,
                            transforms=self.context.bound_transforms(k[0]),
                        )
                        for k in keys
                    ),
                    offset_lag_max=cfg.offset_lag_max,
                    flush_interval_s=flush_interval_ms / 1000.0,
                    channel=channel,
                    transactional_id=task_transactional_id(cfg.source, index) if eos else None,
                    boundary=cfg.transaction_boundary,
                    init_timeout_s=init_timeout_s,
                )
            )
        return tasks

    def apply_report(
        self, report: PartitionReport, *, generation: int | None = None, segments_only: bool = False
    ) -> bool:
        """Apply one progress report of a copy task: position, totals and copied segments.

        Parameters
        ----------
        report:
            A report of this flow.
        generation:
            The flow's current task generation: positions move only on reports of it (a report
            of an older generation still adds its copied segments). ``None`` takes any.
        segments_only:
            Add the copied segments and the position reached only (a report of an earlier run,
            read at start, before the partitions' positions are set).

        Returns
        -------
        bool
            Whether the report was of a partition the flow replicates; with ``segments_only``,
            whether it was applied (always: any partition's segments and position are kept).
        """
        key = (report.topic, report.partition)
        p = self.partitions.get(key)
        if report.segments:
            self.copied.add(report.topic, report.partition, report.segments)
        if report.next_offset > self._reached.get(key, -1):
            self._reached[key] = report.next_offset  # the source held every offset below it once
        if segments_only:
            return True
        if p is None:
            if key in self._stored and report.next_offset - 1 > self._stored[key]:
                # a topic dropped from the lists while its tasks still committed: resume after it if allowed again
                self._stored[key] = report.next_offset - 1
            return False
        if generation is None or report.generation == generation:
            if report.next_offset > p.position:
                p.position = report.next_offset
                self.last_commit_at = report.at / 1000.0
            p.records += report.records
            p.dropped += report.dropped
            p.value_bytes += report.value_bytes
            p.key_bytes += report.key_bytes
            p.latency_ms_sum += report.latency_ms_sum
            p.latency_ms_max = max(p.latency_ms_max, report.latency_ms_max)
            p.latency_samples += report.latency_samples
            if report.segments:
                p.last_segment = report.segments[-1]
        return True

    def commit(self, results: Iterable[PartitionResult]) -> None:
        """Write the batch's offset syncs, then its source offsets; then advance positions.

        Each write checks delivery (:func:`~mirrorspark.kafka.delivery.deliver`: every record
        acknowledged, failures sent again, bounded); nothing of the flow's state — positions,
        offset-sync state, copied ranges — advances unless both writes were acknowledged.

        Raises
        ------
        ClusterError
            Offset syncs or source offsets could not be written (positions and sync state are
            not advanced, so the next batch, or the next run, repeats it: duplicates, never a
            loss), naming the flow, the topic and the cluster.
        """
        cfg = self.config
        results = [r for r in results if r.flow == self.name]
        if self._syncs_producer is not None:
            syncs = [
                Outgoing(self.offset_syncs_topic, s.key(), s.value(), partition=0)
                for r in results
                for s in (OffsetSync(r.source_topic, r.partition, up, down) for up, down in r.syncs)
            ]
            on_source = cfg.offset_syncs_topic_location == "source"
            deliver(
                self._syncs_producer,
                syncs,
                what=f"flow {self.name}: offset syncs",
                alias=cfg.source if on_source else cfg.target,
                hint="positions are not advanced: the last batch will be copied again",
            )
        offsets: list[Outgoing] = []
        for r in results:
            p = self.partitions.get((r.source_topic, r.partition))
            if p is None or r.next_offset <= p.position:
                continue
            key = source_offset_key(cfg.source, r.source_topic, r.partition)
            offsets.append(
                Outgoing(
                    cfg.offset_storage_topic,
                    key,
                    source_offset_value(r.next_offset - 1),
                    partition=default_partition(key, self._offsets_partitions),
                )
            )
        deliver(
            self._offsets_producer,
            offsets,
            what=f"flow {self.name}: source offsets",
            alias=cfg.target,
            hint="positions are not advanced: the last batch will be copied again",
        )
        self._publish_reports(results)
        for r in results:
            p = self.partitions.get((r.source_topic, r.partition))
            if p is None:
                continue
            p.position = max(p.position, r.next_offset)
            p.sync_state = r.sync_state
            p.records += r.records
            p.dropped += r.dropped
            p.value_bytes += r.value_bytes
            p.key_bytes += r.key_bytes
            p.latency_ms_sum += r.latency_ms_sum
            p.latency_ms_max = max(p.latency_ms_max, r.latency_ms_max)
            p.latency_samples += r.latency_samples
            if r.segments:
                p.last_segment = r.segments[-1]
                self.copied.add(r.source_topic, r.partition, r.segments)
        self.batches += 1
        self.last_commit_at = time.time()

    def _publish_reports(self, results: Sequence[PartitionResult]) -> None:
        """Write a batch's progress reports (the copied segments survive a restart): best effort, logged."""
        reports = []
        now = int(time.time() * 1000)
        for r in results:
            if not r.segments:
                continue
            window = newest_segments(self.copied.segments(r.source_topic, r.partition), r.segments)
            reports.append(
                Outgoing(
                    self.progress_topic,
                    *encode_report(
                        PartitionReport(
                            flow=self.name,
                            topic=r.source_topic,
                            partition=r.partition,
                            task=0,
                            generation=0,
                            next_offset=r.next_offset,
                            records=r.records,
                            value_bytes=r.value_bytes,
                            key_bytes=r.key_bytes,
                            latency_ms_sum=r.latency_ms_sum,
                            latency_ms_max=r.latency_ms_max,
                            latency_samples=r.latency_samples,
                            segments=window,
                            at=now,
                            dropped=r.dropped,
                        )
                    ),
                )
            )
        if not reports:
            return
        try:
            deliver(
                self._offsets_producer, reports, what=f"flow {self.name}: progress reports", alias=self.config.target
            )
        except ClusterError as e:  # positions are committed; only exact translation after a restart is lost
            log.warning("%s: %s", self.name, e)

    # ------------------------------------------------------------------ views

    def caught_up(self, targets: Mapping[PartitionKey, int]) -> bool:
        """Tell whether every partition in ``targets`` has reached its target position.

        Parameters
        ----------
        targets:
            ``{(topic, partition): offset}``, e.g. from :meth:`end_snapshot`; partitions the flow
            no longer replicates are ignored.

        Returns
        -------
        bool
            ``True`` when every position (next offset to read) is at or past its target.
        """
        return all(
            p.position >= (min(e, p.end_offset) if p.end_offset >= 0 else e)  # a truncated source lowers the bar
            for k, e in targets.items()
            if (p := self.partitions.get(k)) is not None
        )

    def end_snapshot(self) -> dict[PartitionKey, int]:
        """List the current source end offsets of every replicated partition (for ``--until-caught-up``).

        Returns
        -------
        dict[tuple[str, int], int]
            ``{(topic, partition): end offset}`` (the high watermark, or the last stable offset
            with ``isolation.level=read_committed``).

        Raises
        ------
        ClusterError
            If the source's end offsets cannot be listed.
        """
        self.refresh_end_offsets()
        return {k: self.partitions[k].end_offset for k in self.order}

    def close(self) -> None:
        """Flush the driver-side producers and release every client of the flow."""
        for p in (self._offsets_producer, self._syncs_producer):
            if p is not None:
                p.flush(10)
        self._offsets_producer = self._syncs_producer = None
        self.live_filters.close()
        if self.reports is not None:
            self.reports.close()
            self.reports = None
        if self._ledger is not None:
            self._ledger.close()
            self._ledger = None
        if self._watch is not None:
            self._watch.close()
            self._watch = None
        self._src_admin = self._tgt_admin = None  # type: ignore[assignment]


__all__ = ["Flow"]
