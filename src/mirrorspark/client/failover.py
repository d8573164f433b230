"""Committing a consumer group's newest checkpoints on the target: the failover both the tools and the driver do.

The newest checkpoint per partition (MM2 ``RemoteClusterUtils.translateOffsets``) is committed to the
same group on the target with Admin ``alterConsumerGroupOffsets``, never for a group with active
members there (the broker would refuse the commit, or the members would overwrite it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from mirrorspark.errors import ClusterError, ControlError
from mirrorspark.kafka.admin import ClusterAdmin
from mirrorspark.mm2.checkpoint_rules import CheckpointStore, TopicPartitionKey
from mirrorspark.mm2.records import Checkpoint

ACTIVE_GROUP_ERRORS = frozenset(
    {"UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS", "FENCED_MEMBER_EPOCH"}
)
"""Kafka errors committing offsets for a group that consumers use (the broker refuses an admin commit)."""


@dataclass(frozen=True)
class FailoverOffset:
    """One offset a failover commits for a group on the target (offsets: next offset to read).

    ``topic``/``partition`` are the **downstream** partition; ``rereads`` (see
    :func:`~mirrorspark.mm2.checkpoint_rules.rereads_at`) and ``source_offset`` (the group's offset on the
    source now; past ``upstream_offset``, records a target consumer reads again too) are ``None`` when unknown.
    """

    topic: str
    partition: int
    offset: int
    upstream_offset: int
    metadata: str
    previous_offset: int | None
    rereads: int | None
    source_offset: int | None = None

    @property
    def consumed_since(self) -> int:
        """Records the group consumed on the source after the checkpoint (0 when unknown)."""
        return 0 if self.source_offset is None else max(0, self.source_offset - self.upstream_offset)


def group_in_use_error(group: str, target: str, members: int, state: str) -> ControlError:
    """Build the ControlError for a group with active members on ``target``: the only ControlError of this module."""
    return ControlError(
        f"consumer group '{group}' has {members} active member{'s' if members != 1 else ''} on cluster "
        f"'{target}' (state {state}): stop its consumers there, then fail over again "
        "(committing offsets for a group in use would be rejected or overwritten)"
    )


def latest_by_group(records: list[Checkpoint]) -> dict[str, dict[TopicPartitionKey, Checkpoint]]:
    """Keep the newest checkpoint per group, then ``(topic on the target, partition)``, both sorted."""
    store = CheckpointStore()
    for cp in records:
        store.update(cp)
    return {g: dict(sorted(store.group(g).items())) for g in sorted(store.groups())}


def failover_offsets(
    admin: ClusterAdmin,
    group: str,
    latest: Mapping[TopicPartitionKey, Checkpoint],
    *,
    rereads: Callable[[str, int, Checkpoint], int | None] | None = None,
    committed: Callable[[str], Mapping[TopicPartitionKey, tuple[int, str]]] | None = None,
) -> list[FailoverOffset]:
    """Plan a group's failover: its newest checkpoints, one :class:`FailoverOffset` per entry of ``latest``.

    ``rereads(topic, partition, checkpoint)`` counts re-reads (``None`` = unknown). ``committed(group)``
    reads the group's offsets on the target; default Admin ``listConsumerGroupOffsets``, which can crash a
    long-running process while a coordinator moves (pass a consumer-based reader there).

    Raises
    ------
    ControlError
        The group has active members on the target (names the group, cluster and count).
    ClusterError
        The target cannot be asked.
    """
    desc = admin.describe_group(group)
    if desc.active:
        raise group_in_use_error(group, admin.alias, desc.members, desc.state)
    previous = committed(group) if committed is not None else admin.group_offsets(group)
    out = []
    for (topic, partition), cp in latest.items():
        before = previous.get((topic, partition))
        out.append(
            FailoverOffset(
                topic=topic,
                partition=partition,
                offset=cp.downstream_offset,
                upstream_offset=cp.upstream_offset,
                metadata=cp.metadata,
                previous_offset=before[0] if before is not None else None,
                rereads=rereads(topic, partition, cp) if rereads is not None else None,
            )
        )
    return out


def commit_failover(admin: ClusterAdmin, group: str, offsets: list[FailoverOffset]) -> None:
    """Commit a planned failover's offsets (with the source commits' metadata) to the group on the target.

    Raises
    ------
    ControlError
        Consumers joined the group on the target since it was planned (the broker refused the commit).
    ClusterError
        The commit fails otherwise.
    """
    try:
        admin.alter_group_offsets(group, {(o.topic, o.partition): (o.offset, o.metadata) for o in offsets})
    except ClusterError as e:
        if e.kafka_code in ACTIVE_GROUP_ERRORS:
            now = admin.describe_group(group)
            raise group_in_use_error(group, admin.alias, now.members, now.state) from e
        raise


__all__ = [
    "ACTIVE_GROUP_ERRORS",
    "FailoverOffset",
    "commit_failover",
    "failover_offsets",
    "group_in_use_error",
    "latest_by_group",
]
