"""What the driver hands a copy task and what the task hands back: plain, picklable values."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from mirrorspark.config.keys import masked
from mirrorspark.core.transforms import BoundChain
from mirrorspark.errors import ErrorInfo
from mirrorspark.mm2.records import MIRROR_SOURCE_CONNECTOR

FLUSH_RECORDS = 1000
"""Default of ``mirrorspark.offset.flush.records``: acknowledged records per task that make a commit due."""

PartitionKey = tuple[str, int]
"""``(topic, partition)`` of a source partition."""


@dataclass(frozen=True, slots=True)
class PartitionAssignment:
    """One source partition of a copy task (MM2's task assignment).

    Attributes
    ----------
    source_topic, partition:
        The source partition; its copy goes to the same partition of ``target_topic``.
    target_topic:
        The remote topic (``ReplicationPolicy.format_remote_topic``, or a ``RegexRouter``'s rename).
    start:
        The committed position: the first upstream offset the task reads (next offset to read).
    transforms:
        The flow's transforms bound to the remote topic
        (:meth:`~mirrorspark.core.transforms.TransformChain.bind`); ``None`` = records copied unchanged.
    topic_id:
        The source topic's id (KIP-516) as the driver knew it when it started the task; the task's
        progress reports carry it, so the driver drops reports of another incarnation of the topic
        (deleted and re-created). ``None``: unknown.
    restarted:
        Exactly-once: the driver started the partition over (its topic was re-created), so the
        source offsets stored for it describe the old topic: the task adopts none of them and
        commits ``start`` as the partition's source offset before it copies anything, so that a
        later task never adopts the old topic's offset either. ``False``: a newer stored offset
        than ``start`` moves the start forward (see
        :func:`~mirrorspark.replication.task.stored_offsets.adopted_starts`).
    """

    source_topic: str
    partition: int
    target_topic: str
    start: int
    transforms: BoundChain | None = None
    topic_id: str | None = None
    restarted: bool = False

    @property
    def key(self) -> PartitionKey:
        """``(source topic, partition)``."""
        return (self.source_topic, self.partition)


@dataclass(frozen=True, slots=True, repr=False)
class CopyTaskSpec:
    """Everything one long-running copy task needs: its partitions, client configurations and where it commits.

    Attributes
    ----------
    flow, source, target:
        ``"S->T"`` and the two aliases.
    task_index, generation:
        The task's index (MM2's round-robin assignment) and the driver's generation of the flow's
        tasks (grows at every restart of them; reports of older generations are ignored).
    consumer_conf, producer_conf:
        librdkafka configurations of the source consumer and of the target data producer.
    commit_conf:
        librdkafka configuration of the target producer of source offsets and progress reports.
    syncs_conf:
        librdkafka configuration of the offset-syncs producer; ``None`` with ``emit.offset-syncs.enabled=false``.
    offsets_topic, offsets_partitions:
        ``offset.storage.topic`` on the target and its partition count (Connect's key hashing).
    syncs_topic, progress_topic:
        The flow's offset-syncs topic and its progress channel.
    partitions:
        The task's partitions, each from its committed position.
    offset_lag_max:
        ``offset.lag.max`` (records).
    flush_interval_s:
        Seconds between two commits (``offset.flush.interval.ms``, in exactly-once mode with
        ``transaction.boundary=interval`` its ``transaction.boundary.interval.ms``).
    flush_records:
        Records acknowledged since the last commit that make a commit due before ``flush_interval_s``
        (``mirrorspark.offset.flush.records``, default :data:`FLUSH_RECORDS`; 0: by time only); the
        first commit is due as soon as any record is acknowledged
        (:mod:`~mirrorspark.replication.task.runner`). Not with ``transaction.boundary=poll``, which
        commits after every batch read.
    grant_address:
        ``(host, port, token)`` of the driver's grant server.
    connector_name:
        The connector name its source offsets are keyed by (``mirrorspark.source.connector.name``).
    stall_timeout_s:
        Seconds a commit waits for the target to acknowledge what was produced.
    transactional_id:
        Exactly-once mode (``<target>.exactly.once.source.support=enabled``, KIP-618): the data
        producer's ``transactional.id``; ``None``: at least once.
    boundary:
        Exactly-once mode: ``"poll"`` (a transaction per batch read, up to 10,000 records) or
        ``"interval"`` (one per ``flush_interval_s``).
    init_timeout_s:
        Exactly-once mode: seconds ``init_transactions`` may take (the target producer's
        ``max.block.ms``).
    offsets_consumer_conf, offsets_admin_conf:
        Exactly-once mode: librdkafka configurations of the target consumer (``read_committed``)
        and admin client with which the task reads its own partitions' source offsets from
        ``offsets_topic`` after ``init_transactions`` (KIP-618); ``None``: the task starts at the
        driver's positions.
    source_admin_conf:
        Exactly-once mode: librdkafka configuration of a source admin client with which the task
        checks, before its commits, that the topics it copied from still have the ids it was
        started with (a topic deleted and re-created under it: its records are another
        incarnation's; :class:`~mirrorspark.replication.task.topic_check.TopicIdCheck` says how often
        and what that guarantees); ``None``: no check.
    stop_at:
        A bounded copy (``mirrorspark run --until-caught-up``): ``{(topic, partition): end offset}``
        the driver listed at start; the task commits and ends (``caught_up``) once every partition
        of it has been read up to its end offset (a partition left out ends where it starts).
        ``None``: the task copies until the driver stops it.
    epoch:
        The flow's lease epoch the task's generation was started under (0 without a lease): written
        in its progress reports, so that a late report of an instance that lost the lease never
        cuts the copied segments of the instance that holds it now (``engine-audit.md`` F5).
    run:
        The driver run that started the task (:attr:`~mirrorspark.replication.connector.positions.Positions.run`),
        written in its progress reports: with ``generation`` it names the task's generation across
        driver processes (``engine-audit-2.md`` N6). ``None``: not named.
    after_other_holder:
        The generation's holding of the flow's lease followed another instance's: the task produces
        nothing before its first grant (``engine-audit-2.md`` N5), never alongside the previous
        holder's last copies.
    """

    flow: str
    source: str
    target: str
    task_index: int
    generation: int
    consumer_conf: Mapping[str, Any]
    producer_conf: Mapping[str, Any]
    commit_conf: Mapping[str, Any]
    syncs_conf: Mapping[str, Any] | None
    offsets_topic: str
    offsets_partitions: int
    syncs_topic: str
    progress_topic: str
    partitions: tuple[PartitionAssignment, ...]
    offset_lag_max: int
    flush_interval_s: float
    grant_address: tuple[str, int, str]
    flush_records: int = FLUSH_RECORDS
    connector_name: str = MIRROR_SOURCE_CONNECTOR
    stall_timeout_s: float = 120.0
    transactional_id: str | None = None
    boundary: str = "poll"
    init_timeout_s: float = 60.0
    offsets_consumer_conf: Mapping[str, Any] | None = None
    offsets_admin_conf: Mapping[str, Any] | None = None
    source_admin_conf: Mapping[str, Any] | None = None
    stop_at: Mapping[PartitionKey, int] | None = None
    epoch: int = 0
    run: str | None = None
    after_other_holder: bool = False

    @property
    def exactly_once(self) -> bool:
        """Whether the task writes its records and source offsets in transactions (KIP-618)."""
        return self.transactional_id is not None

    def __repr__(self) -> str:
        """Show the task without any client secret (configurations masked, the grant server's token hidden)."""
        return (
            f"CopyTaskSpec(flow={self.flow!r}, task_index={self.task_index}, generation={self.generation}, "
            f"partitions={[(p.source_topic, p.partition, p.start, p.target_topic) for p in self.partitions]!r}, "
            f"consumer_conf={masked(self.consumer_conf)!r}, producer_conf={masked(self.producer_conf)!r})"
        )


class TaskOutcome(StrEnum):
    """How a copy task ended.

    ``stopped``: the driver asked; everything acknowledged was committed. ``caught_up``: a bounded
    copy read every partition to its ``stop_at`` and committed. ``out_of_range``: positions out of
    range (records gone before they were copied); committed, then ended so the driver records the
    gap. ``orphaned``: the grant link closed, the driver aborted or its grant expired: nothing more
    committed. ``failed``: the task raised (its :class:`~mirrorspark.errors.ErrorInfo` says what).
    ``lost``: Spark ran the task again after an earlier attempt was lost with its executor or
    Python worker; it ended at once, copying nothing.
    """

    STOPPED = "stopped"
    CAUGHT_UP = "caught_up"
    OUT_OF_RANGE = "out_of_range"
    ORPHANED = "orphaned"
    FAILED = "failed"
    LOST = "lost"


@dataclass(frozen=True, slots=True)
class TaskResult:
    """What a copy task's Spark job returns to the driver.

    Attributes
    ----------
    flow, task_index, generation:
        The task.
    outcome:
        How it ended.
    out_of_range:
        Partitions whose position was out of range (with ``out_of_range``).
    records:
        Records this run of the task copied and committed.
    error:
        With ``failed``: the error as data (class code, Kafka code, retriable, fatal, where), rebuilt
        on the driver by :func:`~mirrorspark.errors.error_from_info`.
    """

    flow: str
    task_index: int
    generation: int
    outcome: TaskOutcome
    out_of_range: tuple[PartitionKey, ...] = ()
    records: int = 0
    error: ErrorInfo | None = None


__all__ = ["FLUSH_RECORDS", "CopyTaskSpec", "PartitionAssignment", "PartitionKey", "TaskOutcome", "TaskResult"]
