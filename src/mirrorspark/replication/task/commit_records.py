"""What a copy task's commit writes (Connect's source offsets, MM2's offset syncs, progress reports), and how."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from confluent_kafka import KafkaError

from mirrorspark.core.progress_records import PartitionReport
from mirrorspark.core.replica_rows import FetchSource
from mirrorspark.errors import DataPathError
from mirrorspark.kafka.delivery import Outgoing
from mirrorspark.kafka.protocols import ProducerLike
from mirrorspark.mm2.connect_offsets import default_partition, source_offset_key, source_offset_value
from mirrorspark.mm2.offset_syncs import CopiedSegment
from mirrorspark.mm2.records import OffsetSync
from mirrorspark.replication.task.partition import PartitionCopy
from mirrorspark.replication.task.spec import CopyTaskSpec

UNKNOWN_SOURCE = FetchSource(-1, -1)
"""Where a partition is fetched from before librdkafka's first statistics say it."""


class CommitWrites:
    """Commit records sent without waiting; :meth:`check` serves their acknowledgements, :meth:`wait` awaits them.

    A failed write fails the task, which restarts from its last acknowledged commit. With ``resend`` (at
    least once), a retriable failure (``_MSG_TIMED_OUT``) is kept in :attr:`lost` and the position
    written again at the next commit, as Connect's ``OffsetStorageWriter`` retries a failed flush.
    ``what`` and ``alias`` name the write and the cluster in errors.
    """

    def __init__(self, producer: ProducerLike, what: str, alias: str, *, resend: bool = False) -> None:
        self.producer = producer
        self.what = what
        self.alias = alias
        self.resend = resend
        self.failure: tuple[str, KafkaError | None] | None = None
        self.lost: list[Outgoing] = []
        """Records whose write failed for a retriable reason (``resend`` only), oldest first."""
        self._lost_error: KafkaError | None = None

    def _delivered(self, record: Outgoing, err: KafkaError | None, msg: object) -> None:
        if err is None:
            return
        if self.resend and _retriable_write(err):
            self.lost.append(record)
            self._lost_error = err
        elif self.failure is None:
            self.failure = (record.topic, err)

    def send(self, records: Sequence[Outgoing]) -> None:
        """Queue the records (waiting only while the producer's queue is full)."""
        for r in records:
            on_delivery = partial(self._delivered, r)
            while True:
                try:
                    self.producer.produce(r.topic, r.value, r.key, r.partition, on_delivery)
                    break
                except BufferError:
                    self.producer.poll(0.05)

    def take_lost(self) -> list[Outgoing]:
        """Return and forget the records kept in :attr:`lost`."""
        lost, self.lost = self.lost, []
        return lost

    def check(self) -> None:
        """Serve acknowledgements; raise DataPathError if a write failed (see ``resend``)."""
        self.producer.poll(0)
        if self.failure is not None:
            topic, err = self.failure
            name = err.name() if isinstance(err, KafkaError) else None
            reason = err.str() if isinstance(err, KafkaError) else str(err)
            raise DataPathError(
                f"{self.what}: writing to '{topic}' on cluster '{self.alias}' failed: {reason}; the task is "
                "restarted from its last acknowledged commit",
                kafka_code=name,
                retriable=bool(isinstance(err, KafkaError) and err.retriable()),
            )

    def wait(self, timeout_s: float) -> None:
        """Wait until every queued record is acknowledged, then :meth:`check`; DataPathError after ``timeout_s``."""
        left = self.producer.flush(timeout_s)
        self.check()
        if self.lost and self.failure is None:
            self.failure = (self.lost[0].topic, self._lost_error)  # a final commit is never put off
            self.check()
        if left:
            raise DataPathError(
                f"{self.what}: {left} record(s) not acknowledged by cluster '{self.alias}' within {timeout_s:.0f} s",
                retriable=True,
            )


_TIMED_OUT = frozenset({KafkaError._MSG_TIMED_OUT, KafkaError._TIMED_OUT})
"""librdkafka's local errors of a write the target did not acknowledge in time."""


def _retriable_write(err: object) -> bool:
    """Whether a failed commit write may be written again later (retriable and not fatal)."""
    if not isinstance(err, KafkaError):
        return False
    return not err.fatal() and (err.retriable() or err.code() in _TIMED_OUT)


def source_offset_record(spec: CopyTaskSpec, topic: str, partition: int, next_offset: int) -> Outgoing:
    """Return the ``mm2-offsets`` record of position ``next_offset`` (Connect's layout: the last copied offset)."""
    key = source_offset_key(spec.source, topic, partition, spec.connector_name)
    return Outgoing(
        spec.offsets_topic,
        key,
        source_offset_value(next_offset - 1),
        partition=default_partition(key, spec.offsets_partitions),
    )


def offset_sync_records(
    spec: CopyTaskSpec, topic: str, partition: int, due: Sequence[tuple[int, int]]
) -> list[Outgoing]:
    """Return the offset-sync records ``(upstream, downstream)`` of one partition (MM2's binary ``OffsetSync``)."""
    out = []
    for up, down in due:
        sync = OffsetSync(topic, partition, up, down)
        out.append(Outgoing(spec.syncs_topic, sync.key(), sync.value(), partition=0))
    return out


def partition_report(
    spec: CopyTaskSpec,
    pc: PartitionCopy,
    *,
    next_offset: int,
    records: int,
    segments: tuple[CopiedSegment, ...],
    now_ms: int,
    source: FetchSource = UNKNOWN_SOURCE,
    attempt: str | None = None,
) -> PartitionReport:
    """Return one partition's progress report of a commit: position, the interval's figures, newest copied runs.

    ``now_ms`` is epoch ms; ``source`` is where the partition was fetched from (KIP-392); the report's
    ``seq`` is ``pc.reports + 1``.
    """
    a = pc.assignment
    return PartitionReport(
        flow=spec.flow,
        topic=a.source_topic,
        partition=a.partition,
        task=spec.task_index,
        generation=spec.generation,
        next_offset=next_offset,
        records=records,
        value_bytes=pc.value_bytes,
        key_bytes=pc.key_bytes,
        latency_ms_sum=pc.lat_sum,
        latency_ms_max=pc.lat_max,
        latency_samples=pc.lat_n,
        segments=segments,
        at=now_ms,
        **pc.interval_metrics(),
        fetched_from=source.broker,
        leader=source.leader,
        dropped=pc.dropped,
        schema_hits=pc.schema_hits,
        schema_misses=pc.schema_misses,
        schema_unknown=pc.schema_unknown,
        topic_id=a.topic_id,
        epoch=spec.epoch,
        run=spec.run,
        attempt=attempt,
        seq=pc.reports + 1,
    )


__all__ = ["UNKNOWN_SOURCE", "CommitWrites", "offset_sync_records", "partition_report", "source_offset_record"]
