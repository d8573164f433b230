"""Kafka's ``__consumer_offsets`` records, decoded: a group's committed offsets and its classic group metadata.

Source: Apache Kafka's message definitions ``OffsetCommitKey``/``OffsetCommitValue`` (key versions 0 and 1, value
versions 0-4) and ``GroupMetadataKey``/``GroupMetadataValue`` (key version 2, value versions 0-4); value version 4 of
each is flexible (compact strings, arrays and bytes, tagged fields). A record's key and value each start with their
INT16 version; a null value is a tombstone. Key versions 3 and up (KIP-848 consumer groups, share groups,
transactions, ...) are records of other kinds, which this module does not decode. Kafka 4.3 writes OffsetCommitKey 1
with OffsetCommitValue 4 (one tagged field, skipped) and GroupMetadataKey 2 with GroupMetadataValue 3.
"""

from __future__ import annotations

from dataclasses import dataclass

from mirrorspark.errors import CorruptRecordError
from mirrorspark.mm2.records import _Reader

CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"
"""Name of the topic where group coordinators keep committed offsets and group metadata."""

_OFFSET_COMMIT_KEY_VERSIONS = (0, 1)
_GROUP_METADATA_KEY_VERSION = 2
_MAX_VALUE_VERSION = 4
_FIRST_FLEXIBLE_VERSION = 4
_MAX_VARINT_BYTES = 5


@dataclass(frozen=True, slots=True)
class OffsetCommit:
    """A group's committed offset for one partition (``OffsetCommitKey`` + ``OffsetCommitValue``).

    ``offset`` is the committed offset (the next offset to read), ``None`` for a tombstone (the offset was deleted or
    expired); ``metadata`` is the commit's metadata (``""`` when null); ``commit_timestamp_ms`` is in epoch ms (-1 for
    a tombstone); ``leader_epoch`` is -1 when absent (value versions below 3, tombstones).
    """

    group: str
    topic: str
    partition: int
    offset: int | None
    metadata: str
    commit_timestamp_ms: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class GroupMetadata:
    """A classic group's state after a rebalance or a membership change (``GroupMetadataKey`` + ``GroupMetadataValue``).

    ``protocol_type`` is ``"consumer"`` for consumer groups (``""`` in the record a coordinator writes when it creates
    the group, generation 0), ``None`` for a tombstone (the group was deleted);
    ``generation`` is -1 for a tombstone; ``members`` holds the member ids, ``()`` when the group is Empty or deleted;
    ``protocol`` (the assignor) and ``leader`` (a member id) are ``None`` when the group has none;
    ``current_state_timestamp_ms`` is in epoch ms, -1 when absent (value versions below 2, tombstones).
    """

    group: str
    protocol_type: str | None
    generation: int
    members: tuple[str, ...]
    protocol: str | None = None
    leader: str | None = None
    current_state_timestamp_ms: int = -1


class _OffsetsReader(_Reader):
    """Reads the fields of a ``__consumer_offsets`` key or value, flexible versions included; UTF-8 strictly."""

    def __init__(self, record: str, part: str, data: bytes, *, flexible: bool = False) -> None:
        super().__init__(record, part, data)
        self.flexible = flexible

    @property
    def record(self) -> str:
        return self._record

    @record.setter
    def record(self, name: str) -> None:
        self._record = name

    def _not_this(self) -> str:
        return f"not a {self._record} of {CONSUMER_OFFSETS_TOPIC}"

    def corrupt(self, field: str, problem: str) -> CorruptRecordError:
        return CorruptRecordError(
            f"cannot decode {self._record} {self._part}: field {field!r} {problem}; the record is {self._not_this()}"
        )

    def uvarint(self, field: str) -> int:
        value = 0
        for i in range(_MAX_VARINT_BYTES):
            byte = self._take(1, field)[0]
            value |= (byte & 0x7F) << (7 * i)
            if not byte & 0x80:
                return value
        raise self.corrupt(field, f"has a varint longer than {_MAX_VARINT_BYTES} bytes")

    def _length(self, field: str, *, int32: bool = False) -> int:
        """Read a length prefix; -1 means null (compact: 0 on the wire)."""
        if self.flexible:
            return self.uvarint(field) - 1
        return self.int32(field) if int32 else self.int16(field)

    def nullable_string(self, field: str) -> str | None:
        length = self._length(field)
        if length < -1:
            raise self.corrupt(field, f"has negative length {length}")
        if length == -1:
            return None
        raw = self._take(length, field)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise self.corrupt(field, f"is not valid UTF-8 ({e.reason} at byte {e.start})") from e

    def string(self, field: str) -> str:
        value = self.nullable_string(field)
        if value is None:
            raise self.corrupt(field, "is null but its type is a non-nullable string")
        return value

    def skip_bytes(self, field: str) -> None:
        length = self._length(field, int32=True)
        if length < 0:
            raise self.corrupt(field, f"has negative length {length}")
        self._take(length, field)

    def array_length(self, field: str) -> int:
        length = self._length(field, int32=True)
        if length < 0:
            raise self.corrupt(field, f"has negative length {length} (a null array)")
        return length

    def tagged_fields(self, struct: str) -> None:
        """Skip a flexible struct's tagged fields (none of them is one this module reads)."""
        if not self.flexible:
            return
        for _ in range(self.uvarint(f"{struct}._tagged_fields")):
            self.uvarint(f"{struct}._tagged_fields.tag")
            self._take(self.uvarint(f"{struct}._tagged_fields.size"), f"{struct}._tagged_fields.data")


def _value_reader(record: str, value: bytes) -> tuple[_OffsetsReader, int]:
    """Read a value's version; a reader past it and the version, or CorruptRecordError if Kafka defines no such one."""
    reader = _OffsetsReader(record, "value", value)
    version = reader.int16("version")
    if not 0 <= version <= _MAX_VALUE_VERSION:
        raise reader.corrupt("version", f"is {version}, not a {record} version Kafka defines (0..{_MAX_VALUE_VERSION})")
    reader.flexible = version >= _FIRST_FLEXIBLE_VERSION
    return reader, version


def _offset_commit(group: str, topic: str, partition: int, value: bytes | None) -> OffsetCommit:
    if value is None:
        return OffsetCommit(group, topic, partition, None, "", -1, -1)
    v, version = _value_reader("OffsetCommitValue", value)
    offset = v.int64("offset")
    leader_epoch = v.int32("leaderEpoch") if version >= 3 else -1
    metadata = v.nullable_string("metadata") or ""
    commit_timestamp = v.int64("commitTimestamp")
    if version == 1:
        v.int64("expireTimestamp")
    v.tagged_fields("OffsetCommitValue")
    return OffsetCommit(group, topic, partition, offset, metadata, commit_timestamp, leader_epoch)


def _member_id(v: _OffsetsReader, version: int) -> str:
    """Read one ``MemberMetadata``; its member id."""
    member_id = v.string("members.memberId")
    if version >= 3:
        v.nullable_string("members.groupInstanceId")
    v.string("members.clientId")
    v.string("members.clientHost")
    if version >= 1:
        v.int32("members.rebalanceTimeout")
    v.int32("members.sessionTimeout")
    v.skip_bytes("members.subscription")
    v.skip_bytes("members.assignment")
    v.tagged_fields("MemberMetadata")
    return member_id


def _group_metadata(group: str, value: bytes | None) -> GroupMetadata:
    if value is None:
        return GroupMetadata(group, None, -1, ())
    v, version = _value_reader("GroupMetadataValue", value)
    protocol_type = v.string("protocolType")
    generation = v.int32("generation")
    protocol = v.nullable_string("protocol")
    leader = v.nullable_string("leader")
    state_timestamp = v.int64("currentStateTimestamp") if version >= 2 else -1
    members = tuple(_member_id(v, version) for _ in range(v.array_length("members")))
    v.tagged_fields("GroupMetadataValue")
    return GroupMetadata(group, protocol_type, generation, members, protocol, leader, state_timestamp)


def decode_consumer_offsets_record(key: bytes | None, value: bytes | None) -> OffsetCommit | GroupMetadata | None:
    """Decode one record of ``__consumer_offsets``: an offset commit, a classic group's metadata, or ``None``.

    Parameters
    ----------
    key, value
        The record's key and value bytes; a null value is a tombstone (an :class:`OffsetCommit` with ``offset=None``
        or a :class:`GroupMetadata` with ``protocol_type=None``).

    Returns
    -------
    OffsetCommit | GroupMetadata | None
        ``None`` for a record of another kind (key version 3 and up: KIP-848 consumer groups, share groups,
        transactions, ...), whatever its value.

    Raises
    ------
    CorruptRecordError
        If the key is null, a field is truncated or not valid UTF-8, or the value's version is not one Kafka defines
        for its kind (0..4).
    """
    if key is None:
        raise CorruptRecordError(f"cannot decode a {CONSUMER_OFFSETS_TOPIC} record: its key is null")
    k = _OffsetsReader(f"{CONSUMER_OFFSETS_TOPIC} record", "key", key)
    version = k.int16("version")
    if version in _OFFSET_COMMIT_KEY_VERSIONS:
        k.record = "OffsetCommitKey"
        return _offset_commit(k.string("group"), k.string("topic"), k.int32("partition"), value)
    if version == _GROUP_METADATA_KEY_VERSION:
        k.record = "GroupMetadataKey"
        return _group_metadata(k.string("group"), value)
    return None


__all__ = [
    "CONSUMER_OFFSETS_TOPIC",
    "GroupMetadata",
    "OffsetCommit",
    "decode_consumer_offsets_record",
]
