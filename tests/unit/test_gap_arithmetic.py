"""Gap arithmetic (mm2.gaps), the gap ledger codec and stored-offset validation: pure, no Kafka."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorspark.core.gaps import (
    GAP_REASONS,
    GAPS_PREFIX,
    GapEvent,
    KnownTopicId,
    check_position,
    decode_ledger_record,
    encode_gap,
    encode_topic_id,
    recreated_gap,
)
from mirrorspark.errors import CorruptRecordError
from mirrorspark.mm2.connect_offsets import OFFSET_HISTORY_DEPTH, OffsetHistory, last_valid_offset
from mirrorspark.mm2.internal_topics import mirrorspark_topic
from mirrorspark.mm2.policy import DefaultReplicationPolicy, IdentityReplicationPolicy

pytestmark = pytest.mark.unit

OFFSETS = st.integers(min_value=0, max_value=2**40)


@st.composite
def logs(draw: st.DrawFn) -> tuple[int, int, int]:
    """``(position, log start, log end)`` with ``log start <= log end``."""
    start = draw(OFFSETS)
    end = draw(st.integers(min_value=start, max_value=start + 2**20))
    position = draw(st.one_of(OFFSETS, st.integers(min_value=max(0, start - 5), max_value=end + 5)))
    return position, start, end


@given(logs())
def test_a_gap_is_exactly_the_lost_offsets(log: tuple[int, int, int]) -> None:
    position, start, end = log
    r = check_position("A->B", "t", 0, position, start, end, at=1)
    if start <= position <= end:
        assert r.position == position and r.gap is None  # nothing lost, nothing moved
        return
    gap = r.gap
    assert gap is not None and gap.first_lost is not None and gap.last_lost is not None
    lost = range(gap.first_lost, gap.last_lost + 1)
    if position < start:  # deleted before copied: exactly [position, log start)
        assert gap.reason == "deleted" and lost == range(position, start) and gap.lost == start - position
    else:  # truncated: the copies of [log end, position) have no source record any more
        assert gap.reason == "truncated" and lost == range(end, position) and gap.lost == position - end


@given(logs())
def test_never_resumes_past_a_record_still_on_the_source(log: tuple[int, int, int]) -> None:
    position, start, end = log
    r = check_position("A->B", "t", 0, position, start, end, at=1)
    # the first record on the source not copied yet is max(position, log start), if below the end
    first_not_copied = max(position, start)
    if first_not_copied < end:
        assert r.position <= first_not_copied
    assert r.position <= end  # nothing beyond what the source holds
    assert r.gap is None or r.position >= start  # after a gap: never before the log start


@given(logs(), st.text(min_size=1, max_size=5), st.text(min_size=1, max_size=5), st.integers(0, 100))
def test_a_changed_topic_id_restarts_at_the_new_topics_beginning(
    log: tuple[int, int, int], old: str, new: str, more: int
) -> None:
    position, start, end = log
    old_end = position + more
    r = check_position("A->B", "t", 3, position, start, end, at=7, known_topic_id=old, topic_id=new, old_end=old_end)
    if old == new:
        assert r.gap is None or r.gap.reason != "recreated"
        return
    assert r.position == start
    lost = (position, old_end - 1) if more else (position, None)  # open-ended: the old topic's records from position on
    assert r.gap == GapEvent("A->B", "t", 3, "recreated", *lost, 7, old, new)


def test_recreated_gap_without_a_known_old_end_names_where_the_loss_starts() -> None:
    """The old topic's records from the position on are lost, whether or not its end was ever listed."""
    g = recreated_gap("A->B", "t", 0, 100, None, "old", "new", 5)
    assert (g.first_lost, g.last_lost, g.old_topic_id, g.new_topic_id, g.lost) == (100, None, "old", "new", 0)
    assert "re-created" in g.describe() and "old -> new" in g.describe()
    assert "records from offset 100 on (none known)" in g.describe()
    assert decode_ledger_record(*encode_gap(g)) == g  # the ledger keeps an open-ended gap


def test_deleted_gap_message_names_flow_partition_and_range() -> None:
    r = check_position("A->B", "orders", 2, 0, 500, 600, at=1)
    assert r.position == 500
    assert r.gap is not None
    assert r.gap.describe() == (
        "flow A->B: orders-2: offsets 0..499 (500 records) were deleted from the source before they were copied"
    )


def test_invalid_log_range_is_refused() -> None:
    with pytest.raises(ValueError, match="invalid log range"):
        check_position("A->B", "t", 0, 0, 5, 4, at=0)


# --------------------------------------------------------------------------- ledger codec

EVENTS = st.builds(
    GapEvent,
    flow=st.text(max_size=10),
    topic=st.text(max_size=20),
    partition=st.integers(min_value=0, max_value=2**31 - 1),
    reason=st.sampled_from(GAP_REASONS),
    first_lost=st.just(None),
    last_lost=st.just(None),
    at=st.integers(min_value=0, max_value=2**45),
    old_topic_id=st.one_of(st.none(), st.text(max_size=22)),
    new_topic_id=st.one_of(st.none(), st.text(max_size=22)),
)


@given(EVENTS, OFFSETS, st.integers(min_value=0, max_value=2**20))
def test_gap_record_round_trip(event: GapEvent, first: int, span: int) -> None:
    for e in (event, GapEvent(**{**event.__dict__, "first_lost": first, "last_lost": first + span})):
        key, value = encode_gap(e)
        assert decode_ledger_record(key, value) == e
        assert json.loads(value)["at"] == e.at


def test_topic_id_record_round_trip_and_tombstones() -> None:
    key, value = encode_topic_id("A->B", "orders", "AAAAAAAAAHsAAAAAAAAByA")
    assert decode_ledger_record(key, value) == KnownTopicId("A->B", "orders", "AAAAAAAAAHsAAAAAAAAByA")
    assert decode_ledger_record(key, None) is None
    assert decode_ledger_record(b'{"kind":"future"}', b"{}") is None


@pytest.mark.parametrize(
    "value",
    [
        b'{"flow":"A->B","topic":"t","partition":-1,"reason":"deleted","first_lost":0,"last_lost":1,"at":1}',
        b'{"flow":"A->B","topic":"t","partition":0,"reason":"deleted","first_lost":5,"last_lost":1,"at":1}',
        b'{"flow":"A->B","topic":"t","partition":0,"reason":"deleted","first_lost":-3,"last_lost":1,"at":1}',
        b'{"flow":"A->B","topic":"t","partition":0,"reason":"lost","first_lost":0,"last_lost":1,"at":1}',
        b'{"flow":"A->B","topic":"t","partition":0,"reason":"deleted","first_lost":0,"at":1}',
        b'{"flow":"A->B","topic":"t","partition":true,"reason":"deleted","first_lost":0,"last_lost":1,"at":1}',
        b"[]",
        b"\xff",
    ],
)
def test_gap_records_holding_impossible_values_are_refused(value: bytes) -> None:
    with pytest.raises(CorruptRecordError, match="gap ledger"):
        decode_ledger_record(b'{"kind":"gap"}', value)


def test_gaps_topic_is_internal_to_the_flow_policy() -> None:
    assert mirrorspark_topic(GAPS_PREFIX, None, "A") == "mm2-gaps.A.internal"
    sep = DefaultReplicationPolicy(separator="__")
    assert mirrorspark_topic(GAPS_PREFIX, sep, "A") == "mm2-gaps__A__internal"
    for policy in (DefaultReplicationPolicy(), sep, IdentityReplicationPolicy(source_cluster_alias="A")):
        assert policy.is_internal_topic(mirrorspark_topic(GAPS_PREFIX, policy, "A"))


# --------------------------------------------------------------------------- stored source offsets


@given(st.lists(st.one_of(st.none(), st.integers(min_value=-3, max_value=200)), max_size=60), st.integers(0, 200))
def test_the_newest_valid_stored_offset_is_kept(records: list[int | None], end: int) -> None:
    h = OffsetHistory()
    for r in records:
        h.add(r)
    # reference: the newest record after the last tombstone whose offset fits the partition
    tail = records[len(records) - records[::-1].index(None) :] if None in records else records
    valid = [o for o in tail if o is not None and -1 <= o < end]
    expected = valid[-1] if valid else None
    got, skipped = last_valid_offset(h.offsets, end)
    if expected is not None and tail.index(expected) >= len(tail) - OFFSET_HISTORY_DEPTH:
        assert got == expected
    assert got is None or -1 <= got < end  # never a position past the end
    assert all(o >= end for o in skipped)
    assert len(h.offsets) <= OFFSET_HISTORY_DEPTH


def test_an_offset_past_the_end_falls_back_to_the_last_valid_one() -> None:
    h = OffsetHistory()
    for o in (10, 20, 99):
        h.add(o)
    assert last_valid_offset(h.offsets, 50) == (20, (99,))
    assert last_valid_offset([99], 50) == (None, (99,))
    assert not h.add(-2) and h.last == 99  # below -1: no partition holds it


def test_an_offset_past_the_end_the_flow_reached_itself_is_kept() -> None:
    # the source log was truncated below what the flow copied: the offset is the flow's own
    assert last_valid_offset([10, 20, 99], 50, reached=100) == (99, ())
    assert last_valid_offset([99], 50, reached=100) == (99, ())
    # past what the flow reached: foreign or corrupt, skipped
    assert last_valid_offset([20, 99, 5000], 50, reached=100) == (99, (5000,))
    assert last_valid_offset([99], 50, reached=60) == (None, (99,))
    assert last_valid_offset([20, 99], 50, reached=10) == (20, (99,))  # reached below the end: the end bounds


@given(st.lists(st.integers(min_value=-1, max_value=300), max_size=40), st.integers(0, 200), st.integers(0, 300))
def test_a_reached_position_only_ever_keeps_more(offsets: list[int], end: int, reached: int) -> None:
    h = OffsetHistory()
    for o in offsets:
        h.add(o)
    plain, _ = last_valid_offset(h.offsets, end)
    got, skipped = last_valid_offset(h.offsets, end, reached=reached)
    assert got is None or -1 <= got < max(end, reached)
    assert plain is None or (got is not None and got >= plain)
    assert all(o >= max(end, reached) for o in skipped)
