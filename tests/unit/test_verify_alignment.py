"""Verify's alignment of source offsets to target offsets (core/verify/alignment.py A1..A5)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorspark.core.verify.alignment import GapSpan, HoleSpan, MappedSpan, UnverifiedSpan, align
from mirrorspark.mm2.offset_syncs import CopiedSegment
from verify_support import gap, segment_lists

pytestmark = pytest.mark.unit


@given(
    segment_lists(),
    st.lists(st.tuples(st.integers(0, 90), st.integers(0, 10)), max_size=3),
    st.integers(0, 60),
    st.integers(0, 60),
)
def test_spans_partition_the_window_and_map_exactly(
    segments: list[CopiedSegment], gaps: list[tuple[int, int]], start: int, length: int
) -> None:
    """A1-A4."""
    events = [gap(lo, lo + n) for lo, n in gaps]
    a = align(segments, events, start=start, end=start + length)
    at = start
    for s in a.spans:
        assert s.start == at < s.end
        at = s.end
    assert at == start + length
    for o in range(start, start + length):
        s = a.span_of(o)
        seg = next((g for g in segments if g.upstream_start <= o < g.upstream_end), None)
        if seg is not None:
            assert isinstance(s, MappedSpan)
            assert s.downstream_start + (o - s.start) == seg.downstream_start + (o - seg.upstream_start)
        elif any(lo <= o <= lo + n for lo, n in gaps):
            assert isinstance(s, GapSpan)
        elif not segments or o < segments[0].upstream_start:
            assert s == UnverifiedSpan(s.start, s.end, "not-tracked" if segments else "in-flight")
        elif o >= segments[-1].upstream_end:
            assert s == UnverifiedSpan(s.start, s.end, "in-flight")
        else:
            assert isinstance(s, HoleSpan)


def test_a_drop_a_gap_and_records_in_flight() -> None:
    """A3-A5: source 3 dropped (a hole, target continuous), 6..8 lost (a gap), 12.. not acknowledged yet."""
    segments = [CopiedSegment(0, 100, 3), CopiedSegment(4, 103, 2), CopiedSegment(9, 107, 3)]
    a = align(segments, [gap(6, 8)], start=0, end=15)
    assert a.spans == (
        MappedSpan(0, 100, 3),
        HoleSpan(3, 4),
        MappedSpan(4, 103, 2),
        GapSpan(6, 9, "deleted"),
        MappedSpan(9, 107, 3),
        UnverifiedSpan(12, 15, "in-flight"),
    )
    assert a.target_holes == ((105, 107),)
    assert (a.gap_offsets, a.unverified_offsets) == (3, 3)


def test_a_window_inside_the_segments_clips_them_and_unknown_gap_bounds_reach_its_edges() -> None:
    """A2, A3: a window cut mid-segment; a gap of a deleted topic (end unknown) reaches the window's end."""
    a = align([CopiedSegment(0, 50, 10), CopiedSegment(20, 60, 5)], [gap(26, None)], start=5, end=30)
    assert a.spans == (
        MappedSpan(5, 55, 5),
        HoleSpan(10, 20),
        MappedSpan(20, 60, 5),
        UnverifiedSpan(25, 26, "in-flight"),
        GapSpan(26, 30, "deleted"),
    )
    assert align([CopiedSegment(0, 0, 5), CopiedSegment(20, 5, 5)], [], start=8, end=12).spans == (HoleSpan(8, 12),)


def test_segments_out_of_order_and_a_reversed_window_are_refused() -> None:
    """align's ValueError."""
    with pytest.raises(ValueError, match="out of order"):
        align([CopiedSegment(5, 0, 2), CopiedSegment(6, 2, 1)], [], start=0, end=9)
    with pytest.raises(ValueError, match="before its start"):
        align([], [], start=5, end=4)
