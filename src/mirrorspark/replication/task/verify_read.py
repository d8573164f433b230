"""A verify task's reading: one partition's offset range, and each source record as its copy should be.

Invariants (named by ``tests/unit/test_verify_task.py``):

- VR1 :func:`read_range` yields, in batches, exactly the records a ``read_committed`` consumer returns in
  ``[lo, hi)`` clipped to the partition's watermarks, in offset order, each once: offsets below the log start
  (deleted, compacted) or past the log end are never asked for; aborted records and transaction markers are
  skipped by the consumer and the read ends when its position passes ``hi`` (``position()`` moves past markers).
  A read that does not move for :data:`STALL_S` seconds (an open transaction holds the last stable offset
  back) raises ClusterError; an error event raises DataPathError; neither carries a client setting.
- VR2 :meth:`Expected.copy` is what ``produce.forward``/``forward_run`` write for a source record, or ``None``
  where they drop it: the provenance header's decision first (:func:`~mirrorspark.core.provenance.restamped`, a
  header of ours naming the target: dropped), then the flow's :class:`~mirrorspark.core.transforms.BoundChain`
  on the record as the copy builds it (remote topic, partition, the user's headers, timestamp or 0), then
  schema-id translation of key and value. The copy is stamped ``CreateTime`` with the source's timestamp, as
  the producer writes it.
- VR3 :class:`LookupIds` translates ids as ``schema_ids.SchemaIdTranslator`` does (the 4 id bytes of a
  wire-format key or value replaced, every other byte kept, a cache per task started with the driver's
  ``known``) but never writes to either registry: the copier's target is :class:`LookupOnlyRegistry`, whose
  ``register`` is a lookup (what a re-registration of a held schema answers, S4) and which refuses anything
  else that writes. An id the source does not know, or whose schema the target does not hold, is left as it
  is (the copy could not have written another id: its target record, if any, differs in that field).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final, cast

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from mirrorspark.core.provenance import HEADER_NAME, restamped
from mirrorspark.core.schemas import HEADER_SIZE, KEY_SUFFIX, MAGIC_BYTE, VALUE_SUFFIX
from mirrorspark.core.schemas.copier import SchemaCopier
from mirrorspark.core.schemas.registry import SchemaRegistryLike, SchemaText, SubjectVersion
from mirrorspark.core.transforms import BoundChain, ConnectRecord
from mirrorspark.core.verify.records import Header
from mirrorspark.errors import ClusterError, DataPathError, MirrorsparkError, ProvenanceError
from mirrorspark.kafka.protocols import MessageLike, RangeConsumerLike
from mirrorspark.registry.client import RegistryClient
from mirrorspark.replication.task.failures import at, consumer_error
from mirrorspark.replication.task.spec import ProvenanceSpec, SchemaIdsSpec

BATCH: Final = 10_000
"""Records per ``consume()`` call (``bench/verify_reader.py``)."""

STALL_S: Final = 60.0
"""Seconds a read may go without moving before it fails (VR1)."""

CONSUME_TIMEOUT_S: Final = 0.5
"""Seconds one ``consume()`` call waits for records."""

METADATA_WAIT_S: Final = 15.0
"""Seconds a new consumer may not know a partition yet (its first metadata on the way) before the read fails."""

_NOT_KNOWN_YET: Final = frozenset({KafkaError._UNKNOWN_PARTITION, KafkaError.UNKNOWN_TOPIC_OR_PART})

READER_DEFAULTS: Final[Mapping[str, Any]] = {
    "fetch.max.bytes": 64 << 20,
    "max.partition.fetch.bytes": 16 << 20,
    "fetch.queue.backoff.ms": 10,
}
"""Fetch settings a verify consumer gets unless its configuration sets them (the ``ck-backoff`` reader)."""

READER_FORCED: Final[Mapping[str, Any]] = {
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "enable.partition.eof": False,
    "isolation.level": "read_committed",
    "auto.offset.reset": "earliest",
}
"""What a verify consumer always is: assign-only, never committing, reading committed records only."""


def reader_conf(conf: Mapping[str, Any], unit: str) -> dict[str, Any]:
    """Return a verify consumer's librdkafka configuration: ``conf`` with the reader's settings (``unit`` names it)."""
    out = {**READER_DEFAULTS, **conf, **READER_FORCED}
    out.setdefault("group.id", "mirrorspark-verify")
    out["client.id"] = f"{conf.get('client.id', 'mirrorspark')}-verify-{unit}"
    return out


def read_range(
    consumer: RangeConsumerLike,
    topic: str,
    partition: int,
    lo: int,
    hi: int,
    *,
    flow: str,
    batch: int = BATCH,
    stall_s: float = STALL_S,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[list[MessageLike]]:
    """Yield the records of ``topic``-``partition`` in ``[lo, hi)`` in batches, offset order (VR1).

    Raises ClusterError when the read stalls, DataPathError on a consumer's error event.
    """
    low, high = _watermarks(consumer, TopicPartition(topic, partition), clock=clock)
    lo, hi = max(lo, low), min(hi, high)
    if lo >= hi:
        return
    consumer.assign([TopicPartition(topic, partition, lo)])
    nxt, moved = lo, clock()
    where = f"{topic}-{partition}"
    while nxt < hi:
        msgs = consumer.consume(num_messages=min(batch, hi - nxt), timeout=CONSUME_TIMEOUT_S)
        out: list[MessageLike] = []
        for m in msgs:
            err = m.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    continue
                raise consumer_error(flow, {}, m, err)
            o = cast(int, m.offset())
            if o < nxt:
                continue
            if o >= hi:
                nxt = hi
                break
            out.append(m)
            nxt = o + 1
        if out:
            moved = clock()
            yield out
        elif nxt < hi:
            (tp,) = consumer.position([TopicPartition(topic, partition)])
            if tp.offset > nxt:
                nxt, moved = tp.offset, clock()
            elif clock() - moved > stall_s:
                raise at(
                    ClusterError(
                        f"flow {flow}: reading {where} stopped at offset {nxt} short of {hi} for {stall_s:.0f} s: "
                        "a transaction still open there holds the last stable offset back (or the partition's "
                        "leader is gone); verify again later"
                    ),
                    where,
                )


def _watermarks(
    consumer: RangeConsumerLike, tp: TopicPartition, *, clock: Callable[[], float], sleep_s: float = 0.2
) -> tuple[int, int]:
    """Return the partition's low and high watermarks, waiting out a new consumer's missing metadata (VR1).

    A consumer created a moment ago answers ``Unknown partition`` until its first metadata arrives (seen on
    remote topics a flow had just created); after :data:`METADATA_WAIT_S` the error is raised.
    """
    deadline = clock() + METADATA_WAIT_S
    while True:
        try:
            low, high = consumer.get_watermark_offsets(tp, timeout=30)
            return int(low), int(high)
        except KafkaException as e:
            err = e.args[0] if e.args else None
            if not isinstance(err, KafkaError) or err.code() not in _NOT_KNOWN_YET or clock() > deadline:
                raise
            time.sleep(sleep_s)


class LookupOnlyRegistry:
    """A registry that is only read: ``register`` looks the schema up under the subject (VR3), writes raise."""

    def __init__(self, inner: SchemaRegistryLike) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        """The inner registry's name."""
        return self.inner.name

    def schema(self, schema_id: int) -> SchemaText | None:
        """Ask the inner registry."""
        return self.inner.schema(schema_id)

    def versions_of(self, schema_id: int) -> list[SubjectVersion]:
        """Ask the inner registry."""
        return self.inner.versions_of(schema_id)

    def subjects(self) -> list[str]:
        """Ask the inner registry."""
        return self.inner.subjects()

    def versions(self, subject: str) -> list[int]:
        """Ask the inner registry."""
        return self.inner.versions(subject)

    def version(self, subject: str, version: int) -> tuple[int, SchemaText]:
        """Ask the inner registry."""
        return self.inner.version(subject, version)

    def lookup(self, subject: str, schema: SchemaText) -> tuple[int, int] | None:
        """Ask the inner registry."""
        return self.inner.lookup(subject, schema)

    def register(self, subject: str, schema: SchemaText) -> int:
        """Return the id ``subject`` holds ``schema`` under; raise :class:`NotOnTarget` if it does not hold it."""
        held = self.inner.lookup(subject, schema)
        if held is None:
            raise NotOnTarget(subject)
        return held[0]

    def compatibility(self, subject: str) -> str | None:
        """Ask the inner registry."""
        return self.inner.compatibility(subject)

    def set_compatibility(self, subject: str, level: str) -> None:
        """Refuse: verify writes nothing."""
        raise NotOnTarget(subject)

    def close(self) -> None:
        """Close the inner registry client, if it holds anything."""
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()


class NotOnTarget(MirrorsparkError):
    """A schema the target registry does not hold (internal to :class:`LookupIds`, never reported)."""


_MAGIC: Final = bytes([MAGIC_BYTE])


class LookupIds:
    """Schema-id translation as the copy does it, lookups only (VR3); not thread-safe (one per verify task)."""

    def __init__(self, copier: SchemaCopier, *, known: tuple[tuple[int, int], ...] = ()) -> None:
        self.copier = copier
        self.heads: dict[bytes, bytes] = {
            _MAGIC + s.to_bytes(4, "big"): _MAGIC + t.to_bytes(4, "big") for s, t in known
        }
        self.missing = 0
        """Ids left as they are: unknown on the source, or not held by the target."""

    @classmethod
    def for_task(cls, spec: SchemaIdsSpec) -> LookupIds:
        """Build one with its own registry clients (the target's read only)."""
        target = LookupOnlyRegistry(RegistryClient.from_settings(spec.target))
        copier = SchemaCopier(RegistryClient.from_settings(spec.source), target, spec.naming)
        return cls(copier, known=spec.known)

    def mapped(self, target_topic: str, key: bytes | None, value: bytes | None) -> tuple[bytes | None, bytes | None]:
        """Return ``(key, value)`` with the target's ids (SchemaRegistryError when a registry cannot be read)."""
        if value is not None and len(value) >= HEADER_SIZE and value[0] == MAGIC_BYTE:
            value = self._one(value, target_topic + VALUE_SUFFIX)
        if key is not None and len(key) >= HEADER_SIZE and key[0] == MAGIC_BYTE:
            key = self._one(key, target_topic + KEY_SUFFIX)
        return key, value

    def _one(self, data: bytes, fallback: str) -> bytes:
        source = data[:HEADER_SIZE]
        head = self.heads.get(source)
        if head is None:
            try:
                found = self.copier.target_id(int.from_bytes(source[1:], "big"), fallback)
            except NotOnTarget:
                found = None
            head = self.heads[source] = source if found is None else _MAGIC + found.to_bytes(4, "big")
            self.missing += found is None
        if head == source:
            return data
        return head + data[HEADER_SIZE:]

    def close(self) -> None:
        """Release the registry clients."""
        self.copier.close()


class Expected:
    """The copy a flow writes of each source record of one partition (VR2)."""

    def __init__(
        self,
        *,
        target_topic: str,
        partition: int,
        transforms: BoundChain | None = None,
        provenance: ProvenanceSpec | None = None,
        ids: LookupIds | None = None,
    ) -> None:
        self.target_topic = target_topic
        self.partition = partition
        self.transforms = transforms
        self.hop = provenance.hop if provenance is not None else None
        self.ids = ids

    @property
    def identity(self) -> bool:
        """Whether every copy equals its source record but for the provenance header (the fast path)."""
        return self.transforms is None and self.hop is None and self.ids is None

    def copy(self, m: MessageLike) -> tuple[bytes | None, bytes | None, Sequence[Header], int] | None:
        """Return the copy's ``(key, value, headers, timestamp ms)`` of record ``m``, or ``None``: dropped.

        Raises DataPathError when a transform fails or moves the record (the copy stops there too).
        """
        ts_type, ts = m.timestamp()
        timestamp_ms = ts if ts_type else 0
        key, value = m.key(), m.value()
        headers = cast(list[Header], m.headers() or [])
        if self.hop is not None and headers:
            try:
                stamped = restamped(headers, b"", self.hop)
            except ProvenanceError:  # the copy stops at such a record: it is never acknowledged, nor dropped
                stamped = headers
            if stamped is None:
                return None
            headers = [h for h in stamped if h[0] != HEADER_NAME]
        if self.transforms is not None:
            out = self._transform(m, key, value, headers, timestamp_ms)
            if out is None:
                return None
            key, value, headers, timestamp_ms = out.key, out.value, list(out.headers), out.timestamp_ms
        if self.ids is not None:
            key, value = self.ids.mapped(self.target_topic, key, value)
        return key, value, headers, timestamp_ms

    def _transform(
        self, m: MessageLike, key: bytes | None, value: bytes | None, headers: list[Header], ts: int
    ) -> ConnectRecord | None:
        chain = cast(BoundChain, self.transforms)
        record = ConnectRecord(self.target_topic, self.partition, key, value, tuple(headers), ts)
        where = f"{m.topic()}-{m.partition()}"
        try:
            out = chain.apply(record)
        except Exception as e:
            raise at(
                DataPathError(
                    f"a transform failed on record {where}@{m.offset()} while verifying: {type(e).__name__}: {e}"
                ),
                where,
            ) from e
        if out is not None and (out.topic != record.topic or out.partition != record.partition):
            raise at(DataPathError(f"a transform moved record {where}@{m.offset()} to another partition"), where)
        return out


__all__ = [
    "BATCH",
    "READER_DEFAULTS",
    "READER_FORCED",
    "STALL_S",
    "Expected",
    "LookupIds",
    "LookupOnlyRegistry",
    "NotOnTarget",
    "read_range",
    "reader_conf",
]
