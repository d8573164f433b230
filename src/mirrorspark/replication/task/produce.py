"""Producing one source record's copy to the same partition of its remote topic."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, cast

from confluent_kafka import KafkaError, KafkaException

from mirrorspark.core.provenance import FRESH, HEADER_NAME, Hop, restamped
from mirrorspark.core.schemas import HEADER_SIZE
from mirrorspark.core.transforms import ConnectRecord, Header
from mirrorspark.errors import DataPathError, ProvenanceError
from mirrorspark.kafka.protocols import Headers, MessageLike, TransactionalProducerLike
from mirrorspark.replication.task.failures import at, produce_error
from mirrorspark.replication.task.partition import LATENCY_SAMPLE_MASK, PartitionCopy


def forward(
    producer: TransactionalProducerLike, pc: PartitionCopy, m: MessageLike, offset: int, stall_timeout_s: float
) -> None:
    """Produce source record ``m`` (at upstream ``offset``) to the same partition of ``pc``'s remote topic.

    Unchanged unless the flow has transforms, translates schema ids or stamps the provenance header; a record a
    transform drops, or the header skips, is counted in :attr:`PartitionCopy.dropped` and never in
    ``pc.upstream``, so no sync or segment claims it. A full queue, a just-added remote partition or a record
    too large take :func:`produce_careful`. Raises as it does, DataPathError when a transform fails or changes
    the record's topic or partition, and ProvenanceError for a record whose provenance header is corrupt or shows
    too many hops.
    """
    ts_type, ts = m.timestamp()
    timestamp_ms = ts if ts_type else 0
    value = m.value()
    key = m.key()
    headers = m.headers()
    ours: Header | None = None
    if pc.provenance is not None:
        stamped = cast(list[Header] | None, _stamped(pc, offset, headers))
        if stamped is None:  # provenance: the record was on the target's cluster already
            pc.dropped += 1
            return
        ours = stamped.pop()
        headers = cast(Headers, stamped)
    if pc.transforms is not None:
        out = _transform(pc, m, offset, key, value, headers, timestamp_ms)
        if out is None:
            pc.dropped += 1
            return
        key, value, timestamp_ms = out.key, out.value, out.timestamp_ms
        headers = list(out.headers) or None
    if ours is not None:  # last, after whatever headers the transforms wrote
        kept = [h for h in cast(list[Header], headers or []) if h[0] != HEADER_NAME]
        headers = cast(Headers, [*kept, ours])
    if pc.schema_ids is not None:  # after the transforms, where Connect's converter would run
        key, value = pc.schema_ids.translated(pc, key, value, offset)
    pc.upstream.append(offset)
    pc.produced_n += 1
    if not (pc.produced_n - 1) & LATENCY_SAMPLE_MASK and ts_type:
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


def forward_run(
    producer: TransactionalProducerLike,
    pc: PartitionCopy,
    msgs: Sequence[MessageLike],
    start: int,
    stall_timeout_s: float,
) -> int:
    """Produce the run of ``pc``'s records from ``msgs[start]`` as :func:`forward` does; return the index after it.

    The hot path: a partition's state is looked up and counted once per run, not per record. The run
    ends at the first error record or record of another partition. A value whose wire-format header is in
    the translator's cache (and a key not in wire format) gets the target's header here, counted as a hit;
    any other record takes ``SchemaIdTranslator.translated``. With the provenance header on, a record without
    headers gets the partition's fresh prefix and its offset; one with headers takes :func:`_stamped`.
    """
    topic, part = msgs[start].topic(), pc.partition
    end = len(msgs)
    i = start
    if pc.transforms is not None:
        while i < end:
            m = msgs[i]
            if m.error() is not None or m.partition() != part or m.topic() != topic:
                break
            forward(producer, pc, m, cast(int, m.offset()), stall_timeout_s)
            i += 1
        pc.read_to = cast(int, msgs[i - 1].offset()) + 1
        return i
    produce, target, delivered = producer.produce, pc.target_topic, pc.delivered
    translator = pc.schema_ids
    head_of = (translator.heads if translator is not None else {}).get
    upstream = pc.upstream
    append = upstream.append
    provenance = pc.provenance
    prefix = provenance[0] if provenance is not None else b""
    fresh = FRESH.pack  # the fresh header: the partition's 30-byte prefix and the offset, one call
    sampled = pc.produced_n  # records produced before the run: the 1st, 17th, ... of the task are sampled
    value_bytes = key_bytes = hits = skipped = 0
    offset = -1
    while i < end:
        m = msgs[i]
        if m.error() is not None or m.partition() != part or m.topic() != topic:
            break
        offset = m.offset()  # type: ignore[assignment]  # a record's offset is set; no cast() call per record
        ts_type, ts = m.timestamp()
        timestamp_ms = ts if ts_type else 0
        value, key, headers = m.value(), m.key(), m.headers()
        if provenance is not None:
            if not headers:  # most records: the fresh header, its prefix computed once per partition
                headers = [(HEADER_NAME, fresh(prefix, offset))]
            else:
                headers = _stamped(pc, offset, headers)
                if headers is None:  # was on the target's cluster already: dropped, as a transform drops
                    skipped += 1
                    i += 1
                    continue
        if translator is not None:
            head = head_of(value[:HEADER_SIZE]) if value is not None else None
            if head is not None and not (key and key[0] == 0):  # a cached id, a key not in wire format
                hits += 1
                value = head + value[HEADER_SIZE:]  # type: ignore[index]  # head is not None: value is not None
            else:
                key, value = translator.translated(pc, key, value, offset)
        append(offset)
        try:
            # Positional: topic, value, key, partition, callback, on_delivery (alias, unused), timestamp, headers
            # (headers= as a keyword costs confluent-kafka ~0.25 us a record more).
            if headers:
                produce(target, value, key, part, delivered, None, timestamp_ms, headers)
            else:
                produce(target, value, key, part, delivered, None, timestamp_ms)
        except Exception:
            upstream.pop()
            produce_careful(producer, pc, offset, key, value, headers, timestamp_ms, stall_timeout_s)
        else:
            if value is not None:
                value_bytes += len(value)
            if key is not None:
                key_bytes += len(key)
        if not (sampled + i - start - skipped) & LATENCY_SAMPLE_MASK and ts_type:
            pc.sample_age(timestamp_ms)
        i += 1
    pc.produced_n = sampled + i - start - skipped
    pc.dropped += skipped
    pc.schema_hits += hits
    pc.value_bytes += value_bytes
    pc.key_bytes += key_bytes
    pc.read_to = offset + 1
    return i


def _stamped(pc: PartitionCopy, offset: int, headers: Headers | None) -> Headers | None:
    """Return the copy's headers with the provenance header last (:func:`restamped`), or ``None``: skip the record.

    Raises ProvenanceError naming the record, the header and the fix.
    """
    prefix, hop = cast(tuple[bytes, Hop], pc.provenance)
    value = FRESH.pack(prefix, offset)
    if not headers:
        return [(HEADER_NAME, value)]
    try:
        return cast(Headers | None, restamped(cast(list[Header], headers), value, hop))
    except ProvenanceError as e:
        raise at(
            ProvenanceError(
                f"record {pc.name}@{offset} (remote topic {pc.target_topic}): {e}; only mirrorspark writes "
                f"{HEADER_NAME}: stop the producer that writes it, or set provenance.header.enable = false "
                "on this flow and the flows of its cycle (nothing after this record is committed)"
            ),
            pc.name,
        ) from e


def _transform(
    pc: PartitionCopy,
    m: MessageLike,
    offset: int,
    key: bytes | None,
    value: bytes | None,
    headers: Headers | None,
    timestamp_ms: int,
) -> ConnectRecord | None:
    """Run one record through the partition's bound transforms (the record as MM2's transforms see it)."""
    chain = pc.transforms
    assert chain is not None
    listed = tuple(cast(list[Header], headers)) if headers else ()  # a consumed record's headers: the list form
    record = ConnectRecord(pc.target_topic, pc.partition, key, value, listed, timestamp_ms)
    where = f"{m.topic()}-{m.partition()}"
    try:
        out = chain.apply(record)
    except Exception as e:
        raise at(
            DataPathError(
                f"a transform failed on record {where}@{offset} (remote topic {pc.target_topic}): "
                f"{type(e).__name__}: {e}; fix the transform or remove it from 'transforms' (nothing after this "
                "record is committed)"
            ),
            where,
        ) from e
    if out is not None and (out.topic != record.topic or out.partition != record.partition):
        raise at(
            DataPathError(
                f"a transform moved record {where}@{offset} to {out.topic}-{out.partition}: a flow copies every "
                f"record to the same partition of its remote topic ({pc.target_topic}); rename remote topics "
                "with RegexRouter instead"
            ),
            where,
        )
    return out


def produce_careful(
    producer: TransactionalProducerLike,
    pc: PartitionCopy,
    offset: int,
    key: bytes | None,
    value: bytes | None,
    headers: Headers | None,
    timestamp_ms: int,
    stall_timeout_s: float,
) -> None:
    """Produce one record's copy to the same partition of the remote topic, the careful way.

    Retries while the queue is full and while a just-grown remote partition is unknown (up to
    ``stall_timeout_s`` seconds); raises RecordTooLargeError over ``message.max.bytes``, else
    DataPathError.
    """
    a = pc.assignment
    pc.upstream.append(offset)
    kwargs: dict[str, Any] = {"partition": a.partition, "on_delivery": pc.delivered}
    if timestamp_ms > 0:
        kwargs["timestamp"] = timestamp_ms
    if headers:
        kwargs["headers"] = headers
    deadline = 0.0
    while True:
        try:
            producer.produce(a.target_topic, value, key, **kwargs)
            break
        except BufferError:
            producer.poll(0.05)
        except Exception as e:
            if _unknown_partition(e):
                # The remote topic was just grown (partition sync): refresh metadata and retry.
                deadline = deadline or time.monotonic() + stall_timeout_s
                if time.monotonic() < deadline:
                    producer.list_topics(a.target_topic, timeout=5)
                    producer.poll(0.1)
                    continue
            pc.upstream.pop()
            size = len(value or b"") + len(key or b"")
            raise produce_error(e, a.source_topic, a.partition, a.target_topic, offset, size) from e
    if value is not None:
        pc.value_bytes += len(value)
    if key is not None:
        pc.key_bytes += len(key)


def _unknown_partition(e: Exception) -> bool:
    err = e.args[0] if isinstance(e, KafkaException) and e.args else None
    return isinstance(err, KafkaError) and err.code() == KafkaError._UNKNOWN_PARTITION


__all__ = ["forward", "forward_run", "produce_careful"]
