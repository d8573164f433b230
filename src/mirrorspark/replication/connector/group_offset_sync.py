"""Consumer-group offset sync (MM2 ``MirrorCheckpointTask.syncGroupOffset``, KIP-545, ``sync.group.offsets.enabled``).

The newest checkpoint of each group-partition (:class:`~mirrorspark.mm2.checkpoint_rules.CheckpointStore`) is
committed to the same group on the target, only while that group is known to be idle there, and only
forward of what it already committed: a failed-over consumer of an idle group starts where the source
group stood, translated, and a group in use on the target is never touched.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

from mirrorspark.errors import ClusterError
from mirrorspark.kafka.admin import ClusterAdmin, GroupDescription, PartitionKey
from mirrorspark.mm2.checkpoint_rules import CheckpointStore
from mirrorspark.mm2.records import Checkpoint

log = logging.getLogger(__name__)

TRANSIENT_DESCRIBE_GRACE_S = 60.0
"""Seconds a group's description may keep failing transiently (coordinator loading) before it is a WARNING."""

IDLE_STATES = frozenset({"Empty", "Dead"})
"""Group states on the target whose offsets may be written: no consumer uses the group (``Dead``: no such group)."""


class GroupOffsetSync:
    """Writes one flow's newest checkpoints into idle consumer groups on its target.

    Parameters
    ----------
    name:
        The flow's name, ``"S->T"`` (for messages).
    store:
        The flow's checkpoint store: the newest checkpoint per group, topic on the target and partition.
    admin:
        The target's admin wrapper (calls bounded by ``admin.timeout.ms``).
    committed:
        Reads a group's committed offsets on the target (with a consumer of the group, never Admin
        ``listConsumerGroupOffsets``: see :meth:`~mirrorspark.kafka.admin.ClusterAdmin.committed_group_offsets`).

    Attributes
    ----------
    synced:
        Partitions written so far.
    invalid:
        Checkpoints not written because their downstream offset is past the target partition's end.

    Not thread-safe: one scheduler job calls :meth:`sync`.
    """

    def __init__(
        self,
        name: str,
        store: CheckpointStore,
        admin: Callable[[], ClusterAdmin],
        committed: Callable[[str], Mapping[PartitionKey, tuple[int, str]]],
    ) -> None:
        self.name = name
        self.store = store
        self._admin = admin
        self._committed = committed
        self.synced = 0
        self.invalid = 0
        self._describe_failures: dict[str, float] = {}  # group -> monotonic s of its first failure in a row

    def sync(self) -> dict[str, int]:
        """Commit the latest checkpoints to the same groups on the target (MM2 ``syncGroupOffset``).

        Only groups known to be idle on the target (``Empty``, or ``Dead``: no such group) are
        written (a group whose description fails or whose state is unknown is skipped this cycle),
        and only partitions whose target offset is missing or behind the checkpoint (never moved
        back). A checkpoint whose downstream offset is past the end of the target partition (a
        foreign or corrupt record: consumers would skip records after failover) is never committed:
        skipped with a WARNING and counted in :attr:`invalid`.

        Returns
        -------
        dict[str, int]
            Partitions written per group.

        Raises
        ------
        ClusterError
            The target's end offsets or its groups cannot be read at all (the next cycle tries again).
        """
        written: dict[str, int] = {}
        groups = self.store.groups()
        if not groups:
            return written
        admin = self._admin()
        described = admin.describe_groups(groups)
        ends = admin.end_offsets(sorted({k for g in groups for k in self.store.group(g)}))
        for group in groups:
            if not self._idle(group, described[group], admin.alias):
                continue
            try:
                # a Dead group has no offsets, but read them anyway: only ever move a group forward
                current = self._committed(group)
            except ClusterError as e:
                log.warning("%s: not syncing offsets of group %s this cycle: %s", self.name, group, e)
                continue
            offsets = self._forward(group, current, ends, admin.alias)
            if not offsets:
                continue
            try:
                admin.alter_group_offsets(group, offsets)
                written[group] = len(offsets)
            except ClusterError as e:
                log.warning(
                    "%s: syncing offsets of group %s on %s failed (likely consumers are using it): %s",
                    self.name,
                    group,
                    admin.alias,
                    e,
                )
        self.synced += sum(written.values())
        return written

    def _forward(
        self,
        group: str,
        current: Mapping[PartitionKey, tuple[int, str]],
        ends: Mapping[PartitionKey, int],
        alias: str,
    ) -> dict[PartitionKey, tuple[int, str]]:
        """Return the group's checkpoints ahead of what it committed on the target, inside the target partitions."""
        out: dict[PartitionKey, tuple[int, str]] = {}
        for (topic, partition), cp in sorted(self.store.group(group).items()):
            have = current.get((topic, partition))
            if have is not None and have[0] >= cp.downstream_offset:
                continue
            end = ends.get((topic, partition))
            if end is None or cp.downstream_offset > end:
                self._invalid(group, cp, end, alias)
                continue
            out[(topic, partition)] = (cp.downstream_offset, cp.metadata)
        return out

    def _invalid(self, group: str, cp: Checkpoint, end: int | None, alias: str) -> None:
        self.invalid += 1
        log.warning(
            "%s: not syncing group %s to %s-%d@%d on %s: the partition %s; the checkpoint is foreign or corrupt "
            "(consumers would skip records)",
            self.name,
            group,
            cp.topic,
            cp.partition,
            cp.downstream_offset,
            alias,
            "does not exist" if end is None else f"ends at {end}",
        )

    def _idle(self, group: str, desc: GroupDescription | ClusterError, alias: str) -> bool:
        """Tell whether ``group`` may be synced: known to be idle on the target (logged when not).

        A failed description means an unknown state (a group must never be treated as dead, which
        would skip the forward-only check). A transient failure (a coordinator still loading or
        moving, e.g. ``COORDINATOR_LOAD_IN_PROGRESS``) is logged at INFO until the same group has kept
        failing for :data:`TRANSIENT_DESCRIBE_GRACE_S`; that, and any other failure, at WARNING.
        """
        if isinstance(desc, ClusterError):
            since = self._describe_failures.setdefault(group, time.monotonic())
            routine = desc.retriable and time.monotonic() - since < TRANSIENT_DESCRIBE_GRACE_S
            log.log(
                logging.INFO if routine else logging.WARNING,
                "%s: not syncing offsets of group %s this cycle: %s",
                self.name,
                group,
                desc,
            )
            return False
        self._describe_failures.pop(group, None)
        if desc.members or desc.state not in IDLE_STATES:
            how = logging.WARNING if desc.state == "Unknown" else logging.INFO
            log.log(how, "%s: group %s is %s on %s; not syncing its offsets", self.name, group, desc.state, alias)
            return False
        return True


__all__ = ["IDLE_STATES", "TRANSIENT_DESCRIBE_GRACE_S", "GroupOffsetSync"]
