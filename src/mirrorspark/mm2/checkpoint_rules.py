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

    A topic that came from the target is named by its original topic (failback); any other by its remote name.
    """
    if is_failback(policy, target_alias, upstream_topic):
        return policy.original_topic(upstream_topic)
    return policy.format_remote_topic(source_alias, upstream_topic)


def is_more_recent(new: Checkpoint, last: Checkpoint | None) -> bool:
    """MM2's rule for emitting a checkpoint (``MirrorCheckpointTask.checkpointIsMoreRecent``).

    Emit when there is no previous one, when the group's upstream offset was rewound, or when the downstream offset
    moved forward: a checkpoint never moves a group backwards without cause.
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

    ``checkpoint`` is ``None`` while it cannot be translated; ``rereads`` is -1 when unknown.
    """

    group: str
    topic: str
    partition: int
    upstream_offset: int
    checkpoint: Checkpoint | None
    rereads: int


def is_failback(policy: ReplicationPolicy, target_alias: str, upstream_topic: str) -> bool:
    """Whether a group on the source consuming ``upstream_topic`` fails back: MM2's ``topic_source == target`` test."""
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

    Forward through :func:`~mirrorspark.mm2.translation.translate`, or, for a topic that came from the target, back
    through the opposite flow (:func:`~mirrorspark.mm2.translation.translate_back`, beyond MM2); ``syncs`` ``None``
    means nothing translates forward.
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

    ``primary.t`` → ``t``; a failback ``t`` → ``backup.t``; ambiguous names get the one-hop candidate; else
    ``None``.
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

    ``max(0, live_rereads - (downstream_offset - live_downstream_offset))``: exact without compaction gaps or
    transaction markers between the two offsets.
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
