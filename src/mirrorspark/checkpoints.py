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
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition

from .clients import admin_client, consumer, end_offsets, ensure_topic, list_topics, producer
from .config import FlowConfig, MirrorConfig
from .errors import ClusterError, CorruptRecordError
from .filters import DefaultGroupFilter, DefaultTopicFilter
from .offsets import CopiedRanges, OffsetSyncStore, translate, translate_upstream_with_syncs
from .policy import ReplicationPolicy, load_policy
from .records import Checkpoint, OffsetSync

__all__ = [
    "CheckpointEmitter",
    "CheckpointStore",
    "GroupOffset",
    "OffsetSyncReader",
    "TopicReader",
    "is_more_recent",
    "offset_syncs_location",
    "rename_topic",
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
        self._latest.setdefault(checkpoint.consumer_group_id, {})[(checkpoint.topic, checkpoint.partition)] = (
            checkpoint
        )

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


def offset_syncs_location(flow: FlowConfig, policy: ReplicationPolicy) -> tuple[str, str]:
    """``(cluster alias, topic)`` of a flow's offset-syncs topic (``offset-syncs.topic.location``)."""
    if flow.offset_syncs_topic_location == "source":
        return flow.source, policy.offset_syncs_topic(flow.target)
    return flow.target, policy.offset_syncs_topic(flow.source)


class OffsetSyncReader:
    """Keeps an :class:`OffsetSyncStore` up to date from a flow's offset-syncs topic.

    Corrupt records are skipped with a warning (MM2's reader logs and skips them).
    """

    def __init__(self, config: MirrorConfig, flow: FlowConfig, policy: ReplicationPolicy, *, read_to_end_required: bool,
                 client_id: str) -> None:
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
        cid = f"{flow.name}|mirrorspark"
        self._cid = cid
        self._src_admin = admin_client(flow.source_admin, client_id=f"{cid}|checkpoint-source-admin")
        self._tgt_admin = admin_client(flow.target_admin, client_id=f"{cid}|checkpoint-target-admin")
        self._producer: Any = None
        self.syncs: OffsetSyncReader | None = None
        self.reverse_syncs: OffsetSyncReader | None = None

    # ------------------------------------------------------------------ start-up

    def start(self) -> None:
        """Create the checkpoints topic, load existing checkpoints, and read the offset syncs.

        Mirrors MM2 3.8+ (KAFKA-15905): when the checkpoints loaded, the sync
        store keeps its full history; otherwise only the latest sync per
        partition is usable after start-up.
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
        reader = TopicReader(f.target_consumer, f.target_admin, f.target, self.checkpoints_topic,
                             client_id=f"{self._cid}|checkpoints-target-consumer")
        try:
            reader.read(self._load_checkpoint, timeout_s=60)
        except ClusterError as e:
            loaded_ok = False
            log.warning("%s: loading checkpoints failed (%s); old group offsets may not translate", self.name, e)
        finally:
            reader.close()
        self.syncs = OffsetSyncReader(self.config, f, self.policy, read_to_end_required=not loaded_ok,
                                      client_id=f"{self._cid}|offset-syncs-consumer")
        self.syncs.load()
        reverse = self.config.flow(f.target, f.source)
        if reverse.emit_offset_syncs_enabled:
            rpolicy = load_policy(
                reverse.policy.class_name,
                separator=reverse.policy.separator,
                internal_topic_separator_enabled=reverse.policy.internal_topic_separator_enabled,
                source_cluster_alias=reverse.source,
            )
            self.reverse_syncs = OffsetSyncReader(self.config, reverse, rpolicy, read_to_end_required=False,
                                                  client_id=f"{self._cid}|reverse-offset-syncs-consumer")
            self.reverse_syncs.load()
        self._producer = producer(f.target_producer, client_id=f"{self._cid}|checkpoints-target-producer",
                                  overrides={"enable.idempotence": True, "linger.ms": 0})

    def _load_checkpoint(self, key: bytes | None, value: bytes | None) -> None:
        try:
            cp = Checkpoint.decode(key, value)
        except CorruptRecordError as e:
            log.warning("%s: skipping a corrupt checkpoint: %s", self.name, e)
            return
        self.store.update(cp)

    # ------------------------------------------------------------------ groups

    def refresh_groups(self) -> list[str]:
        """List source groups accepted by the group filter (MM2 ``findConsumerGroups``)."""
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

    def translate(self, group: str, topic: str, partition: int, upstream_offset: int, metadata: str = "",
                  now_ms: int | None = None) -> GroupOffset:
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
                    rereads = 0 if sync is None or sync.downstream_offset == upstream_offset else max(
                        0, upstream_offset - sync.downstream_offset - 1
                    )
        else:
            if self.syncs is None:
                raise ClusterError(f"{self.name}: checkpoint emitter used before start()")
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
        """One checkpoint cycle: read new syncs, translate every group, write what is more recent."""
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
        if not groups:
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
                log.warning("%s: syncing offsets of group %s on %s failed (likely consumers are using it): %s",
                            self.name, group, self.flow.target, e)
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
        """Whether a checkpoint at or past each snapshot offset exists (or it cannot be translated)."""
        f = self.flow
        for (group, topic, partition), offset in snapshot.items():
            renamed = rename_topic(self.policy, f.source, f.target, topic)
            cp = self.store.get(group, renamed, partition)
            if cp is not None and cp.upstream_offset >= offset:
                continue
            if self.translate(group, topic, partition, offset).checkpoint is None:
                continue  # cannot be translated: nothing to wait for
            return False
        return True

    def close(self) -> None:
        """Flush and release clients."""
        if self._producer is not None:
            self._producer.flush(10)
            self._producer = None
        for r in (self.syncs, self.reverse_syncs):
            if r is not None:
                r.close()


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
