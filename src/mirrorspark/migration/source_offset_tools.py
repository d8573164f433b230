"""A flow's source offsets as an operator edits them: ``mirrorspark offsets source list|alter|reset``.

Kafka Connect's KIP-875 offset operations over ``mm2-offsets.<source>.internal``, in Connect's layout
(MM2 reads the result too); the planning is pure (:mod:`mirrorspark.mm2.alter_offsets`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from confluent_kafka import TopicPartition

from mirrorspark.client.context import FlowContext, ReplicationContext, Side
from mirrorspark.client.source_offset_reader import read_flow_source_offsets
from mirrorspark.config.model import MirrorConfig
from mirrorspark.errors import FlowRunningError, SourceOffsetsRequestError
from mirrorspark.kafka.admin import ClusterAdmin, GroupDescription, PartitionKey
from mirrorspark.kafka.delivery import Outgoing, deliver
from mirrorspark.kafka.factory import LIBRDKAFKA_LOGGER
from mirrorspark.kafka.reader import ALL_PARTITIONS, TopicReader
from mirrorspark.mm2.alter_offsets import (
    OffsetChange,
    PartitionFacts,
    parse_datetime_ms,
    plan_alter,
    plan_reset,
    running_connect_status,
)
from mirrorspark.mm2.connect_offsets import default_partition
from mirrorspark.mm2.internal_topics import connect_worker_group, lease_group

log = logging.getLogger(__name__)

Target = Literal["offset", "earliest", "latest", "datetime", "shift"]
"""How ``alter`` picks the new positions."""

FIRST_RECORD_TIMEOUT_S = 10.0
"""Seconds ``alter`` reads the source for the first record at each new position (for its offset sync)."""


@dataclass(frozen=True)
class SourceOffsetsPlan:
    """What ``alter``/``reset`` writes (or would, with ``dry_run``); ``timestamp_ms``: ``--to-datetime`` in epoch ms."""

    flow: str
    operation: str
    offsets_topic: str
    syncs_topic: str | None
    changes: tuple[OffsetChange, ...]
    applied: bool
    running: str | None = None
    auto_offset_reset: str = "earliest"
    timestamp_ms: int | None = None
    facts: tuple[PartitionFacts, ...] = field(default=(), repr=False)


class FlowSourceOffsets:
    """List, alter and reset the source offsets of one flow ``source->target``.

    ``timeout_s`` in seconds per call (``None`` = the flow's ``admin.timeout.ms``). Raises UnknownAliasError
    before connecting, ConfigError for ``source == target``. Not thread-safe.
    """

    def __init__(
        self,
        config: MirrorConfig,
        *,
        source: str,
        target: str,
        timeout_s: float | None = None,
        context: ReplicationContext | None = None,
    ) -> None:
        contexts = context if context is not None else ReplicationContext(config)
        self.ctx: FlowContext = contexts.flow(source, target)
        self.flow_config = self.ctx.flow_config
        self.source = source
        self.target = target
        self._explicit_timeout_s = timeout_s
        self.timeout_s = timeout_s if timeout_s is not None else self.flow_config.admin_timeout_s
        self.internal_topics = self.ctx.internal_topics
        self._admins: dict[Side, ClusterAdmin] = {}
        self._src_topics: dict[str, int] | None = None
        if not self.flow_config.enabled:
            raise SourceOffsetsRequestError(
                f"flow {self.flow_config.name} is not configured: set {self.flow_config.name}.enabled = true in the "
                "config, or check --source and --target"
            )

    # ------------------------------------------------------------------ clusters

    def _admin(self, side: Side) -> ClusterAdmin:
        """Return the admin wrapper of ``side``, created (and checked reachable) at first use."""
        if side not in self._admins:
            admin = self.ctx.cluster_admin(
                side, f"offsets-{side}-admin", overrides={"logger": logging.getLogger(LIBRDKAFKA_LOGGER)}
            )
            if self._explicit_timeout_s is not None:
                admin = admin.with_timeout(self._explicit_timeout_s, setting="--timeout")
            admin.check_reachable(timeout_s=min(10.0, self.timeout_s))
            self._admins[side] = admin
        return self._admins[side]

    @property
    def syncs_side(self) -> Side:
        """Where the offset-syncs topic lives (``offset-syncs.topic.location``)."""
        return "source" if self.flow_config.offset_syncs_topic_location == "source" else "target"

    @property
    def auto_offset_reset(self) -> str:
        """The source consumer's ``auto.offset.reset`` (default ``earliest``)."""
        return (self.flow_config.source_consumer.get("auto.offset.reset") or "earliest").strip().lower()

    def running(self, connector_names: Sequence[str] = ()) -> str | None:
        """Say why the flow looks running (the reason with the fix), or ``None``.

        Running: its lease group has active members on the target, or Connect's status topic shows
        MirrorSourceConnector (or ``connector_names``) or a task ``RUNNING``.
        """
        admin = self._admin("target")
        known = self._groups(admin)
        lease_id, worker_id = lease_group(self.flow_config.name), connect_worker_group(self.source)
        lease = admin.describe_group(lease_id) if lease_id in known else GroupDescription(lease_id, "Dead", 0)
        if lease.active:
            return (
                f"flow {self.flow_config.name} is running: its lease group '{lease.group}' has {lease.members} active "
                f"member(s) on cluster '{self.target}' (a mirrorspark run, holder or standby); stop every "
                "'mirrorspark run' serving it (Ctrl-C or SIGTERM; it stops cleanly) and try again"
            )
        mm2 = self._mm2_running([self.flow_config.source_connector_name, *connector_names])
        if mm2 is not None:
            return (
                f"flow {self.flow_config.name} may be running in MM2: Connect's status topic "
                f"'{self.internal_topics.connect_status}' on cluster '{self.target}' shows {mm2} (MM2's Connect "
                f"worker group is '{worker_id}'); stop MM2 gracefully (SIGTERM: its worker then marks the connector "
                "UNASSIGNED) and try again"
            )
        return None

    def _mm2_running(self, names: Sequence[str]) -> str | None:
        """Return the first ``RUNNING`` status of a connector in ``names`` from Connect's status topic, or ``None``."""
        topic = self.internal_topics.connect_status
        if topic not in self._admin("target").list_topics():
            return None
        latest: dict[bytes, bytes | None] = {}

        def on_message(m: Any) -> None:
            if m.key() is not None:
                latest[m.key()] = m.value()

        reader = TopicReader(
            self.flow_config.target_consumer,
            self.flow_config.target_admin,
            self.target,
            topic,
            client_id=self.ctx.client_id("offsets-status-consumer"),
            partition=ALL_PARTITIONS,
            clients=self.ctx.clients,
            admin_client_id=self.ctx.client_id("offsets-target-admin"),
            consumer_overrides={"enable.partition.eof": False},
        )
        try:
            reader.read_messages(on_message, timeout_s=self.timeout_s)
        finally:
            reader.close()
        for key, value in sorted(latest.items()):
            for name in names:
                running = running_connect_status(key, value, name)
                if running is not None:
                    return running
        return None

    def _groups(self, admin: ClusterAdmin) -> set[str]:
        """Ids of the target's consumer groups (``ListGroups`` needs no group coordinator, unlike a describe)."""
        return set(admin.list_groups())

    def require_stopped(self, connector_names: Sequence[str] = ()) -> None:
        """Raise :class:`FlowRunningError` if :meth:`running` says the flow runs."""
        why = self.running(connector_names)
        if why is not None:
            raise FlowRunningError(f"{why}; nothing was written")

    # ------------------------------------------------------------------ reading

    def _source_topics(self) -> dict[str, int]:
        if self._src_topics is None:
            self._src_topics = self._admin("source").list_topics()
        return self._src_topics

    def _stored(self) -> dict[PartitionKey, int]:
        topics = self._admin("target").list_topics()
        if self.internal_topics.offsets not in topics:
            return {}
        return read_flow_source_offsets(self.ctx, "offsets-target-consumer", timeout_s=self.timeout_s)

    def _selected(
        self, topic: str | None, partition: int | None, stored: dict[PartitionKey, int]
    ) -> list[PartitionKey]:
        source_topics = self._source_topics()
        if partition is not None and topic is None:
            raise SourceOffsetsRequestError("--partition needs --topic: name the topic the partition belongs to")
        if topic is not None:
            if topic not in source_topics:
                raise SourceOffsetsRequestError(
                    f"topic '{topic}' does not exist on cluster '{self.source}': check --topic and --source"
                )
            if not self.ctx.replicates_topic(topic):
                raise SourceOffsetsRequestError(
                    f"topic '{topic}' is not replicated by flow {self.flow_config.name} (topics / topics.exclude, or "
                    "an internal topic): check --topic, or the flow's topics list"
                )
            count = source_topics[topic]
            if partition is not None:
                if not 0 <= partition < count:
                    raise SourceOffsetsRequestError(
                        f"partition {partition} is out of range: topic '{topic}' has {count} partition(s) on "
                        f"cluster '{self.source}' (0..{count - 1})"
                    )
                return [(topic, partition)]
            return [(topic, p) for p in range(count)]
        keys = {(t, p) for t, n in source_topics.items() if self.ctx.replicates_topic(t) for p in range(n)}
        # stored offsets of topics replicated before (since excluded): shown and reset too
        keys |= {k for k in stored if k[0] not in source_topics or not self.ctx.replicates_topic(k[0])}
        return sorted(keys)

    def _facts(self, keys: Sequence[PartitionKey], stored: dict[PartitionKey, int]) -> list[PartitionFacts]:
        src = self._admin("source")
        on_source = [k for k in keys if k[0] in self._source_topics()]
        ends = src.end_offsets(on_source)
        starts = src.start_offsets(on_source)
        policy = self.ctx.policy
        remote = {k: policy.format_remote_topic(self.source, k[0]) for k in keys}
        target_topics = self._admin("target").list_topics()
        remote_keys = [(remote[k], k[1]) for k in keys if remote[k] in target_topics]
        remote_ends = self._admin("target").end_offsets(remote_keys)
        return [
            PartitionFacts(
                topic=k[0],
                partition=k[1],
                stored=stored.get(k),
                start=starts.get(k, 0),
                end=ends.get(k, 0),
                remote_topic=remote[k],
                remote_end=remote_ends.get((remote[k], k[1])),
                transformed=self.ctx.bound_transforms(k[0]) is not None,
            )
            for k in keys
        ]

    def list_offsets(self, topic: str | None = None, partition: int | None = None) -> list[PartitionFacts]:
        """Return the flow's partitions with stored position, source end offset and lag, sorted (``GET …/offsets``).

        Raises SourceOffsetsRequestError for an unknown or unreplicated topic or partition.
        """
        stored = self._stored()
        return self._facts(self._selected(topic, partition, stored), stored)

    def _first_records(
        self, facts: Sequence[PartitionFacts], positions: dict[PartitionKey, int]
    ) -> dict[PartitionKey, int]:
        """Offset of the first source record at or after each new position (isolation level of the flow)."""
        wanted = {
            (f.topic, f.partition): positions[(f.topic, f.partition)]
            for f in facts
            if positions[(f.topic, f.partition)] < f.end and positions[(f.topic, f.partition)] != f.position
        }
        if not wanted:
            return {}
        consumer = self.ctx.consumer("source", "offsets-source-consumer", overrides={"enable.partition.eof": False})
        found: dict[PartitionKey, int] = {}
        try:
            consumer.assign([TopicPartition(t, p, o) for (t, p), o in wanted.items()])
            deadline = time.monotonic() + FIRST_RECORD_TIMEOUT_S
            while len(found) < len(wanted) and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is None or msg.error() is not None:
                    continue
                key = (msg.topic(), msg.partition())
                at = msg.offset()
                if key in wanted and key not in found and at is not None:
                    found[key] = at
                    consumer.pause([TopicPartition(key[0], key[1])])
        finally:
            consumer.close()
        return found

    # ------------------------------------------------------------------ writing

    def alter(
        self,
        *,
        topic: str | None = None,
        partition: int | None = None,
        to: Target,
        offset: int | None = None,
        datetime_iso: str | None = None,
        shift: int | None = None,
        dry_run: bool = False,
    ) -> SourceOffsetsPlan:
        """Set the position of partitions of the flow (``PATCH /connectors/{name}/offsets``).

        ``to``: ``"offset"`` (the next source offset to copy), ``"earliest"``, ``"latest"``, ``"datetime"``
        (first record at or after ``datetime_iso``, ISO 8601, no zone = UTC) or ``"shift"`` (by ``shift``
        records, kept within the log). Raises FlowRunningError while the flow runs (nothing written),
        SourceOffsetsRequestError for a bad request or a flow that never ran.
        """
        timestamp_ms = parse_datetime_ms(datetime_iso) if to == "datetime" and datetime_iso is not None else None
        if to == "offset" and (offset is None or offset < 0):
            raise SourceOffsetsRequestError(f"--offset must be a source offset ≥ 0, got {offset}")
        stored = self._stored()
        keys = [k for k in self._selected(topic, partition, stored) if k[0] in self._source_topics()]
        self.require_offsets_topic()
        running = self._check_running(dry_run)
        facts = self._facts(keys, stored)
        positions: dict[PartitionKey, int] = {}
        found: dict[PartitionKey, int] = {}
        if to == "datetime":
            if timestamp_ms is None:
                raise SourceOffsetsRequestError("--to-datetime needs a value, e.g. 2026-11-25T10:00:00Z")
            found = self._admin("source").offsets_for_timestamp(keys, timestamp_ms)
        for f in facts:
            k = (f.topic, f.partition)
            if to == "offset":
                positions[k] = offset if offset is not None else 0
            elif to == "earliest":
                positions[k] = f.start
            elif to == "latest":
                positions[k] = f.end
            elif to == "shift":
                if f.position is None:
                    raise SourceOffsetsRequestError(
                        f"partition {f.topic}-{f.partition} has no stored position to shift: give --to-offset N, "
                        "--to-earliest or --to-latest for it"
                    )
                positions[k] = min(max(f.position + (shift or 0), f.start), f.end)
            else:
                o = found.get(k, -1)
                positions[k] = f.end if o < 0 else max(o, f.start)
        syncs = (
            self.flow_config.emit_offset_syncs_enabled
            and self.internal_topics.offset_syncs in self._admin(self.syncs_side).list_topics()
        )
        # validate before reading the source further
        plan_alter(
            self.source,
            facts,
            positions,
            auto_offset_reset=self.auto_offset_reset,
            emit_offset_syncs=False,
            connector_name=self.flow_config.source_connector_name,
        )
        firsts = self._first_records(facts, positions) if syncs else {}
        changes = plan_alter(
            self.source,
            facts,
            positions,
            auto_offset_reset=self.auto_offset_reset,
            first_records=firsts,
            emit_offset_syncs=syncs,
            connector_name=self.flow_config.source_connector_name,
        )
        return self._apply("alter", changes, facts, dry_run=dry_run, running=running, timestamp_ms=timestamp_ms)

    def reset(
        self, *, topic: str | None = None, partition: int | None = None, dry_run: bool = False
    ) -> SourceOffsetsPlan:
        """Delete the stored positions with tombstones (``DELETE /connectors/{name}/offsets``).

        The next run starts at the source consumer's ``auto.offset.reset``, in MM2 as in mirrorspark.
        Raises as :meth:`alter`.
        """
        stored = self._stored()
        keys = self._selected(topic, partition, stored)
        self.require_offsets_topic()
        running = self._check_running(dry_run)
        facts = self._facts(keys, stored)
        return self._apply(
            "reset",
            plan_reset(self.source, facts, connector_name=self.flow_config.source_connector_name),
            facts,
            dry_run=dry_run,
            running=running,
        )

    def _check_running(self, dry_run: bool) -> str | None:
        if dry_run:
            return self.running()
        self.require_stopped()
        return None

    def offsets_partitions(self) -> int | None:
        """Partitions of the offsets topic on the target, ``None`` while it does not exist."""
        return self._admin("target").list_topics().get(self.internal_topics.offsets)

    def require_offsets_topic(self) -> None:
        """Raise :class:`SourceOffsetsRequestError` if the flow never stored source offsets (no offsets topic)."""
        if self.offsets_partitions() is None:
            raise SourceOffsetsRequestError(
                f"flow {self.flow_config.name} has never stored source offsets: '{self.internal_topics.offsets}' "
                f"does not exist on cluster '{self.target}'; run the flow once (partitions without an offset start at "
                f"auto.offset.reset={self.auto_offset_reset})"
            )

    def _apply(
        self,
        operation: str,
        changes: list[OffsetChange],
        facts: list[PartitionFacts],
        *,
        dry_run: bool,
        running: str | None,
        timestamp_ms: int | None = None,
    ) -> SourceOffsetsPlan:
        if not dry_run and changes:
            self.require_stopped()  # again, right before writing
            partitions = self.offsets_partitions() or self.flow_config.offset_storage_partitions
            producer = self.ctx.producer(
                "target", "offsets-target-producer", overrides={"enable.idempotence": True, "linger.ms": 0}
            )
            deliver(
                producer,
                [
                    Outgoing(
                        self.internal_topics.offsets, c.key, c.value, partition=default_partition(c.key, partitions)
                    )
                    for c in changes
                ],
                what=f"flow {self.flow_config.name}: source offsets ({operation})",
                alias=self.target,
                hint="some partitions may be changed, others not: run the command again",
            )
            syncs = [c.sync for c in changes if c.sync is not None]
            if syncs:
                side = self.syncs_side
                sync_producer = self.ctx.producer(
                    side, f"offset-syncs-{side}-producer", overrides={"enable.idempotence": True, "linger.ms": 0}
                )
                deliver(
                    sync_producer,
                    [Outgoing(self.internal_topics.offset_syncs, s.key(), s.value(), partition=0) for s in syncs],
                    what=f"flow {self.flow_config.name}: offset syncs of the new positions",
                    alias=self.ctx.alias(side),
                    hint="the source offsets are written; the next run writes these syncs with its first records",
                )
            log.info("flow %s: %s of %d source offset(s) written", self.flow_config.name, operation, len(changes))
        return SourceOffsetsPlan(
            flow=self.flow_config.name,
            operation=operation,
            offsets_topic=self.internal_topics.offsets,
            syncs_topic=self.internal_topics.offset_syncs if self.flow_config.emit_offset_syncs_enabled else None,
            changes=tuple(changes),
            applied=not dry_run,
            running=running,
            auto_offset_reset=self.auto_offset_reset,
            timestamp_ms=timestamp_ms,
            facts=tuple(facts),
        )

    def close(self) -> None:
        """Release the admin clients."""
        self._admins.clear()

    def __enter__(self) -> FlowSourceOffsets:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["FIRST_RECORD_TIMEOUT_S", "FlowSourceOffsets", "SourceOffsetsPlan", "Target"]
