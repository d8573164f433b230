"""Confluent's wire format (#39): the schema id read and replaced, every other byte identical."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorspark.core.schemas import (
    HEADER_SIZE,
    MAX_SCHEMA_ID,
    WireFormat,
    parse,
    replace_schema_id,
    schema_id,
    with_schema_id,
)

pytestmark = pytest.mark.unit

IDS = st.integers(min_value=0, max_value=MAX_SCHEMA_ID)
PAYLOADS = st.binary(max_size=200)
NOT_WIRE_FORMAT = st.one_of(
    st.none(),
    st.binary(max_size=HEADER_SIZE - 1),
    st.binary(min_size=1, max_size=200).filter(lambda b: b[0] != 0),
)


def framed(schema: int, payload: bytes) -> bytes:
    return b"\x00" + schema.to_bytes(4, "big") + payload


def test_an_avro_record_as_confluent_kafka_frames_it() -> None:
    data = bytes.fromhex("00 00 00 01 2a 06 66 6f 6f")
    assert schema_id(data) == 298
    assert parse(data) == WireFormat(298, bytes.fromhex("06 66 6f 6f"))
    assert with_schema_id(data, 7) == bytes.fromhex("00 00 00 00 07 06 66 6f 6f")


def test_protobuf_message_indexes_after_the_id_stay_untouched() -> None:
    indexes_and_payload = bytes([0x02, 0x02, 0x04]) + b"\x08\x96\x01"  # indexes [1, 2] zig-zag encoded, then a message
    data = framed(100_000, indexes_and_payload)
    out = with_schema_id(data, 3)
    assert out[HEADER_SIZE:] == indexes_and_payload
    assert parse(out) == WireFormat(3, indexes_and_payload)


def test_the_header_alone_is_wire_format_with_an_empty_payload() -> None:
    assert parse(framed(9, b"")) == WireFormat(9, b"")
    assert with_schema_id(framed(9, b""), 10) == framed(10, b"")


@given(schema=IDS, payload=PAYLOADS)
def test_parse_round_trips(schema: int, payload: bytes) -> None:
    assert parse(framed(schema, payload)) == WireFormat(schema, payload)
    assert schema_id(framed(schema, payload)) == schema


@given(schema=IDS, new=IDS, payload=PAYLOADS)
def test_only_the_four_id_bytes_change(schema: int, new: int, payload: bytes) -> None:
    data = framed(schema, payload)
    out = with_schema_id(data, new)
    assert len(out) == len(data)
    assert out[0] == 0 and out[HEADER_SIZE:] == data[HEADER_SIZE:]
    assert [i for i in range(len(data)) if out[i] != data[i]] == [
        i for i in range(1, HEADER_SIZE) if new.to_bytes(4, "big")[i - 1] != data[i]
    ]
    assert with_schema_id(out, schema) == data


@given(data=NOT_WIRE_FORMAT)
def test_data_not_in_wire_format_is_reported_and_passes_unchanged(data: bytes | None) -> None:
    assert schema_id(data) is None
    assert parse(data) is None
    calls: list[int] = []
    assert replace_schema_id(data, lambda i: calls.append(i) or 1) is data
    assert calls == []


@given(data=NOT_WIRE_FORMAT.filter(lambda d: d is not None))
def test_with_schema_id_refuses_data_not_in_wire_format(data: bytes) -> None:
    with pytest.raises(ValueError, match="wire format"):
        with_schema_id(data, 1)


@pytest.mark.parametrize("bad", [-1, MAX_SCHEMA_ID + 1])
def test_an_id_that_does_not_fit_four_bytes_is_refused(bad: int) -> None:
    with pytest.raises(ValueError, match="4 bytes"):
        with_schema_id(framed(1, b"x"), bad)


@given(schema=IDS, new=IDS, payload=PAYLOADS)
def test_replace_schema_id_asks_the_lookup_once_for_the_records_id(schema: int, new: int, payload: bytes) -> None:
    asked: list[int] = []

    def lookup(found: int) -> int:
        asked.append(found)
        return new

    assert replace_schema_id(framed(schema, payload), lookup) == framed(new, payload)
    assert asked == [schema]


def test_a_lookup_answering_none_keeps_the_record_as_it_is() -> None:
    data = framed(5, b"payload")
    assert replace_schema_id(data, lambda _: None) is data
    assert replace_schema_id(data, lambda _: 5) is data


def test_what_the_lookup_raises_propagates() -> None:
    def unknown(found: int) -> int:
        raise LookupError(found)

    with pytest.raises(LookupError):
        replace_schema_id(framed(5, b"payload"), unknown)


def test_a_memoryview_or_bytearray_is_read_like_bytes() -> None:
    data = framed(77, b"abc")
    assert schema_id(bytearray(data)) == 77
    assert parse(memoryview(data)) == WireFormat(77, b"abc")  # type: ignore[arg-type]
