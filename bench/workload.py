"""Workloads and the fast loader that fills a source topic with one.

A workload is loaded into the source cluster once and then replicated by every run of
every contender, each run into a fresh flow (see :meth:`bench.env.BenchEnv.fresh_alias`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

__all__ = ["TAG_HEADER", "WIRE_HEADER_SIZE", "LoadResult", "Workload", "load_topic", "wire_value"]

_KEY_FORMAT = b"k%011d"  # 12-byte keys
_POOL_SLACK = 8191  # distinct value offsets into the random pool
TAG_HEADER = "bench-drop"
"""Name of the header a tagged workload's every other record carries (:attr:`Workload.tagged`)."""
_TAG: list[tuple[str, str | bytes | None]] = [(TAG_HEADER, b"1")]
WIRE_HEADER_SIZE = 5
"""Bytes of Confluent's wire-format header: the magic byte 0, then the schema id (4 bytes, big-endian)."""


def wire_value(schema_id: int, payload: bytes) -> bytes:
    """``payload`` in Confluent's wire format: ``b"\\0"``, ``schema_id`` as 4 big-endian bytes, then ``payload``."""
    return b"\0" + schema_id.to_bytes(4, "big") + payload


@dataclass(frozen=True)
class Workload:
    """What a case replicates.

    Attributes
    ----------
    name:
        Short label used in topic names and reports (``[a-z0-9-]``).
    records:
        Number of records.
    record_size:
        Bytes of each record value (keys add 12 bytes per record).
    partitions:
        Partitions of the source topic; records are spread round-robin, so every
        partition holds ``records / partitions`` (±1).
    tagged:
        Whether every other record of each partition (record ``i`` with ``(i // partitions)``
        odd) carries the header :data:`TAG_HEADER` (value ``b"1"``): what the transforms case's
        ``Filter`` with a ``HasHeaderKey`` predicate drops, half of the records.
    schema_ids:
        When not empty, every value is in Confluent's wire format (:func:`wire_value`, ``record_size``
        bytes in all): record ``i`` names ``schema_ids[(i // partitions) % len(schema_ids)]``, so each
        partition cycles over every id. The rest of the value stays random bytes (no schema's encoding:
        id translation never reads past the id).
    """

    name: str
    records: int
    record_size: int
    partitions: int
    tagged: bool = False
    schema_ids: tuple[int, ...] = ()

    def schema_id(self, i: int) -> int | None:
        """The schema id record ``i`` (0-based, in load order) names, ``None`` when values are not in wire format."""
        ids = self.schema_ids
        return ids[(i // self.partitions) % len(ids)] if ids else None

    def is_tagged(self, i: int) -> bool:
        """Whether record ``i`` (0-based, in load order) carries :data:`TAG_HEADER`."""
        return self.tagged and (i // self.partitions) % 2 == 1

    @property
    def untagged_records(self) -> int:
        """Records without :data:`TAG_HEADER` (all of them unless ``tagged``): what a filter of tagged ones keeps."""
        if not self.tagged:
            return self.records
        rounds, rest = divmod(self.records, self.partitions)
        return (rounds + 1) // 2 * self.partitions + (rest if rounds % 2 == 0 else 0)

    @property
    def key_size(self) -> int:
        """Bytes of each record key."""
        return len(_KEY_FORMAT % 0)

    @property
    def value_bytes(self) -> int:
        """Bytes of all values together."""
        return self.records * self.record_size

    @property
    def payload_bytes(self) -> int:
        """Bytes of all keys and values together (what MB/s and CPU s/GB count)."""
        return self.records * (self.record_size + self.key_size)

    @property
    def topic(self) -> str:
        """Name of the source topic holding this workload."""
        return (
            f"bench-{self.name}-{self.records}x{self.record_size}b-p{self.partitions}"
            + ("-tagged" if self.tagged else "")
            + ("-wire" if self.schema_ids else "")
        )

    def describe(self) -> str:
        """One line: records, sizes, partitions, total size (decimal MB)."""
        tag = f", {self.records - self.untagged_records:,} of them with header {TAG_HEADER!r}" if self.tagged else ""
        if self.schema_ids:
            tag += f", values in wire format over {len(self.schema_ids)} schema ids"
        return (
            f"{self.records:,} records x {self.record_size} B values (+{self.key_size} B keys), "
            f"{self.partitions} partitions, {self.payload_bytes / 1e6:,.0f} MB{tag}"
        )


@dataclass(frozen=True)
class LoadResult:
    """How loading went.

    Attributes
    ----------
    topic:
        The source topic.
    records:
        Records on the topic after loading (sum of end offsets).
    seconds:
        Wall time of creating the topic and producing, in seconds.
    """

    topic: str
    records: int
    seconds: float


def load_topic(bootstrap: str, workload: Workload, *, timeout_s: float = 600.0) -> LoadResult:
    """Create the workload's topic on a cluster and fill it, as fast as one Python producer can.

    Values are slices of one random buffer (incompressible, every record different
    from its neighbours), keys are ``k<11-digit index>``; record ``i`` goes to partition
    ``i mod partitions``; a ``tagged`` workload's every other record of a partition carries
    :data:`TAG_HEADER`; a workload with ``schema_ids`` frames each value in wire format
    (:attr:`Workload.schema_ids`). The producer batches hard (``linger.ms=20``, 1 MiB batches, no
    compression, ``acks=1``): loading is not what is measured.

    Parameters
    ----------
    bootstrap:
        ``bootstrap.servers`` of the cluster.
    workload:
        What to load.
    timeout_s:
        Deadline for the whole load, in seconds.

    Returns
    -------
    LoadResult

    Raises
    ------
    RuntimeError
        Delivery failed, or the topic does not hold exactly ``workload.records`` records.
    """
    started = time.perf_counter()
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    futures = admin.create_topics(
        [NewTopic(workload.topic, num_partitions=workload.partitions, replication_factor=1)], operation_timeout=30
    )
    for f in futures.values():
        try:
            f.result(timeout=60)
        except KafkaException as e:
            if e.args[0].code() != 36:  # TOPIC_ALREADY_EXISTS: reuse is fine, counts are checked below
                raise
    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 20,
            "batch.size": 1 << 20,
            "batch.num.messages": 100_000,
            "queue.buffering.max.kbytes": 1 << 20,
            "queue.buffering.max.messages": 1_000_000,
            "compression.type": "none",
            "acks": 1,
            "enable.idempotence": False,
            "log_level": 3,
        }
    )
    errors: list[str] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None and len(errors) < 5:
            errors.append(str(err))

    ids = workload.schema_ids
    wire = [wire_value(x, b"") for x in ids]
    size = workload.record_size - (WIRE_HEADER_SIZE if ids else 0)
    pool = os.urandom(size + _POOL_SLACK + 1)
    parts = workload.partitions
    produce = p.produce
    tagged = workload.is_tagged
    for i in range(workload.records):
        o = (i * 7919) % _POOL_SLACK
        headers = _TAG if tagged(i) else None
        value = wire[(i // parts) % len(ids)] + pool[o : o + size] if ids else pool[o : o + size]
        while True:
            try:
                produce(
                    workload.topic,
                    value,
                    _KEY_FORMAT % i,
                    partition=i % parts,
                    on_delivery=on_delivery,
                    headers=headers,
                )
                break
            except BufferError:
                p.poll(0.05)
        if i % 10_000 == 0:
            p.poll(0)
            if time.perf_counter() - started > timeout_s:
                raise RuntimeError(f"loading {workload.topic} took longer than {timeout_s:.0f} s")
    left = p.flush(timeout_s)
    if left or errors:
        raise RuntimeError(f"loading {workload.topic}: {left} records unacknowledged; errors: {errors}")
    records = count_records(bootstrap, workload.topic, workload.partitions)
    if records != workload.records:
        raise RuntimeError(f"{workload.topic} holds {records} records, expected {workload.records}")
    return LoadResult(workload.topic, records, time.perf_counter() - started)


def count_records(bootstrap: str, topic: str, partitions: int) -> int:
    """Sum of ``high - low`` watermarks over a topic's partitions (records stored).

    Parameters
    ----------
    bootstrap:
        ``bootstrap.servers`` of the cluster.
    topic:
        The topic.
    partitions:
        Its partition count.
    """
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-counter", "log_level": 3})
    try:
        total = 0
        for i in range(partitions):
            low, high = c.get_watermark_offsets(TopicPartition(topic, i), timeout=30)
            total += high - low
        return total
    finally:
        c.close()


def count_committed(bootstrap: str, topic: str, partitions: int, *, expected: int, timeout_s: float = 120.0) -> int:
    """Records a ``read_committed`` consumer reads from a topic (a transactional copy's committed records).

    Transaction markers take offsets, so watermarks over-count such a topic: this reads it
    whole, waiting up to ``timeout_s`` for ``expected`` records (a copy's last transaction
    may still be committing when its progress looked complete).

    Returns
    -------
    int
        Records read (``expected`` unless the deadline passed first, or more with duplicates).
    """
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-counter",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            "log_level": 3,
        }
    )
    try:
        c.assign([TopicPartition(topic, i, OFFSET_BEGINNING) for i in range(partitions)])
        n = 0
        deadline = time.monotonic() + timeout_s
        quiet_since: float | None = None
        while time.monotonic() < deadline:
            batch = c.consume(10_000, 0.5)
            n += sum(1 for m in batch if m.error() is None)
            if batch or n < expected:
                quiet_since = None
            elif quiet_since is None:
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since >= 1.0:  # a quiet second after the expected count: no more
                return n
        return n
    finally:
        c.close()
