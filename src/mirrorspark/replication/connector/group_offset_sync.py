"""Consumer-group offset sync (MM2 ``MirrorCheckpointTask.syncGroupOffset``, KIP-545), never into an active group.

The newest checkpoint of each group-partition is committed to the same group on the target.

Invariants (the tests that guard them cite them)
------------------------------------------------
* **G1** A group is written only if its description, taken before its committed offsets are read, shows
  no members (``Empty`` or ``Dead``); the write itself is an admin commit, which the broker refuses while
  the group has members. A refusal is counted (``skipped_active``) and never retried: the next attempt
  starts again from G1 with fresh state, so a stale value never lands later.
* **G2** Only forward: an offset is written only above what the group committed on the target, read after
  the description of G1 (every commit made before the group was seen empty is read). A consumer could
  slip in only by joining, committing and leaving between that description and the write (a classic
  group's first join waits ``group.initial.rebalance.delay.ms``, 3 s by default), or by committing without
  joining (``assign()``), which no one can guard against.
* **G3** A group whose state or committed offsets cannot be read is skipped and counted
  (``skipped_unknown``), never taken for dead.
* **G4** Never past the end of the target partition (a foreign or corrupt checkpoint, counted in
  :attr:`GroupOffsetSync.invalid`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

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

REFUSED_ACTIVE = frozenset({"UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS", "NON_EMPTY_GROUP"})
"""Kafka's answers to an admin commit into a group with members: a refusal counted as ``skipped_active``."""


class CommittedReader(Protocol):
    """Reads a target group's committed offsets, after its description (G2)."""

    def __call__(self, group: str) -> Mapping[PartitionKey, tuple[int, str]]:
        """Return ``{(topic, partition): (committed offset, metadata)}``; raises ``ClusterError``."""
        ...


class FollowedView(Protocol):
    """The target's ``__consumer_offsets`` as followed: read to its end on demand, then each group's offsets."""

    def read(self) -> int:
        """Read up to the current end offsets; raises ``ClusterError``."""
        ...

    def committed(self, group: str) -> dict[PartitionKey, tuple[int, str]]:
        """Return the group's committed offsets as read so far."""
        ...


@dataclass(frozen=True)
class GroupPlan:
    """What group offset sync would write into one target group now.

    Attributes
    ----------
    state:
        The group's state on the target (``None``: its description failed).
    skipped:
        ``"active"`` (members, G1), ``"unknown"`` (state or offsets unreadable, G3) or ``None``.
    error:
        Why ``"unknown"``: the failure, or the description in state ``Unknown``.
    offsets, before:
        ``{(topic, partition): (offset, metadata)}`` to commit, and the committed offset there now (``None``: none).
    invalid:
        Checkpoints past the end of their target partition (G4), each with that end (``None``: no partition).
    """

    group: str
    state: str | None
    skipped: Literal["active", "unknown"] | None
    error: ClusterError | GroupDescription | None = None
    offsets: dict[PartitionKey, tuple[int, str]] = field(default_factory=dict)
    before: dict[PartitionKey, int | None] = field(default_factory=dict)
    invalid: tuple[tuple[Checkpoint, int | None], ...] = ()


class GroupOffsetSync:
    """Writes one flow's newest checkpoints into idle consumer groups on its target; not thread-safe.

    ``committed`` reads a group's offsets with a consumer of the group, never the Admin call
    (:meth:`~mirrorspark.kafka.admin.ClusterAdmin.committed_group_offsets`); :attr:`counts` holds each
    group's outcomes.
    """

    def __init__(
        self,
        name: str,
        store: CheckpointStore,
        admin: Callable[[], ClusterAdmin],
        committed: CommittedReader,
    ) -> None:
        self.name = name
        self.store = store
        self._admin = admin
        self.committed = committed
        self.synced = 0
        self.invalid = 0
        self.counts: dict[str, GroupSyncCounts] = {}
        self.view: FollowedView | None = None  # set: committed offsets read from it, caught up after describing
        self._describe_failures: dict[str, float] = {}  # group -> monotonic s of its first failure in a row

    def sync(self, groups: Iterable[str] | None = None) -> dict[str, int]:
        """Commit the latest checkpoints to the idle groups on the target; return partitions written per group.

        ``groups``: those with checkpoints among them (``None``: every one). With a :attr:`view`, it is read
        to its end after the descriptions (G2) and gives the committed offsets. Raises ``ClusterError`` when
        the target's end offsets or groups cannot be read at all.
        """
        written: dict[str, int] = {}
        wanted = self._wanted(groups)
        if not wanted:
            return written
        admin = self._admin()
        described = admin.describe_groups(wanted)
        view = self.view
        if view is not None:
            try:
                view.read()
            except ClusterError as e:
                log.warning("%s: not syncing group offsets this time: %s", self.name, e)
                for group in wanted:
                    self._count(group).skipped_unknown += 1
                return written
        ends = admin.end_offsets(sorted({k for g in wanted for k in self.store.group(g)}))
        # each group's read of its committed offsets just before its write (G2): with a followed view they are
        # all in memory, so every write goes at once; else one group after the other
        waves = [wanted] if view is not None else [[g] for g in wanted]
        for wave in waves:
            plans = {group: self._plan(admin, group, described[group], ends, view) for group in wave}
            for plan in plans.values():
                self._account(plan, admin.alias)
            results = admin.alter_groups_offsets({g: p.offsets for g, p in plans.items() if p.offsets})
            for group, failure in sorted(results.items()):
                if failure is None:
                    self._count(group).synced += 1
                    written[group] = len(plans[group].offsets)
                else:
                    self._refused(admin, group, failure)
        self.synced += sum(written.values())
        return written

    def plan(self, groups: Iterable[str] | None = None) -> dict[str, GroupPlan]:
        """Return what :meth:`sync` would write into each group now (G1-G4), writing and counting nothing.

        Raises ``ClusterError`` when the target's end offsets, groups or :attr:`view` cannot be read.
        """
        wanted = self._wanted(groups)
        if not wanted:
            return {}
        admin = self._admin()
        described = admin.describe_groups(wanted)
        if self.view is not None:
            self.view.read()
        ends = admin.end_offsets(sorted({k for g in wanted for k in self.store.group(g)}))
        return {group: self._plan(admin, group, described[group], ends, self.view) for group in wanted}

    def _wanted(self, groups: Iterable[str] | None) -> list[str]:
        known = self.store.groups()
        return known if groups is None else sorted(set(groups) & set(known))

    def _count(self, group: str) -> GroupSyncCounts:
        return self.counts.setdefault(group, GroupSyncCounts())

    def _plan(
        self,
        admin: ClusterAdmin,
        group: str,
        desc: GroupDescription | ClusterError,
        ends: Mapping[PartitionKey, int],
        view: FollowedView | None,
    ) -> GroupPlan:
        """Return what to write into one group (G1-G4); nothing when skipped (:attr:`GroupPlan.skipped` says why)."""
        if isinstance(desc, ClusterError) or desc.state == "Unknown":
            return GroupPlan(group, None if isinstance(desc, ClusterError) else desc.state, "unknown", error=desc)
        if desc.members or desc.state not in IDLE_STATES:
            return GroupPlan(group, desc.state, "active")
        try:
            # a Dead group has no offsets, but read them anyway: only ever move a group forward
            current = view.committed(group) if view is not None else self.committed(group)
        except ClusterError as e:
            return GroupPlan(group, desc.state, "unknown", error=e)
        offsets, invalid = self._forward(group, current, ends)
        before = {k: current[k][0] if k in current else None for k in offsets}
        return GroupPlan(group, desc.state, None, offsets=offsets, before=before, invalid=invalid)

    def _account(self, plan: GroupPlan, alias: str) -> None:
        """Count and log what :meth:`_plan` found for one group before its write (G1, G3, G4)."""
        counts = self._count(plan.group)
        if plan.state is None or plan.state == "Unknown":
            assert plan.error is not None
            self._unknown(plan.group, plan.error)
            counts.skipped_unknown += 1
            return
        self._describe_failures.pop(plan.group, None)
        if plan.skipped == "active":
            log.info("%s: group %s is %s on %s; not syncing its offsets", self.name, plan.group, plan.state, alias)
            counts.skipped_active += 1
        elif plan.error is not None:
            log.warning("%s: not syncing offsets of group %s this time: %s", self.name, plan.group, plan.error)
            counts.skipped_unknown += 1
        for cp, end in plan.invalid:
            self._invalid(plan.group, cp, end, alias)

    def _refused(self, admin: ClusterAdmin, group: str, e: ClusterError) -> None:
        """Count and log a write the broker refused (consumers joined: G1) or that failed otherwise (G3)."""
        refused = e.kafka_code in REFUSED_ACTIVE
        log.log(
            logging.INFO if refused else logging.WARNING,
            "%s: syncing offsets of group %s on %s %s: %s",
            self.name,
            group,
            admin.alias,
            "refused (consumers joined it)" if refused else "failed",
            e,
        )
        counts = self._count(group)
        if refused:
            counts.skipped_active += 1
        else:
            counts.skipped_unknown += 1

    def _forward(
        self, group: str, current: Mapping[PartitionKey, tuple[int, str]], ends: Mapping[PartitionKey, int]
    ) -> tuple[dict[PartitionKey, tuple[int, str]], tuple[tuple[Checkpoint, int | None], ...]]:
        """Return the group's checkpoints ahead of what it committed on the target, inside the target partitions.

        Also the checkpoints past their partition's end (G4), each with that end (``None``: no partition).
        """
        out: dict[PartitionKey, tuple[int, str]] = {}
        invalid: list[tuple[Checkpoint, int | None]] = []
        for (topic, partition), cp in sorted(self.store.group(group).items()):
            have = current.get((topic, partition))
            if have is not None and have[0] >= cp.downstream_offset:
                continue
            end = ends.get((topic, partition))
            if end is None or cp.downstream_offset > end:
                invalid.append((cp, end))
                continue
            out[(topic, partition)] = (cp.downstream_offset, cp.metadata)
        return out, tuple(invalid)

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

    def _unknown(self, group: str, desc: GroupDescription | ClusterError) -> None:
        """Log a group whose state is unknown: INFO while a transient failure is young, else WARNING (G3)."""
        if not isinstance(desc, ClusterError):
            log.warning("%s: group %s is in an unknown state; not syncing its offsets", self.name, group)
            return
        since = self._describe_failures.setdefault(group, time.monotonic())
        routine = desc.retriable and time.monotonic() - since < TRANSIENT_DESCRIBE_GRACE_S
        log.log(
            logging.INFO if routine else logging.WARNING,
            "%s: not syncing offsets of group %s this time: %s",
            self.name,
            group,
            desc,
        )


__all__ = [
    "IDLE_STATES",
    "REFUSED_ACTIVE",
    "TRANSIENT_DESCRIBE_GRACE_S",
    "CommittedReader",
    "FollowedView",
    "GroupOffsetSync",
    "GroupPlan",
]
