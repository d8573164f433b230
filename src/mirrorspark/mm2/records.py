"""MM2's internal records, byte-exact: ``Heartbeat``, ``Checkpoint``, ``OffsetSync``."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Self

from mirrorspark.errors import CorruptRecordError

MIRROR_SOURCE_CONNECTOR = "MirrorSourceConnector"
"""Name of the source connector in MM2's dedicated driver (first element of its offset keys)."""

MIRROR_CHECKPOINT_CONNECTOR = "MirrorCheckpointConnector"
"""Name of the checkpoint connector in MM2's dedicated driver."""

MIRROR_HEARTBEAT_CONNECTOR = "MirrorHeartbeatConnector"
"""Name of the heartbeat connector in MM2's dedicated driver."""

CONNECT_OFFSETS_TOPIC_PARTITIONS = 25
"""Default partition count of Connect's offsets topic (``offset.storage.partitions``)."""

CONSTANT_OFFSET_VALUE = b'{"offset":0}'
"""Source offset the checkpoint and heartbeat connectors store (constant, unused)."""

MAX_STRING_BYTES = 32767
"""Largest UTF-8 length of a STRING field (its length prefix is a signed INT16)."""

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_VERSION_0 = _INT16.pack(0)

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


# --------------------------------------------------------------------------- encoding


def _check_range(value: int, low: int, high: int, field: str, kind: str) -> None:
    if not low <= value <= high:
        raise ValueError(f"{field}={value} does not fit in {kind} ({low}..{high})")


def _int32(value: int, field: str) -> bytes:
    _check_range(value, _INT32_MIN, _INT32_MAX, field, "INT32")
    return _INT32.pack(value)


def _int64(value: int, field: str) -> bytes:
    _check_range(value, _INT64_MIN, _INT64_MAX, field, "INT64")
    return _INT64.pack(value)


def _string(value: str, field: str) -> bytes:
    data = value.encode("utf-8")
    if len(data) > MAX_STRING_BYTES:
        raise ValueError(
            f"{field} is {len(data)} bytes in UTF-8; MM2 record strings hold at most {MAX_STRING_BYTES} bytes"
        )
    return _INT16.pack(len(data)) + data


# --------------------------------------------------------------------------- decoding


class _Reader:
    """Reads Kafka protocol fields from one key or value, raising CorruptRecordError."""

    def __init__(self, record: str, part: str, data: bytes | None) -> None:
        if data is None:
            raise CorruptRecordError(
                f"cannot decode {record} {part}: it is null (a tombstone); "
                f"only records written by MM2's {record} encoder can be decoded"
            )
        self._record = record
        self._part = part
        self._data = bytes(data)
        self._pos = 0

    def _not_this(self) -> str:
        return f"not an MM2 {self._record} (MM2 skips such records)"

    def _take(self, size: int, field: str) -> bytes:
        end = self._pos + size
        if end > len(self._data):
            raise CorruptRecordError(
                f"cannot decode {self._record} {self._part}: field {field!r} needs {size} bytes at byte "
                f"{self._pos} but the {self._part} is only {len(self._data)} bytes long; "
                f"the record is truncated or {self._not_this()}"
            )
        chunk = self._data[self._pos : end]
        self._pos = end
        return chunk

    def int16(self, field: str) -> int:
        value: int = _INT16.unpack(self._take(2, field))[0]
        return value

    def int32(self, field: str) -> int:
        value: int = _INT32.unpack(self._take(4, field))[0]
        return value

    def int64(self, field: str) -> int:
        value: int = _INT64.unpack(self._take(8, field))[0]
        return value

    def string(self, field: str) -> str:
        length = self.int16(field)
        if length < 0:
            raise CorruptRecordError(
                f"cannot decode {self._record} {self._part}: field {field!r} has negative length {length}; "
                f"the record is {self._not_this()}"
            )
        return self._take(length, field).decode("utf-8", errors="replace")


# --------------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """One heartbeat, written every second to ``heartbeats`` on a target (MM2 ``Heartbeat``); timestamp in epoch ms.

    Key: ``sourceClusterAlias`` STRING, ``targetClusterAlias`` STRING. Value: ``version`` INT16 (0), ``timestamp``
    INT64.
    """

    source_cluster_alias: str
    target_cluster_alias: str
    timestamp_ms: int

    def key(self) -> bytes:
        """Encode the record key."""
        return _string(self.source_cluster_alias, "source_cluster_alias") + _string(
            self.target_cluster_alias, "target_cluster_alias"
        )

    def value(self) -> bytes:
        """Encode the record value."""
        return _VERSION_0 + _int64(self.timestamp_ms, "timestamp_ms")

    @classmethod
    def decode(cls, key: bytes | None, value: bytes | None) -> Self:
        """Decode a record of the ``heartbeats`` topic; raises CorruptRecordError if it is null or too short."""
        k = _Reader("Heartbeat", "key", key)
        source = k.string("sourceClusterAlias")
        target = k.string("targetClusterAlias")
        v = _Reader("Heartbeat", "value", value)
        v.int16("version")
        return cls(source, target, v.int64("timestamp"))

    def format(self) -> str:
        """Format this record as MM2's ``HeartbeatFormatter`` prints it."""
        return (
            f"Heartbeat{{sourceClusterAlias={self.source_cluster_alias}, "
            f"targetClusterAlias={self.target_cluster_alias}, timestamp={self.timestamp_ms}}}"
        )


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A consumer group's offset translated to the target (MM2 ``Checkpoint``), on ``<source>.checkpoints.internal``.

    Key: ``group`` STRING, ``topic`` STRING, ``partition`` INT32. Value: ``version`` INT16 (0), ``upstreamOffset``
    INT64, ``offset`` INT64, ``metadata`` STRING.
    """

    consumer_group_id: str
    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int
    metadata: str = ""

    @property
    def topic_partition(self) -> str:
        """``<topic>-<partition>``, as Kafka renders a TopicPartition."""
        return f"{self.topic}-{self.partition}"

    def key(self) -> bytes:
        """Encode the record key."""
        return (
            _string(self.consumer_group_id, "consumer_group_id")
            + _string(self.topic, "topic")
            + _int32(self.partition, "partition")
        )

    def value(self) -> bytes:
        """Encode the record value."""
        return (
            _VERSION_0
            + _int64(self.upstream_offset, "upstream_offset")
            + _int64(self.downstream_offset, "downstream_offset")
            + _string(self.metadata, "metadata")
        )

    @classmethod
    def decode(cls, key: bytes | None, value: bytes | None) -> Self:
        """Decode a record of a checkpoints topic; raises CorruptRecordError if it is null or too short."""
        k = _Reader("Checkpoint", "key", key)
        group = k.string("group")
        topic = k.string("topic")
        partition = k.int32("partition")
        v = _Reader("Checkpoint", "value", value)
        v.int16("version")
        upstream = v.int64("upstreamOffset")
        downstream = v.int64("offset")
        metadata = v.string("metadata")
        return cls(group, topic, partition, upstream, downstream, metadata)

    def format(self) -> str:
        """Format this record as MM2's ``CheckpointFormatter`` prints it."""
        return (
            f"Checkpoint{{consumerGroupId={self.consumer_group_id}, topicPartition={self.topic_partition}, "
            f"upstreamOffset={self.upstream_offset}, downstreamOffset={self.downstream_offset}, "
            f"metadata={self.metadata}}}"
        )


@dataclass(frozen=True, slots=True)
class OffsetSync:
    """Where an upstream record landed downstream (MM2 ``OffsetSync``), on ``mm2-offset-syncs.<other alias>.internal``.

    Key: ``topic`` STRING, ``partition`` INT32. Value (no version): ``upstreamOffset`` INT64, ``offset`` INT64.
    """

    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int

    @property
    def topic_partition(self) -> str:
        """``<topic>-<partition>``, as Kafka renders a TopicPartition."""
        return f"{self.topic}-{self.partition}"

    def key(self) -> bytes:
        """Encode the record key."""
        return _string(self.topic, "topic") + _int32(self.partition, "partition")

    def value(self) -> bytes:
        """Encode the record value."""
        return _int64(self.upstream_offset, "upstream_offset") + _int64(self.downstream_offset, "downstream_offset")

    @classmethod
    def decode(cls, key: bytes | None, value: bytes | None) -> Self:
        """Decode a record of an offset-syncs topic; raises CorruptRecordError if it is null or too short."""
        k = _Reader("OffsetSync", "key", key)
        topic = k.string("topic")
        partition = k.int32("partition")
        v = _Reader("OffsetSync", "value", value)
        upstream = v.int64("upstreamOffset")
        return cls(topic, partition, upstream, v.int64("offset"))

    def format(self) -> str:
        """Format this record as MM2's ``OffsetSyncFormatter`` prints it."""
        return (
            f"OffsetSync{{topicPartition={self.topic_partition}, upstreamOffset={self.upstream_offset}, "
            f"downstreamOffset={self.downstream_offset}}}"
        )


__all__ = [
    "CONNECT_OFFSETS_TOPIC_PARTITIONS",
    "CONSTANT_OFFSET_VALUE",
    "MAX_STRING_BYTES",
    "MIRROR_CHECKPOINT_CONNECTOR",
    "MIRROR_HEARTBEAT_CONNECTOR",
    "MIRROR_SOURCE_CONNECTOR",
    "Checkpoint",
    "Heartbeat",
    "OffsetSync",
]
