"""The records a drill reads: fingerprints of copies and originals, and the shadow group's consumer.

A copy is byte-exact, so a record is matched to its original by a fingerprint of key, value, headers and
timestamp (:func:`fingerprint`), never by offset (offsets differ between the two clusters); the provenance
header a flow appends (``provenance.header.enable``) is left out.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, TopicPartition

from mirrorspark.core.provenance import HEADER_NAME as PROVENANCE_HEADER
from mirrorspark.errors import ClusterError
from mirrorspark.kafka.admin import PartitionKey

_POLL_S = 0.2


def fingerprint(message: Any) -> bytes:
    """Return a 16-byte digest of a record's key, value, timestamp and headers save provenance (its copy's too)."""
    h = hashlib.blake2b(digest_size=16)
    for part in (message.key(), message.value()):
        h.update(b"\x00" if part is None else b"\x01" + len(part).to_bytes(8, "big") + part)
    h.update(message.timestamp()[1].to_bytes(8, "big", signed=True))
    for name, value in message.headers() or []:
        if name == PROVENANCE_HEADER:
            continue
        raw = name.encode()
        h.update(b"\x02" + len(raw).to_bytes(4, "big") + raw)
        h.update(b"\x00" if value is None else b"\x01" + len(value).to_bytes(8, "big") + value)
    return h.digest()


def _key(m: Any) -> PartitionKey:
    return (str(m.topic()), m.partition() or 0)


def read_fingerprints(
    consumer: Any,
    ranges: Mapping[PartitionKey, tuple[int, int]],
    *,
    timeout_s: float,
    alias: str,
    on_first_record: Callable[[], None] | None = None,
) -> dict[PartitionKey, list[tuple[int, bytes]]]:
    """Read offset ranges ``{(topic, partition): (start, end)}``; return ``(offset, fingerprint)`` lists by offset.

    ``consumer`` has ``enable.partition.eof`` on (closed by the caller); offsets holding no record
    (transaction markers, compaction) are absent. Raises ClusterError naming the first partition left when
    ``timeout_s`` (seconds, the whole read) runs out.
    """
    out: dict[PartitionKey, list[tuple[int, bytes]]] = {k: [] for k in ranges}
    todo = {k for k, (start, end) in ranges.items() if end > start}
    if not todo:
        return out
    consumer.assign([TopicPartition(t, p, ranges[(t, p)][0]) for t, p in sorted(todo)])
    deadline = time.monotonic() + timeout_s
    while todo:
        if time.monotonic() > deadline:
            t, p = sorted(todo)[0]
            raise ClusterError(
                f"reading {t}-{p} on cluster '{alias}' from offset {ranges[(t, p)][0]} did not end within "
                f"{timeout_s:.0f} s ({len(todo)} partition(s) left): check the cluster, or raise --timeout"
            )
        for m in consumer.consume(num_messages=1000, timeout=_POLL_S):
            k = _key(m)
            if k not in todo:
                continue
            err = m.error()
            end = ranges[k][1]
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    todo.discard(k)
                continue
            if (m.offset() or 0) < end:
                if on_first_record is not None and not any(out.values()):
                    on_first_record()
                out[k].append((m.offset() or 0, fingerprint(m)))
            if (m.offset() or 0) >= end - 1:
                todo.discard(k)
    consumer.unassign()
    return out


@dataclass
class ShadowRead:
    """What the shadow group's consumer read on the target; times in monotonic s, positions = next offsets to read."""

    first_record_s: float | None = None
    ready_s: float | None = None
    records: dict[PartitionKey, list[bytes]] = field(default_factory=dict)
    positions: dict[PartitionKey, int] = field(default_factory=dict)


def read_from_committed(consumer: Any, ends: Mapping[PartitionKey, int], *, timeout_s: float, alias: str) -> ShadowRead:
    """Read every partition from the group's committed offset to ``ends``, as a failed-over consumer would.

    The consumer commits its positions at the end (closed by the caller). Raises ClusterError when a
    partition has no committed offset or the read misses ``timeout_s`` (seconds, the whole read).
    """
    committed = consumer.committed([TopicPartition(t, p) for t, p in sorted(ends)], timeout=timeout_s)
    start: dict[PartitionKey, int] = {}
    for tp in committed:
        if tp.error is not None or tp.offset < 0:
            raise ClusterError(
                f"the drill's shadow group has no committed offset for {tp.topic}-{tp.partition} on cluster '{alias}'"
            )
        start[(tp.topic, tp.partition)] = tp.offset
    out = ShadowRead()

    def first_record() -> None:
        out.first_record_s = time.monotonic()

    ranges = {k: (start[k], end) for k, end in ends.items()}
    got = read_fingerprints(consumer, ranges, timeout_s=timeout_s, alias=alias, on_first_record=first_record)
    out.ready_s = time.monotonic()
    out.records = {k: [fp for _, fp in records] for k, records in got.items()}
    out.positions = {k: records[-1][0] + 1 if records else start[k] for k, records in got.items()}
    done = [TopicPartition(t, p, off) for (t, p), off in sorted(out.positions.items())]
    if done:
        consumer.commit(offsets=done, asynchronous=False)
    return out


__all__ = ["ShadowRead", "fingerprint", "read_fingerprints", "read_from_committed"]
