"""Consumer-group offset sync (MM2 ``MirrorCheckpointTask.syncGroupOffset``, KIP-545).

The newest checkpoint of each group-partition is committed to the same group on the target, only
while that group is idle there and only forward of what it committed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

from mirrorspark.core.group_sync_counts import GroupSyncCounts
from mirrorspark.errors import ClusterError
from mirrorspark.kafka.admin import ClusterAdmin, GroupDescription, PartitionKey
from mirrorspark.mm2.checkpoint_rules import CheckpointStore
from mirrorspark.mm2.records import Checkpoint

log = logging.getLogger(__name__)

TRANSIENT_DESCRIBE_GRACE_S = 60.0
"""Seconds a group's description may keep failing transiently (coordinator loading) before it is a WARNING."""

IDLE_STATES = frozenset({"Empty", "Dead"})
"""Group states on the target whose offsets may be written (``Dead``: no such group)."""


class GroupOffsetSync:
    """Writes one flow's newest checkpoints into idle consumer groups on its target; not thread-safe.

    ``committed`` reads a group's offsets with a consumer of the group, never the Admin call
    (:meth:`~mirrorspark.kafka.admin.ClusterAdmin.committed_group_offsets`).
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
        self.counts: dict[str, GroupSyncCounts] = {}  # placeholder for the lead's #40 counts (drop on merge)
        self._describe_failures: dict[str, float] = {}  # group -> monotonic s of its first failure in a row

    def sync(self) -> dict[str, int]:
        """Commit the latest checkpoints to the idle groups on the target; return partitions written per group.

        Never back, never past the target partition's end (skipped with a WARNING, counted in :attr:`invalid`).
        Raises ``ClusterError`` when the target's end offsets or groups cannot be read at all.
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
        """Whether ``group`` is known idle on the target; a failed description is an unknown state, never dead.

        Transient failures are logged at INFO until :data:`TRANSIENT_DESCRIBE_GRACE_S`, then at WARNING.
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
