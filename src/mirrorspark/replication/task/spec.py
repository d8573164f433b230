"""What the driver hands a copy task and what the task hands back: plain, picklable values."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from mirrorspark.config.keys import masked
from mirrorspark.config.schema_registry import SchemaRegistrySettings
from mirrorspark.core.provenance import Hop, cluster_id_bytes
from mirrorspark.core.schemas.copier import SubjectNaming
from mirrorspark.core.transforms import BoundChain
from mirrorspark.errors import ErrorInfo
from mirrorspark.mm2.records import MIRROR_SOURCE_CONNECTOR

FLUSH_RECORDS = 1000
"""Default of ``mirrorspark.offset.flush.records``: acknowledged records per task that make a commit due."""

PartitionKey = tuple[str, int]
"""``(topic, partition)`` of a source partition."""


@dataclass(frozen=True, slots=True)
class PartitionAssignment:
    """One source partition of a copy task (MM2's task assignment), copied to the same partition of ``target_topic``.

    ``start`` is the committed position (next offset to read); ``transforms`` ``None`` copies records
    unchanged; ``topic_id`` (KIP-516; ``None``: unknown) lets the driver drop reports of another
    incarnation of the topic. ``restarted``: the driver started the partition over (a re-created topic),
    so the task adopts no stored offset and announces ``start`` (commit.py's C7, C8).
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
class SchemaIdsSpec:
    """A flow's schema-id translation as its copy tasks receive it (picklable; the settings mask their secrets).

    ``known``: the ``(source id, target id)`` pairs the driver's sync already copied, which start each task's cache
    (no registry round trip for them).
    """

    source: SchemaRegistrySettings
    target: SchemaRegistrySettings
    naming: SubjectNaming
    copy_unknown: bool = False
    known: tuple[tuple[int, int], ...] = ()

    def __repr__(self) -> str:
        return f"SchemaIdsSpec(source={self.source!r}, target={self.target!r}, copy_unknown={self.copy_unknown})"


@dataclass(frozen=True, slots=True)
class ProvenanceSpec:
    """A flow's provenance header (``provenance.header.enable``) as its tasks receive it: both Kafka cluster ids."""

    source_cluster_id: str
    target_cluster_id: str

    @property
    def hop(self) -> Hop:
        """The flow's copy step in the header's 16-byte ids."""
        return Hop(cluster_id_bytes(self.source_cluster_id), cluster_id_bytes(self.target_cluster_id))


@dataclass(frozen=True, slots=True, repr=False)
class CopyTaskSpec:
    """Everything one long-running copy task needs: its partitions, client configurations and where it commits.

    Units and sentinels: ``offset_lag_max`` in records; ``flush_interval_s``, ``stall_timeout_s`` and
    ``init_timeout_s`` in seconds; ``flush_records`` 0 commits by time only; ``syncs_conf`` ``None``
    emits no offset syncs; ``transactional_id`` ``None`` is at least once (else KIP-618, ``boundary``
    ``"poll"`` or ``"interval"``); the exactly-once ``offsets_*_conf`` and ``source_admin_conf``
    ``None`` skip reading stored offsets and checking topic ids; ``stop_at`` (end offsets) makes a
    bounded copy; ``epoch`` is the lease epoch (0 without a lease) and ``run`` the driver run, both
    written in the reports (``engine-audit.md`` F5, ``engine-audit-2.md`` N6); ``after_other_holder``:
    produce nothing before the first grant (N5); ``schemas`` ``None`` copies keys and values byte for byte;
    ``provenance`` ``None`` copies headers as they are, unread (``provenance.header.enable`` off);
    ``catch_up_readers`` > 1 catches up a partition with a backlog of at least ``catch_up_backlog_records``
    records in parallel (:mod:`~mirrorspark.replication.task.catch_up`; 1: off).
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
    schemas: SchemaIdsSpec | None = None
    provenance: ProvenanceSpec | None = None
    catch_up_readers: int = 1
    catch_up_backlog_records: int = 100_000

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
    """How a copy task ended: ``stopped``, ``caught_up``, ``out_of_range``, ``orphaned``, ``failed`` or ``lost``.

    ``orphaned``: the grant link closed, the driver aborted or its grant expired (nothing more
    committed). ``lost``: a later Spark attempt of a lost task, ended at once.
    """

    STOPPED = "stopped"
    CAUGHT_UP = "caught_up"
    OUT_OF_RANGE = "out_of_range"
    ORPHANED = "orphaned"
    FAILED = "failed"
    LOST = "lost"


@dataclass(frozen=True, slots=True)
class TaskResult:
    """What a copy task's Spark job returns to the driver; ``error`` (with ``failed``) is the error as data."""

    flow: str
    task_index: int
    generation: int
    outcome: TaskOutcome
    out_of_range: tuple[PartitionKey, ...] = ()
    records: int = 0
    error: ErrorInfo | None = None


__all__ = [
    "FLUSH_RECORDS",
    "CopyTaskSpec",
    "PartitionAssignment",
    "PartitionKey",
    "ProvenanceSpec",
    "SchemaIdsSpec",
    "TaskOutcome",
    "TaskResult",
]
