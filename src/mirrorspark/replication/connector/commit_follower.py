"""Checkpoints as the source groups commit (``emit.checkpoints.on.commit``; beyond MM2, KIP-1292's aim).

The :class:`CommitFollower` of a flow ``S->T`` reads S's ``__consumer_offsets`` from its start, then every
:data:`FOLLOW_TICK_S` what was written since (one ``ListOffsets`` and the new records: a few hundred bytes
per commit, whatever the number of groups), and writes each accepted commit's checkpoint as soon as the
copy has passed it. With ``sync.group.offsets.enabled`` it then commits those checkpoints to their groups
on T through :class:`~mirrorspark.replication.connector.group_offset_sync.GroupOffsetSync`, reading what
the groups committed on T from T's ``__consumer_offsets`` (no request per group).

Invariants (the tests that guard them cite them)
------------------------------------------------
* **O1** A commit's checkpoint is written only once the flow's copy position has reached the committed
  offset (its translation is then exact, never past a copied record); until then it waits, and MM2's
  interval checkpoints stand.
* **O2** Batching: a step writes at most one checkpoint per group-partition, the newest commit's, in one
  delivery; the store takes them only once acknowledged. A step that took ``d`` seconds is followed by at
  least ``d`` of rest (and the scheduler's :data:`FOLLOW_TICK_S`), so the follower is busy at most half the
  time whatever the commit rate: under load the steps space out and each covers more commits. The
  checkpoints written per second are at most the group-partitions whose commits moved, and at most
  ``1 / FOLLOW_TICK_S`` each.
* **O3** A group is written on T only under G1-G4, its offsets on T read from T's ``__consumer_offsets``
  caught up to its end after the group's description.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from mirrorspark.client.context import Side
from mirrorspark.core.followed_groups import Committed, FollowedGroups, PartitionKey
from mirrorspark.errors import ClusterError, CorruptRecordError
from mirrorspark.kafka.reader import ALL_PARTITIONS, TopicReader
from mirrorspark.mm2.checkpoint_rules import is_failback, is_more_recent
from mirrorspark.mm2.consumer_offsets import CONSUMER_OFFSETS_TOPIC, OffsetCommit, decode_consumer_offsets_record
from mirrorspark.mm2.records import Checkpoint
from mirrorspark.replication.connector.checkpoint_emitter import CheckpointEmitter
from mirrorspark.replication.connector.scheduler import PeriodicJob

log = logging.getLogger(__name__)

FOLLOW_TICK_S = 0.05
"""Seconds between two reads of the source's ``__consumer_offsets`` (O2's bound per group-partition)."""

READ_TIMEOUT_S = 10.0
"""Seconds one read of a ``__consumer_offsets`` may take to reach the end offsets listed at its start."""

LATENCY_SAMPLES = 4096
"""Newest commit-to-checkpoint latencies kept for the figures."""

GroupPartitionKey = tuple[str, str, int]


@dataclass
class FollowFigures:
    """What the follower did: commits read, checkpoints written, commits waiting for the copy, latencies (ms)."""

    commits: int = 0
    checkpoints: int = 0
    waiting: int = 0
    latencies_ms: deque[int] = field(default_factory=lambda: deque(maxlen=LATENCY_SAMPLES))


class ConsumerOffsetsTail:
    """One cluster's ``__consumer_offsets``, read from its start and then to its end on each :meth:`read`."""

    def __init__(self, emitter: CheckpointEmitter, side: Side) -> None:
        f = emitter.flow_config
        self.side = side
        self.groups = FollowedGroups()
        self.corrupt = 0
        self._name = emitter.name
        self._reader = TopicReader(
            f.source_consumer if side == "source" else f.target_consumer,
            f.source_admin if side == "source" else f.target_admin,
            f.source if side == "source" else f.target,
            CONSUMER_OFFSETS_TOPIC,
            client_id=emitter.context.client_id(f"consumer-offsets-{side}-reader"),
            partition=ALL_PARTITIONS,
            clients=emitter.context.clients,
            consumer_overrides={"isolation.level": "read_committed", "enable.partition.eof": False},
        )

    def read(self, on_commit: Callable[[str, str, int, Committed], None] | None = None) -> int:
        """Read up to the current end offsets; hand each commit to ``on_commit``; return records read.

        Raises ``ClusterError`` when the end is not reached within :data:`READ_TIMEOUT_S`.
        """

        def apply(key: bytes | None, value: bytes | None) -> None:
            try:
                record = decode_consumer_offsets_record(key, value)
            except CorruptRecordError as e:
                self.corrupt += 1
                log.warning(
                    "%s: skipping a record of the %s's %s: %s", self._name, self.side, CONSUMER_OFFSETS_TOPIC, e
                )
                return
            if record is None:
                return
            kept = self.groups.apply(record)
            if kept is not None and on_commit is not None and isinstance(record, OffsetCommit):
                on_commit(record.group, record.topic, record.partition, kept)

        return self._reader.read(apply, timeout_s=READ_TIMEOUT_S)

    def committed(self, group: str) -> dict[PartitionKey, tuple[int, str]]:
        """Return the group's ``{(topic, partition): (offset, metadata)}`` as read so far."""
        return {k: (c.offset, c.metadata) for k, c in self.groups.committed(group).items()}

    def close(self) -> None:
        """Close the reader's clients."""
        self._reader.close()


class CommitFollower:
    """Follows one flow's source groups as they commit (O1-O3).

    ``copied_to(topic, partition)``: the copy's position on S (the next offset to copy; ``None``: unknown),
    read without the flow's lock; the follower's jobs hold the emitter's (:attr:`CheckpointEmitter.lock`);
    ``active()``: whether this instance copies the flow (not a standby of its lease).
    """

    def __init__(
        self,
        emitter: CheckpointEmitter,
        *,
        copied_to: Callable[[str, int], int | None],
        active: Callable[[], bool] = lambda: True,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.emitter = emitter
        self._active = active
        self._monotonic = monotonic
        self._rest_until = 0.0
        self.name = emitter.name
        self._copied_to = copied_to
        self._clock_ms = clock_ms
        self.figures = FollowFigures()
        self.source = ConsumerOffsetsTail(emitter, "source")
        self.target = ConsumerOffsetsTail(emitter, "target") if emitter.flow_config.sync_group_offsets_enabled else None
        self._waiting: dict[GroupPartitionKey, Committed] = {}
        self._started = False

    def jobs(self) -> list[PeriodicJob]:
        """Declare ``follow commits S->T`` every :data:`FOLLOW_TICK_S`."""
        return [PeriodicJob(f"follow commits {self.name}", FOLLOW_TICK_S, self.step)]

    def step(self) -> list[Checkpoint]:
        """Read the new commits, write the checkpoints whose copy is done, sync their groups; return those written.

        Raises ``ClusterError`` when ``__consumer_offsets`` cannot be read or the target does not acknowledge
        (the commits stay waiting: the next tick writes them).
        """
        began = self._monotonic()
        if began < self._rest_until or not self._active() or not self.emitter.ready_to_translate():
            return []  # resting (O2), or a standby of the flow's lease: the instance that copies follows
        try:
            self.source.read(self._commit)
            if not self._started:  # read to its end once: the cycles and the sync may take the followed views now
                self._started = True
                self.emitter.followed = self.source.committed
                self.emitter.group_sync.view = self.target
            written = self._write(self._translatable())
            if written and self.target is not None:
                self.emitter.group_sync.sync({cp.consumer_group_id for cp in written})
            return written
        finally:
            ended = self._monotonic()
            self._rest_until = ended + max(0.0, ended - began - FOLLOW_TICK_S)  # O2: busy at most half the time

    def _commit(self, group: str, topic: str, partition: int, committed: Committed) -> None:
        self.figures.commits += 1
        e = self.emitter
        if e.group_filter.should_replicate_group(group) and e.topic_filter.should_replicate_topic(topic):
            self._waiting[(group, topic, partition)] = committed

    def _translatable(self) -> list[tuple[GroupPartitionKey, Checkpoint, int, Committed]]:
        """Translate the waiting commits the copy has passed (O1): key, checkpoint, re-reads, commit."""
        e, f = self.emitter, self.emitter.flow_config
        out = []
        for key, committed in list(self._waiting.items()):
            group, topic, partition = key
            if not is_failback(e.policy, f.target, topic):
                reached = self._copied_to(topic, partition)
                if reached is None or reached < committed.offset:
                    continue
            del self._waiting[key]
            go = e.translate(group, topic, partition, committed.offset, committed.metadata)
            cp = go.checkpoint
            if cp is not None and is_more_recent(cp, e.store.get(group, cp.topic, partition)):
                out.append((key, cp, go.rereads, committed))
        self.figures.waiting = len(self._waiting)
        return out

    def _write(self, ready: list[tuple[GroupPartitionKey, Checkpoint, int, Committed]]) -> list[Checkpoint]:
        """Write the checkpoints in one delivery (O2); into the store once acknowledged."""
        if not ready:
            return []
        e = self.emitter
        checkpoints = [cp for _, cp, _, _ in ready]
        try:
            e.deliver_checkpoints(checkpoints, self._clock_ms())
        except ClusterError:
            for key, _, _, committed in ready:  # written again next tick, unless a newer commit came
                self._waiting.setdefault(key, committed)
            raise
        acked = self._clock_ms()
        for _, cp, rereads, committed in ready:
            e.checkpoint_rereads[(cp.consumer_group_id, cp.topic, cp.partition)] = rereads
            if committed.commit_timestamp_ms > 0:
                self.figures.latencies_ms.append(max(0, acked - committed.commit_timestamp_ms))
        self.figures.checkpoints += len(ready)
        return checkpoints

    def _catch_up(self, target: ConsumerOffsetsTail) -> None:
        """Read T's ``__consumer_offsets`` to its end now (G2: after the groups' descriptions)."""
        target.read()

    def close(self) -> None:
        """Release both readers."""
        self.source.close()
        if self.target is not None:
            self.target.close()


__all__ = ["FOLLOW_TICK_S", "CommitFollower", "ConsumerOffsetsTail", "FollowFigures"]
