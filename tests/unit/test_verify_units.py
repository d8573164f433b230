"""Verify's planning: windows, units, merging and samples (core/verify/units.py U1..U6, S1..S3)."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorspark.core.verify import Record, align, verify_partition
from mirrorspark.core.verify.alignment import HoleSpan, MappedSpan, UnverifiedSpan
from mirrorspark.core.verify.report import Finding, PartitionCounts
from mirrorspark.core.verify.units import (
    Window,
    add_counts,
    cut_units,
    merge_partition,
    partition_window,
    plan_partition,
    sample_ranges,
)
from mirrorspark.mm2.offset_syncs import CopiedSegment
from verify_support import gap, segment_lists

pytestmark = pytest.mark.unit

S = CopiedSegment


# --------------------------------------------------------------------------- cut_units (U1-U3)


@given(segment_lists(), st.integers(0, 40), st.integers(0, 90), st.integers(1, 15))
def test_units_partition_the_window_and_cut_inside_mapped_spans(
    segments: list[CopiedSegment], start: int, length: int, size: int
) -> None:
    a = align(segments, [], start=start, end=start + length)
    units = cut_units(a, size)
    if length == 0:
        assert units == []
        return
    assert units[0][0] == start and units[-1][1] == start + length  # U1
    assert all(lo < hi for lo, hi in units)
    assert all(x[1] == y[0] for x, y in itertools.pairwise(units))
    for _, cut in units[:-1]:  # U2: the cut and the offset before it in one mapped span
        assert any(m.start < cut < m.end for m in a.mapped)
    holes = sorted(h for lo, hi in units for h in align(segments, [], start=lo, end=hi).target_holes)
    assert holes == sorted(a.target_holes)
    for lo, hi in units:  # U3: longer than size only when no cut was possible within it
        if hi - lo > size:
            assert not any(max(lo + 1, m.start + 1) <= min(lo + size, m.end - 1) for m in a.mapped)
            assert hi == start + length or any(hi == m.start + 1 for m in a.mapped)


def test_a_unit_grows_past_a_hole_to_one_record_of_the_next_span() -> None:
    a = align([S(0, 0, 3), S(20, 3, 10)], [], start=0, end=30)
    assert cut_units(a, 5) == [(0, 2), (2, 21), (21, 26), (26, 30)]
    with pytest.raises(ValueError, match="at least 1"):
        cut_units(a, 0)


# --------------------------------------------------------------------------- windows (U6)


def test_the_default_window_starts_at_the_first_segment_or_gap_and_ends_at_the_log_end() -> None:
    segs = [S(10, 0, 5), S(20, 5, 5)]
    assert partition_window(segs, [], log_start=0, log_end=40) == Window(10, 10, 40)
    assert partition_window(segs, [gap(4, 8)], log_start=6, log_end=40) == Window(4, 6, 40)
    assert partition_window([], [], log_start=7, log_end=9) == Window(7, 7, 9)
    assert partition_window(segs, [], log_start=30, log_end=40) == Window(10, 30, 40)


def test_last_takes_the_last_copied_offsets_and_since_an_offset() -> None:
    segs = [S(10, 0, 5), S(20, 5, 5)]
    assert partition_window(segs, [], log_start=0, log_end=40, last=3) == Window(22, 22, 25)
    assert partition_window(segs, [], log_start=0, log_end=40, last=7) == Window(13, 13, 25)
    assert partition_window(segs, [], log_start=0, log_end=40, last=99) == Window(10, 10, 25)
    assert partition_window([], [], log_start=0, log_end=40, last=5) == Window(40, 40, 40)
    assert partition_window(segs, [], log_start=0, log_end=40, since=33) == Window(33, 33, 40)
    with pytest.raises(ValueError, match="not both"):
        partition_window(segs, [], log_start=0, log_end=40, since=1, last=1)
    with pytest.raises(ValueError, match="at least 1"):
        partition_window(segs, [], log_start=0, log_end=40, last=0)


# --------------------------------------------------------------------------- plan (U4)


@given(
    segment_lists(),
    st.lists(st.tuples(st.integers(0, 90), st.integers(0, 10)), max_size=3),
    st.integers(0, 60),
    st.integers(0, 30),
    st.integers(0, 60),
    st.integers(1, 15),
    st.booleans(),
)
def test_a_plan_accounts_for_every_offset_once(
    segments: list[CopiedSegment],
    gaps: list[tuple[int, int]],
    start: int,
    gone: int,
    length: int,
    size: int,
    drops: bool,
) -> None:
    events = [gap(lo, lo + n) for lo, n in gaps]
    w = Window(start, start + min(gone, length), start + length)
    plan = plan_partition(segments, events, w, unit_records=size, drops=drops)
    read = sum(hi - lo for lo, hi in plan.units)
    assert read + plan.unread.gap_offsets + plan.unread.unverified_offsets == length
    assert all(lo >= w.readable for lo, _ in plan.units)
    whole = align(segments, events, start=w.readable, end=w.end)
    kinds = (MappedSpan, HoleSpan, UnverifiedSpan) if drops else (MappedSpan, HoleSpan)
    inner = [s for s in whole.spans if isinstance(s, kinds)]
    if inner:
        assert plan.units[0][0] == inner[0].start and plan.units[-1][1] == inner[-1].end
    else:
        assert plan.units == ()


# --------------------------------------------------------------------------- merge (U5)


def rec(offset: int, value: str) -> Record:
    return Record(offset, b"k", value.encode(), (), "create", 1000)


@settings(max_examples=150)
@given(segment_lists(), st.integers(1, 12), st.randoms(use_true_random=False))
def test_merged_units_equal_the_whole_window(segments: list[CopiedSegment], size: int, rnd: random.Random) -> None:
    end = max((s.upstream_end for s in segments), default=0) + 3
    source = {o: rec(o, f"v{o}") for o in range(end)}
    target = {}
    for s in segments:
        for i in range(s.count):
            target[s.downstream_start + i] = rec(s.downstream_start + i, f"v{s.upstream_start + i}")
    for d in list(target):  # damage: drop, alter
        roll = rnd.random()
        if roll < 0.1:
            del target[d]
        elif roll < 0.2:
            target[d] = rec(d, "altered")
    whole = align(segments, [], start=0, end=end)
    for lo, _ in whole.target_holes:  # extras in the target holes
        target[lo] = rec(lo, "extra")
    counts, findings = verify_partition(whole, source, target, chunk_size=4)
    units = cut_units(whole, size)
    parts = [verify_partition(align(segments, [], start=lo, end=hi), source, target, chunk_size=4) for lo, hi in units]
    merged = merge_partition("a->b", "t", 0, "a.t", [(c, f, ()) for c, f in parts])
    assert add_counts([merged.counts]) == add_counts([c for c, _ in parts])
    assert (merged.counts.verified, merged.counts.unverified_offsets, merged.counts.gap_offsets) == (
        counts.verified,
        counts.unverified_offsets,
        counts.gap_offsets,
    )

    def where(f: Finding) -> tuple[int, int]:
        return (0, f.target_offset) if f.target_offset is not None else (1, f.source_offset or 0)

    assert sorted(map(where, merged.findings)) == sorted(map(where, findings))
    assert list(merged.findings) == sorted(merged.findings, key=Finding.sort_key)


def test_omitted_findings_are_summed_per_kind() -> None:
    one = (PartitionCounts(1), (Finding("missing", 3, 3),), (("missing", 5),))
    two = (PartitionCounts(2), (Finding("different", 1, 1, "value"),), (("missing", 1), ("different", 2)))
    merged = merge_partition("a->b", "t", 0, "a.t", [one, two])
    assert merged.omitted == (("missing", 6), ("different", 2))
    assert [f.source_offset for f in merged.findings] == [1, 3]
    assert merged.divergent == 10 and merged.counts.verified == 3


def test_add_counts_sums_every_field() -> None:
    a, b = PartitionCounts(1, 2, 3, 4, 5), PartitionCounts(10, 20, 30, 40, 50)
    assert add_counts([a, b]) == PartitionCounts(11, 22, 33, 44, 55)
    assert add_counts([]) == PartitionCounts()


# --------------------------------------------------------------------------- samples (S1-S3)


@given(
    st.dictionaries(st.tuples(st.sampled_from("xy"), st.integers(0, 2)), segment_lists(), max_size=4),
    st.integers(0, 200),
    st.integers(1, 9),
    st.integers(0, 2**32),
)
def test_samples_lie_in_segments_and_spend_the_budget(
    segments: dict[tuple[str, int], list[CopiedSegment]], records: int, run: int, seed: int
) -> None:
    drawn = sample_ranges(segments, records, random.Random(seed), run=run)
    copied = sum(s.count for segs in segments.values() for s in segs)
    assert sum(hi - lo for ranges in drawn.values() for lo, hi in ranges) == min(records, copied)  # S2
    for key, ranges in drawn.items():
        assert ranges == sorted(ranges)
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(ranges))
        for lo, hi in ranges:  # S1
            assert 0 < hi - lo <= run
            assert any(s.upstream_start <= lo and hi <= s.upstream_end for s in segments[key])
    assert drawn == sample_ranges(segments, records, random.Random(seed), run=run)  # S3


def test_a_sample_of_fewer_records_than_copied_is_random() -> None:
    segs = {("t", 0): [S(0, 0, 100_000)]}
    a = sample_ranges(segs, 3000, random.Random(1))
    b = sample_ranges(segs, 3000, random.Random(2))
    assert a != b
    assert sum(hi - lo for lo, hi in a[("t", 0)]) == 3000
    with pytest.raises(ValueError):
        sample_ranges(segs, -1, random.Random(1))
