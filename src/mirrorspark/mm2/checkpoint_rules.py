"""Checkpoint rules of MM2's ``MirrorCheckpointTask``: renaming, recency, the latest checkpoint per group."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mirrorspark.mm2.policy import ReplicationPolicy
from mirrorspark.mm2.records import Checkpoint
from mirrorspark.mm2.sync_store import OffsetSyncStore
from mirrorspark.mm2.translation import CopiedRanges, Translation, translate, translate_back

if TYPE_CHECKING:
    pass


TopicPartitionKey = tuple[str, int]


def rename_topic(policy: ReplicationPolicy, source_alias: str, target_alias: str, upstream_topic: str) -> str:
    """Name the topic a checkpoint of ``upstream_topic`` carries (MM2 ``MirrorCheckpointTask.renameTopicPartition``).

    A topic that came from the target (``topic_source == target``) is named by
    its original topic (failback: ``B.topic1`` on A, flow A->B... checkpointed as
    ``topic1``); any other topic by its remote name on the target.

    Parameters
    ----------
    policy:
        The flow's replication policy.
    source_alias, target_alias:
        The flow's source and target cluster aliases.
    upstream_topic:
        The topic on the source whose group offsets are checkpointed.

    Returns
    -------
    str
        The downstream topic name the checkpoint's ``topicPartition`` carries.
    """
    if is_failback(policy, target_alias, upstream_topic):
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
        """Return the latest checkpoint of a group for a downstream topic-partition, or ``None``."""
        return self._latest.get(group, {}).get((topic, partition))

    def group(self, group: str) -> dict[TopicPartitionKey, Checkpoint]:
        """Return the latest checkpoints of one group, by downstream topic-partition (a copy)."""
        return dict(self._latest.get(group, {}))

    def groups(self) -> list[str]:
        """Return the groups with at least one checkpoint, sorted."""
        return sorted(self._latest)


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


def is_failback(policy: ReplicationPolicy, target_alias: str, upstream_topic: str) -> bool:
    """Whether a group on the source consuming ``upstream_topic`` fails back (the topic came from the target).

    MM2 ``MirrorCheckpointTask.renameTopicPartition``'s test: ``topic_source == target``.
    """
    return policy.topic_source(upstream_topic) == target_alias


def translate_group_offset(
    policy: ReplicationPolicy,
    source_alias: str,
    target_alias: str,
    group: str,
    topic: str,
    partition: int,
    upstream_offset: int,
    metadata: str = "",
    *,
    syncs: OffsetSyncStore | None,
    copied: CopiedRanges | None = None,
    reverse_syncs: OffsetSyncStore | None = None,
    reverse_copied: CopiedRanges | None = None,
) -> GroupOffset:
    """Translate one committed source offset of a group into a checkpoint (MM2 ``MirrorCheckpointTask.checkpoint``).

    For a flow ``source->target``: a topic that came from elsewhere is translated
    forward (:func:`~mirrorspark.mm2.translation.translate`: exact copied ranges
    first, MM2's offset-sync rule second); a topic that came from the target
    (:func:`is_failback`) is translated in reverse through the opposite flow
    ``target->source`` (:func:`~mirrorspark.mm2.translation.translate_back`,
    beyond MM2). The checkpoint carries the topic's name on the target
    (:func:`rename_topic`).

    Parameters
    ----------
    policy:
        The flow's replication policy.
    source_alias, target_alias:
        The flow's clusters.
    group, topic, partition, upstream_offset, metadata:
        The group's commit on the source (upstream topic name, next offset to read).
    syncs, copied:
        This flow's offset-sync store (``None``: none read, nothing translates
        forward) and exact copied ranges.
    reverse_syncs, reverse_copied:
        The opposite flow's offset-sync store and copied ranges (failback).

    Returns
    -------
    GroupOffset
        With ``checkpoint=None`` and ``rereads=-1`` when the offset cannot be translated.
    """
    renamed = rename_topic(policy, source_alias, target_alias, topic)
    t: Translation | None
    if is_failback(policy, target_alias, topic):
        up_topic = policy.upstream_topic(topic) or topic
        t = translate_back(reverse_syncs, reverse_copied, up_topic, partition, upstream_offset)
    else:
        t = None if syncs is None else translate(syncs, copied, topic, partition, upstream_offset)
    if t is None:
        return GroupOffset(group, topic, partition, upstream_offset, None, -1)
    checkpoint: Checkpoint | None = None
    if t.downstream_offset >= 0:
        checkpoint = Checkpoint(group, renamed, partition, upstream_offset, t.downstream_offset, metadata)
    return GroupOffset(group, topic, partition, upstream_offset, checkpoint, t.rereads)


# --------------------------------------------------------------------------- consumer migration (operator tools)


def upstream_topic_of(policy: ReplicationPolicy, source_alias: str, target_alias: str, renamed: str) -> str | None:
    """Find the upstream topic whose checkpoints are named ``renamed`` downstream (inverse of :func:`rename_topic`).

    ``primary.t`` → ``t``; a failback name ``t`` → ``backup.t`` (flow
    primary->backup). A name that several upstream topics map to (failback of a
    multi-hop topic) gets the one-hop candidate.

    Parameters
    ----------
    policy:
        The flow's replication policy.
    source_alias, target_alias:
        The flow's source and target cluster aliases.
    renamed:
        A checkpoint's downstream topic name (its ``topicPartition`` topic).

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
    """Count the records re-read by a consumer starting at ``downstream_offset`` instead of a live translation.

    A live translation (MM2's rule over the offset syncs) starts at
    ``live_downstream_offset`` and re-reads ``live_rereads`` copies of records the
    group already consumed; starting ``d`` records later skips ``d`` of them
    (a checkpoint the running flow translated exactly), starting earlier re-reads
    more. Exact when the partition has no compaction gaps or transaction markers
    between the two offsets (each offset is then one record).

    Parameters
    ----------
    downstream_offset:
        Where the consumer starts on the target (e.g. a checkpoint's downstream offset).
    live_downstream_offset:
        Where a live translation of the group's committed offset starts on the target.
    live_rereads:
        Records the live translation re-reads (``>= 0``).

    Returns
    -------
    int
        ``max(0, live_rereads - (downstream_offset - live_downstream_offset))`` records.
    """
    return max(0, live_rereads - (downstream_offset - live_downstream_offset))


__all__ = [
    "CheckpointStore",
    "GroupOffset",
    "is_failback",
    "is_more_recent",
    "rename_topic",
    "rereads_at",
    "translate_group_offset",
    "upstream_topic_of",
]
