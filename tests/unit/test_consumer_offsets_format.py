"""``__consumer_offsets`` records: every key and value version, tombstones, other kinds, corrupt bytes, round trips.

The encoder below is the test's own, written from Kafka's message definitions (``OffsetCommitKey``,
``OffsetCommitValue``, ``GroupMetadataKey``, ``GroupMetadataValue``); the real broker's bytes are checked in
``tests/integration/test_consumer_offsets_broker.py``.
"""

from __future__ import annotations

import contextlib
import struct
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorspark.errors import CorruptRecordError
from mirrorspark.mm2.consumer_offsets import (
    CONSUMER_OFFSETS_TOPIC,
    GroupMetadata,
    OffsetCommit,
    decode_consumer_offsets_record,
)

pytestmark = pytest.mark.unit

# --------------------------------------------------------------------------- a test-only encoder


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _str(text: str | None, flexible: bool) -> bytes:
    if text is None:
        return _uvarint(0) if flexible else struct.pack(">h", -1)
    data = text.encode()
    return _uvarint(len(data) + 1) + data if flexible else struct.pack(">h", len(data)) + data


def _bytes(data: bytes, flexible: bool) -> bytes:
    return _uvarint(len(data) + 1) + data if flexible else struct.pack(">i", len(data)) + data


def _tags(flexible: bool, tags: tuple[tuple[int, bytes], ...] = ()) -> bytes:
    if not flexible:
        return b""
    return _uvarint(len(tags)) + b"".join(_uvarint(t) + _uvarint(len(d)) + d for t, d in tags)


def offset_commit_key(group: str, topic: str, partition: int, key_version: int = 1) -> bytes:
    return struct.pack(">h", key_version) + _str(group, False) + _str(topic, False) + struct.pack(">i", partition)


def group_metadata_key(group: str) -> bytes:
    return struct.pack(">h", 2) + _str(group, False)


def offset_commit_value(
    version: int,
    offset: int,
    metadata: str | None,
    commit_ts: int,
    leader_epoch: int = -1,
    expire_ts: int = -1,
    tags: tuple[tuple[int, bytes], ...] = (),
) -> bytes:
    flexible = version >= 4
    out = struct.pack(">hq", version, offset)
    if version >= 3:
        out += struct.pack(">i", leader_epoch)
    out += _str(metadata, flexible) + struct.pack(">q", commit_ts)
    if version == 1:
        out += struct.pack(">q", expire_ts)
    return out + _tags(flexible, tags)


@dataclass(frozen=True)
class Member:
    member_id: str
    instance_id: str | None = None
    client_id: str = "rdkafka"
    client_host: str = "/127.0.0.1"
    rebalance_timeout: int = 300000
    session_timeout: int = 45000
    subscription: bytes = b"\x00\x01sub"
    assignment: bytes = b"\x00\x01assign"


def _member(m: Member, version: int) -> bytes:
    flexible = version >= 4
    out = _str(m.member_id, flexible)
    if version >= 3:
        out += _str(m.instance_id, flexible)
    out += _str(m.client_id, flexible) + _str(m.client_host, flexible)
    if version >= 1:
        out += struct.pack(">i", m.rebalance_timeout)
    out += struct.pack(">i", m.session_timeout)
    out += _bytes(m.subscription, flexible) + _bytes(m.assignment, flexible)
    return out + _tags(flexible, ((7, b"x"),) if flexible else ())


def group_metadata_value(
    version: int,
    protocol_type: str | None,
    generation: int,
    protocol: str | None,
    leader: str | None,
    state_ts: int,
    members: tuple[Member, ...],
    tags: tuple[tuple[int, bytes], ...] = (),
) -> bytes:
    flexible = version >= 4
    out = struct.pack(">h", version) + _str(protocol_type, flexible) + struct.pack(">i", generation)
    out += _str(protocol, flexible) + _str(leader, flexible)
    if version >= 2:
        out += struct.pack(">q", state_ts)
    out += _uvarint(len(members) + 1) if flexible else struct.pack(">i", len(members))
    out += b"".join(_member(m, version) for m in members)
    return out + _tags(flexible, tags)


# --------------------------------------------------------------------------- every version


def test_topic_name() -> None:
    assert CONSUMER_OFFSETS_TOPIC == "__consumer_offsets"


@pytest.mark.parametrize("key_version", [0, 1])
@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_offset_commit_every_version(key_version: int, version: int) -> None:
    key = offset_commit_key("g-é", "t.1", 7, key_version)
    value = offset_commit_value(version, 42, "meta", 1_700_000_000_123, leader_epoch=5, expire_ts=99)
    epoch = 5 if version >= 3 else -1
    assert decode_consumer_offsets_record(key, value) == OffsetCommit(
        "g-é", "t.1", 7, 42, "meta", 1_700_000_000_123, epoch
    )


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_group_metadata_every_version(version: int) -> None:
    members = (Member("m-1", instance_id="static-1"), Member("m-2"))
    value = group_metadata_value(version, "consumer", 3, "range", "m-1", 1_700_000_000_456, members)
    ts = 1_700_000_000_456 if version >= 2 else -1
    assert decode_consumer_offsets_record(group_metadata_key("grp"), value) == GroupMetadata(
        "grp", "consumer", 3, ("m-1", "m-2"), "range", "m-1", ts
    )


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_empty_group(version: int) -> None:
    value = group_metadata_value(version, "consumer", 4, None, None, 10, ())
    decoded = decode_consumer_offsets_record(group_metadata_key("grp"), value)
    assert isinstance(decoded, GroupMetadata)
    assert (decoded.protocol_type, decoded.generation, decoded.members, decoded.protocol, decoded.leader) == (
        "consumer",
        4,
        (),
        None,
        None,
    )


def test_null_metadata_is_empty() -> None:
    value = offset_commit_value(3, 1, None, 2)
    assert decode_consumer_offsets_record(offset_commit_key("g", "t", 0), value) == OffsetCommit(
        "g", "t", 0, 1, "", 2, -1
    )


def test_unknown_tagged_fields_are_skipped() -> None:
    tags = ((0, b"abc"), (300, b"\x00" * 200))
    value = offset_commit_value(4, 9, "m", 8, leader_epoch=2, tags=tags)
    assert decode_consumer_offsets_record(offset_commit_key("g", "t", 1), value) == OffsetCommit(
        "g", "t", 1, 9, "m", 8, 2
    )
    gvalue = group_metadata_value(4, "consumer", 1, "range", "a", 5, (Member("a"),), tags=tags)
    decoded = decode_consumer_offsets_record(group_metadata_key("g"), gvalue)
    assert isinstance(decoded, GroupMetadata)
    assert decoded.members == ("a",)


def test_kafka_4_3_bytes() -> None:
    """Values a Kafka 4.3.1 broker wrote (the integration test's groups): OffsetCommitValue 4, GroupMetadataValue 3."""
    commit = bytes.fromhex(
        "00040000000000000005ffffffff0a6d6574612d73756200000001a2286de4c2010010ba212b6bde7345f5a0eb7be66946e143"
    )
    assert decode_consumer_offsets_record(offset_commit_key("g", "t", 0), commit) == OffsetCommit(
        "g", "t", 0, 5, "meta-sub\x00", 1_795_974_620_354, -1
    )
    created = bytes.fromhex("0003000000000000ffffffff000001a2286d170700000000")
    assert decode_consumer_offsets_record(group_metadata_key("g"), created) == GroupMetadata(
        "g", "", 0, (), None, None, 1_795_974_567_687
    )
    member = "72646b61666b612d61653235303835362d643137372d343365302d383066312d363634633830633635303037"  # rdkafka-…
    joined = bytes.fromhex(
        f"00030008636f6e73756d657200000001000572616e6765002c{member}000001a2286d17ea00000001002c{member}ffff"
        "000772646b61666b61000a2f3132372e302e302e31000493e0000027100000002c0003000000010016636f666d742d746f7069632d"
        "633736636137333066320000000000000000ffffffff00000000002e0000000000010016636f666d742d746f7069632d6337366361"
        "373330663200000002000000000000000100000000"
    )
    decoded = decode_consumer_offsets_record(group_metadata_key("g"), joined)
    member_id = bytes.fromhex(member).decode()
    assert decoded == GroupMetadata("g", "consumer", 1, (member_id,), "range", member_id, 1_795_974_567_914)


# --------------------------------------------------------------------------- tombstones and other kinds


def test_tombstones() -> None:
    assert decode_consumer_offsets_record(offset_commit_key("g", "t", 3), None) == OffsetCommit(
        "g", "t", 3, None, "", -1, -1
    )
    assert decode_consumer_offsets_record(group_metadata_key("g"), None) == GroupMetadata("g", None, -1, ())


@pytest.mark.parametrize("key_version", [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 100, 32767, -1, -32768])
@pytest.mark.parametrize("value", [None, b"", b"\x00\x00garbage", b"\xff"])
def test_other_key_versions_are_none(key_version: int, value: bytes | None) -> None:
    key = struct.pack(">h", key_version) + b"\xffanything"
    assert decode_consumer_offsets_record(key, value) is None


# --------------------------------------------------------------------------- corrupt records


def _valid_records() -> list[tuple[bytes, bytes]]:
    records = [(offset_commit_key("g", "t", 0), offset_commit_value(v, 1, "m", 2, leader_epoch=3)) for v in range(5)]
    records += [
        (group_metadata_key("g"), group_metadata_value(v, "consumer", 1, "range", "a", 2, (Member("a"),)))
        for v in range(5)
    ]
    return records


@pytest.mark.parametrize(("key", "value"), _valid_records())
def test_every_truncation_is_corrupt(key: bytes, value: bytes) -> None:
    for end in range(len(key)):
        with pytest.raises(CorruptRecordError, match="cannot decode"):
            decode_consumer_offsets_record(key[:end], value)
    for end in range(len(value)):
        with pytest.raises(CorruptRecordError, match=r"cannot decode .*Value value"):
            decode_consumer_offsets_record(key, value[:end])


@pytest.mark.parametrize("version", [-1, 5, 9, 32767])
def test_unknown_value_version_is_corrupt(version: int) -> None:
    value = struct.pack(">h", version) + b"\x00" * 40
    with pytest.raises(CorruptRecordError, match=rf"OffsetCommitValue value: field 'version' is {version}"):
        decode_consumer_offsets_record(offset_commit_key("g", "t", 0), value)
    with pytest.raises(CorruptRecordError, match=rf"GroupMetadataValue value: field 'version' is {version}"):
        decode_consumer_offsets_record(group_metadata_key("g"), value)


def test_null_key_is_corrupt() -> None:
    with pytest.raises(CorruptRecordError, match="key is null"):
        decode_consumer_offsets_record(None, b"\x00\x03")


def test_bad_utf8_is_corrupt() -> None:
    key = struct.pack(">h", 1) + struct.pack(">h", 2) + b"\xc3\x28" + _str("t", False) + struct.pack(">i", 0)
    with pytest.raises(CorruptRecordError, match="OffsetCommitKey key: field 'group' is not valid UTF-8"):
        decode_consumer_offsets_record(key, None)
    value = struct.pack(">hq", 4, 1) + struct.pack(">i", 0) + _uvarint(2) + b"\xff" + struct.pack(">q", 0) + b"\x00"
    with pytest.raises(CorruptRecordError, match="field 'metadata' is not valid UTF-8"):
        decode_consumer_offsets_record(offset_commit_key("g", "t", 0), value)


def test_null_protocol_type_is_corrupt() -> None:
    value = group_metadata_value(3, None, 1, None, None, 0, ())
    with pytest.raises(CorruptRecordError, match="'protocolType' is null"):
        decode_consumer_offsets_record(group_metadata_key("g"), value)


def test_negative_lengths_are_corrupt() -> None:
    key = struct.pack(">h", 2) + struct.pack(">h", -2)
    with pytest.raises(CorruptRecordError, match="negative length -2"):
        decode_consumer_offsets_record(key, None)
    value = struct.pack(">h", 3) + _str("consumer", False) + struct.pack(">i", 1) + _str(None, False) * 2
    value += struct.pack(">q", 0) + struct.pack(">i", -1)
    with pytest.raises(CorruptRecordError, match="'members' has negative length -1"):
        decode_consumer_offsets_record(group_metadata_key("g"), value)


def test_overlong_varint_is_corrupt() -> None:
    value = struct.pack(">hq", 4, 1) + struct.pack(">i", 0) + b"\xff" * 6
    with pytest.raises(CorruptRecordError, match="varint longer than 5 bytes"):
        decode_consumer_offsets_record(offset_commit_key("g", "t", 0), value)


@given(key=st.binary(max_size=40), value=st.none() | st.binary(max_size=80))
def test_garbage_decodes_or_is_corrupt(key: bytes, value: bytes | None) -> None:
    with contextlib.suppress(CorruptRecordError):
        decode_consumer_offsets_record(key, value)


@given(
    kind=st.sampled_from([0, 1, 2]),
    prefix=st.binary(max_size=40),
    value=st.binary(max_size=80),
)
def test_garbage_after_a_known_key_version_decodes_or_is_corrupt(kind: int, prefix: bytes, value: bytes) -> None:
    with contextlib.suppress(CorruptRecordError):
        decode_consumer_offsets_record(struct.pack(">h", kind) + prefix, value)


# --------------------------------------------------------------------------- round trips

_text = st.text(max_size=20)
_int32 = st.integers(-(2**31), 2**31 - 1)
_int64 = st.integers(-(2**63), 2**63 - 1)


@given(
    key_version=st.sampled_from([0, 1]),
    version=st.integers(0, 4),
    group=_text,
    topic=_text,
    partition=_int32,
    offset=_int64,
    metadata=_text,
    commit_ts=_int64,
    leader_epoch=_int32,
)
def test_offset_commit_round_trip(
    key_version: int,
    version: int,
    group: str,
    topic: str,
    partition: int,
    offset: int,
    metadata: str,
    commit_ts: int,
    leader_epoch: int,
) -> None:
    key = offset_commit_key(group, topic, partition, key_version)
    value = offset_commit_value(version, offset, metadata, commit_ts, leader_epoch=leader_epoch)
    epoch = leader_epoch if version >= 3 else -1
    assert decode_consumer_offsets_record(key, value) == OffsetCommit(
        group, topic, partition, offset, metadata, commit_ts, epoch
    )


_members = st.lists(
    st.builds(
        Member,
        member_id=_text,
        instance_id=st.none() | _text,
        client_id=_text,
        subscription=st.binary(max_size=30),
        assignment=st.binary(max_size=30),
    ),
    max_size=4,
).map(tuple)


@given(
    version=st.integers(0, 4),
    group=_text,
    protocol_type=_text,
    generation=_int32,
    protocol=st.none() | _text,
    leader=st.none() | _text,
    state_ts=_int64,
    members=_members,
)
def test_group_metadata_round_trip(
    version: int,
    group: str,
    protocol_type: str,
    generation: int,
    protocol: str | None,
    leader: str | None,
    state_ts: int,
    members: tuple[Member, ...],
) -> None:
    value = group_metadata_value(version, protocol_type, generation, protocol, leader, state_ts, members)
    assert decode_consumer_offsets_record(group_metadata_key(group), value) == GroupMetadata(
        group,
        protocol_type,
        generation,
        tuple(m.member_id for m in members),
        protocol,
        leader,
        state_ts if version >= 2 else -1,
    )
