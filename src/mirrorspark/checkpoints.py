"""Checkpoints and consumer-group offset sync (MM2 ``MirrorCheckpointConnector`` / ``MirrorCheckpointTask``).

For a flow ``S->T``, every ``emit.checkpoints.interval.seconds`` the
:class:`CheckpointEmitter` lists the committed offsets of every source
consumer group matching ``groups`` / ``groups.exclude``, translates each
upstream offset into a downstream offset on T, and writes a
:class:`~mirrorspark.records.Checkpoint` to ``<S>.checkpoints.internal`` on T
— MM2's topic and byte layout, so MM2's ``RemoteClusterUtils`` on T reads them.

Translation prefers what the running data path knows exactly
(:class:`~mirrorspark.offsets.CopiedRanges`: 0 re-reads) and falls back to
MM2's conservative rule over the flow's offset syncs
(:class:`~mirrorspark.offsets.OffsetSyncStore`: never a skip, at most about
``offset.lag.max`` re-reads).

**Failback** (beyond MM2): a group on S that consumes a topic which came from
T (``T.topic1`` on S, e.g. after a failover) is checkpointed under the
original name ``topic1`` (MM2's renaming rule) with a downstream offset
translated *in reverse* through the syncs of the opposite flow ``T->S``
(:func:`~mirrorspark.offsets.translate_upstream_with_syncs`, or exactly from
that flow's copied ranges when it runs in the same process).

**Group offset sync** (``sync.group.offsets.enabled``, KIP-545): the latest
checkpoints of a group are committed to the same group on T, only while it has
no active members there and only forward of what it already committed.

**Consumer migration** (SRM's ``srm-control offsets``, MM2's
``RemoteClusterUtils``): :class:`ConsumerMigration` reads the checkpoints back
(export as a ``kafka-consumer-groups --reset-offsets --from-file`` plan,
:func:`reset_plan_csv`), translates a group's current offsets live with the
re-reads a switch costs, and fails a group over by committing its latest
checkpoints on T while no consumer uses it there.
"""

from __future__ import annotations

import contextlib
import csv
import io
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from .clients import (
    LIBRDKAFKA_LOGGER,
    admin_client,
    alter_group_offsets,
    check_reachable,
    consumer,
    describe_group,
    end_offsets,
    ensure_topic,
    group_offsets,
    list_topics,
    producer,
)
from .config import ClientSettings, FlowConfig, MirrorConfig
from .errors import ClusterError, ClusterUnreachableError, ControlError, CorruptRecordError
from .filters import DefaultGroupFilter, DefaultTopicFilter
from .offsets import CopiedRanges, OffsetSyncStore, translate, translate_upstream_with_syncs
from .policy import ReplicationPolicy, load_policy
from .records import Checkpoint, OffsetSync

if TYPE_CHECKING:
    from .control import LiveFilters

__all__ = [
    "CheckpointEmitter",
    "CheckpointStore",
    "ConsumerMigration",
    "FailoverOffset",
    "FailoverPlan",
    "GroupOffset",
    "OffsetSyncReader",
    "OffsetTranslation",
    "TopicReader",
    "is_more_recent",
    "offset_syncs_location",
    "read_checkpoints",
    "rename_topic",
    "rereads_at",
    "reset_plan_csv",
    "upstream_topic_of",
]

log = logging.getLogger(__name__)

TopicPartitionKey = tuple[str, int]


def rename_topic(policy: ReplicationPolicy, source_alias: str, target_alias: str, upstream_topic: str) -> str:
    """The topic name a checkpoint of ``upstream_topic`` carries (MM2 ``MirrorCheckpointTask.renameTopicPartition``).

    A topic that came from the target (``topic_source == target``) is named by
    its original topic (failback: ``B.topic1`` on A, flow A->B... checkpointed as
    ``topic1``); any other topic by its remote name on the target.
    """
    if policy.topic_source(upstream_topic) == target_alias:
        return policy.original_topic(upstream_topic)
    return policy.format_remote_topic(source_alias, upstream_topic)


def is_more_recent(new: Checkpoint, last: Checkpoint | None) -> bool:
    """MM2's rule for emitting a checkpoint (``MirrorCheckpointTask.checkpointIsMoreRecent``).

    Emit when there is no previous checkpoint for the group and partition, when
    the group's upstream offset was rewound (even if the downstream offset goes
    down), or when the downstream offset moved forward. An equal or lower
    downstream offset without an upstream rewind is not emitted, so a
    checkpoint never moves a group backwards without cause.
    """
    if last is None:
        return True
    if new.upstream_offset < last.upstream_offset:
        return True
    return new.downstream_offset > last.downstream_offset


class CheckpointStore:
    """The latest checkpoint per (group, downstream topic-partition) (MM2 ``CheckpointStore``)."""

    def __init__(self) -> None:
        self._latest: dict[str, dict[TopicPartitionKey, Checkpoint]] = {}

    def update(self, checkpoint: Checkpoint) -> None:
        """Remember a checkpoint (the last one written wins, as compaction keeps it)."""
        self._latest.setdefault(checkpoint.consumer_group_id, {})[(checkpoint.topic, checkpoint.partition)] = checkpoint

    def get(self, group: str, topic: str, partition: int) -> Checkpoint | None:
        """The latest checkpoint of a group for a downstream topic-partition, or ``None``."""
        return self._latest.get(group, {}).get((topic, partition))

    def group(self, group: str) -> dict[TopicPartitionKey, Checkpoint]:
        """The latest checkpoints of one group, by downstream topic-partition."""
        return dict(self._latest.get(group, {}))

    def groups(self) -> list[str]:
        """Groups with at least one checkpoint."""
        return sorted(self._latest)


class TopicReader:
    """Tails partition 0 of a compacted internal topic from the beginning (I/O).

    Parameters
    ----------
    settings:
        Consumer ``ClientSettings`` of the cluster holding the topic.
    admin_settings:
        Admin ``ClientSettings`` of that cluster (for end offsets).
    alias, topic:
        Where to read.
    client_id:
        The consumer's ``client.id``.
    """

    def __init__(self, settings: Any, admin_settings: Any, alias: str, topic: str, *, client_id: str) -> None:
        self.alias = alias
        self.topic = topic
        self._admin = admin_client(admin_settings, client_id=client_id + "-admin")
        self._consumer: Any = None
        self._settings = settings
        self._client_id = client_id
        self.position = 0

    def read(self, on_record: Callable[[bytes | None, bytes | None], None], *, timeout_s: float = 30.0) -> int:
        """Read every record up to the topic's current end offset; return how many were read.

        A missing topic reads as empty. Raises :class:`ClusterError` if the end
        is not reached within ``timeout_s``.
        """
        if self.topic not in list_topics(self._admin, self.alias):
            return 0
        end = end_offsets(self._admin, self.alias, [(self.topic, 0)]).get((self.topic, 0), 0)
        if end <= self.position:
            return 0
        if self._consumer is None:
            self._consumer = consumer(self._settings, client_id=self._client_id)
            self._consumer.assign([TopicPartition(self.topic, 0, self.position)])
        n = 0
        deadline = time.monotonic() + timeout_s
        while self.position < end:
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"reading '{self.topic}' on cluster '{self.alias}' did not reach offset {end} in {timeout_s:.0f} s"
                )
            for m in self._consumer.consume(num_messages=5000, timeout=0.2):
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        continue
                    raise ClusterError(f"reading '{self.topic}' on cluster '{self.alias}' failed: {err.str()}")
                on_record(m.key(), m.value())
                n += 1
            for tp in self._consumer.position([TopicPartition(self.topic, 0)]):
                if tp.offset >= 0:
                    self.position = max(self.position, tp.offset)
        return n

    def close(self) -> None:
        """Close the consumer."""
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


def read_checkpoints(
    consumer_settings: ClientSettings,
    admin_settings: ClientSettings,
    alias: str,
    topic: str,
    *,
    client_id: str,
    timeout_s: float = 30.0,
) -> list[Checkpoint]:
    """Read a checkpoints topic from the beginning to its current end (MM2 ``MirrorClient.remoteConsumerOffsets``).

    Reads partition 0 only, as MM2 does. Records that do not decode are skipped
    with a warning; a missing topic reads as empty.

    Parameters
    ----------
    consumer_settings, admin_settings:
        Client settings of the cluster holding the topic.
    alias:
        That cluster's alias (for messages).
    topic:
        The checkpoints topic, e.g. ``primary.checkpoints.internal``.
    client_id:
        The consumer's ``client.id``.
    timeout_s:
        Seconds to reach the end offset (default 30).

    Returns
    -------
    list[Checkpoint]
        In topic order; the last one per (group, topic, partition) is the current one.

    Raises
    ------
    ClusterError
        If the end is not reached within ``timeout_s`` (MM2 returns what it read
        by then; a partial answer could move a group backwards, so this raises);
        :class:`~mirrorspark.errors.ClusterUnreachableError` if the cluster does not answer.
    """
    out: list[Checkpoint] = []

    def on_record(key: bytes | None, value: bytes | None) -> None:
        try:
            out.append(Checkpoint.decode(key, value))
        except CorruptRecordError as e:
            log.warning("skipping a corrupt checkpoint in %s on %s: %s", topic, alias, e)

    reader = TopicReader(consumer_settings, admin_settings, alias, topic, client_id=client_id)
    try:
        reader.read(on_record, timeout_s=timeout_s)
    finally:
        reader.close()
    return out


def offset_syncs_location(flow: FlowConfig, policy: ReplicationPolicy) -> tuple[str, str]:
    """``(cluster alias, topic)`` of a flow's offset-syncs topic (``offset-syncs.topic.location``)."""
    if flow.offset_syncs_topic_location == "source":
        return flow.source, policy.offset_syncs_topic(flow.target)
    return flow.target, policy.offset_syncs_topic(flow.source)


class OffsetSyncReader:
    """Keeps an :class:`OffsetSyncStore` up to date from a flow's offset-syncs topic.

    Corrupt records are skipped with a warning (MM2's reader logs and skips them).
    """

    def __init__(
        self,
        config: MirrorConfig,
        flow: FlowConfig,
        policy: ReplicationPolicy,
        *,
        read_to_end_required: bool,
        client_id: str,
    ) -> None:
        alias, topic = offset_syncs_location(flow, policy)
        cluster = config.cluster(alias)
        self.store = OffsetSyncStore(read_to_end_required=read_to_end_required)
        self._reader = TopicReader(cluster.consumer, cluster.admin, alias, topic, client_id=client_id)

    def _on_record(self, key: bytes | None, value: bytes | None) -> None:
        try:
            self.store.update(OffsetSync.decode(key, value))
        except CorruptRecordError as e:
            log.warning("skipping a corrupt offset sync in %s: %s", self._reader.topic, e)

    def load(self) -> None:
        """Read to the end, then allow translation (MM2: no translation before the initial read-to-end)."""
        self._reader.read(self._on_record, timeout_s=60)
        self.store.mark_initialized()

    def poll(self) -> int:
        """Read syncs written since the last call; return how many."""
        return self._reader.read(self._on_record)

    def close(self) -> None:
        """Close the underlying consumer."""
        self._reader.close()


@dataclass(frozen=True)
class GroupOffset:
    """A committed offset of a group on the source, and its translation.

    Attributes
    ----------
    group, topic, partition:
        The source group and the topic-partition it committed (upstream name).
    upstream_offset:
        The committed offset on the source (next record to read).
    checkpoint:
        The checkpoint for it, or ``None`` when it cannot be translated (yet).
    rereads:
        Records a consumer starting at the checkpoint's downstream offset reads
        again (0 when exact); ``-1`` when unknown.
    """

    group: str
    topic: str
    partition: int
    upstream_offset: int
    checkpoint: Checkpoint | None
    rereads: int


@dataclass
class _EmitterState:
    groups: list[str] = field(default_factory=list)
    groups_refreshed_at: float = 0.0
    emitted: int = 0
    synced: int = 0


class CheckpointEmitter:
    """Checkpoints and group offset sync for one flow ``S->T``.

    Parameters
    ----------
    config:
        The whole configuration (the reverse flow ``T->S`` is read for failback).
    flow:
        The flow's configuration.
    copied:
        Exact copied ranges of this flow (from its running data path), or ``None``.
    reverse_copied:
        Exact copied ranges of the reverse flow ``T->S`` if it runs in this process.
    clock_ms:
        Epoch ms (the checkpoint record timestamp = listing time).
    """

    def __init__(
        self,
        config: MirrorConfig,
        flow: FlowConfig,
        *,
        copied: CopiedRanges | None = None,
        reverse_copied: CopiedRanges | None = None,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self.config = config
        self.flow = flow
        self.name = flow.name
        self.policy = load_policy(
            flow.policy.class_name,
            separator=flow.policy.separator,
            internal_topic_separator_enabled=flow.policy.internal_topic_separator_enabled,
            source_cluster_alias=flow.source,
        )
        self.topic_filter = DefaultTopicFilter(topics=flow.topics, topics_exclude=flow.topics_exclude)
        self.group_filter = DefaultGroupFilter(groups=flow.groups, groups_exclude=flow.groups_exclude)
        self.copied = copied
        self.reverse_copied = reverse_copied
        self._clock_ms = clock_ms
        self.checkpoints_topic = self.policy.checkpoints_topic(flow.source)
        self.store = CheckpointStore()
        self.state = _EmitterState()
        self._cid = f"{flow.name}|mirrorspark"
        self._producer: Any = None
        self.syncs: OffsetSyncReader | None = None
        self.reverse_syncs: OffsetSyncReader | None = None
        self._syncs_loaded = threading.Event()
        self._syncs_error: ClusterError | None = None
        self._read_to_end_required = False
        self._loader: threading.Thread | None = None

    @cached_property
    def _src_admin(self) -> AdminClient:
        """Admin client of the source, created at first use (an unused one would keep connecting)."""
        return admin_client(self.flow.source_admin, client_id=f"{self._cid}|checkpoint-source-admin")

    @cached_property
    def _tgt_admin(self) -> AdminClient:
        """Admin client of the target, created at first use."""
        return admin_client(self.flow.target_admin, client_id=f"{self._cid}|checkpoint-target-admin")

    # ------------------------------------------------------------------ start-up

    def start(self, *, background_syncs: bool = False) -> None:
        """Create the checkpoints topic, load existing checkpoints, read the offset syncs, create the producer.

        Mirrors MM2 3.8+ (KAFKA-15905): when the checkpoints loaded, the sync
        store keeps its full history; otherwise only the latest sync per
        partition is usable after start-up.

        Parameters
        ----------
        background_syncs:
            Read the offset syncs on a background thread (the driver does, so that a long
            offset-syncs topic does not hold up copying; MM2 reads them in its checkpoint
            task, apart from the source tasks). :meth:`emit` writes nothing until they are
            read, and reads them again itself if the background read failed.
        """
        f = self.flow
        ensure_topic(
            self._tgt_admin,
            f.target,
            self.checkpoints_topic,
            partitions=1,
            replication_factor=f.checkpoints_topic_replication_factor,
            config={"cleanup.policy": "compact"},
        )
        loaded_ok = True
        try:
            self.load_checkpoints(timeout_s=60)
        except ClusterError as e:
            loaded_ok = False
            log.warning("%s: loading checkpoints failed (%s); old group offsets may not translate", self.name, e)
        self._read_to_end_required = not loaded_ok
        self._producer = producer(
            f.target_producer,
            client_id=f"{self._cid}|checkpoints-target-producer",
            overrides={"enable.idempotence": True, "linger.ms": 0},
        )
        if background_syncs:
            self._loader = threading.Thread(target=self._load_syncs_background, name=f"offset-syncs {self.name}")
            self._loader.daemon = True
            self._loader.start()
        else:
            self.load_syncs(read_to_end_required=self._read_to_end_required)

    def _load_syncs_background(self) -> None:
        try:
            self.load_syncs(read_to_end_required=self._read_to_end_required)
        except Exception as e:
            log.warning("%s: reading offset syncs failed (%s); the next checkpoint cycle retries", self.name, e)
            self._syncs_error = (
                e if isinstance(e, ClusterError) else ClusterError(f"{self.name}: reading offset syncs failed: {e}")
            )
        finally:
            self._syncs_loaded.set()

    def _ready(self) -> bool:
        """Whether the offset syncs are read; after a failed background read, read them now.

        Raises
        ------
        ClusterError
            The offset syncs cannot be read now either (the next cycle tries again).
        """
        if self._loader is None:
            return True
        if not self._syncs_loaded.is_set():
            return False
        if self._syncs_error is not None:
            self.load_syncs(read_to_end_required=self._read_to_end_required)
            self._syncs_error = None
        return True

    def load_checkpoints(self, *, timeout_s: float = 60.0) -> int:
        """Read ``<S>.checkpoints.internal`` on T from the beginning into :attr:`store` (MM2 ``CheckpointStore``).

        Creates nothing: a missing topic loads nothing. Corrupt records are
        skipped with a warning; records read before a failure stay in the store.

        Parameters
        ----------
        timeout_s:
            Seconds to reach the topic's end offset (default 60).

        Returns
        -------
        int
            Records read (corrupt ones included).

        Raises
        ------
        ClusterError
            If the end is not reached within ``timeout_s`` or the cluster fails.
        """
        reader = TopicReader(
            self.flow.target_consumer,
            self.flow.target_admin,
            self.flow.target,
            self.checkpoints_topic,
            client_id=f"{self._cid}|checkpoints-target-consumer",
        )
        try:
            return reader.read(self._load_checkpoint, timeout_s=timeout_s)
        finally:
            reader.close()

    def read_checkpoints(self, *, timeout_s: float = 60.0) -> list[Checkpoint]:
        """Every decodable checkpoint of ``<S>.checkpoints.internal`` on T, in topic order (store untouched).

        Raises
        ------
        ClusterError
            As :meth:`load_checkpoints`.
        """
        return read_checkpoints(
            self.flow.target_consumer,
            self.flow.target_admin,
            self.flow.target,
            self.checkpoints_topic,
            client_id=f"{self._cid}|checkpoints-target-consumer",
            timeout_s=timeout_s,
        )

    def load_syncs(self, *, read_to_end_required: bool = False) -> None:
        """Read this flow's offset syncs (and the reverse flow's, for failback) to the end.

        After this, :meth:`translate` works; nothing is created on any cluster
        (what :meth:`start` adds to it). Calling it again re-reads from the
        beginning.

        Parameters
        ----------
        read_to_end_required:
            MM2's ``initializationMustReadToEnd`` for this flow's sync store
            (see :class:`~mirrorspark.offsets.OffsetSyncStore`); default
            ``False``: the full retained history is usable.

        Raises
        ------
        ClusterError
            If an offset-syncs topic cannot be read to its end (its cluster is
            named in the message).
        """
        f = self.flow
        for old in (self.syncs, self.reverse_syncs):
            if old is not None:
                old.close()
        self.syncs = self.reverse_syncs = None
        # Read into locals and publish both at the end: a background read must never expose a
        # half-read store to emit().
        syncs = OffsetSyncReader(
            self.config,
            f,
            self.policy,
            read_to_end_required=read_to_end_required,
            client_id=f"{self._cid}|offset-syncs-consumer",
        )
        reverse_syncs: OffsetSyncReader | None = None
        try:
            syncs.load()
            reverse = self.config.flow(f.target, f.source)
            if reverse.emit_offset_syncs_enabled:
                rpolicy = load_policy(
                    reverse.policy.class_name,
                    separator=reverse.policy.separator,
                    internal_topic_separator_enabled=reverse.policy.internal_topic_separator_enabled,
                    source_cluster_alias=reverse.source,
                )
                reverse_syncs = OffsetSyncReader(
                    self.config,
                    reverse,
                    rpolicy,
                    read_to_end_required=False,
                    client_id=f"{self._cid}|reverse-offset-syncs-consumer",
                )
                reverse_syncs.load()
        except BaseException:
            for r in (syncs, reverse_syncs):
                if r is not None:
                    r.close()
            raise
        self.syncs, self.reverse_syncs = syncs, reverse_syncs

    def _load_checkpoint(self, key: bytes | None, value: bytes | None) -> None:
        try:
            cp = Checkpoint.decode(key, value)
        except CorruptRecordError as e:
            log.warning("%s: skipping a corrupt checkpoint: %s", self.name, e)
            return
        self.store.update(cp)

    # ------------------------------------------------------------------ groups

    @cached_property
    def _live_filters(self) -> LiveFilters:
        """The flow's lists in effect (config file + control topic), created at the first group refresh."""
        from .control import LiveFilters  # control imports this module

        return LiveFilters(self.flow, self.policy, client_id=f"{self._cid}|control-target-consumer")

    def refresh_groups(self) -> list[str]:
        """List source groups accepted by the group filter (MM2 ``findConsumerGroups``).

        The group and topic filters are rebuilt first from the config file's lists
        and the changes in the control topic (``mirrorspark control``).
        """
        self._live_filters.poll()
        self.group_filter = self._live_filters.group_filter(self.group_filter)
        self.topic_filter = self._live_filters.topic_filter(self.topic_filter)
        fut = self._src_admin.list_consumer_groups(request_timeout=30)
        try:
            result = fut.result(timeout=30)
        except KafkaException as e:
            raise ClusterError(f"listing consumer groups of cluster '{self.flow.source}' failed: {e}") from e
        groups = sorted(g.group_id for g in result.valid if self.group_filter.should_replicate_group(g.group_id))
        self.state.groups = groups
        self.state.groups_refreshed_at = time.monotonic()
        return groups

    def committed(self, group: str, cluster: str = "source") -> dict[TopicPartitionKey, tuple[int, str]]:
        """``{(topic, partition): (committed offset, metadata)}`` of a group on the source or target."""
        admin = self._src_admin if cluster == "source" else self._tgt_admin
        alias = self.flow.source if cluster == "source" else self.flow.target
        futs = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=30)
        try:
            res = futs[group].result(timeout=30)
        except KafkaException as e:
            raise ClusterError(f"listing offsets of group '{group}' on cluster '{alias}' failed: {e}") from e
        out: dict[TopicPartitionKey, tuple[int, str]] = {}
        for tp in res.topic_partitions or []:
            if tp.error is None and tp.offset >= 0:
                out[(tp.topic, tp.partition)] = (tp.offset, tp.metadata or "")
        return out

    # ------------------------------------------------------------------ translation

    def translate(
        self,
        group: str,
        topic: str,
        partition: int,
        upstream_offset: int,
        metadata: str = "",
        now_ms: int | None = None,
    ) -> GroupOffset:
        """Translate one committed source offset into a checkpoint (or ``None`` if not possible yet)."""
        f = self.flow
        renamed = rename_topic(self.policy, f.source, f.target, topic)
        checkpoint: Checkpoint | None = None
        rereads = -1
        if self.policy.topic_source(topic) == f.target:
            # failback: the group consumes a topic that came from the target; translate in reverse
            up_topic = self.policy.upstream_topic(topic) or topic
            down: int | None = None
            if self.reverse_copied is not None:
                down = self.reverse_copied.translate_upstream(up_topic, partition, upstream_offset)
                if down is not None:
                    rereads = 0
            if down is None and self.reverse_syncs is not None:
                down = translate_upstream_with_syncs(self.reverse_syncs.store, up_topic, partition, upstream_offset)
                if down is not None:
                    sync = _newest_sync_at_or_before_downstream(
                        self.reverse_syncs.store, up_topic, partition, upstream_offset
                    )
                    rereads = (
                        0
                        if sync is None or sync.downstream_offset == upstream_offset
                        else max(0, upstream_offset - sync.downstream_offset - 1)
                    )
        else:
            if self.syncs is None:
                raise ClusterError(f"{self.name}: checkpoint emitter used before start() or load_syncs()")
            t = translate(self.syncs.store, self.copied, topic, partition, upstream_offset)
            down = t.downstream_offset if t is not None else None
            rereads = t.rereads if t is not None else -1
        if down is not None and down >= 0:
            checkpoint = Checkpoint(group, renamed, partition, upstream_offset, down, metadata)
        return GroupOffset(group, topic, partition, upstream_offset, checkpoint, rereads)

    def group_offsets(self, group: str) -> list[GroupOffset]:
        """Translate every committed offset of one source group (topics the topic filter accepts)."""
        now = self._clock_ms()
        out = []
        for (topic, partition), (offset, metadata) in sorted(self.committed(group).items()):
            if not self.topic_filter.should_replicate_topic(topic):
                continue
            out.append(self.translate(group, topic, partition, offset, metadata, now))
        return out

    # ------------------------------------------------------------------ jobs

    def emit(self) -> list[Checkpoint]:
        """One checkpoint cycle: read new syncs, translate every group, write what is more recent.

        Writes nothing (returns ``[]``) while the offset syncs are still being read in the
        background (:meth:`start`).
        """
        if self._producer is not None and not self._ready():
            return []
        if self.syncs is None or self._producer is None:
            raise ClusterError(f"{self.name}: checkpoint emitter used before start()")
        if not self.state.groups or (
            time.monotonic() - self.state.groups_refreshed_at >= self.flow.refresh_groups_interval_s
        ):
            self.refresh_groups()
        self.syncs.poll()
        if self.reverse_syncs is not None:
            self.reverse_syncs.poll()
        now = self._clock_ms()
        written: list[Checkpoint] = []
        for group in self.state.groups:
            try:
                offsets = self.group_offsets(group)
            except ClusterError as e:
                log.warning("%s: skipping group %s this cycle: %s", self.name, group, e)
                continue
            for go in offsets:
                cp = go.checkpoint
                if cp is None:
                    continue
                if not is_more_recent(cp, self.store.get(cp.consumer_group_id, cp.topic, cp.partition)):
                    continue
                self._producer.produce(self.checkpoints_topic, cp.value(), cp.key(), partition=0, timestamp=now)
                self.store.update(cp)
                written.append(cp)
        if written:
            left = self._producer.flush(30)
            if left:
                raise ClusterError(f"{self.name}: {left} checkpoints not acknowledged by cluster '{self.flow.target}'")
        self.state.emitted += len(written)
        return written

    def sync_group_offsets(self) -> dict[str, int]:
        """Commit the latest checkpoints to the same groups on the target (MM2 ``syncGroupOffset``).

        Only groups without active members on the target are written, and only
        partitions whose target offset is missing or behind the checkpoint.

        Returns
        -------
        dict[str, int]
            Partitions written per group.
        """
        written: dict[str, int] = {}
        groups = self.store.groups()
        if not groups or not self._ready():
            return written
        futs = self._tgt_admin.describe_consumer_groups(groups, request_timeout=30)
        for group in groups:
            try:
                desc = futs[group].result(timeout=30)
                state = desc.state
                active = bool(desc.members)
            except KafkaException:
                state, active = ConsumerGroupState.DEAD, False
            if active or state not in (ConsumerGroupState.EMPTY, ConsumerGroupState.DEAD, ConsumerGroupState.UNKNOWN):
                log.info("%s: group %s is active on %s; not syncing its offsets", self.name, group, self.flow.target)
                continue
            current = self.committed(group, cluster="target") if state == ConsumerGroupState.EMPTY else {}
            tps = []
            for (topic, partition), cp in sorted(self.store.group(group).items()):
                have = current.get((topic, partition))
                if have is not None and have[0] >= cp.downstream_offset:
                    continue
                tps.append(TopicPartition(topic, partition, cp.downstream_offset, metadata=cp.metadata))
            if not tps:
                continue
            fut = self._tgt_admin.alter_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group, tps)], request_timeout=30
            )[group]
            try:
                fut.result(timeout=30)
                written[group] = len(tps)
            except KafkaException as e:
                log.warning(
                    "%s: syncing offsets of group %s on %s failed (likely consumers are using it): %s",
                    self.name,
                    group,
                    self.flow.target,
                    e,
                )
        self.state.synced += sum(written.values())
        return written

    def snapshot(self) -> dict[tuple[str, str, int], int]:
        """``{(group, topic, partition): committed offset}`` of every accepted group now (for ``--until-caught-up``)."""
        out: dict[tuple[str, str, int], int] = {}
        for group in self.refresh_groups():
            for (topic, partition), (offset, _) in self.committed(group).items():
                if self.topic_filter.should_replicate_topic(topic):
                    out[(group, topic, partition)] = offset
        return out

    def covered(self, snapshot: Mapping[tuple[str, str, int], int]) -> bool:
        """Whether a checkpoint at or past each snapshot offset exists (or it cannot be translated).

        ``False`` while the offset syncs are still being read (:meth:`start`).
        """
        if not self._ready():
            return False
        f = self.flow
        for (group, topic, partition), offset in snapshot.items():
            renamed = rename_topic(self.policy, f.source, f.target, topic)
            cp = self.store.get(group, renamed, partition)
            if cp is not None and cp.upstream_offset >= offset:
                continue
            wanted = self.translate(group, topic, partition, offset).checkpoint
            if wanted is None:
                continue  # cannot be translated: nothing to wait for
            if cp is not None and cp.downstream_offset >= wanted.downstream_offset:
                continue  # MM2's rule keeps the existing checkpoint: it already points there
            return False
        return True

    def close(self) -> None:
        """Flush and release clients (after a background read of the offset syncs has ended)."""
        if self._loader is not None:
            self._loader.join()
            self._loader = None
        if self._producer is not None:
            self._producer.flush(10)
            self._producer = None
        for r in (self.syncs, self.reverse_syncs):
            if r is not None:
                r.close()
        if "_live_filters" in self.__dict__:
            self._live_filters.close()


def _newest_sync_at_or_before_downstream(
    store: OffsetSyncStore, topic: str, partition: int, downstream_offset: int
) -> OffsetSync | None:
    for s in store.syncs(topic, partition):  # newest first
        if s.downstream_offset <= downstream_offset:
            return s
    return None


def offsets_of(groups: Iterable[GroupOffset]) -> dict[TopicPartitionKey, int]:
    """``{(renamed topic, partition): downstream offset}`` of the translatable group offsets."""
    return {
        (g.checkpoint.topic, g.checkpoint.partition): g.checkpoint.downstream_offset
        for g in groups
        if g.checkpoint is not None
    }


# --------------------------------------------------------------------------- consumer migration (operator tools)


def upstream_topic_of(policy: ReplicationPolicy, source_alias: str, target_alias: str, renamed: str) -> str | None:
    """The upstream topic whose checkpoints carry the downstream name ``renamed`` (inverse of :func:`rename_topic`).

    ``primary.t`` → ``t``; a failback name ``t`` → ``backup.t`` (flow
    primary->backup). A name that several upstream topics map to (failback of a
    multi-hop topic) gets the one-hop candidate.

    Returns
    -------
    str or None
        The upstream topic, or ``None`` if no candidate renames to ``renamed``.
    """
    candidates: list[str] = []
    if policy.topic_source(renamed) == source_alias:
        up = policy.upstream_topic(renamed)
        if up is not None:
            candidates.append(up)
    candidates.append(policy.format_remote_topic(target_alias, renamed))
    for candidate in candidates:
        if rename_topic(policy, source_alias, target_alias, candidate) == renamed:
            return candidate
    return None


def rereads_at(downstream_offset: int, live_downstream_offset: int, live_rereads: int) -> int:
    """Records re-read by a consumer starting at ``downstream_offset`` instead of a live translation.

    A live translation (MM2's rule over the offset syncs) starts at
    ``live_downstream_offset`` and re-reads ``live_rereads`` copies of records the
    group already consumed; starting ``d`` records later skips ``d`` of them
    (a checkpoint the running flow translated exactly), starting earlier re-reads
    more. Exact when the partition has no compaction gaps or transaction markers
    between the two offsets (each offset is then one record).

    Returns
    -------
    int
        ``max(0, live_rereads - (downstream_offset - live_downstream_offset))``.
    """
    return max(0, live_rereads - (downstream_offset - live_downstream_offset))


def reset_plan_csv(offsets: Mapping[str, Mapping[TopicPartitionKey, int]], *, with_group: bool) -> str:
    """Offsets as a reset plan for ``kafka-consumer-groups --reset-offsets --from-file`` (ConsumerGroupCommand).

    Parameters
    ----------
    offsets:
        ``{group: {(topic, partition): committed offset}}`` (next offset to read).
    with_group:
        ``False``: ``topic,partition,offset`` lines, the format for exactly one
        group given with ``--group G``; ``True``: ``group,topic,partition,offset``
        lines, for any number of groups (``--group G1 --group G2`` or ``--all-groups``).

    Returns
    -------
    str
        No header, ``\\n`` line ends, fields quoted only when needed (a group id
        with a comma or quote), sorted by group, topic and partition; ``""`` when
        there is nothing to reset.

    Raises
    ------
    ValueError
        If ``with_group`` is false and ``offsets`` holds more than one group.
    """
    if not with_group and len(offsets) > 1:
        raise ValueError(f"the 3-column reset plan holds one group, got {len(offsets)}: use with_group=True")
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for group in sorted(offsets):
        for (topic, partition), offset in sorted(offsets[group].items()):
            writer.writerow([group, topic, partition, offset] if with_group else [topic, partition, offset])
    return buf.getvalue()


@dataclass(frozen=True)
class OffsetTranslation:
    """One committed offset of a source group, translated to the target now (``mirrorspark offsets translate``).

    Attributes
    ----------
    group, topic, partition:
        The group and the **upstream** topic-partition it committed on the source.
    source_offset:
        The group's committed offset on the source (next offset to read there).
    target_topic:
        The topic the group reads on the target (:func:`rename_topic`).
    target_offset:
        Where the group resumes on the target (next offset to read), ``None``
        when the offset cannot be translated (yet).
    target_end_offset:
        The target partition's end offset, ``None`` if it does not exist.
    rereads:
        Records a consumer starting at ``target_offset`` reads again (copies of
        records the group consumed on the source), ``None`` when unknown. Exact when
        the partition has no compaction gaps or transaction markers; an upper
        bound otherwise.
    basis:
        ``"checkpoint"`` (the latest checkpoint is for exactly this committed
        offset: the running flow may have translated it exactly), ``"offset-syncs"``
        (translated live by MM2's rule) or ``"none"``.
    """

    group: str
    topic: str
    partition: int
    source_offset: int
    target_topic: str
    target_offset: int | None
    target_end_offset: int | None
    rereads: int | None
    basis: str


@dataclass(frozen=True)
class FailoverOffset:
    """One offset :meth:`ConsumerMigration.failover` commits for a group on the target.

    Attributes
    ----------
    topic, partition:
        The **downstream** topic-partition on the target.
    offset:
        The committed offset written (the checkpoint's downstream offset; next offset to read).
    upstream_offset:
        The group's committed offset on the source the checkpoint was made for.
    metadata:
        The source commit's metadata, committed with the offset.
    previous_offset:
        The group's committed offset on the target before, ``None`` if none.
    rereads:
        Records re-read relative to ``upstream_offset`` (see :func:`rereads_at`);
        ``None`` when unknown (the offset syncs could not be read).
    """

    topic: str
    partition: int
    offset: int
    upstream_offset: int
    metadata: str
    previous_offset: int | None
    rereads: int | None


@dataclass(frozen=True)
class FailoverPlan:
    """What :meth:`ConsumerMigration.failover` did, or would do with ``dry_run``.

    Attributes
    ----------
    group, source, target:
        The group and the flow ``source->target``.
    offsets:
        One entry per partition, sorted by topic and partition.
    applied:
        Whether the offsets were committed (``False`` for a dry run).
    source_members:
        Active members of the group on the source, ``None`` if it was not reachable.
    """

    group: str
    source: str
    target: str
    offsets: tuple[FailoverOffset, ...]
    applied: bool
    source_members: int | None

    @property
    def total_rereads(self) -> int:
        """Sum of the known re-read counts."""
        return sum(o.rereads for o in self.offsets if o.rereads is not None)

    @property
    def unknown_rereads(self) -> int:
        """Partitions whose re-read count is unknown."""
        return sum(1 for o in self.offsets if o.rereads is None)


_ACTIVE_GROUP_ERRORS = frozenset(
    {"UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS", "FENCED_MEMBER_EPOCH"}
)
"""Kafka errors committing offsets for a group that consumers use (the broker refuses an admin commit)."""


class ConsumerMigration:
    """Operator tools for moving consumer groups from S to T (SRM's ``srm-control offsets``, MM2's RemoteClusterUtils).

    Reads the checkpoints the flow ``S->T`` wrote to ``<S>.checkpoints.internal``
    on T and, where needed, the group on S and the flow's offset syncs. Creates
    nothing on any cluster; only :meth:`failover` writes (the group's offsets on T).

    Parameters
    ----------
    config:
        The whole configuration.
    source, target:
        Aliases of the flow ``source->target``.
    timeout_s:
        Seconds for each cluster call and for reading the checkpoints topic to its
        end (default 30); reachability is checked within ``min(10, timeout_s)``.

    Raises
    ------
    UnknownAliasError
        If an alias is not in ``clusters`` (before anything connects).

    Notes
    -----
    Not thread-safe. Every command that names a group raises
    :class:`~mirrorspark.errors.ControlError` for an *unknown group*: one with
    no checkpoints on T and no committed offsets or membership on S.
    """

    def __init__(self, config: MirrorConfig, *, source: str, target: str, timeout_s: float = 30.0) -> None:
        self.flow = config.flow(source, target)
        self.source = source
        self.target = target
        self.timeout_s = timeout_s
        self._bootstrap = {
            source: config.cluster(source).bootstrap_servers,
            target: config.cluster(target).bootstrap_servers,
        }
        self.emitter = CheckpointEmitter(config, self.flow)
        self.policy = self.emitter.policy
        self.checkpoints_topic = self.emitter.checkpoints_topic
        self._settings = {source: (self.flow.source_admin, "source"), target: (self.flow.target_admin, "target")}
        self._admin_clients: dict[str, AdminClient] = {}
        self._reachable: dict[str, bool] = {}
        self._syncs_loaded = False

    def __enter__(self) -> ConsumerMigration:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ clusters

    def _admin(self, alias: str) -> AdminClient:
        """The admin client of the source or target, created at first use; librdkafka logs go to Python logging."""
        if alias not in self._admin_clients:
            settings, role = self._settings[alias]
            self._admin_clients[alias] = admin_client(
                settings,
                client_id=f"{self.flow.name}|mirrorspark|migration-{role}-admin",
                overrides={"logger": logging.getLogger(LIBRDKAFKA_LOGGER)},
            )
        return self._admin_clients[alias]

    def require_reachable(self, alias: str) -> None:
        """Fail fast unless a broker of ``alias`` (the source or the target) answers.

        Raises
        ------
        ClusterUnreachableError
            Naming the alias, its bootstrap servers and the fix.
        """
        if self._reachable.get(alias):
            return
        try:
            check_reachable(self._admin(alias), alias, self._bootstrap[alias], timeout_s=min(10.0, self.timeout_s))
        except ClusterUnreachableError:
            self._reachable[alias] = False
            del self._admin_clients[alias]  # destroyed: it would keep reconnecting in the background
            raise
        self._reachable[alias] = True

    def reachable(self, alias: str) -> bool:
        """Whether a broker of ``alias`` answers (checked once)."""
        if alias not in self._reachable:
            with contextlib.suppress(ClusterUnreachableError):
                self.require_reachable(alias)
        return self._reachable[alias]

    def _require_known(self, group: str) -> None:
        """Raise ControlError for a group without checkpoints unless it exists on the source."""
        where = f"no checkpoints in '{self.checkpoints_topic}' on '{self.target}'"
        if not self.reachable(self.source):
            raise ControlError(
                f"unknown group '{group}' ({where}; cluster '{self.source}' is unreachable, so the group could "
                "not be looked up there): check the group id, --source and --target"
            )
        admin = self._admin(self.source)
        if describe_group(admin, self.source, group, timeout_s=self.timeout_s).exists:
            return
        if group_offsets(admin, self.source, group, timeout_s=self.timeout_s):
            return
        raise ControlError(
            f"unknown group '{group}': no such consumer group on cluster '{self.source}' ({where}); "
            "check the group id, --source and --target"
        )

    def _load_syncs(self) -> None:
        if not self._syncs_loaded:
            self.emitter.load_syncs(read_to_end_required=False)
            self._syncs_loaded = True

    # ------------------------------------------------------------------ reading checkpoints

    def checkpoints(self, group: str | None = None) -> list[Checkpoint]:
        """Checkpoint records on the target, in topic order (``mirrorspark checkpoints read``).

        Parameters
        ----------
        group:
            Only this group's records; ``None`` for all.

        Raises
        ------
        ControlError
            If ``group`` is unknown.
        ClusterError
            If the target cannot be read (unreachable: ``ClusterUnreachableError``).
        """
        self.require_reachable(self.target)
        records = self.emitter.read_checkpoints(timeout_s=self.timeout_s)
        if group is None:
            return records
        mine = [cp for cp in records if cp.consumer_group_id == group]
        if not mine:
            self._require_known(group)
        return mine

    def latest_checkpoints(self, groups: Sequence[str] | None = None) -> dict[str, dict[TopicPartitionKey, Checkpoint]]:
        """The current checkpoint per (group, downstream topic, partition) — RemoteClusterUtils.translateOffsets.

        Parameters
        ----------
        groups:
            The groups; ``None`` for every group with checkpoints. A known group
            without checkpoints (yet) maps to ``{}``.

        Returns
        -------
        dict[str, dict[tuple[str, int], Checkpoint]]
            By group, then ``(topic on the target, partition)``, both sorted.

        Raises
        ------
        ControlError
            If a group in ``groups`` is unknown.
        ClusterError
            If the target cannot be read.
        """
        self.require_reachable(self.target)
        store = CheckpointStore()
        for cp in self.emitter.read_checkpoints(timeout_s=self.timeout_s):
            store.update(cp)
        names = store.groups() if groups is None else list(dict.fromkeys(groups))
        out: dict[str, dict[TopicPartitionKey, Checkpoint]] = {}
        for group in names:
            latest = store.group(group)
            if not latest:
                self._require_known(group)
            out[group] = dict(sorted(latest.items()))
        return out

    # ------------------------------------------------------------------ live translation

    def translate_group(self, group: str) -> list[OffsetTranslation]:
        """Translate a source group's committed offsets to the target now (``mirrorspark offsets translate``).

        Each committed offset (of a topic the flow replicates) is translated live
        through the flow's offset syncs with MM2's rule (no exact copied ranges
        exist outside the running flow), or in reverse through the opposite
        flow's syncs for a failback topic (:meth:`CheckpointEmitter.translate`).
        When the latest checkpoint is for exactly the committed offset, its
        downstream offset is preferred: the running flow may have translated it
        exactly; its re-reads are then :func:`rereads_at` the live translation.

        Returns
        -------
        list[OffsetTranslation]
            Sorted by topic and partition; empty when the group committed nothing.

        Raises
        ------
        ControlError
            If the group is unknown.
        ClusterUnreachableError
            If the source or the target does not answer.
        ClusterError
            If a cluster call fails.
        """
        self.require_reachable(self.source)
        self.require_reachable(self.target)
        latest = self.latest_checkpoints([group])[group]
        committed = group_offsets(self._admin(self.source), self.source, group, timeout_s=self.timeout_s)
        self._load_syncs()
        tgt_admin = self._admin(self.target)
        rows = []
        renamed: dict[TopicPartitionKey, str] = {}
        for topic, partition in committed:
            if self.emitter.topic_filter.should_replicate_topic(topic):
                renamed[(topic, partition)] = rename_topic(self.policy, self.source, self.target, topic)
        existing = list_topics(tgt_admin, self.target, timeout_s=self.timeout_s)
        ends = end_offsets(
            tgt_admin,
            self.target,
            [(t, p) for (_, p), t in renamed.items() if t in existing and p < existing[t]],
            timeout_s=self.timeout_s,
        )
        for (topic, partition), target_topic in sorted(renamed.items()):
            offset, metadata = committed[(topic, partition)]
            live = self.emitter.translate(group, topic, partition, offset, metadata)
            live_cp = live.checkpoint
            live_rereads = live.rereads if live.rereads >= 0 else None
            cp = latest.get((target_topic, partition))
            target_offset: int | None
            rereads: int | None
            if cp is not None and cp.upstream_offset == offset:
                target_offset, basis = cp.downstream_offset, "checkpoint"
                rereads = (
                    rereads_at(cp.downstream_offset, live_cp.downstream_offset, live_rereads)
                    if live_cp is not None and live_rereads is not None
                    else None
                )
            elif live_cp is not None:
                target_offset, basis, rereads = live_cp.downstream_offset, "offset-syncs", live_rereads
            else:
                target_offset, basis, rereads = None, "none", None
            rows.append(
                OffsetTranslation(
                    group=group,
                    topic=topic,
                    partition=partition,
                    source_offset=offset,
                    target_topic=target_topic,
                    target_offset=target_offset,
                    target_end_offset=ends.get((target_topic, partition)),
                    rereads=rereads,
                    basis=basis,
                )
            )
        return rows

    # ------------------------------------------------------------------ failover

    def failover(self, group: str, *, dry_run: bool = False) -> FailoverPlan:
        """Commit a group's latest checkpoints to the same group on the target (``mirrorspark failover``).

        The offsets are those of :meth:`latest_checkpoints` (RemoteClusterUtils's
        answer), written with the source commit's metadata whether they move the
        target group forward or back. Needs only the target; when the source is
        reachable too, the re-reads are computed from the offset syncs
        (:func:`rereads_at`) and the group's members there are counted.

        Parameters
        ----------
        group:
            The consumer group.
        dry_run:
            Compute and return the plan, change nothing.

        Returns
        -------
        FailoverPlan

        Raises
        ------
        ControlError
            If the group is unknown, has no checkpoints yet, or has active members
            on the target (the message names the group, the cluster and how many).
        ClusterUnreachableError
            If the target does not answer.
        ClusterError
            If reading or committing fails.
        """
        self.require_reachable(self.target)
        latest = self.latest_checkpoints([group])[group]
        if not latest:
            raise ControlError(
                f"group '{group}' has no checkpoints in '{self.checkpoints_topic}' on '{self.target}' yet: "
                f"nothing to fail over; let the flow {self.flow.name} run until it emits them "
                "(emit.checkpoints.interval.seconds)"
            )
        tgt_admin = self._admin(self.target)
        desc = describe_group(tgt_admin, self.target, group, timeout_s=self.timeout_s)
        if desc.active:
            raise self._active_error(group, desc.members, desc.state)
        previous = group_offsets(tgt_admin, self.target, group, timeout_s=self.timeout_s)
        source_members: int | None = None
        upstream: dict[TopicPartitionKey, str] = {}
        if self.reachable(self.source):
            src_admin = self._admin(self.source)
            source_members = describe_group(src_admin, self.source, group, timeout_s=self.timeout_s).members
            for topic, partition in group_offsets(src_admin, self.source, group, timeout_s=self.timeout_s):
                upstream[(rename_topic(self.policy, self.source, self.target, topic), partition)] = topic
            self._load_syncs()
        offsets = []
        for (topic, partition), cp in latest.items():
            rereads: int | None = None
            if self._syncs_loaded:
                up = upstream.get((topic, partition)) or upstream_topic_of(self.policy, self.source, self.target, topic)
                if up is not None:
                    live = self.emitter.translate(group, up, partition, cp.upstream_offset)
                    if live.checkpoint is not None and live.rereads >= 0:
                        rereads = rereads_at(cp.downstream_offset, live.checkpoint.downstream_offset, live.rereads)
            before = previous.get((topic, partition))
            offsets.append(
                FailoverOffset(
                    topic=topic,
                    partition=partition,
                    offset=cp.downstream_offset,
                    upstream_offset=cp.upstream_offset,
                    metadata=cp.metadata,
                    previous_offset=before[0] if before is not None else None,
                    rereads=rereads,
                )
            )
        if not dry_run:
            try:
                alter_group_offsets(
                    tgt_admin,
                    self.target,
                    group,
                    {(o.topic, o.partition): (o.offset, o.metadata) for o in offsets},
                    timeout_s=self.timeout_s,
                )
            except ClusterError as e:
                if e.kafka_code in _ACTIVE_GROUP_ERRORS:
                    now = describe_group(tgt_admin, self.target, group, timeout_s=self.timeout_s)
                    raise self._active_error(group, now.members, now.state) from e
                raise
        return FailoverPlan(
            group=group,
            source=self.source,
            target=self.target,
            offsets=tuple(offsets),
            applied=not dry_run,
            source_members=source_members,
        )

    def _active_error(self, group: str, members: int, state: str) -> ControlError:
        return ControlError(
            f"consumer group '{group}' has {members} active member{'s' if members != 1 else ''} on cluster "
            f"'{self.target}' (state {state}): stop its consumers there, then fail over again "
            "(committing offsets for a group in use would be rejected or overwritten)"
        )

    def close(self) -> None:
        """Release the consumers (admin clients close when collected)."""
        self.emitter.close()
