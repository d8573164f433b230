"""The executor side of the data path: copy planned ranges inside a Spark task."""

from __future__ import annotations

import atexit
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mirrorspark.errors import DataPathError, MirrorsparkError, RecordTooLargeError
from mirrorspark.mm2.metrics import HISTOGRAM_SIZE, bucket_of
from mirrorspark.mm2.offset_syncs import flush_delayed, fold_acknowledged
from mirrorspark.mm2.transforms import ConnectRecord
from mirrorspark.replication.tasks import ERROR_MARK, CopyTask, PartitionRange, PartitionResult

if TYPE_CHECKING:
    pass


# ---------------------------------------------------------------------------------------------
# Executor side
# ---------------------------------------------------------------------------------------------

_PRODUCERS: dict[Any, Any] = {}


def _cache_key(conf: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, str(v)) for k, v in conf.items()))


def _close_cached() -> None:
    for p in _PRODUCERS.values():
        p.flush(30)
    _PRODUCERS.clear()


atexit.register(_close_cached)


def producer(conf: Mapping[str, Any]) -> Any:
    """Return this Python worker's cached producer for ``conf`` (one per distinct configuration, flushed at exit)."""
    from confluent_kafka import Producer

    from mirrorspark.kafka.factory import with_logger

    key = _cache_key(conf)
    p = _PRODUCERS.get(key)
    if p is None:
        # librdkafka's lines into Python logging, never raw on the executor's stderr (a logger is set here,
        # in the task: the task's configuration stays plain and picklable)
        p = Producer(with_logger(dict(conf), str(conf.get("client.id", "replication-producer"))))
        _PRODUCERS[key] = p
    return p


class PartitionCopy:
    """Mutable per-partition state of one task (hot path; not shared).

    Delivery reports of one partition arrive in production order (the producer is
    idempotent, so ordering per partition is guaranteed), so the ``i``-th report belongs
    to ``upstream[i]``: the callback only appends the downstream offset, and
    :meth:`_Writer.finish` folds both lists into offset syncs and copied runs
    (:func:`mirrorspark.mm2.offset_syncs.fold_acknowledged`).
    """

    __slots__ = (
        "age_max",
        "age_min",
        "age_n",
        "age_sum",
        "downstream",
        "dropped",
        "end",
        "error",
        "failures",
        "key_bytes",
        "lat_hist",
        "lat_max",
        "lat_min",
        "lat_n",
        "lat_sum",
        "out_of_range",
        "partition",
        "range",
        "state",
        "target_topic",
        "transforms",
        "upstream",
        "value_bytes",
    )

    def __init__(self, r: PartitionRange) -> None:
        self.range = r
        self.end = r.end
        self.partition = r.partition
        self.target_topic = r.target_topic
        self.state = r.sync_state
        self.upstream: list[int] = []  # source offsets produced, in order
        self.downstream: list[int] = []  # target offsets acknowledged, in order
        self.failures = 0
        self.value_bytes = 0
        self.key_bytes = 0
        self.lat_sum = 0
        self.lat_n = 0
        self.lat_max = 0
        self.lat_min = -1  # -1: no sample yet
        self.lat_hist = [0] * HISTOGRAM_SIZE
        self.age_sum = 0
        self.age_n = 0
        self.age_max = 0
        self.age_min = -1
        self.error: Any = None
        self.out_of_range = False
        self.transforms = r.transforms  # the flow's transforms bound to this remote topic, or None
        self.dropped = 0  # records read and dropped by a transform in this interval

    def interval_metrics(self) -> dict[str, Any]:
        """Return the interval's latency minimum and histogram and its record-age figures, as report fields.

        Returns
        -------
        dict[str, Any]
            ``latency_ms_min``, ``latency_hist``, ``age_ms_sum``, ``age_ms_min``, ``age_ms_max`` and
            ``age_samples`` of :class:`~mirrorspark.mm2.task_progress.PartitionReport` (version 2).
        """
        return {
            "latency_ms_min": self.lat_min if self.lat_min >= 0 else None,
            "latency_hist": tuple(self.lat_hist),
            "age_ms_sum": self.age_sum,
            "age_ms_min": self.age_min if self.age_min >= 0 else None,
            "age_ms_max": self.age_max,
            "age_samples": self.age_n,
        }

    def reset_interval(self) -> None:
        """Start a new reporting interval: bytes, latency and record-age figures back to zero."""
        self.value_bytes = self.key_bytes = self.lat_sum = self.lat_max = self.lat_n = self.dropped = 0
        self.lat_min = self.age_min = -1
        self.lat_hist = [0] * HISTOGRAM_SIZE
        self.age_sum = self.age_n = self.age_max = 0

    def sample_age(self, timestamp_ms: int) -> None:
        """Record one record's age at poll, ``now - timestamp_ms`` (MM2's ``record-age-ms``)."""
        age = max(0, int(time.time() * 1000) - timestamp_ms)
        self.age_sum += age
        self.age_n += 1
        if age > self.age_max:
            self.age_max = age
        if self.age_min < 0 or age < self.age_min:
            self.age_min = age

    @property
    def last_read(self) -> int:
        """Upstream offset of the last record produced (``start - 1`` before the first)."""
        return self.upstream[-1] if self.upstream else self.range.start - 1

    def delivered(self, err: Any, msg: Any) -> None:
        """Record one delivery report of this partition's records (the producer's callback, in production order).

        Parameters
        ----------
        err:
            The ``KafkaError`` of a failed delivery, or ``None``.
        msg:
            The delivered ``Message`` (its ``offset()`` is the downstream offset, its
            ``timestamp()`` the record's, in epoch ms, for replication latency).
        """
        if err is None:
            d = self.downstream
            d.append(msg.offset())
            if not len(d) & _LATENCY_SAMPLE_MASK:
                lat = int(time.time() * 1000) - msg.timestamp()[1]
                self.lat_sum += lat
                self.lat_n += 1
                if lat > self.lat_max:
                    self.lat_max = lat
                if self.lat_min < 0 or lat < self.lat_min:
                    self.lat_min = max(0, lat)
                self.lat_hist[bucket_of(lat)] += 1
        else:
            if self.error is None:
                self.error = (err, self.upstream[len(self.downstream) + self.failures])
            self.failures += 1


_CONSUME_TIMEOUT_S = 0.05
"""Longest wait of one ``consume`` call (s): a batch's ranges end at offsets that already exist, so
a long wait only delays the end of a batch whose last records were already read."""

_LATENCY_SAMPLE_MASK = 15
"""Replication latency is sampled on every 16th acknowledged record of a partition."""


class _Writer:
    """Producer side of a copy task: produce, track deliveries, build results."""

    def __init__(self, task: CopyTask) -> None:
        self.task = task
        self.producer = producer(task.producer_conf)
        self.by_source: dict[tuple[str, int], PartitionCopy] = {}
        for r in task.ranges:
            self.by_source[(r.source_topic, r.partition)] = PartitionCopy(r)
        self.lag_max = task.offset_lag_max

    def finish(self, positions: Mapping[tuple[str, int], int]) -> list[PartitionResult]:
        """Flush, fail on any delivery error, and return one result per range.

        ``positions`` gives the reader's position per source partition (past
        control records and compacted gaps), used when every read record is
        acknowledged.
        """
        remaining = self.producer.flush(self.task.stall_timeout_s)
        if remaining:
            raise DataPathError(
                f"{ERROR_MARK}DATA_PATH_ERROR] flow {self.task.flow}: {remaining} records not acknowledged "
                f"by the target within {self.task.stall_timeout_s:.0f} s; check that the target cluster is up"
            )
        results = []
        for key, pc in self.by_source.items():
            if pc.error is not None:
                err, upstream = pc.error
                raise delivery_error(err, pc.range, upstream)
            if len(pc.downstream) != len(pc.upstream):
                raise DataPathError(
                    f"{ERROR_MARK}DATA_PATH_ERROR] flow {self.task.flow}: {pc.range.source_topic}-"
                    f"{pc.range.partition}: {len(pc.downstream)} of {len(pc.upstream)} records acknowledged"
                )
            state, syncs, segments = fold_acknowledged(pc.state, pc.upstream, pc.downstream, self.lag_max)
            next_offset = max(pc.last_read + 1, min(positions.get(key, pc.range.start), pc.end))
            state, delayed = flush_delayed(state)
            if delayed is not None:
                syncs.append(delayed)
            results.append(
                PartitionResult(
                    flow=self.task.flow,
                    source_topic=pc.range.source_topic,
                    partition=pc.range.partition,
                    next_offset=next_offset,
                    records=len(pc.upstream),
                    value_bytes=pc.value_bytes,
                    key_bytes=pc.key_bytes,
                    sync_state=state,
                    syncs=tuple(syncs),
                    segments=tuple(segments),
                    latency_ms_sum=pc.lat_sum,
                    latency_ms_max=pc.lat_max,
                    latency_samples=pc.lat_n,
                    out_of_range=pc.out_of_range,
                    dropped=pc.dropped,
                )
            )
        return results


def forward(producer: Any, pc: PartitionCopy, m: Any, offset: int, stall_timeout_s: float) -> None:
    """Produce source record ``m`` (at upstream ``offset``) to the same partition of ``pc``'s remote topic.

    Key, value, headers and timestamp unchanged, unless the flow has transforms
    (:attr:`PartitionCopy.transforms`): then the record is what they make of it, or nothing when one
    drops it (counted in :attr:`PartitionCopy.dropped`; its offset is never in ``pc.upstream``, so
    no offset sync or copied segment ever claims a copy of it). The delivery report goes to
    :meth:`PartitionCopy.delivered`. The common case is one ``produce`` call; a full queue, a
    just-added remote partition or a record too large take :func:`produce_careful`. Shared by the
    batch tasks (:func:`run_copy_task`) and the continuous ones
    (:func:`~mirrorspark.replication.stream.run_stream_task`).

    Raises
    ------
    RecordTooLargeError, DataPathError
        As :func:`produce_careful`; :class:`DataPathError` also when a transform fails or changes the
        record's topic or partition.
    """
    ts_type, ts = m.timestamp()
    timestamp_ms = ts if ts_type else 0
    value = m.value()
    key = m.key()
    headers = m.headers()
    if pc.transforms is not None:
        out = _transform(pc, m, offset, key, value, headers, timestamp_ms)
        if out is None:
            pc.dropped += 1
            return
        key, value, timestamp_ms = out.key, out.value, out.timestamp_ms
        headers = list(out.headers) or None
    pc.upstream.append(offset)
    if not len(pc.upstream) & _LATENCY_SAMPLE_MASK and ts_type:
        pc.sample_age(timestamp_ms)
    try:
        # Positional: topic, value, key, partition, callback, on_delivery (alias, unused), timestamp.
        if headers:
            producer.produce(
                pc.target_topic, value, key, pc.partition, pc.delivered, None, timestamp_ms, headers=headers
            )
        else:
            producer.produce(pc.target_topic, value, key, pc.partition, pc.delivered, None, timestamp_ms)
    except Exception:
        pc.upstream.pop()
        produce_careful(producer, pc, offset, key, value, headers, timestamp_ms, stall_timeout_s)
        return
    if value is not None:
        pc.value_bytes += len(value)
    if key is not None:
        pc.key_bytes += len(key)


def _transform(
    pc: PartitionCopy,
    m: Any,
    offset: int,
    key: bytes | None,
    value: bytes | None,
    headers: list[tuple[str, bytes | None]] | None,
    timestamp_ms: int,
) -> ConnectRecord | None:
    """Run one record through the partition's bound transforms (the record as MM2's transforms see it)."""
    chain = pc.transforms
    assert chain is not None
    record = ConnectRecord(pc.target_topic, pc.partition, key, value, tuple(headers) if headers else (), timestamp_ms)
    try:
        out = chain.apply(record)
    except Exception as e:
        raise DataPathError(
            f"{ERROR_MARK}DATA_PATH_ERROR] a transform failed on record {m.topic()}-{m.partition()}@{offset} "
            f"(remote topic {pc.target_topic}): {type(e).__name__}: {e}; fix the transform or remove it from "
            "'transforms' (nothing after this record is committed)"
        ) from e
    if out is not None and (out.topic != record.topic or out.partition != record.partition):
        raise DataPathError(
            f"{ERROR_MARK}DATA_PATH_ERROR] a transform moved record {m.topic()}-{m.partition()}@{offset} to "
            f"{out.topic}-{out.partition}: a flow copies every record to the same partition of its remote topic "
            f"({pc.target_topic}); rename remote topics with RegexRouter instead"
        )
    return out


def produce_careful(
    producer: Any,
    pc: PartitionCopy,
    offset: int,
    key: bytes | None,
    value: bytes | None,
    headers: list[tuple[str, bytes | None]] | None,
    timestamp_ms: int,
    stall_timeout_s: float,
) -> None:
    """Produce one record's copy to the same partition of the remote topic, the careful way.

    Retries while the producer queue is full and while a just-grown remote topic's new
    partition is unknown to the producer (for up to ``stall_timeout_s`` seconds);
    :func:`forward` tries the common case first and falls back here.

    Raises
    ------
    RecordTooLargeError
        The record exceeds the producer's ``message.max.bytes``.
    DataPathError
        Any other produce failure.
    """
    r = pc.range
    pc.upstream.append(offset)
    kwargs: dict[str, Any] = {"partition": r.partition, "on_delivery": pc.delivered}
    if timestamp_ms > 0:
        kwargs["timestamp"] = timestamp_ms
    if headers:
        kwargs["headers"] = headers
    deadline = 0.0
    while True:
        try:
            producer.produce(r.target_topic, value, key, **kwargs)
            break
        except BufferError:
            producer.poll(0.05)
        except Exception as e:
            if _unknown_partition(e):
                # The remote topic was just grown (partition sync): refresh metadata and retry.
                deadline = deadline or time.monotonic() + stall_timeout_s
                if time.monotonic() < deadline:
                    producer.list_topics(r.target_topic, timeout=5)
                    producer.poll(0.1)
                    continue
            pc.upstream.pop()
            raise _data_error(e, r, offset, value, key) from e
    if value is not None:
        pc.value_bytes += len(value)
    if key is not None:
        pc.key_bytes += len(key)


def _unknown_partition(e: Exception) -> bool:
    from confluent_kafka import KafkaError, KafkaException

    err = e.args[0] if isinstance(e, KafkaException) and e.args else None
    return isinstance(err, KafkaError) and err.code() == KafkaError._UNKNOWN_PARTITION


def _data_error(
    e: Exception, r: PartitionRange, offset: int, value: bytes | None, key: bytes | None
) -> MirrorsparkError:
    from confluent_kafka import KafkaError, KafkaException

    err = e.args[0] if isinstance(e, KafkaException) and e.args else None
    if isinstance(err, KafkaError) and err.code() == KafkaError.MSG_SIZE_TOO_LARGE:
        size = len(value or b"") + len(key or b"")
        return RecordTooLargeError(
            f"{ERROR_MARK}RECORD_TOO_LARGE] record {r.source_topic}-{r.partition}@{offset} "
            f"({size} bytes) is larger than the producer's message.max.bytes: raise "
            f"'<target>.producer.max.request.size' (and the target topic's max.message.bytes)"
        )
    return DataPathError(
        f"{ERROR_MARK}DATA_PATH_ERROR] producing {r.source_topic}-{r.partition}@{offset} to "
        f"{r.target_topic} failed: {e}"
    )


def delivery_error(err: Any, r: PartitionRange, upstream: int) -> MirrorsparkError:
    """Build the error of a failed delivery of ``r``'s record ``upstream`` (too large, or a missing WRITE, named)."""
    from confluent_kafka import KafkaError

    if err.code() in (KafkaError.MSG_SIZE_TOO_LARGE,):
        return RecordTooLargeError(
            f"{ERROR_MARK}RECORD_TOO_LARGE] record {r.source_topic}-{r.partition}@{upstream} is larger "
            f"than remote topic '{r.target_topic}' accepts ({err.str()}): raise the remote topic's "
            f"max.message.bytes (or the target broker's message.max.bytes); nothing after "
            f"offset {upstream} was committed"
        )
    hint = ""
    if err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
        hint = f": grant the replication principal WRITE on topic '{r.target_topic}' on the target cluster"
    return DataPathError(
        f"{ERROR_MARK}DATA_PATH_ERROR] copying {r.source_topic}-{r.partition}@{upstream} to "
        f"{r.target_topic} failed: {err.str()} ({err.name()}){hint}"
    )


def consumer_error(flow: str, consumer_conf: Mapping[str, Any], m: Any, err: Any) -> DataPathError:
    """Build the error of a failed read: a partition's, or the consumer's own (``m.topic()`` is ``None``)."""
    from confluent_kafka import KafkaError

    if m.topic() is not None:
        return DataPathError(
            f"{ERROR_MARK}DATA_PATH_ERROR] flow {flow}: reading {m.topic()}-{m.partition()} failed: {err.str()}"
        )
    hint = ""
    if err.code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
        # librdkafka looks up the coordinator of its group.id even for an assign-only consumer
        hint = (
            f": grant the replication principal DESCRIBE on group '{consumer_conf.get('group.id')}' on the "
            "source cluster (the data path never joins nor commits to it, but its consumer looks up the "
            "group's coordinator)"
        )
    return DataPathError(f"{ERROR_MARK}DATA_PATH_ERROR] flow {flow}: the source consumer failed: {err.str()}{hint}")


def run_copy_task(task: CopyTask) -> list[PartitionResult]:
    """Copy a task's ranges with a confluent-kafka consumer (read mode ``consumer``).

    Runs inside a Spark task (or anywhere: it only needs the two clusters).
    Reads each partition from ``start`` until the consumer's position reaches
    ``end``; then, with ``task.follow_s``, keeps copying what arrives (up to each
    range's ``limit``) until ``follow_s`` after the task started. Produces every
    record, flushes, and returns one :class:`PartitionResult` per range.

    Raises
    ------
    RecordTooLargeError
        A record exceeds what the producer or the remote topic accepts.
    DataPathError
        Any other produce or delivery failure, or no record for
        ``task.stall_timeout_s`` while ranges remain short of their ``end``.
    """
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    from mirrorspark.kafka.factory import with_logger

    started = time.monotonic()
    follow_until = started + task.follow_s
    writer = _Writer(task)
    if task.follow_s > 0:
        for copy in writer.by_source.values():
            copy.end = max(copy.end, copy.range.limit or 0)
    # A fresh consumer per task: a consumer cached in a reused Python worker kept stale topic
    # metadata and never fetched from a topic created after it (seen under load in CI).
    consumer: Any = Consumer(  # Any: the hot loop reads untyped Message fields
        with_logger(dict(task.consumer_conf), str(task.consumer_conf.get("client.id", "replication-consumer")))
    )
    # todo: partitions still read (short of their end, or of their limit while following);
    # short: those short of the end offset the batch was planned with.
    todo = {k: pc for k, pc in writer.by_source.items() if pc.range.start < pc.end}
    short = {k for k, pc in todo.items() if pc.range.start < pc.range.end}
    positions: dict[tuple[str, int], int] = {k: pc.range.start for k, pc in writer.by_source.items()}
    if todo:
        consumer.assign([TopicPartition(t, p, pc.range.start) for (t, p), pc in todo.items()])
    try:
        last_progress = started
        while todo and (short or time.monotonic() < follow_until):
            msgs = consumer.consume(num_messages=10000, timeout=_CONSUME_TIMEOUT_S)
            cur_topic: str | None = None
            cur_part = -1
            pc: PartitionCopy | None = None
            for m in msgs:
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        continue
                    if err.code() == KafkaError._AUTO_OFFSET_RESET and m.topic() is not None:  # noqa: SLF001 (librdkafka code)
                        # auto.offset.reset=error: the position is out of range (records deleted, log
                        # truncated, topic re-created); stop here and let the driver record the gap
                        k = (m.topic(), m.partition())
                        gone = todo.pop(k, None)
                        if gone is not None:
                            gone.out_of_range = True
                            short.discard(k)
                            positions[k] = gone.last_read + 1
                            consumer.pause([TopicPartition(k[0], k[1])])
                        cur_part = -1
                        continue
                    raise consumer_error(task.flow, task.consumer_conf, m, err)
                # Records come in runs per partition (one fetch response each): look up on change only.
                part = m.partition()
                topic = m.topic()
                if part != cur_part or topic != cur_topic:
                    cur_topic, cur_part = topic, part
                    pc = todo.get((topic, part))
                if pc is None:
                    continue
                off = m.offset()
                if off >= pc.end:
                    continue
                forward(writer.producer, pc, m, off, task.stall_timeout_s)
            if msgs:
                last_progress = time.monotonic()
            writer.producer.poll(0)
            # Positions move past transaction markers and compacted gaps too.
            tps = [TopicPartition(t, p) for (t, p) in todo]
            for tp in consumer.position(tps):
                k = (tp.topic, tp.partition)
                pc = todo[k]
                pos = tp.offset if tp.offset >= 0 else pc.range.start
                pos = max(pos, pc.last_read + 1)
                positions[k] = pos
                if pos >= pc.range.end:
                    short.discard(k)
                if pos >= pc.end:
                    del todo[k]
            if short and time.monotonic() - last_progress > task.stall_timeout_s:
                names = ", ".join(f"{t}-{p}" for t, p in sorted(short))
                raise DataPathError(
                    f"{ERROR_MARK}DATA_PATH_ERROR] flow {task.flow}: no record from {names} for "
                    f"{task.stall_timeout_s:.0f} s; check that the source cluster is up"
                )
    finally:
        consumer.close()
    return writer.finish(positions)


__all__ = [
    "PartitionCopy",
    "consumer_error",
    "delivery_error",
    "forward",
    "produce_careful",
    "producer",
    "run_copy_task",
]
