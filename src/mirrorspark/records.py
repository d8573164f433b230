"""Byte-exact codecs of MM2's internal records and of Kafka Connect's source offsets.

* :class:`Heartbeat`, :class:`Checkpoint`, :class:`OffsetSync` — the keys and values MM2
  writes to ``heartbeats``, ``<source>.checkpoints.internal`` and
  ``mm2-offset-syncs.<alias>.internal`` (MM2 classes ``Heartbeat``, ``Checkpoint``,
  ``OffsetSync``), encoded with Kafka's protocol types: big-endian INT16/INT32/INT64 and
  STRING = INT16 byte length + UTF-8 bytes. Heartbeat and Checkpoint values start with an
  INT16 version (always written as 0); OffsetSync values have none.
* The JSON keys and values Kafka Connect stores in ``mm2-offsets.<source>.internal`` for
  the three MM2 connectors (compact JSON as written by Connect's ``JsonConverter`` with
  schemas disabled; field order as MM2 produces it).
* :func:`murmur2` and :func:`default_partition` — Kafka's keyed-record partitioner, so an
  offset lands in the partition of the offsets topic where Connect would write it.

Decoding follows MM2's readers: any version number is read with the version-0 layout,
bytes after the last field are ignored, and malformed UTF-8 in a string is replaced with
U+FFFD (as Java's decoder does) rather than rejected. Truncated records raise
:class:`~mirrorspark.errors.CorruptRecordError`; MM2's clients skip such records.

This module does no I/O and imports neither pyspark nor confluent-kafka.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Any, NamedTuple, Self

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

    def _take(self, size: int, field: str) -> bytes:
        end = self._pos + size
        if end > len(self._data):
            raise CorruptRecordError(
                f"cannot decode {self._record} {self._part}: field {field!r} needs {size} bytes at byte "
                f"{self._pos} but the {self._part} is only {len(self._data)} bytes long; "
                f"the record is truncated or not an MM2 {self._record} (MM2 skips such records)"
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
                f"the record is not an MM2 {self._record} (MM2 skips such records)"
            )
        return self._take(length, field).decode("utf-8", errors="replace")


# --------------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """One heartbeat, written every second to ``heartbeats`` on a target (MM2 ``Heartbeat``).

    Key: ``sourceClusterAlias`` STRING, ``targetClusterAlias`` STRING.
    Value: ``version`` INT16 (0), ``timestamp`` INT64.

    Parameters
    ----------
    source_cluster_alias:
        Alias of the flow's source cluster.
    target_cluster_alias:
        Alias of the flow's target cluster.
    timestamp_ms:
        Time of the heartbeat, milliseconds since the Unix epoch (also the record timestamp).
    """

    source_cluster_alias: str
    target_cluster_alias: str
    timestamp_ms: int

    def key(self) -> bytes:
        """Encode the record key.

        Returns
        -------
        bytes
            ``STRING sourceClusterAlias, STRING targetClusterAlias``.

        Raises
        ------
        ValueError
            If an alias is longer than 32767 bytes in UTF-8.
        """
        return _string(self.source_cluster_alias, "source_cluster_alias") + _string(
            self.target_cluster_alias, "target_cluster_alias"
        )

    def value(self) -> bytes:
        """Encode the record value.

        Returns
        -------
        bytes
            10 bytes: ``INT16 version=0, INT64 timestamp``.

        Raises
        ------
        ValueError
            If the timestamp does not fit in INT64.
        """
        return _VERSION_0 + _int64(self.timestamp_ms, "timestamp_ms")

    @classmethod
    def decode(cls, key: bytes | None, value: bytes | None) -> Self:
        """Decode a record of the ``heartbeats`` topic.

        Parameters
        ----------
        key, value:
            The record's key and value bytes.

        Returns
        -------
        Heartbeat

        Raises
        ------
        CorruptRecordError
            If the key or value is null or too short.
        """
        k = _Reader("Heartbeat", "key", key)
        source = k.string("sourceClusterAlias")
        target = k.string("targetClusterAlias")
        v = _Reader("Heartbeat", "value", value)
        v.int16("version")
        return cls(source, target, v.int64("timestamp"))

    def format(self) -> str:
        """The line MM2's ``HeartbeatFormatter`` prints for this record.

        Returns
        -------
        str
            E.g. ``Heartbeat{sourceClusterAlias=A, targetClusterAlias=B, timestamp=1700000000000}``.
        """
        return (
            f"Heartbeat{{sourceClusterAlias={self.source_cluster_alias}, "
            f"targetClusterAlias={self.target_cluster_alias}, timestamp={self.timestamp_ms}}}"
        )


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A consumer group's offset translated to the target (MM2 ``Checkpoint``).

    Written to ``<source>.checkpoints.internal`` on the target, partition 0.
    Key: ``group`` STRING, ``topic`` STRING, ``partition`` INT32.
    Value: ``version`` INT16 (0), ``upstreamOffset`` INT64, ``offset`` INT64, ``metadata`` STRING.

    Parameters
    ----------
    consumer_group_id:
        The consumer group on the source cluster.
    topic:
        The **downstream** (renamed) topic on the target, e.g. ``source1.topic1``.
    partition:
        Partition number (same on both clusters).
    upstream_offset:
        The group's committed offset on the source (the next offset to read there).
    downstream_offset:
        The translated committed offset on the target (the next offset to read there).
    metadata:
        The commit metadata of the source group; ``""`` if none.
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
        """Encode the record key.

        Returns
        -------
        bytes
            ``STRING group, STRING topic, INT32 partition``.

        Raises
        ------
        ValueError
            If a string is longer than 32767 bytes in UTF-8 or the partition does not fit INT32.
        """
        return (
            _string(self.consumer_group_id, "consumer_group_id")
            + _string(self.topic, "topic")
            + _int32(self.partition, "partition")
        )

    def value(self) -> bytes:
        """Encode the record value.

        Returns
        -------
        bytes
            ``INT16 version=0, INT64 upstreamOffset, INT64 offset, STRING metadata``.

        Raises
        ------
        ValueError
            If an offset does not fit INT64 or the metadata is longer than 32767 bytes.
        """
        return (
            _VERSION_0
            + _int64(self.upstream_offset, "upstream_offset")
            + _int64(self.downstream_offset, "downstream_offset")
            + _string(self.metadata, "metadata")
        )

    @classmethod
    def decode(cls, key: bytes | None, value: bytes | None) -> Self:
        """Decode a record of a checkpoints topic.

        Parameters
        ----------
        key, value:
            The record's key and value bytes.

        Returns
        -------
        Checkpoint

        Raises
        ------
        CorruptRecordError
            If the key or value is null or too short.
        """
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
        """The line MM2's ``CheckpointFormatter`` prints for this record.

        Returns
        -------
        str
            E.g. ``Checkpoint{consumerGroupId=g, topicPartition=A.t-0, upstreamOffset=10,
            downstreamOffset=11, metadata=}``.
        """
        return (
            f"Checkpoint{{consumerGroupId={self.consumer_group_id}, topicPartition={self.topic_partition}, "
            f"upstreamOffset={self.upstream_offset}, downstreamOffset={self.downstream_offset}, "
            f"metadata={self.metadata}}}"
        )


@dataclass(frozen=True, slots=True)
class OffsetSync:
    """Where an upstream record landed downstream (MM2 ``OffsetSync``).

    Written to ``mm2-offset-syncs.<other alias>.internal``, partition 0.
    Key: ``topic`` STRING, ``partition`` INT32. Value (no version): ``upstreamOffset``
    INT64, ``offset`` INT64.

    Parameters
    ----------
    topic:
        The **upstream** (source) topic name, e.g. ``topic1``.
    partition:
        Partition number.
    upstream_offset:
        Offset of a record on the source.
    downstream_offset:
        Offset the same record got on the target.
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
        """Encode the record key.

        Returns
        -------
        bytes
            ``STRING topic, INT32 partition``.

        Raises
        ------
        ValueError
            If the topic is longer than 32767 bytes in UTF-8 or the partition does not fit INT32.
        """
        return _string(self.topic, "topic") + _int32(self.partition, "partition")

    def value(self) -> bytes:
        """Encode the record value.

        Returns
        -------
        bytes
            16 bytes: ``INT64 upstreamOffset, INT64 offset``.

        Raises
        ------
        ValueError
            If an offset does not fit INT64.
        """
        return _int64(self.upstream_offset, "upstream_offset") + _int64(self.downstream_offset, "downstream_offset")

    @classmethod
    def decode(cls, key: bytes | None, value: bytes | None) -> Self:
        """Decode a record of an offset-syncs topic.

        Parameters
        ----------
        key, value:
            The record's key and value bytes.

        Returns
        -------
        OffsetSync

        Raises
        ------
        CorruptRecordError
            If the key or value is null or too short.
        """
        k = _Reader("OffsetSync", "key", key)
        topic = k.string("topic")
        partition = k.int32("partition")
        v = _Reader("OffsetSync", "value", value)
        upstream = v.int64("upstreamOffset")
        return cls(topic, partition, upstream, v.int64("offset"))

    def format(self) -> str:
        """The line MM2's ``OffsetSyncFormatter`` prints for this record.

        Returns
        -------
        str
            E.g. ``OffsetSync{topicPartition=t-0, upstreamOffset=3, downstreamOffset=4}``.
        """
        return (
            f"OffsetSync{{topicPartition={self.topic_partition}, upstreamOffset={self.upstream_offset}, "
            f"downstreamOffset={self.downstream_offset}}}"
        )


# --------------------------------------------------------------------------- Connect source offsets

_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _json_string(value: str) -> str:
    """A JSON string literal written as Jackson writes it.

    Non-ASCII characters are written raw, ``"`` and ``\\`` and the usual control
    characters get their short escapes, other control characters ``\\u00XX`` with
    upper-case hex (Python's :mod:`json` would write lower-case hex).
    """
    parts = ['"']
    for ch in value:
        escaped = _SHORT_ESCAPES.get(ch)
        if escaped is not None:
            parts.append(escaped)
        elif ch < " ":
            parts.append(f"\\u{ord(ch):04X}")
        else:
            parts.append(ch)
    parts.append('"')
    return "".join(parts)


def _json_int(value: int, field: str) -> str:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{field} must be an int, got {value!r}")
    return str(value)


def _connect_key(connector_name: str, fields: list[tuple[str, str]]) -> bytes:
    """``[<connector name>,{<fields in order>}]`` as compact UTF-8 JSON."""
    body = ",".join(f"{_json_string(name)}:{literal}" for name, literal in fields)
    return f"[{_json_string(connector_name)},{{{body}}}]".encode()


def source_offset_key(
    cluster_alias: str, topic: str, partition: int, connector_name: str = MIRROR_SOURCE_CONNECTOR
) -> bytes:
    """Key under which Connect stores MirrorSourceConnector's offset for one source partition.

    Parameters
    ----------
    cluster_alias:
        Alias of the source cluster, e.g. ``"primary"``.
    topic:
        Source topic name.
    partition:
        Source partition number (≥ 0).
    connector_name:
        Connector name; ``"MirrorSourceConnector"`` in MM2's dedicated driver.

    Returns
    -------
    bytes
        E.g. ``["MirrorSourceConnector",{"cluster":"primary","partition":0,"topic":"test-topic-1"}]``.

    Raises
    ------
    TypeError
        If ``partition`` is not an int.
    """
    return _connect_key(
        connector_name,
        [
            ("cluster", _json_string(cluster_alias)),
            ("partition", _json_int(partition, "partition")),
            ("topic", _json_string(topic)),
        ],
    )


def source_offset_value(offset: int) -> bytes:
    """Value Connect stores as MirrorSourceConnector's offset for one source partition.

    Parameters
    ----------
    offset:
        Offset of the **last replicated** upstream record (MM2 resumes at ``offset + 1``).

    Returns
    -------
    bytes
        E.g. ``{"offset":99}``.

    Raises
    ------
    TypeError
        If ``offset`` is not an int.
    """
    return f'{{"offset":{_json_int(offset, "offset")}}}'.encode()


def checkpoint_connector_offset_key(
    group: str, topic: str, partition: int, connector_name: str = MIRROR_CHECKPOINT_CONNECTOR
) -> bytes:
    """Key under which Connect stores MirrorCheckpointConnector's (constant) offset.

    The stored value is :data:`CONSTANT_OFFSET_VALUE`.

    Parameters
    ----------
    group:
        Consumer group id.
    topic:
        The **downstream** (renamed) topic, e.g. ``"primary.test-topic-1"``.
    partition:
        Partition number.
    connector_name:
        Connector name; ``"MirrorCheckpointConnector"`` in MM2's dedicated driver.

    Returns
    -------
    bytes
        E.g. ``["MirrorCheckpointConnector",{"partition":3,"topic":"primary.test-topic-1",
        "group":"consumer-group-1"}]``.

    Raises
    ------
    TypeError
        If ``partition`` is not an int.
    """
    return _connect_key(
        connector_name,
        [
            ("partition", _json_int(partition, "partition")),
            ("topic", _json_string(topic)),
            ("group", _json_string(group)),
        ],
    )


def heartbeat_connector_offset_key(
    source_alias: str, target_alias: str, connector_name: str = MIRROR_HEARTBEAT_CONNECTOR
) -> bytes:
    """Key under which Connect stores MirrorHeartbeatConnector's (constant) offset.

    The stored value is :data:`CONSTANT_OFFSET_VALUE`.

    Parameters
    ----------
    source_alias, target_alias:
        The flow's cluster aliases.
    connector_name:
        Connector name; ``"MirrorHeartbeatConnector"`` in MM2's dedicated driver.

    Returns
    -------
    bytes
        E.g. ``["MirrorHeartbeatConnector",{"sourceClusterAlias":"primary","targetClusterAlias":"backup"}]``.
    """
    return _connect_key(
        connector_name,
        [
            ("sourceClusterAlias", _json_string(source_alias)),
            ("targetClusterAlias", _json_string(target_alias)),
        ],
    )


class SourceOffset(NamedTuple):
    """MirrorSourceConnector's stored position for one source partition.

    Attributes
    ----------
    cluster:
        Source cluster alias.
    topic:
        Source topic name.
    partition:
        Source partition number.
    offset:
        Offset of the last replicated upstream record, or ``None`` for a tombstone
        (offset deleted).
    """

    cluster: str
    topic: str
    partition: int
    offset: int | None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _parse_json(data: bytes, part: str) -> Any:
    try:
        return json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise CorruptRecordError(
            f"cannot decode Connect source-offset {part}: not UTF-8 JSON ({e}); "
            "check that the topic is a Kafka Connect offsets topic (mm2-offsets.<source>.internal)"
        ) from e


def decode_source_offset(
    key: bytes, value: bytes | None, *, connector_name: str = MIRROR_SOURCE_CONNECTOR
) -> SourceOffset | None:
    """Decode a record of Connect's offsets topic written for MirrorSourceConnector.

    Parameters
    ----------
    key:
        Record key, ``[<connector name>,{...partition map...}]`` as JSON.
    value:
        Record value, ``{"offset":<int>}`` as JSON, or ``None`` (tombstone).
    connector_name:
        Name of the source connector whose offsets are wanted; default
        ``"MirrorSourceConnector"``.

    Returns
    -------
    SourceOffset or None
        ``(cluster, topic, partition, offset)`` (``offset`` ``None`` for a tombstone), or
        ``None`` if the key belongs to another connector (e.g. the checkpoint or heartbeat
        connector).

    Raises
    ------
    CorruptRecordError
        If the key is not a JSON array ``[string, object]``, or for ``connector_name`` the
        object lacks string ``cluster``/``topic`` or integer ``partition``, or the value is
        not a JSON object with an integer ``offset``.
    """
    parsed_key = _parse_json(key, "key")
    if not (
        isinstance(parsed_key, list)
        and len(parsed_key) == 2
        and isinstance(parsed_key[0], str)
        and (parsed_key[1] is None or isinstance(parsed_key[1], dict))
    ):
        raise CorruptRecordError(
            f"cannot decode Connect source-offset key {bytes(key)[:200]!r}: expected a JSON array "
            "[connector name, partition object]; check that the topic is a Kafka Connect offsets topic"
        )
    name, partition_map = parsed_key
    if name != connector_name:
        return None
    if not (
        isinstance(partition_map, dict)
        and isinstance(partition_map.get("cluster"), str)
        and isinstance(partition_map.get("topic"), str)
        and _is_int(partition_map.get("partition"))
    ):
        raise CorruptRecordError(
            f"cannot decode {connector_name} source-offset key {bytes(key)[:200]!r}: expected "
            'a partition object {"cluster":<string>,"partition":<int>,"topic":<string>}; '
            "check connector_name and that the topic holds MirrorSourceConnector offsets"
        )
    offset: int | None = None
    if value is not None:
        parsed_value = _parse_json(value, "value")
        if not (isinstance(parsed_value, dict) and _is_int(parsed_value.get("offset"))):
            raise CorruptRecordError(
                f"cannot decode {connector_name} source-offset value {bytes(value)[:200]!r}: expected "
                '{"offset":<int>}; check that the topic holds MirrorSourceConnector offsets'
            )
        offset = parsed_value["offset"]
    return SourceOffset(partition_map["cluster"], partition_map["topic"], partition_map["partition"], offset)


# --------------------------------------------------------------------------- partitioning

_MASK32 = 0xFFFFFFFF
_MURMUR2_SEED = 0x9747B28C
_MURMUR2_M = 0x5BD1E995
_WORDS_LE = struct.Struct("<I")


def murmur2(data: bytes) -> int:
    """32-bit MurmurHash2 as Kafka computes it (``org.apache.kafka.common.utils.Utils.murmur2``).

    Parameters
    ----------
    data:
        The bytes to hash (for partitioning: the serialized record key).

    Returns
    -------
    int
        The hash as a **signed** 32-bit integer, like Java's ``int``
        (e.g. ``murmur2(b"21") == -973932308``).
    """
    length = len(data)
    h = (_MURMUR2_SEED ^ length) & _MASK32
    whole = length - length % 4
    for (k,) in _WORDS_LE.iter_unpack(data[:whole]):
        k = (k * _MURMUR2_M) & _MASK32
        k ^= k >> 24
        k = (k * _MURMUR2_M) & _MASK32
        h = ((h * _MURMUR2_M) & _MASK32) ^ k
    tail = data[whole:]
    if len(tail) == 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if len(tail) >= 1:
        h ^= tail[0]
        h = (h * _MURMUR2_M) & _MASK32
    h ^= h >> 13
    h = (h * _MURMUR2_M) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def default_partition(key: bytes, num_partitions: int) -> int:
    """Partition Kafka's Java producer picks for a keyed record (``BuiltInPartitioner``).

    Parameters
    ----------
    key:
        The serialized record key.
    num_partitions:
        Partition count of the topic (25 for Connect's offsets topic by default).

    Returns
    -------
    int
        ``(murmur2(key) & 0x7fffffff) % num_partitions``, in ``0..num_partitions-1``.

    Raises
    ------
    ValueError
        If ``num_partitions`` is less than 1.
    """
    if num_partitions < 1:
        raise ValueError(f"num_partitions must be at least 1, got {num_partitions}")
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


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
    "SourceOffset",
    "checkpoint_connector_offset_key",
    "decode_source_offset",
    "default_partition",
    "heartbeat_connector_offset_key",
    "murmur2",
    "source_offset_key",
    "source_offset_value",
]
