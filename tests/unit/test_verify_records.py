"""Verify's record model and digests (core/verify/records.py R1..R5)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorspark.core.provenance import HEADER_NAME
from mirrorspark.core.verify.records import ABSENT, DIGEST_SIZE, Record, first_difference, range_digest, record_digest

pytestmark = pytest.mark.unit

blobs = st.one_of(st.none(), st.binary(max_size=12))
headers = st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), blobs), max_size=4).map(tuple)
records = st.builds(
    Record,
    offset=st.integers(0, 10**6),
    key=blobs,
    value=blobs,
    headers=headers,
    timestamp_type=st.sampled_from(["create", "log-append", "none"]),
    timestamp_ms=st.integers(-1, 2**40),
)


@given(records, st.integers(0, 10**6))
def test_a_digest_ignores_the_offset_and_is_16_bytes(r: Record, offset: int) -> None:
    """R1."""
    assert record_digest(r) == record_digest(replace(r, offset=offset)) == r.digest
    assert len(r.digest) == DIGEST_SIZE


@given(records, records)
def test_digests_are_equal_exactly_when_no_field_differs(a: Record, b: Record) -> None:
    """R1, R5."""
    assert (a.digest == b.digest) == (first_difference(a, b) is None)


@given(records, st.binary(max_size=46))
def test_the_provenance_header_is_ignored_wherever_it_sits(r: Record, value: bytes) -> None:
    """R2."""
    stamped = replace(r, headers=(*r.headers, (HEADER_NAME, value)))
    first = replace(r, headers=((HEADER_NAME, value), *r.headers))
    assert stamped.digest == first.digest == r.digest
    assert first_difference(r, stamped) is None


def test_fields_are_length_prefixed_and_none_is_not_empty() -> None:
    """R3."""
    assert Record(0, b"ab", b"c").digest != Record(0, b"a", b"bc").digest
    assert Record(0, None, None).digest != Record(0, b"", b"").digest
    assert Record(0, b"k", None, (("h", None),)).digest != Record(0, b"k", None, (("h", b""),)).digest


def test_each_field_is_named_in_order() -> None:
    """R5: key, value, headers, timestamp type, timestamp."""
    r = Record(0, b"k", b"v", (("h", b"1"), ("i", b"2")), "create", 5)
    assert first_difference(r, replace(r, key=b"x", value=b"y")) == "key"
    assert first_difference(r, replace(r, value=b"y", timestamp_ms=6)) == "value"
    assert first_difference(r, replace(r, headers=(("i", b"2"), ("h", b"1")))) == "headers"
    assert first_difference(r, replace(r, timestamp_type="log-append")) == "timestamp_type"
    assert first_difference(r, replace(r, timestamp_ms=6)) == "timestamp"


@given(st.lists(records, min_size=2, max_size=6, unique_by=lambda r: r.digest), st.data())
def test_a_range_digest_sees_order_absence_and_extras(rs: list[Record], data: st.DataObject) -> None:
    """R4."""
    i = data.draw(st.integers(0, len(rs) - 2))
    swapped = [*rs[:i], rs[i + 1], rs[i], *rs[i + 2 :]]
    assert range_digest(rs) != range_digest(swapped)
    assert range_digest(rs) != range_digest([*rs[:i], None, *rs[i + 1 :]])
    assert range_digest(rs) != range_digest([*rs, rs[0]])
    assert range_digest([None]) != range_digest([])
    assert len(ABSENT) == DIGEST_SIZE


def test_a_replaced_or_pickled_record_never_keeps_a_stale_digest() -> None:
    """R1: the memo is per object; Spark ships records and digests between processes by pickle."""
    import pickle

    r = Record(3, b"k", b"v")
    assert r.digest == record_digest(r)
    changed = replace(r, value=b"w")
    assert changed.digest == record_digest(changed) != r.digest
    back = pickle.loads(pickle.dumps(r))
    assert back == r and back.digest == r.digest


@given(records, st.binary(max_size=40))
def test_the_one_call_digest_equals_the_field_by_field_frame(r: Record, ours: bytes) -> None:
    """R1-R3: ``fields_digest`` (one blake2b call, what executors use) frames the fields as ``_put`` does."""
    from mirrorspark.core.verify.records import _slow_digest, fields_digest

    with_ours = replace(r, headers=(*r.headers, (HEADER_NAME, ours)))
    fast = fields_digest(r.key, r.value, list(with_ours.headers), r.timestamp_type, r.timestamp_ms)
    assert fast == _slow_digest(r) == _slow_digest(with_ours) == record_digest(r)
