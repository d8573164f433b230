"""An exactly-once copy task's own start offsets, read after ``init_transactions`` (KIP-618).

The driver hands each task the positions it knows, from the progress reports of earlier tasks.
A report is written after its transaction committed, so one lost (a task killed between the
two, a report that timed out, a job cancelled at a generation change) leaves the driver's
position behind the source offsets committed with the records (``engine-audit.md`` F3). And the
driver reads ``mm2-offsets`` before the task's ``init_transactions`` has fenced the previous
producer of its transactional id, and only to the last stable offset: a transaction the old
producer had already asked to commit (``PREPARE_COMMIT``) is invisible then and committed
right after (F4). Either way a ``read_committed`` consumer of the target would see those
records twice.

So in exactly-once mode the task itself, once ``init_transactions`` returned (every older
producer of its id fenced, its transaction completed or aborted), reads the source offsets of
its own partitions from Kafka Connect's offsets topic, ``read_committed``, up to the high
watermark captured after the init (not the last stable offset: an open transaction of another
task in the same offsets partition delays the read until it ends, it never hides a commit), and
starts each partition at the later of the driver's position and the newest stored offset the
source partition can hold, plus one (:func:`adopted_starts`; the driver's start-up rule,
:func:`~mirrorspark.mm2.connect_offsets.last_valid_offset`). This is what Kafka Connect's
``ExactlyOnceWorkerSourceTask`` does: it reads the offsets topic to its end after fencing.
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
    """Return which partitions of the offsets topic hold the source offsets of ``keys`` (Connect's key hashing).

    Parameters
    ----------
    spec:
        The task (source alias, offsets topic partition count).
    keys:
        Source partitions ``(topic, partition)``.

    Returns
    -------
    dict[int, list[PartitionKey]]
        ``{offsets-topic partition: the source partitions whose offsets it holds}``.
    """
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
    """Read the stored source offsets of ``keys``: ``read_committed``, to the high watermarks listed now.

    Call it after ``init_transactions``: the high watermark captured then covers every
    transaction of an older producer of the task's id, completed or aborted by the init.

    Parameters
    ----------
    spec:
        The task (offsets topic, source alias).
    keys:
        The task's source partitions.
    consumer:
        A consumer of the target with ``isolation.level=read_committed`` (``assign``, ``consume``,
        ``position``), not yet assigned; the caller closes it.
    admin:
        The target's admin wrapper (the high watermarks, ``read_uncommitted``).
    timeout_s:
        Seconds for the whole read (s).

    Returns
    -------
    dict[PartitionKey, OffsetHistory]
        The stored offsets of each of ``keys`` that has any (newest last).

    Raises
    ------
    ClusterError
        The high watermarks could not be listed, or the read did not reach them within
        ``timeout_s`` (an open transaction of another producer lasting longer), or the consumer
        reported an error.
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
    """Return the error of a read that did not reach the high watermarks: each last stable offset, and the fix.

    A transaction open at a partition's last stable offset for longer than the producers'
    ``transaction.timeout.ms`` is one its coordinator no longer ends (a hanging transaction,
    KIP-664): only an operator's ``kafka-transactions.sh abort`` ends it.
    """
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
    """Return the partitions whose start moves forward to a stored source offset, with their new start.

    A partition moves to the newest stored offset ``o`` the source partition can hold
    (``-1 <= o < end``: :func:`~mirrorspark.mm2.connect_offsets.last_valid_offset`, the driver's
    start-up rule), plus one, when that is past the driver's start. An offset past the source's
    end is foreign or corrupt, or the flow's own before the source log was truncated: either way
    the driver decides (a skipped record, or a gap), never the task. Starts never move backwards.

    Parameters
    ----------
    starts:
        The driver's start of each partition (next offset to copy).
    stored:
        The stored offsets read after ``init_transactions`` (:func:`read_stored_offsets`).
    ends:
        Each source partition's end offset now; a partition left out moves nowhere.

    Returns
    -------
    dict[PartitionKey, int]
        ``{(topic, partition): new start}``, only partitions that move.
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
