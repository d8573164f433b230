"""Checkpoints and consumer-group offset sync (MM2 ``MirrorCheckpointConnector`` / ``MirrorCheckpointTask``).

For a flow ``S->T``, every ``emit.checkpoints.interval.seconds`` the :class:`CheckpointEmitter`
translates the committed offsets of the accepted source groups and writes
:class:`~mirrorspark.mm2.records.Checkpoint` records to ``<S>.checkpoints.internal`` on T (MM2's
layout, read by ``RemoteClusterUtils`` and :mod:`mirrorspark.migration.consumer_migration`).
Translation (:class:`~mirrorspark.client.translator.OffsetTranslator`) prefers the data path's exact
copied ranges and falls back to MM2's offset syncs (never a skip); on a topic both flows of a pair keep
the name of, it is clamped to what ``T->S`` copied of T's own records (:mod:`mirrorspark.core.identical_names`).
Beyond MM2, a group on S
consuming ``T.topic1`` is checkpointed as ``topic1``, translated in reverse through the ``T->S``
flow (failback). Group offset sync (KIP-545) commits the latest checkpoints to groups idle on T,
only forward.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from mirrorspark.client.checkpoint_reader import OffsetSyncReader, read_checkpoints
from mirrorspark.client.context import FlowContext, Side
from mirrorspark.client.translator import OffsetTranslator
from mirrorspark.errors import ClusterError, CorruptRecordError
from mirrorspark.kafka.admin import ClusterAdmin
from mirrorspark.kafka.delivery import Outgoing, deliver
from mirrorspark.kafka.reader import read_topic
from mirrorspark.mm2.checkpoint_rules import (
    CheckpointStore,
    GroupOffset,
    TopicPartitionKey,
    is_more_recent,
    rename_topic,
)
from mirrorspark.mm2.records import Checkpoint
from mirrorspark.mm2.translation import CopiedRanges
from mirrorspark.replication.connector.group_offset_sync import GroupOffsetSync
from mirrorspark.replication.connector.internal_topic_specs import internal_topic
from mirrorspark.replication.connector.live_filters import LiveFilters
from mirrorspark.replication.connector.scheduler import PeriodicJob

log = logging.getLogger(__name__)

LOADER_JOIN_S = 10.0
"""Seconds :meth:`CheckpointEmitter.close` waits for the background read of the offset syncs (engine-audit F7)."""


@dataclass(frozen=True)
class CheckpointCycle:
    """What one checkpoint cycle saw: per group its offsets and translations, listing and ack times (epoch ms)."""

    offsets: dict[str, list[GroupOffset]]
    listed_at_ms: int
    acked_at_ms: int


@dataclass
class _EmitterState:
    groups: list[str] = field(default_factory=list)
    groups_refreshed_at: float | None = None  # time.monotonic() of the last listing; None = never listed
    emitted: int = 0


class CheckpointEmitter:
    """Checkpoints and group offset sync for one flow ``S->T``.

    ``reverse``: the ``T->S`` context whose syncs translate failback topics (``None``: none);
    ``copied``/``reverse_copied``: exact copied ranges when that flow runs here; ``clock_ms`` in epoch ms.
    """

    def __init__(
        self,
        context: FlowContext,
        *,
        reverse: FlowContext | None,
        copied: CopiedRanges | None = None,
        reverse_copied: CopiedRanges | None = None,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        flow = context.flow_config
        self.context = context
        self.reverse = reverse
        self.config = context.config
        self.flow_config = flow
        self.name = flow.name
        self.policy = context.policy
        self.topic_filter = context.topic_filter
        self.group_filter = context.group_filter
        self._clock_ms = clock_ms
        self.checkpoints_topic = context.internal_topics.checkpoints
        self.store = CheckpointStore()
        # held by each of the emitter's jobs and its follower's (CommitFollower), never the flow's lock: a 50 ms
        # follower must not keep the driver from supervising the flow's copy tasks
        self.lock = threading.RLock()
        self.state = _EmitterState()
        self._producer: Any = None
        self.translator = OffsetTranslator(context, reverse=reverse, copied=copied, reverse_copied=reverse_copied)
        self._syncs_loaded = threading.Event()
        self._closing = threading.Event()  # set by close(): a background read of the offset syncs stops
        self._syncs_error: ClusterError | None = None
        self._read_to_end_required = False
        self._loader: threading.Thread | None = None
        self.last_cycle: CheckpointCycle | None = None
        # re-reads of the translation of each checkpoint written, by (group, downstream topic, partition)
        self.checkpoint_rereads: dict[tuple[str, str, int], int] = {}
        self.group_sync = GroupOffsetSync(
            self.name, self.store, lambda: self._tgt_admin, lambda group: self.committed(group, cluster="target")
        )
        # the source groups' commits as followed (emit.checkpoints.on.commit), once read to their end: the
        # checkpoint cycles take them instead of asking each group (CommitFollower)
        self.followed: Callable[[str], dict[TopicPartitionKey, tuple[int, str]]] | None = None

    @property
    def syncs(self) -> OffsetSyncReader | None:
        """Offset syncs of this flow (``None`` until read), held by :attr:`translator`."""
        return self.translator.syncs

    @syncs.setter
    def syncs(self, reader: OffsetSyncReader | None) -> None:
        self.translator.syncs = reader

    @property
    def reverse_syncs(self) -> OffsetSyncReader | None:
        """The reverse flow's offset syncs (failback; ``None`` if not read), held by :attr:`translator`."""
        return self.translator.reverse_syncs

    @reverse_syncs.setter
    def reverse_syncs(self, reader: OffsetSyncReader | None) -> None:
        self.translator.reverse_syncs = reader

    @property
    def copied(self) -> CopiedRanges | None:
        """Exact copied ranges of this flow, or ``None`` (held by :attr:`translator`)."""
        return self.translator.copied

    @property
    def reverse_copied(self) -> CopiedRanges | None:
        """Exact copied ranges of the reverse flow, or ``None`` (held by :attr:`translator`)."""
        return self.translator.reverse_copied

    @property
    def invalid_checkpoints(self) -> int:
        """Checkpoints not synced to target groups because their downstream offset is past the partition's end."""
        return self.group_sync.invalid

    @cached_property
    def _src_admin(self) -> ClusterAdmin:
        """Admin wrapper of the source, created at first use (an unused one would keep connecting)."""
        return self.context.cluster_admin("source", "checkpoint-source-admin")

    @cached_property
    def _tgt_admin(self) -> ClusterAdmin:
        """Admin wrapper of the target, created at first use."""
        return self.context.cluster_admin("target", "checkpoint-target-admin")

    # ------------------------------------------------------------------ start-up

    def start(self, *, background_syncs: bool = False) -> None:
        """Create the checkpoints topic, load its checkpoints, read the offset syncs, create the producer.

        With checkpoints loaded the sync store keeps its full history (MM2 3.8+, KAFKA-15905).
        ``background_syncs`` reads the syncs on a thread; :meth:`emit` writes nothing until they are read.
        """
        internal_topic(self.context, "checkpoints").ensure(self._tgt_admin)
        loaded_ok = True
        try:
            self.load_checkpoints(timeout_s=60)
        except ClusterError as e:
            loaded_ok = False
            log.warning("%s: loading checkpoints failed (%s); old group offsets may not translate", self.name, e)
        self._read_to_end_required = not loaded_ok
        self._producer = self.context.producer(
            "target",
            "checkpoints-target-producer",
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
            self.translator.load_syncs(read_to_end_required=self._read_to_end_required, cancelled=self._closing.is_set)
        except Exception as e:
            log.warning("%s: reading offset syncs failed (%s); the next checkpoint cycle retries", self.name, e)
            self._syncs_error = (
                e if isinstance(e, ClusterError) else ClusterError(f"{self.name}: reading offset syncs failed: {e}")
            )
        finally:
            self._syncs_loaded.set()

    def _ready(self) -> bool:
        """Whether the offset syncs are read (after a failed background read, read now; raises ``ClusterError``)."""
        if self._loader is None:
            return True
        if not self._syncs_loaded.is_set():
            return False
        if self._syncs_error is not None:
            self.load_syncs(read_to_end_required=self._read_to_end_required)
            self._syncs_error = None
        return True

    def load_checkpoints(self, *, timeout_s: float = 60.0) -> int:
        """Read ``<S>.checkpoints.internal`` into :attr:`store` (MM2 ``CheckpointStore``); return records read.

        A missing topic loads nothing; corrupt records are skipped with a warning. Raises ``ClusterError``
        when the end is not reached within ``timeout_s`` seconds.
        """
        return read_topic(
            self.flow_config.target_consumer,
            self.flow_config.target_admin,
            self.flow_config.target,
            self.checkpoints_topic,
            self._load_checkpoint,
            client_id=self.context.client_id("checkpoints-target-consumer"),
            timeout_s=timeout_s,
            clients=self.context.clients,
        )

    def read_checkpoints(self, *, timeout_s: float = 60.0) -> list[Checkpoint]:
        """Read every decodable checkpoint of ``<S>.checkpoints.internal``, in topic order (``[]``: no topic).

        The store is untouched; raises ``ClusterError`` as :meth:`load_checkpoints`.
        """
        return read_checkpoints(
            self.flow_config.target_consumer,
            self.flow_config.target_admin,
            self.flow_config.target,
            self.checkpoints_topic,
            client_id=self.context.client_id("checkpoints-target-consumer"),
            timeout_s=timeout_s,
            clients=self.context.clients,
        )

    def load_syncs(self, *, read_to_end_required: bool = False) -> None:
        """Read the offset syncs to the end: see :meth:`OffsetTranslator.load_syncs`."""
        self.translator.load_syncs(read_to_end_required=read_to_end_required)

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
        return LiveFilters(self.context)

    def refresh_groups(self) -> list[str]:
        """List the source groups the group filter accepts, sorted (MM2 ``findConsumerGroups``).

        The filters are rebuilt first from the config and the control topic. Raises ``ClusterError`` when
        the groups cannot be listed within ``admin.timeout.ms``.
        """
        self._live_filters.poll()
        self.group_filter = self._live_filters.group_filter(self.group_filter)
        self.topic_filter = self._live_filters.topic_filter(self.topic_filter)
        groups = [g for g in self._src_admin.list_groups() if self.group_filter.should_replicate_group(g)]
        self.state.groups = groups
        self.state.groups_refreshed_at = time.monotonic()
        return groups

    def committed(self, group: str, cluster: str = "source") -> dict[TopicPartitionKey, tuple[int, str]]:
        """Return a group's ``{(topic, partition): (committed offset, metadata)}`` on the ``"source"`` or ``"target"``.

        MM2 ``listConsumerGroupOffsets``; raises ``ClusterError`` when not listed within ``admin.timeout.ms``.
        """
        # a consumer of the group, never the admin client: librdkafka's admin listConsumerGroupOffsets
        # crashes the process on a coordinator error (see ClusterAdmin.committed_group_offsets)
        side: Side = "source" if cluster == "source" else "target"
        admin = self._src_admin if side == "source" else self._tgt_admin
        reader = self.context.consumer(side, f"checkpoint-{side}-group-reader", overrides={"group.id": group})
        try:
            return admin.committed_group_offsets(reader, group)
        finally:
            reader.close()

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
        """Translate one committed source offset into a checkpoint (:meth:`OffsetTranslator.translate`)."""
        return self.translator.translate(group, topic, partition, upstream_offset, metadata)

    def group_offsets(self, group: str) -> list[GroupOffset]:
        """Translate every committed offset of source ``group`` on accepted topics, sorted by (topic, partition).

        Raises ``ClusterError`` when the offsets cannot be listed or the offset syncs are not read yet.
        """
        now = self._clock_ms()
        out = []
        committed = self.followed(group) if self.followed is not None else self.committed(group)
        for (topic, partition), (offset, metadata) in sorted(committed.items()):
            if not self.topic_filter.should_replicate_topic(topic):
                continue
            out.append(self.translate(group, topic, partition, offset, metadata, now))
        return out

    # ------------------------------------------------------------------ jobs

    def jobs(self) -> list[PeriodicJob]:
        """Declare ``checkpoints``, ``refresh groups``, ``sync group offsets`` as enabled (MM2 checkpoint connector)."""
        f, name = self.flow_config, self.name
        declared: list[tuple[str, float, Callable[[], object]]] = [
            (f"checkpoints {name}", f.emit_checkpoints_interval_s, self.emit)
        ]
        if f.refresh_groups_enabled:
            declared.append((f"refresh groups {name}", f.refresh_groups_interval_s, self.refresh_groups))
        if f.sync_group_offsets_enabled:
            declared.append((f"sync group offsets {name}", f.sync_group_offsets_interval_s, self.sync_group_offsets))
        return [PeriodicJob(job, every, fn, initial_delay_s=every) for job, every, fn in declared]

    def emit(self) -> list[Checkpoint]:
        """One checkpoint cycle: read new syncs, translate every group, write and return what is more recent.

        ``[]`` while the syncs are read in the background. Raises ``ClusterError`` when used before
        :meth:`start`, the groups cannot be listed or the target does not acknowledge (nothing enters
        :attr:`store`, so the next cycle writes them again).
        """
        if self._producer is not None and not self._ready():
            return []
        if self.syncs is None or self._producer is None:
            raise ClusterError(f"{self.name}: checkpoint emitter used before start()")
        if self.state.groups_refreshed_at is None:
            # The first listing (MM2's loadInitialConsumerGroups, done even with refresh.groups.enabled=false);
            # later ones are the driver's "refresh groups" job, every refresh.groups.interval.seconds.
            self.refresh_groups()
        self.translator.poll()
        now = self._clock_ms()
        written: list[Checkpoint] = []
        seen: dict[str, list[GroupOffset]] = {}
        rereads: dict[tuple[str, str, int], int] = {}
        for group in self.state.groups:
            try:
                offsets = self.group_offsets(group)
            except ClusterError as e:
                log.warning("%s: skipping group %s this cycle: %s", self.name, group, e)
                continue
            seen[group] = offsets
            for go in offsets:
                cp = go.checkpoint
                if cp is None:
                    continue
                if not is_more_recent(cp, self.store.get(cp.consumer_group_id, cp.topic, cp.partition)):
                    continue
                written.append(cp)
                rereads[(cp.consumer_group_id, cp.topic, cp.partition)] = go.rereads
        self.deliver_checkpoints(written, now)
        self.checkpoint_rereads.update(rereads)
        self.last_cycle = CheckpointCycle(seen, now, self._clock_ms())
        return written

    def ready_to_translate(self) -> bool:
        """Whether :meth:`start` ran and the offset syncs are read (after a failed background read, read now)."""
        return self._producer is not None and self._ready() and self.syncs is not None

    def deliver_checkpoints(self, checkpoints: list[Checkpoint], now_ms: int) -> None:
        """Write checkpoints (timestamp ``now_ms``) and, once acknowledged, take them into :attr:`store`.

        Raises ``ClusterError`` when the target does not acknowledge them (nothing enters the store).
        """
        if not checkpoints:
            return
        if self._producer is None:
            raise ClusterError(f"{self.name}: checkpoint emitter used before start()")
        deliver(
            self._producer,
            [
                Outgoing(self.checkpoints_topic, cp.key(), cp.value(), partition=0, timestamp=now_ms)
                for cp in checkpoints
            ],
            what=f"flow {self.name}: checkpoints",
            alias=self.flow_config.target,
            hint="they are written again next cycle",
        )
        for cp in checkpoints:
            self.store.update(cp)
        self.state.emitted += len(checkpoints)

    def sync_group_offsets(self) -> dict[str, int]:
        """Commit the latest checkpoints to idle groups on the target (:meth:`GroupOffsetSync.sync`)."""
        return self.group_sync.sync() if self._ready() else {}

    def snapshot(self) -> dict[tuple[str, str, int], int]:
        """Return each accepted group's ``{(group, topic, partition): committed offset}`` on S now."""
        out: dict[tuple[str, str, int], int] = {}
        for group in self.refresh_groups():
            for (topic, partition), (offset, _) in self.committed(group).items():
                if self.topic_filter.should_replicate_topic(topic):
                    out[(group, topic, partition)] = offset
        return out

    def covered(self, snapshot: Mapping[tuple[str, str, int], int]) -> bool:
        """Whether every :meth:`snapshot` offset is checkpointed or untranslatable (``False`` while syncs are read)."""
        if not self._ready():
            return False
        f = self.flow_config
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
        """Flush and release clients once the background sync read ended (waits :data:`LOADER_JOIN_S`)."""
        loading = False
        self._closing.set()
        if self._loader is not None:
            self._loader.join(LOADER_JOIN_S)
            loading = self._loader.is_alive()
            if loading:
                log.warning(
                    "%s: the background read of the offset syncs is still running after %.0f s: its clients are "
                    "left to it",
                    self.name,
                    LOADER_JOIN_S,
                )
            else:
                self._loader = None
        if self._producer is not None:
            self._producer.flush(10)
            self._producer = None
        if not loading:
            self.translator.close()
        if "_live_filters" in self.__dict__:
            self._live_filters.close()


def offsets_of(groups: Iterable[GroupOffset]) -> dict[TopicPartitionKey, int]:
    """Return ``{(renamed topic, partition): downstream offset}`` of the translatable group offsets."""
    return {
        (g.checkpoint.topic, g.checkpoint.partition): g.checkpoint.downstream_offset
        for g in groups
        if g.checkpoint is not None
    }


__all__ = ["LOADER_JOIN_S", "CheckpointCycle", "CheckpointEmitter", "GroupOffset"]
