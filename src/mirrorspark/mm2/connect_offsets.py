"""Kafka Connect source offsets as MM2's connectors store them, and Kafka's default partitioner."""

from __future__ import annotations

import json
import struct
from typing import Any, NamedTuple

from mirrorspark.errors import CorruptRecordError
from mirrorspark.mm2.records import MIRROR_CHECKPOINT_CONNECTOR, MIRROR_HEARTBEAT_CONNECTOR, MIRROR_SOURCE_CONNECTOR

# --------------------------------------------------------------------------- Connect source offsets

_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _json_string(value: str) -> str:
    r"""Write ``value`` as a JSON string literal as Jackson does (raw non-ASCII, upper-case ``\u00XX`` hex)."""
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

    E.g. ``["MirrorSourceConnector",{"cluster":"primary","partition":0,"topic":"t"}]``; TypeError if ``partition``
    is not an int.
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
    """Value ``{"offset": offset}`` Connect stores for one source partition.

    ``offset`` is the **last replicated** upstream offset (MM2 resumes at ``offset + 1``).
    """
    return f'{{"offset":{_json_int(offset, "offset")}}}'.encode()


TOPIC_ID_MARKER = "mirrorspark-topic-ids"
"""Connector name of mirrorspark's topic-id markers in ``mm2-offsets`` (Connect and MM2 ignore other connectors' keys).

An exactly-once copy task writes one, in the transaction of the first commit of a partition it
started over, beside the source offset: the stored offsets from then on are that topic id's."""


def topic_id_marker_key(cluster_alias: str, topic: str, partition: int) -> bytes:
    """Key of the topic-id marker of one source partition: :func:`source_offset_key` under :data:`TOPIC_ID_MARKER`."""
    return source_offset_key(cluster_alias, topic, partition, connector_name=TOPIC_ID_MARKER)


def topic_id_marker_value(topic_id: str) -> bytes:
    """Value of a topic-id marker, e.g. ``{"topic_id":"lEAndA/kS9GghiZp16o8Ag"}``."""
    return f'{{"topic_id":{_json_string(topic_id)}}}'.encode()


def decode_topic_id_marker(key: bytes, value: bytes | None) -> tuple[str, str, int, str | None] | None:
    """Decode a topic-id marker: ``(cluster, topic, partition, topic id)``; ``None`` for any other record.

    A malformed marker (or a tombstone) gives a ``None`` topic id: the stored offsets' topic is then unknown.
    """
    parsed = _source_partition_key(key)
    if parsed is None or parsed[0] != TOPIC_ID_MARKER:
        return None
    where = parsed[1]
    topic_id = None
    if value is not None:
        try:
            body = json.loads(bytes(value).decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            body = None
        if isinstance(body, dict) and isinstance(body.get("topic_id"), str):
            topic_id = body["topic_id"]
    return where["cluster"], where["topic"], where["partition"], topic_id


def task_transactional_id(group_id: str, connector_name: str, task_index: int) -> str:
    """Return the ``transactional.id`` of a copy task in exactly-once mode: ``<group id>-<connector>-<task>`` (KIP-618).

    Connect's ``Worker.taskTransactionalId``; MM2's dedicated mode gives ``"A-mm2-MirrorSourceConnector-0"``. The
    same id as the replicator taken over from, on purpose: either side's ``init_transactions`` fences the other.
    """
    return f"{group_id}-{connector_name}-{task_index}"


def checkpoint_connector_offset_key(
    group: str, topic: str, partition: int, connector_name: str = MIRROR_CHECKPOINT_CONNECTOR
) -> bytes:
    """Key of MirrorCheckpointConnector's (constant, :data:`CONSTANT_OFFSET_VALUE`) offset, for the downstream topic."""
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
    """Key of MirrorHeartbeatConnector's (constant, :data:`CONSTANT_OFFSET_VALUE`) offset."""
    return _connect_key(
        connector_name,
        [
            ("sourceClusterAlias", _json_string(source_alias)),
            ("targetClusterAlias", _json_string(target_alias)),
        ],
    )


class SourceOffset(NamedTuple):
    """MirrorSourceConnector's stored position for one source partition (``offset`` ``None``: deleted)."""

    cluster: str
    topic: str
    partition: int
    offset: int | None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_source_partition(where: Any) -> bool:
    """Whether ``where`` is MirrorSourceConnector's partition map (string cluster and topic, int partition)."""
    return (
        isinstance(where, dict)
        and isinstance(where.get("cluster"), str)
        and isinstance(where.get("topic"), str)
        and _is_int(where.get("partition"))
    )


def _source_partition_key(key: bytes) -> tuple[str, dict[str, Any]] | None:
    """Parse ``["<name>",{partition map}]`` leniently: ``(name, partition map)``, or ``None`` for any other key."""
    try:
        parsed = json.loads(bytes(key).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not (isinstance(parsed, list) and len(parsed) == 2 and isinstance(parsed[0], str)):
        return None
    return (parsed[0], parsed[1]) if _is_source_partition(parsed[1]) else None


def _parse_json(data: bytes, part: str) -> Any:
    try:
        return json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:  # RecursionError: absurdly deep nesting
        raise CorruptRecordError(
            f"cannot decode Connect source-offset {part}: not UTF-8 JSON ({e}); "
            "check that the topic is a Kafka Connect offsets topic (mm2-offsets.<source>.internal)"
        ) from e


def decode_source_offset(
    key: bytes, value: bytes | None, *, connector_name: str = MIRROR_SOURCE_CONNECTOR
) -> SourceOffset | None:
    """Decode a record of Connect's offsets topic written for MirrorSourceConnector.

    ``None`` if the key belongs to another connector; the offset is ``None`` for a tombstone. Raises
    CorruptRecordError if the key or value is not the layout Connect writes.
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
    if not _is_source_partition(partition_map):
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


def source_offset_connector(key: bytes) -> str | None:
    """Return the connector name of a key in MirrorSourceConnector's layout (a topic-id marker's too); else ``None``."""
    parsed = _source_partition_key(key)
    return None if parsed is None else parsed[0]


# --------------------------------------------------------------------------- validation

OFFSET_HISTORY_DEPTH = 32
"""Most stored offsets of one partition :class:`OffsetHistory` keeps as fall-backs for an invalid newest one."""


class OffsetHistory:
    """The stored source offsets of one partition that could still be its last *valid* one, oldest first.

    Connect keeps only the newest record per key, so a foreign or corrupt offset past the end would skip records.
    Kept offsets increase strictly (a later lower one is valid whenever the earlier is), at most
    :data:`OFFSET_HISTORY_DEPTH`; a tombstone clears them.
    """

    __slots__ = ("offsets", "topic_id")

    def __init__(self) -> None:
        self.offsets: list[int] = []
        self.topic_id: str | None = None
        """The topic id a topic-id marker (:data:`TOPIC_ID_MARKER`) gave the stored offsets; ``None``: unknown."""

    def add(self, offset: int | None) -> bool:
        """Add the offset of the next record (``None`` = tombstone); ``False`` (ignored) for an offset below -1."""
        if offset is None:
            self.offsets.clear()
            return True
        if offset < -1:
            return False
        kept = self.offsets
        while kept and kept[-1] >= offset:
            kept.pop()
        kept.append(offset)
        if len(kept) > OFFSET_HISTORY_DEPTH:
            del kept[0]
        return True

    @property
    def last(self) -> int | None:
        """The newest offset added (``None`` when empty)."""
        return self.offsets[-1] if self.offsets else None


def last_valid_offset(
    offsets: list[int], end: int, *, reached: int | None = None
) -> tuple[int | None, tuple[int, ...]]:
    """Pick the newest stored offset a partition with end offset ``end`` can hold, or once held; and those skipped.

    An offset at or past the end is skipped as foreign or corrupt unless below ``reached`` (the flow's own before an
    unclean election truncated the log): it is kept, so the truncation is found as a gap
    (:func:`~mirrorspark.core.gaps.check_position`), never copied over. ``None`` if none is valid.
    """
    bound = end if reached is None else max(end, reached)
    for i in range(len(offsets) - 1, -1, -1):
        if -1 <= offsets[i] < bound:
            return offsets[i], tuple(offsets[i + 1 :])
    return None, tuple(offsets)


# --------------------------------------------------------------------------- partitioning

_MASK32 = 0xFFFFFFFF
_MURMUR2_SEED = 0x9747B28C
_MURMUR2_M = 0x5BD1E995
_WORDS_LE = struct.Struct("<I")


def murmur2(data: bytes) -> int:
    """32-bit MurmurHash2 as Kafka computes it (``org.apache.kafka.common.utils.Utils.murmur2``)."""
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
    """Partition the Java producer picks for a keyed record: ``(murmur2(key) & 0x7fffffff) % n``."""
    if num_partitions < 1:
        raise ValueError(f"num_partitions must be at least 1, got {num_partitions}")
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


__all__ = [
    "OFFSET_HISTORY_DEPTH",
    "TOPIC_ID_MARKER",
    "OffsetHistory",
    "SourceOffset",
    "checkpoint_connector_offset_key",
    "decode_source_offset",
    "decode_topic_id_marker",
    "default_partition",
    "heartbeat_connector_offset_key",
    "last_valid_offset",
    "murmur2",
    "source_offset_connector",
    "source_offset_key",
    "source_offset_value",
    "task_transactional_id",
    "topic_id_marker_key",
    "topic_id_marker_value",
]
