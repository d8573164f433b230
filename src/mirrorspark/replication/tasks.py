"""What the driver plans and a Spark task returns: plain, picklable value types."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mirrorspark.config.keys import masked
from mirrorspark.mm2.offset_syncs import CopiedSegment, SyncState
from mirrorspark.mm2.transforms import BoundChain

ERROR_MARK = "MIRRORSPARK_ERROR["


@dataclass(frozen=True, slots=True)
class PartitionRange:
    """One source partition's share of a batch.

    Attributes
    ----------
    source_topic, partition:
        The source partition; its copy goes to the same partition of ``target_topic``.
    target_topic:
        The remote topic name (``ReplicationPolicy.format_remote_topic``).
    start:
        First upstream offset to read (a position: the next offset to read).
    end:
        Upstream offset the task must reach (exclusive), ≥ ``start``: the source end offset
        when the batch was planned (capped).
    sync_state:
        Offset-sync emission state at ``start`` (carried across batches by the driver).
    limit:
        Upstream offset the task may copy up to (exclusive) while it follows the partition
        (:attr:`CopyTask.follow_s`), ≥ ``end``; ``None`` = ``end``.
    transforms:
        The flow's transforms bound to this partition's remote topic
        (:meth:`~mirrorspark.mm2.transforms.TransformChain.bind`), ``None`` = records copied unchanged.
    """

    source_topic: str
    partition: int
    target_topic: str
    start: int
    end: int
    sync_state: SyncState = field(default_factory=SyncState)
    limit: int | None = None
    transforms: BoundChain | None = None


@dataclass(frozen=True, slots=True, repr=False)
class CopyTask:
    """The unit of work of one Spark task: some partitions of one flow.

    Attributes
    ----------
    flow:
        ``"A->B"``.
    task_index:
        Index of the task within the flow (MM2's ``task.index``).
    consumer_conf, producer_conf:
        librdkafka configs of the source consumer and target producer (already
        translated; may hold credentials, so never logged: ``repr`` masks their secret
        values, :func:`~mirrorspark.config.keys.masked`).
    ranges:
        The partitions to copy.
    offset_lag_max:
        ``offset.lag.max`` in records.
    stall_timeout_s:
        Seconds without any record while ranges remain unfinished before the
        task fails with :class:`~mirrorspark.errors.DataPathError`.
    follow_s:
        Once every range has reached its ``end``, keep copying records that arrive, up to
        each range's ``limit``, until this many seconds after the task started
        (``mirrorspark.batch.follow.ms``); 0 = stop at ``end``.
    """

    flow: str
    task_index: int
    consumer_conf: Mapping[str, Any]
    producer_conf: Mapping[str, Any]
    ranges: tuple[PartitionRange, ...]
    offset_lag_max: int
    stall_timeout_s: float = 120.0
    follow_s: float = 0.0

    def __repr__(self) -> str:
        """Show every field, secret values of the client configurations masked."""
        return (
            f"CopyTask(flow={self.flow!r}, task_index={self.task_index!r}, "
            f"consumer_conf={masked(self.consumer_conf)!r}, producer_conf={masked(self.producer_conf)!r}, "
            f"ranges={self.ranges!r}, offset_lag_max={self.offset_lag_max!r}, "
            f"stall_timeout_s={self.stall_timeout_s!r}, "
            f"follow_s={self.follow_s!r})"
        )


@dataclass(frozen=True, slots=True)
class PartitionResult:
    """What one task did to one partition in one batch.

    Attributes
    ----------
    flow, source_topic, partition:
        Which partition.
    next_offset:
        Upstream position after the batch: every record before it is copied
        and acknowledged by the target.
    records:
        Records copied.
    value_bytes, key_bytes:
        Bytes of record values and keys copied (MM2's ``byte-count`` counts values only).
    sync_state:
        Offset-sync emission state after the batch, delayed sync already promoted.
    syncs:
        ``(upstream, downstream)`` offset syncs due, in order.
    segments:
        Contiguous copied runs, in order.
    latency_ms_sum, latency_ms_max:
        Sum and maximum over the sampled copied records (every 16th of a partition) of
        (acknowledgement time - record timestamp), in ms (MM2's ``replication-latency-ms``).
    latency_samples:
        How many records ``latency_ms_sum`` adds up.
    out_of_range:
        The task's consumer found the partition's position out of range (records deleted before
        they were copied, or a truncated or re-created topic): the task stopped reading it, and
        ``next_offset`` is just after the last record copied. The driver checks the position
        (:meth:`mirrorspark.replication.flow.Flow.check_positions`).
    dropped:
        Records read and dropped by a transform (records); their offsets are before ``next_offset``
        but have no copy.
    """

    flow: str
    source_topic: str
    partition: int
    next_offset: int
    records: int
    value_bytes: int
    key_bytes: int
    sync_state: SyncState
    syncs: tuple[tuple[int, int], ...]
    segments: tuple[CopiedSegment, ...]
    latency_ms_sum: int
    latency_ms_max: int
    latency_samples: int = 0
    out_of_range: bool = False
    dropped: int = 0


def assign_round_robin(partitions: Sequence[Any], tasks_max: int) -> list[list[Any]]:
    """Split partitions over ``min(tasks_max, len(partitions))`` tasks, round-robin.

    Mirrors ``MirrorSourceConnector.taskConfigs``: the k-th partition in
    discovery order goes to task ``k mod n``. An empty input gives no tasks.
    """
    n = min(tasks_max, len(partitions))
    if n <= 0:
        return []
    groups: list[list[Any]] = [[] for _ in range(n)]
    for k, p in enumerate(partitions):
        groups[k % n].append(p)
    return groups


__all__ = ["CopyTask", "PartitionRange", "PartitionResult", "assign_round_robin"]
