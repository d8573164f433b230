"""An exactly-once copy task's own start offsets, read after ``init_transactions`` (KIP-618; commit.py's C7).

The driver's positions come from progress reports, written after their transaction: a lost report leaves
them behind ``mm2-offsets`` (``engine-audit.md`` F3), and the driver reads ``mm2-offsets`` before the
task's ``init_transactions`` completed a prepared commit (F4). So the task, once fenced, reads its own
partitions' source offsets ``read_committed`` to the high watermark captured after the init, and starts
each after the newest one the source can hold (:func:`adopted_starts`), as Connect's
``ExactlyOnceWorkerSourceTask`` reads the offsets topic to its end after fencing.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence

from confluent_kafka import OFFSET_BEGINNING, KafkaError, TopicPartition

from mirrorspark.errors import ClusterError, CorruptRecordError
from mirrorspark.kafka.admin import ClusterAdmin
from mirrorspark.kafka.protocols import ConsumerLike, MessageLike
from mirrorspark.mm2.connect_offsets import (
    OffsetHistory,
    decode_source_offset,
    default_partition,
    last_valid_offset,
    source_offset_key,
)
from mirrorspark.replication.task.spec import CopyTaskSpec, PartitionKey

READ_BATCH = 5000
"""Most records one ``consume`` call of the offsets reader returns."""


def offsets_partitions(spec: CopyTaskSpec, keys: Iterable[PartitionKey]) -> dict[int, list[PartitionKey]]:
    """Return ``{offsets-topic partition: source partitions}`` holding the offsets of ``keys`` (Connect's hashing)."""
    out: dict[int, list[PartitionKey]] = {}
    for t, p in keys:
        out.setdefault(
            default_partition(source_offset_key(spec.source, t, p, spec.connector_name), spec.offsets_partitions), []
        ).append((t, p))
    return out


def read_stored_offsets(
    spec: CopyTaskSpec,
    keys: Sequence[PartitionKey],
    *,
    consumer: ConsumerLike,
    admin: ClusterAdmin,
    timeout_s: float,
) -> dict[PartitionKey, OffsetHistory]:
    """Read the stored source offsets of ``keys`` (newest last): ``read_committed``, to the high watermarks listed now.

    Call it after ``init_transactions``. ``timeout_s`` bounds the whole read (s); the caller closes the
    consumer. Raises ClusterError when the high watermarks cannot be listed, the read does not reach
    them in time (another producer's long open transaction), or the consumer reports an error.
    """
    wanted = set(keys)
    parts = offsets_partitions(spec, wanted)
    hwm = {p: e for (_, p), e in admin.end_offsets([(spec.offsets_topic, p) for p in parts]).items() if e > 0}
    out: dict[PartitionKey, OffsetHistory] = {}
    if not hwm:
        return out
    consumer.assign([TopicPartition(spec.offsets_topic, p, OFFSET_BEGINNING) for p in hwm])
    deadline = time.monotonic() + timeout_s
    todo = dict(hwm)
    while todo:
        if time.monotonic() > deadline:
            raise _stuck(spec, admin, todo, timeout_s)
        for m in consumer.consume(num_messages=READ_BATCH, timeout=0.2):
            _take(spec, m, wanted, out)
        for tp in consumer.position([TopicPartition(spec.offsets_topic, p) for p in todo]):
            if tp.offset >= todo[tp.partition]:
                del todo[tp.partition]
    return {k: h for k, h in out.items() if h.offsets}


def _stuck(spec: CopyTaskSpec, admin: ClusterAdmin, todo: Mapping[int, int], timeout_s: float) -> ClusterError:
    """Return the error of a read short of the high watermarks: each last stable offset and the fix (KIP-664)."""
    try:
        stable = admin.end_offsets([(spec.offsets_topic, p) for p in todo], read_committed=True)
        where = ", ".join(
            f"partition {p}: stable to offset {stable.get((spec.offsets_topic, p), '?')} of {hwm}"
            for p, hwm in sorted(todo.items())
        )
    except ClusterError as e:
        where = f"partitions {sorted(todo)} (their last stable offsets could not be listed: {e})"
    first = min(todo)
    return ClusterError(
        f"flow {spec.flow}: task {spec.task_index} did not read its source offsets in '{spec.offsets_topic}' on "
        f"cluster '{spec.target}' within {timeout_s:.0f} s: a transaction is still open there ({where}); the task "
        "is restarted and reads again. If a partition stays stable to the same offset for longer than the "
        "producers' transaction.timeout.ms, the transaction is hanging (KIP-664): find it with `kafka-transactions.sh "
        "--bootstrap-server <target> find-hanging --broker-id <leader> --max-transaction-timeout 1` (open for more "
        "than a minute) and end it on every partition listed, remote topics' too, with `kafka-transactions.sh "
        f"--bootstrap-server <target> abort --topic {spec.offsets_topic} --partition {first} --start-offset "
        "<its StartOffset>`"
    )


def _take(
    spec: CopyTaskSpec, m: MessageLike, wanted: set[PartitionKey], out: dict[PartitionKey, OffsetHistory]
) -> None:
    """Add one offsets-topic record to ``out`` if it is a source offset of ``wanted`` (corrupt ones skipped)."""
    err = m.error()
    if err is not None:
        if err.code() == KafkaError._PARTITION_EOF:
            return
        raise ClusterError(f"flow {spec.flow}: reading '{spec.offsets_topic}' failed: {err.str()}")
    try:
        decoded = decode_source_offset(m.key() or b"", m.value(), connector_name=spec.connector_name)
    except CorruptRecordError:
        return  # the driver warns about it at start; never acted on
    if decoded is None or decoded.cluster != spec.source:
        return
    key = (decoded.topic, decoded.partition)
    if key in wanted:
        out.setdefault(key, OffsetHistory()).add(decoded.offset)


def adopted_starts(
    starts: Mapping[PartitionKey, int],
    stored: Mapping[PartitionKey, OffsetHistory],
    ends: Mapping[PartitionKey, int],
) -> dict[PartitionKey, int]:
    """Return ``{(topic, partition): new start}`` of the partitions whose start moves forward to a stored source offset.

    A partition moves to the newest stored offset ``o`` the source can hold (``-1 <= o < end``, the
    driver's :func:`~mirrorspark.mm2.connect_offsets.last_valid_offset`) plus one, when past its start;
    an offset past the end is the driver's to judge, and a partition without an end moves nowhere.
    """
    out = {}
    for k, start in starts.items():
        h = stored.get(k)
        if h is None or k not in ends:
            continue
        off, _ = last_valid_offset(h.offsets, ends[k])
        if off is not None and off + 1 > start:
            out[k] = off + 1
    return out


__all__ = ["READ_BATCH", "adopted_starts", "offsets_partitions", "read_stored_offsets"]
