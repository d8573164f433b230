"""Record codecs: mm2.md §4 hex examples, §5 JSON bytes, decode errors, murmur2, round trips."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorspark.errors import CorruptRecordError
from mirrorspark.mm2.connect_offsets import (
    SourceOffset,
    checkpoint_connector_offset_key,
    decode_source_offset,
    decode_topic_id_marker,
    default_partition,
    heartbeat_connector_offset_key,
    murmur2,
    source_offset_key,
    source_offset_value,
    topic_id_marker_key,
    topic_id_marker_value,
)
from mirrorspark.mm2.records import (
    CONNECT_OFFSETS_TOPIC_PARTITIONS,
    CONSTANT_OFFSET_VALUE,
    Checkpoint,
    Heartbeat,
    OffsetSync,
)

pytestmark = pytest.mark.unit

INT32 = st.integers(min_value=-(2**31), max_value=2**31 - 1)
INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
# Any text that encodes to UTF-8 (no lone surrogates), within the STRING limit.
TEXT = st.text(st.characters(codec="utf-8"), max_size=40)


# --------------------------------------------------------------------------- §4 hex examples


def test_heartbeat_bytes() -> None:
    hb = Heartbeat("source-1", "target-2", 1234567890)
    key = hb.key()
    value = hb.value()
    assert key == bytes.fromhex("0008736f757263652d31 0008746172676574 2d32")
    assert len(key) == 20
    assert value == bytes.fromhex("0000 00000000499602d2")
    assert len(value) == 10
    assert Heartbeat.decode(key, value) == hb


def test_checkpoint_bytes() -> None:
    cp = Checkpoint("group-1", "topic-2", 3, 4, 5, "metadata-6")
    key = cp.key()
    value = cp.value()
    assert key == bytes.fromhex("000767726f75702d31 0007746f7069632d32 00000003")
    assert len(key) == 22
    assert value == bytes.fromhex("0000 0000000000000004 0000000000000005 000a 6d657461646174612d36")
    assert len(value) == 30
    assert Checkpoint.decode(key, value) == cp


def test_offset_sync_bytes() -> None:
    sync = OffsetSync("topic-1", 2, 3, 4)
    key = sync.key()
    value = sync.value()
    assert key == bytes.fromhex("0007746f7069632d31 00000002")
    assert len(key) == 13
    assert value == bytes.fromhex("0000000000000003 0000000000000004")
    assert len(value) == 16
    assert OffsetSync.decode(key, value) == sync


def test_checkpoint_metadata_defaults_to_empty() -> None:
    cp = Checkpoint("g", "A.t", 0, 10, 11)
    assert cp.metadata == ""
    assert cp.value().endswith(b"\x00\x00")


def test_non_ascii_strings_are_utf8_with_byte_lengths() -> None:
    hb = Heartbeat("zürich", "東京", 0)
    assert hb.key() == b"\x00\x07z\xc3\xbcrich\x00\x06" + "東京".encode()
    assert Heartbeat.decode(hb.key(), hb.value()) == hb


# --------------------------------------------------------------------------- §4.5 formatters


def test_format_lines() -> None:
    assert Heartbeat("A", "B", 1700000000000).format() == (
        "Heartbeat{sourceClusterAlias=A, targetClusterAlias=B, timestamp=1700000000000}"
    )
    assert Checkpoint("g", "A.t", 0, 10, 11).format() == (
        "Checkpoint{consumerGroupId=g, topicPartition=A.t-0, upstreamOffset=10, downstreamOffset=11, metadata=}"
    )
    assert OffsetSync("t", 0, 3, 4).format() == "OffsetSync{topicPartition=t-0, upstreamOffset=3, downstreamOffset=4}"


# --------------------------------------------------------------------------- decoding like Java


def test_trailing_bytes_are_ignored() -> None:
    hb = Heartbeat("a", "b", 7)
    assert Heartbeat.decode(hb.key() + b"junk", hb.value() + b"\x01\x02") == hb
    sync = OffsetSync("t", 1, 2, 3)
    assert OffsetSync.decode(sync.key() + b"\x00", sync.value() + b"\xff") == sync
    cp = Checkpoint("g", "t", 1, 2, 3, "m")
    assert Checkpoint.decode(cp.key() + b"x", cp.value() + b"x") == cp


def test_any_version_is_read_with_the_v0_layout() -> None:
    hb = Heartbeat("a", "b", 42)
    assert Heartbeat.decode(hb.key(), b"\x00\x07" + hb.value()[2:]) == hb
    cp = Checkpoint("g", "t", 0, 1, 2, "")
    assert Checkpoint.decode(cp.key(), b"\xff\xff" + cp.value()[2:]) == cp


def test_malformed_utf8_is_replaced_like_java() -> None:
    key = b"\x00\x02\xff\xfe\x00\x01b"
    hb = Heartbeat.decode(key, Heartbeat("x", "y", 1).value())
    assert hb.source_cluster_alias == "\ufffd\ufffd"
    assert hb.target_cluster_alias == "b"


@pytest.mark.parametrize(
    ("record", "key", "value", "match"),
    [
        (Heartbeat, b"", Heartbeat("a", "b", 1).value(), "Heartbeat key"),
        (Heartbeat, b"\x00\x05ab", Heartbeat("a", "b", 1).value(), "sourceClusterAlias"),
        (Heartbeat, b"\x00\x01a", Heartbeat("a", "b", 1).value(), "targetClusterAlias"),
        (Heartbeat, Heartbeat("a", "b", 1).key(), b"\x00\x00\x00", "timestamp"),
        (Heartbeat, Heartbeat("a", "b", 1).key(), b"", "version"),
        (Heartbeat, None, Heartbeat("a", "b", 1).value(), "null"),
        (Heartbeat, Heartbeat("a", "b", 1).key(), None, "Heartbeat value: it is null"),
        (Heartbeat, b"\xff\xff", b"", "negative length"),
        (
            Checkpoint,
            Checkpoint("g", "t", 0, 1, 2).key()[:-1],
            Checkpoint("g", "t", 0, 1, 2).value(),
            "partition",
        ),
        (
            Checkpoint,
            Checkpoint("g", "t", 0, 1, 2).key(),
            Checkpoint("g", "t", 0, 1, 2).value()[:-1],
            "metadata",
        ),
        (Checkpoint, Checkpoint("g", "t", 0, 1, 2).key(), b"\x00\x00" + b"\x00" * 8, "'offset'"),
        (Checkpoint, Checkpoint("g", "t", 0, 1, 2).key(), None, "Checkpoint value"),
        (OffsetSync, OffsetSync("t", 0, 1, 2).key(), b"\x00" * 15, "'offset'"),
        (OffsetSync, b"\x00\x01t\x00\x00", OffsetSync("t", 0, 1, 2).value(), "partition"),
        (OffsetSync, b"garbage!", b"", "OffsetSync key"),
        (OffsetSync, None, None, "OffsetSync key"),
    ],
)
def test_decode_errors(
    record: type[Heartbeat] | type[Checkpoint] | type[OffsetSync],
    key: bytes | None,
    value: bytes | None,
    match: str,
) -> None:
    with pytest.raises(CorruptRecordError, match=match) as info:
        record.decode(key, value)
    assert record.__name__ in str(info.value)
    assert info.value.code == "RECORD_CORRUPT"


# --------------------------------------------------------------------------- encoding limits


def test_string_limit_is_32767_utf8_bytes() -> None:
    ok = Heartbeat("a" * 32767, "b", 0)
    assert len(ok.key()) == 2 + 32767 + 2 + 1
    assert Heartbeat.decode(ok.key(), ok.value()) == ok
    with pytest.raises(ValueError, match="32767"):
        Heartbeat("a" * 32768, "b", 0).key()
    with pytest.raises(ValueError, match="metadata"):
        Checkpoint("g", "t", 0, 1, 2, "é" * 16384).value()  # 32768 bytes in UTF-8


def test_integer_ranges() -> None:
    with pytest.raises(ValueError, match="partition"):
        OffsetSync("t", 2**31, 0, 0).key()
    with pytest.raises(ValueError, match="upstream_offset"):
        OffsetSync("t", 0, 2**63, 0).value()
    with pytest.raises(ValueError, match="timestamp_ms"):
        Heartbeat("a", "b", -(2**63) - 1).value()
    extreme = Checkpoint("g", "t", -(2**31), -(2**63), 2**63 - 1)
    assert Checkpoint.decode(extreme.key(), extreme.value()) == extreme


# --------------------------------------------------------------------------- round trips


@given(source=TEXT, target=TEXT, timestamp=INT64)
def test_heartbeat_round_trip(source: str, target: str, timestamp: int) -> None:
    hb = Heartbeat(source, target, timestamp)
    assert Heartbeat.decode(hb.key(), hb.value()) == hb
    assert len(hb.value()) == 10


@given(group=TEXT, topic=TEXT, partition=INT32, upstream=INT64, downstream=INT64, metadata=TEXT)
def test_checkpoint_round_trip(
    group: str, topic: str, partition: int, upstream: int, downstream: int, metadata: str
) -> None:
    cp = Checkpoint(group, topic, partition, upstream, downstream, metadata)
    assert Checkpoint.decode(cp.key(), cp.value()) == cp


@given(topic=TEXT, partition=INT32, upstream=INT64, downstream=INT64)
def test_offset_sync_round_trip(topic: str, partition: int, upstream: int, downstream: int) -> None:
    sync = OffsetSync(topic, partition, upstream, downstream)
    assert OffsetSync.decode(sync.key(), sync.value()) == sync
    assert len(sync.value()) == 16


@given(data=st.binary(max_size=64))
def test_decoding_garbage_never_raises_anything_but_corrupt(data: bytes) -> None:
    for record in (Heartbeat, Checkpoint, OffsetSync):
        with contextlib.suppress(CorruptRecordError):
            record.decode(data, data)


# --------------------------------------------------------------------------- §5 Connect source offsets


def test_source_offset_key_bytes() -> None:
    assert source_offset_key("primary", "test-topic-1", 0) == (
        b'["MirrorSourceConnector",{"cluster":"primary","partition":0,"topic":"test-topic-1"}]'
    )
    assert source_offset_value(99) == b'{"offset":99}'


def test_checkpoint_connector_offset_key_bytes() -> None:
    assert checkpoint_connector_offset_key("consumer-group-1", "primary.test-topic-1", 3) == (
        b'["MirrorCheckpointConnector",{"partition":3,"topic":"primary.test-topic-1","group":"consumer-group-1"}]'
    )


def test_heartbeat_connector_offset_key_bytes() -> None:
    assert heartbeat_connector_offset_key("primary", "backup") == (
        b'["MirrorHeartbeatConnector",{"sourceClusterAlias":"primary","targetClusterAlias":"backup"}]'
    )
    assert CONSTANT_OFFSET_VALUE == b'{"offset":0}' == source_offset_value(0)


def test_json_escaping_matches_jackson() -> None:
    key = source_offset_key('zü"\\\n\x01', "東京", 1)
    assert key == ('["MirrorSourceConnector",{"cluster":"zü\\"\\\\\\n\\u0001","partition":1,"topic":"東京"}]'.encode())
    assert source_offset_key("a\x1f", "t", 0).count(b"\\u001F") == 1  # upper-case hex like Jackson
    decoded = decode_source_offset(key, b'{"offset":5}')
    assert decoded == SourceOffset('zü"\\\n\x01', "東京", 1, 5)


def test_decode_source_offset() -> None:
    key = source_offset_key("primary", "test-topic-1", 0)
    assert decode_source_offset(key, b'{"offset":99}') == ("primary", "test-topic-1", 0, 99)
    decoded = decode_source_offset(key, None)
    assert decoded is not None
    assert decoded.offset is None  # tombstone
    cluster, topic, partition, offset = decoded
    assert (cluster, topic, partition, offset) == ("primary", "test-topic-1", 0, None)


def test_decode_source_offset_tolerates_other_formatting() -> None:
    key = b'[ "MirrorSourceConnector", {"topic": "t", "cluster": "c", "partition": 2} ]'
    assert decode_source_offset(key, b'{ "offset" : 4 }') == ("c", "t", 2, 4)


def test_decode_source_offset_skips_other_connectors() -> None:
    assert decode_source_offset(checkpoint_connector_offset_key("g", "t", 0), CONSTANT_OFFSET_VALUE) is None
    assert decode_source_offset(heartbeat_connector_offset_key("a", "b"), CONSTANT_OFFSET_VALUE) is None
    key = source_offset_key("c", "t", 0, connector_name="my-mirror")
    assert decode_source_offset(key, b'{"offset":1}') is None
    assert decode_source_offset(key, b'{"offset":1}', connector_name="my-mirror") == ("c", "t", 0, 1)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (b"not json", b'{"offset":1}'),
        (b"\xff\xfe", b'{"offset":1}'),
        (b'{"cluster":"c"}', b'{"offset":1}'),
        (b'["MirrorSourceConnector"]', b'{"offset":1}'),
        (b'[1,{"cluster":"c","partition":0,"topic":"t"}]', b'{"offset":1}'),
        (b'["MirrorSourceConnector",{"cluster":"c","topic":"t"}]', b'{"offset":1}'),
        (b'["MirrorSourceConnector",{"cluster":"c","partition":"0","topic":"t"}]', b'{"offset":1}'),
        (b'["MirrorSourceConnector",{"cluster":"c","partition":true,"topic":"t"}]', b'{"offset":1}'),
        (b'["MirrorSourceConnector",{"cluster":1,"partition":0,"topic":"t"}]', b'{"offset":1}'),
        (b'["MirrorSourceConnector",null]', b'{"offset":1}'),
        (b'["MirrorSourceConnector",{"cluster":"c","partition":0,"topic":"t"}]', b"garbage"),
        (b'["MirrorSourceConnector",{"cluster":"c","partition":0,"topic":"t"}]', b'{"offset":"1"}'),
        (b'["MirrorSourceConnector",{"cluster":"c","partition":0,"topic":"t"}]', b'{"position":1}'),
        (b'["MirrorSourceConnector",{"cluster":"c","partition":0,"topic":"t"}]', b"[1]"),
    ],
)
def test_decode_source_offset_errors(key: bytes, value: bytes) -> None:
    with pytest.raises(CorruptRecordError, match="source-offset"):
        decode_source_offset(key, value)


def test_offset_key_rejects_non_int_partition() -> None:
    with pytest.raises(TypeError, match="partition"):
        source_offset_key("c", "t", True)
    with pytest.raises(TypeError, match="offset"):
        source_offset_value("1")  # type: ignore[arg-type]


@given(cluster=TEXT, topic=TEXT, partition=st.integers(min_value=0, max_value=2**31 - 1), offset=INT64)
def test_source_offset_round_trip(cluster: str, topic: str, partition: int, offset: int) -> None:
    key = source_offset_key(cluster, topic, partition)
    value = source_offset_value(offset)
    assert decode_source_offset(key, value) == SourceOffset(cluster, topic, partition, offset)
    parsed = json.loads(key)
    assert list(parsed[1]) == ["cluster", "partition", "topic"]
    if not any(ch < " " for ch in cluster + topic):  # Python writes lower-case hex for control chars
        compact = json.dumps(parsed, ensure_ascii=False, separators=(",", ":"))
        assert key == compact.encode()


@given(group=TEXT, topic=TEXT, partition=st.integers(min_value=0, max_value=2**31 - 1))
def test_checkpoint_connector_key_field_order(group: str, topic: str, partition: int) -> None:
    parsed = json.loads(checkpoint_connector_offset_key(group, topic, partition))
    assert parsed == ["MirrorCheckpointConnector", {"partition": partition, "topic": topic, "group": group}]
    assert list(parsed[1]) == ["partition", "topic", "group"]


# --------------------------------------------------------------------------- murmur2 / partitioner


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        # Kafka's UtilsTest.testMurmur2.
        (b"21", -973932308),
        (b"foobar", -790332482),
        (b"a-little-bit-long-string", -985981536),
        (b"a-little-bit-longer-string", -1486304829),
        (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        (b"abc", 479470107),
    ],
)
def test_murmur2_matches_kafka(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


@given(data=st.binary(max_size=100))
def test_murmur2_is_signed_32_bit(data: bytes) -> None:
    assert -(2**31) <= murmur2(data) < 2**31


def test_default_partition() -> None:
    assert CONNECT_OFFSETS_TOPIC_PARTITIONS == 25
    assert default_partition(b"21", 25) == (-973932308 & 0x7FFFFFFF) % 25
    assert default_partition(b"abc", 25) == 479470107 % 25
    key = source_offset_key("primary", "test-topic-1", 0)
    assert 0 <= default_partition(key, CONNECT_OFFSETS_TOPIC_PARTITIONS) < 25
    assert default_partition(key, 1) == 0
    with pytest.raises(ValueError, match="num_partitions"):
        default_partition(key, 0)


def test_a_topic_id_marker_round_trips_and_connects_readers_skip_it() -> None:
    """mirrorspark's marker lives in mm2-offsets under its own connector name: MirrorSourceConnector's reader
    (and MM2's, which looks up its own connector's keys only) passes it by."""
    key = topic_id_marker_key("primary", "orders", 3)
    assert key == b'["mirrorspark-topic-ids",{"cluster":"primary","partition":3,"topic":"orders"}]'
    value = topic_id_marker_value("lEAndA/kS9GghiZp16o8Ag")
    assert decode_topic_id_marker(key, value) == ("primary", "orders", 3, "lEAndA/kS9GghiZp16o8Ag")
    assert decode_source_offset(key, value) is None
    assert decode_topic_id_marker(key, None) == ("primary", "orders", 3, None)  # tombstone: unknown again
    assert decode_topic_id_marker(key, b"{not json") == ("primary", "orders", 3, None)
    assert decode_topic_id_marker(source_offset_key("primary", "orders", 3), source_offset_value(9)) is None
    assert decode_topic_id_marker(b"\xff", b"") is None
