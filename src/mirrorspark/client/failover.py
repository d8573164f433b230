"""Committing a consumer group's newest checkpoints on the target: the failover both the tools and the driver do.

``mirrorspark failover`` (:meth:`~mirrorspark.migration.consumer_migration.ConsumerMigration.failover`)
and the driver's failover policy (:mod:`mirrorspark.replication.connector.failover_watch`) move a group the same way:
the newest checkpoint per partition (MM2 ``RemoteClusterUtils.translateOffsets``) is committed to the
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
    """One offset a failover commits for a group on the target.

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
        Records re-read relative to ``upstream_offset`` (see :func:`~mirrorspark.mm2.checkpoint_rules.rereads_at`);
        ``None`` when unknown (the offset syncs could not be read).
    source_offset:
        The group's committed offset on the source now, ``None`` when not read (source unreachable, or
        not asked): past ``upstream_offset``, the group consumed records there since the checkpoint, which a
        consumer on the target reads again too (``mirrorspark drill`` counts them).
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
    """Build the error for a group that has active members on the cluster ``target`` (names the fix).

    It is the only :class:`~mirrorspark.errors.ControlError` :func:`failover_offsets` and
    :func:`commit_failover` raise, so a caller tells "group in use" from other failures by the class.
    """
    return ControlError(
        f"consumer group '{group}' has {members} active member{'s' if members != 1 else ''} on cluster "
        f"'{target}' (state {state}): stop its consumers there, then fail over again "
        "(committing offsets for a group in use would be rejected or overwritten)"
    )


def latest_by_group(records: list[Checkpoint]) -> dict[str, dict[TopicPartitionKey, Checkpoint]]:
    """Keep the newest checkpoint per group and downstream partition of a checkpoints topic's records.

    Parameters
    ----------
    records:
        Checkpoints in topic order (:func:`~mirrorspark.client.checkpoint_reader.read_checkpoints`).

    Returns
    -------
    dict[str, dict[tuple[str, int], Checkpoint]]
        By group (sorted), then ``(topic on the target, partition)`` (sorted).
    """
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
    """Plan a group's failover: its newest checkpoints, refused while the group is in use on the target.

    Parameters
    ----------
    admin:
        The target's :class:`~mirrorspark.kafka.admin.ClusterAdmin` (its alias named in messages).
    group:
        The consumer group.
    latest:
        Its newest checkpoint per ``(topic on the target, partition)``.
    rereads:
        Returns the records a consumer starting at a checkpoint reads again, given the downstream
        topic, partition and checkpoint (``None`` = unknown); ``None`` leaves every count unknown.
    committed:
        Reads the group's committed offsets on the target, given the group (as
        :meth:`~mirrorspark.kafka.admin.ClusterAdmin.group_offsets` returns them); ``None`` = Admin
        ``listConsumerGroupOffsets`` with ``admin``. A long-running process passes a reader
        that uses a consumer (:meth:`~mirrorspark.kafka.admin.ClusterAdmin.committed_group_offsets`):
        the admin call can crash the process while a group coordinator moves.

    Returns
    -------
    list[FailoverOffset]
        One per entry of ``latest``, in its order.

    Raises
    ------
    ControlError
        The group has active members on the target (the message names the group, cluster and count).
    ClusterError
        If the target cannot be asked.
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

    Parameters
    ----------
    admin:
        The target's :class:`~mirrorspark.kafka.admin.ClusterAdmin` (its alias named in messages).
    group:
        The consumer group.
    offsets:
        From :func:`failover_offsets`.

    Raises
    ------
    ControlError
        Consumers joined the group on the target since it was planned (the broker refused the commit).
    ClusterError
        If the commit fails otherwise.
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
