"""Offset translation (mm2.md §7, §8.2): MM2's OffsetSyncStore and its tests, exact copied ranges, properties."""

from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorspark.mm2.offset_syncs import CopiedSegment, SyncState, advance, flush_delayed
from mirrorspark.mm2.records import OffsetSync
from mirrorspark.mm2.sync_store import SYNCS_PER_PARTITION, OffsetSyncStore
from mirrorspark.mm2.translation import CopiedRanges, Translation, translate, translate_upstream_with_syncs

pytestmark = pytest.mark.unit

TOPIC, PARTITION = "topic1", 2
INT64_MAX = (1 << 63) - 1


def _sync(upstream: int, downstream: int, topic: str = TOPIC, partition: int = PARTITION) -> OffsetSync:
    return OffsetSync(topic, partition, upstream, downstream)


def _started(*, read_to_end_required: bool = False) -> OffsetSyncStore:
    store = OffsetSyncStore(read_to_end_required=read_to_end_required)
    store.mark_initialized()
    return store


def _down(store: OffsetSyncStore, upstream_offset: int) -> int | None:
    return store.translate_downstream(TOPIC, PARTITION, upstream_offset)


def _distinct_count(store: OffsetSyncStore) -> int:
    """MM2's ``countDistinctStoredSyncs``: runs of identical references count once."""
    slots = store.slots(TOPIC, PARTITION)
    return 1 + sum(1 for i in range(1, len(slots)) if slots[i] is not slots[i - 1])


def _wrap(value: int) -> int:
    return (value + (1 << 63)) % (1 << 64) - (1 << 63)


def assert_invariants(store: OffsetSyncStore, newest: OffsetSync, earliest: OffsetSync) -> None:
    """Invariants A-D of the slot array (MM2 ``assertSparseSyncInvariant`` plus A and D)."""
    slots = store.slots(TOPIC, PARTITION)
    assert len(slots) == SYNCS_PER_PARTITION
    assert slots[0] is newest, "invariant A: slot 0 holds the newest sync"
    if newest.upstream_offset <= 1 << 62:  # beyond, MM2's bound for slot 63 can move it (see below)
        assert slots[-1] is earliest, "invariant D: slot 63 holds the sync that last reset the array"
    for j in range(SYNCS_PER_PARTITION):
        for i in range(j):
            u_i, u_j = slots[i].upstream_offset, slots[j].upstream_offset
            if u_i == u_j:
                continue
            lower = _wrap(u_j + (1 << max(i - 2, 0)))
            if lower >= 0:
                assert u_i >= lower, f"invariant C({i},{j}): {u_i} < {lower}"
            upper = _wrap(u_j + (1 << j) - (1 << i))
            if upper >= 0:
                assert u_i <= upper, f"invariant B({i},{j}): {u_i} > {upper}"
    # Distinct syncs never reappear after another one (runs only), newest first.
    distinct = store.syncs(TOPIC, PARTITION)
    assert len(distinct) == _distinct_count(store)
    assert [s.upstream_offset for s in distinct] == sorted((s.upstream_offset for s in distinct), reverse=True)


# ---------------------------------------------------------------------------------------------
# MM2's OffsetSyncStoreTest expectations (mm2.md §7.1, §7.2)
# ---------------------------------------------------------------------------------------------


def test_offset_translation_examples_of_mm2() -> None:
    store = _started()
    store.update(_sync(100, 200))
    assert _down(store, 150) == 201  # +1 rule, no dead reckoning
    store.update(_sync(150, 251))
    assert _down(store, 150) == 251  # exact
    assert _down(store, 5) == -1  # older than every sync
    store.update(_sync(200, 10))
    assert _down(store, 200) == 10  # downstream reset
    store.update(_sync(20, 20))
    assert _down(store, 20) == 20  # upstream rewind clears history
    assert store.syncs(TOPIC, PARTITION) == (_sync(20, 20),)


@pytest.mark.parametrize("read_to_end_required", [False, True])
def test_no_translation_before_initialized(read_to_end_required: bool) -> None:
    store = OffsetSyncStore(read_to_end_required=read_to_end_required)
    assert not store.initialized
    assert [_down(store, g) for g in (0, 100, 200)] == [None, None, None]
    store.update(_sync(100, 200))
    assert [_down(store, g) for g in (0, 100, 200)] == [None, None, None]
    assert store.lookup(TOPIC, PARTITION, 100) is None
    assert store.syncs(TOPIC, PARTITION) == (_sync(100, 200),)  # inspectable before initialization
    store.mark_initialized()
    assert store.initialized
    assert [_down(store, g) for g in (0, 100, 200)] == [-1, 200, 201]


def test_no_translation_without_sync_for_the_partition() -> None:
    store = _started()
    assert _down(store, 0) is None
    store.update(_sync(0, 0, partition=PARTITION + 1))
    assert _down(store, 0) is None
    assert store.partitions() == {(TOPIC, PARTITION + 1)}
    assert store.syncs(TOPIC, PARTITION) == () and store.slots(TOPIC, PARTITION) == ()


def _assert_sparse_sync(store: OffsetSyncStore, sync_offset: int, previous_offset: int) -> None:
    """MM2 ``assertSparseSync`` for syncs at upstream == downstream."""
    assert _down(store, sync_offset - 1) == (-1 if previous_offset == -1 else previous_offset + 1)
    assert _down(store, sync_offset) == sync_offset
    assert _down(store, sync_offset + 1) == sync_offset + 1
    assert _down(store, sync_offset + 2) == sync_offset + 1


def test_past_offset_translation_of_mm2() -> None:
    """MM2 ``testPastOffsetTranslation``: syncs every 10 offsets, store started with read-to-end required."""
    store = OffsetSyncStore(read_to_end_required=True)
    offset = 0
    while offset <= 1000:
        sync = _sync(offset, offset)
        store.update(sync)
        assert_invariants(store, sync, sync)  # only-load-last mode: every sync resets the array
        offset += 10
    store.mark_initialized()
    earliest = store.slots(TOPIC, PARTITION)[-1]
    assert earliest.upstream_offset == 1000
    _assert_sparse_sync(store, 1000, -1)  # only the latest startup sync translates
    while offset <= 10000:
        sync = _sync(offset, offset)
        store.update(sync)
        assert_invariants(store, sync, earliest)
        offset += 10
    _assert_sparse_sync(store, 1000, -1)  # invariant D: the last startup sync is still there
    assert [_down(store, g) for g in (4839, 4840, 4841)] == [1001, 4840, 4841]
    retained = [1000, 4840, 6760, 8680, 9160, 9640, 9880, 9940, 9970, 9990, 10000]
    assert [s.upstream_offset for s in reversed(store.syncs(TOPIC, PARTITION))] == retained
    for previous, current in itertools.pairwise(retained):
        _assert_sparse_sync(store, current, previous)
    # Rewinding upstream clears all historical syncs.
    rewind = _sync(1500, 11000)
    store.update(rewind)
    assert_invariants(store, rewind, rewind)
    assert [_down(store, g) for g in (1499, 1500, 2000)] == [-1, 11000, 11001]


def test_initial_read_keeps_history_unless_read_to_end_required() -> None:
    store = OffsetSyncStore()
    for offset in range(0, 1001, 10):
        store.update(_sync(offset, offset))
    store.mark_initialized()
    assert store.slots(TOPIC, PARTITION)[-1].upstream_offset == 0  # invariant D: the first sync
    assert _down(store, 0) == 0
    assert _down(store, 995) == 991
    assert len(store.syncs(TOPIC, PARTITION)) > 1


def _assert_bounded_expirations(first_offset: int, steps: Iterable[int], maximum_expirations: int) -> None:
    """MM2 ``assertSyncSpacingHasBoundedExpirations``."""
    store = _started()
    first = _sync(first_offset, first_offset)
    store.update(first)
    offset, last_count = first_offset, 1
    for step in steps:
        offset += step
        assert 0 <= offset <= INT64_MAX, "test is invalid, offset overflowed"
        sync = _sync(offset, offset)
        store.update(sync)
        assert store.slots(TOPIC, PARTITION)[0] is sync  # invariant A
        assert store.slots(TOPIC, PARTITION)[-1] is first  # invariant D
        count = _distinct_count(store)
        expired = last_count - count + 1
        assert expired <= maximum_expirations, f"expired {expired} syncs after offset {offset}"
        last_count = count


def test_consistently_spaced_syncs_expire_at_most_one() -> None:
    """MM2 ``testConsistentlySpacedSyncs`` (fewer first offsets, same steps)."""
    iterations = 100
    step = 1
    while step < INT64_MAX // iterations:
        for first_offset in (0, 1, 7, 13, 29):
            _assert_bounded_expirations(first_offset, [step] * iterations, 1)
        step = step * 2 + 1


def test_randomly_spaced_syncs_expire_at_most_n_plus_two() -> None:
    """MM2 ``testRandomlySpacedSyncs`` (our own seeded random numbers, fewer iterations)."""
    rng = random.Random(0)
    iteration_bits = 10
    for n in range(1, 64 - iteration_bits, 4):
        maximum_difference = 1 << n
        _assert_bounded_expirations(0, [rng.randrange(0, maximum_difference) for _ in range(256)], n + 2)
        offset_lag_max = 1 << 16
        steps = [rng.randrange(offset_lag_max, offset_lag_max + maximum_difference) for _ in range(256)]
        _assert_bounded_expirations(0, steps, n + 2)


def test_dropped_syncs_expire_at_most_two() -> None:
    """MM2 ``testDroppedSyncsSpacing``: half the gaps are doubled, as if a sync was lost."""
    rng = random.Random(0)
    _assert_bounded_expirations(0, [(2 if rng.random() < 0.5 else 1) * 100 for _ in range(3000)], 2)


def test_identity_of_syncs() -> None:
    store = _started()
    first, twin = _sync(0, 0), _sync(0, 0)
    store.update(first)
    store.update(twin)  # equal numbers, another record: a second sync
    assert store.slots(TOPIC, PARTITION)[0] is twin
    assert store.slots(TOPIC, PARTITION)[-1] is first
    assert len(store.syncs(TOPIC, PARTITION)) == 2
    same = _sync(5, 5)
    store.update(same)
    before = store.slots(TOPIC, PARTITION)
    store.update(same)  # the same object again: nothing new
    assert store.slots(TOPIC, PARTITION) == before
    assert all(a is b for a, b in zip(store.slots(TOPIC, PARTITION), before, strict=True))


def test_bounds_wrap_around_like_java_longs() -> None:
    store = _started()
    earliest = _sync(0, 0)
    store.update(earliest)
    for upstream in (1 << 61, 1 << 62):
        sync = _sync(upstream, upstream)
        store.update(sync)
        assert_invariants(store, sync, earliest)
    assert _down(store, 1) == 1
    # Invariant B between slots 62 and 63 is u62 <= u63 + 2^63 - 2^62, and Java's 1L << 63 is negative:
    # the bound wraps to u63 + 2^62, so past 2^62 MM2 replaces slot 63 as well (invariant D gives way).
    for upstream in ((1 << 62) + (1 << 61), INT64_MAX - 1, INT64_MAX):
        sync = _sync(upstream, upstream)
        store.update(sync)
        assert_invariants(store, sync, earliest)
    assert store.slots(TOPIC, PARTITION)[-1] is not earliest
    assert _down(store, 1) == -1
    assert _down(store, INT64_MAX) == INT64_MAX


# ---------------------------------------------------------------------------------------------
# CopiedRanges, translate_upstream_with_syncs, translate: examples
# ---------------------------------------------------------------------------------------------


def _ranges(*segments: tuple[int, int, int], max_segments: int = 10_000) -> CopiedRanges:
    copied = CopiedRanges(max_segments=max_segments)
    copied.add(TOPIC, PARTITION, [CopiedSegment(*s) for s in segments])
    return copied


def test_copied_ranges_merge_and_translate_both_ways() -> None:
    copied = _ranges((10, 100, 5), (15, 105, 5), (30, 120, 10))
    assert copied.segments(TOPIC, PARTITION) == (CopiedSegment(10, 100, 10), CopiedSegment(30, 120, 10))
    assert copied.partitions() == {(TOPIC, PARTITION)}
    down = {g: copied.translate_downstream(TOPIC, PARTITION, g) for g in (9, 10, 19, 20, 25, 30, 39, 40, 99)}
    assert down == {9: None, 10: 100, 19: 109, 20: 110, 25: 110, 30: 120, 39: 129, 40: 130, 99: 130}
    up = {d: copied.translate_upstream(TOPIC, PARTITION, d) for d in (99, 100, 109, 110, 115, 120, 129, 130, 999)}
    assert up == {99: None, 100: 10, 109: 19, 110: 20, 115: 20, 120: 30, 129: 39, 130: 40, 999: 40}
    assert copied.translate_downstream("other", 0, 10) is None
    assert copied.translate_upstream("other", 0, 100) is None


def test_copied_ranges_keep_at_most_max_segments() -> None:
    copied = _ranges((0, 0, 1), (2, 2, 1), (4, 4, 1), max_segments=2)
    assert copied.segments(TOPIC, PARTITION) == (CopiedSegment(2, 2, 1), CopiedSegment(4, 4, 1))
    assert copied.translate_downstream(TOPIC, PARTITION, 1) is None  # dropped: unknown
    assert copied.translate_downstream(TOPIC, PARTITION, 2) == 2


def test_copied_ranges_downstream_reset_drops_history() -> None:
    copied = _ranges((0, 100, 10), (10, 5, 10))  # target truncated or recreated
    assert copied.segments(TOPIC, PARTITION) == (CopiedSegment(10, 5, 10),)


def test_copied_ranges_upstream_rewind_keeps_the_newest_copy() -> None:
    copied = _ranges((0, 0, 100), (50, 100, 30))  # a retried batch copied 50..79 again
    assert copied.segments(TOPIC, PARTITION) == (CopiedSegment(0, 0, 50), CopiedSegment(50, 100, 30))
    assert copied.translate_downstream(TOPIC, PARTITION, 49) == 49
    assert copied.translate_downstream(TOPIC, PARTITION, 60) == 110
    assert copied.translate_upstream(TOPIC, PARTITION, 70) == 50  # old copy of 70: resume at 50
    copied.add(TOPIC, PARTITION, [CopiedSegment(0, 200, 1)])  # rewind before everything
    assert copied.segments(TOPIC, PARTITION) == (CopiedSegment(0, 200, 1),)


def test_copied_ranges_reject_bad_arguments() -> None:
    with pytest.raises(ValueError, match="max_segments"):
        CopiedRanges(max_segments=0)
    with pytest.raises(ValueError, match="at least one record"):
        _ranges((0, 0, 0))


def test_translate_upstream_with_syncs() -> None:
    store = OffsetSyncStore()
    store.update(_sync(100, 200))
    assert translate_upstream_with_syncs(store, TOPIC, PARTITION, 200) is None  # not initialized
    store.mark_initialized()
    store.update(_sync(150, 251))
    rule = {d: translate_upstream_with_syncs(store, TOPIC, PARTITION, d) for d in (199, 200, 201, 251, 300)}
    assert rule == {199: None, 200: 100, 201: 101, 251: 150, 300: 151}
    assert translate_upstream_with_syncs(store, "other", 0, 200) is None


def test_translate_prefers_exact_and_reports_rereads() -> None:
    store = _started()
    store.update(_sync(100, 200))
    store.update(_sync(150, 251))
    copied = _ranges((140, 241, 20))
    assert translate(store, copied, TOPIC, PARTITION, 145) == Translation(145, 246, 0, True)
    assert translate(store, copied, TOPIC, PARTITION, 130) == Translation(130, 201, 29, False)
    assert translate(store, None, TOPIC, PARTITION, 145) == Translation(145, 201, 44, False)
    assert translate(store, None, TOPIC, PARTITION, 150) == Translation(150, 251, 0, False)
    assert translate(store, None, TOPIC, PARTITION, 99) is None  # too old (-1)
    assert translate(store, copied, "other", 0, 145) is None
    assert translate(OffsetSyncStore(), copied, TOPIC, PARTITION, 145) == Translation(145, 246, 0, True)
    with pytest.raises(AttributeError):
        translate(store, None, TOPIC, PARTITION, 150).rereads = 1  # type: ignore[misc, union-attr]


# ---------------------------------------------------------------------------------------------
# Simulated copies
# ---------------------------------------------------------------------------------------------


@dataclass
class Copy:
    """A simulated copy of one partition: ``records[i] = (upstream, downstream)`` in copy order."""

    records: list[tuple[int, int]]
    commits: frozenset[int]  # record indexes after which the data path commits (flushes delayed syncs)
    upstreams: list[int] = field(init=False)
    downstreams: list[int] = field(init=False)

    def __post_init__(self) -> None:
        self.upstreams = [u for u, _ in self.records]
        self.downstreams = [d for _, d in self.records]

    def segments(self, cuts: frozenset[int] = frozenset()) -> list[CopiedSegment]:
        """Runs of consecutive records, also split before every index in ``cuts``."""
        runs: list[CopiedSegment] = []
        for i, (u, d) in enumerate(self.records):
            grown = runs[-1].extend(u, d) if runs and i not in cuts else None
            if grown is None:
                runs.append(CopiedSegment(u, d, 1))
            else:
                runs[-1] = grown
        return runs

    def syncs(self, offset_lag_max: int) -> list[OffsetSync]:
        """Syncs emitted by :func:`advance`, delayed ones flushed at commits and at the end."""
        state, out = SyncState(), []
        for i, (u, d) in enumerate(self.records):
            state, synced = advance(state, u, d, offset_lag_max)
            if synced:
                out.append(_sync(u, d))
            if i in self.commits or i == len(self.records) - 1:
                state, delayed = flush_delayed(state)
                if delayed is not None:
                    out.append(_sync(*delayed))
        return out

    # The helpers below assume a monotone copy (both offsets increase with the index).

    def first_copy_at_or_after(self, upstream_offset: int) -> int:
        """Downstream offset of the first copied record with upstream >= g, else the next downstream position."""
        i = bisect.bisect_left(self.upstreams, upstream_offset)
        return self.records[i][1] if i < len(self.records) else self.records[-1][1] + 1

    def last_copy_before(self, upstream_offset: int) -> int | None:
        """Downstream offset of the last copied record with upstream < g."""
        i = bisect.bisect_left(self.upstreams, upstream_offset)
        return self.records[i - 1][1] if i > 0 else None

    def first_source_at_or_after(self, downstream_offset: int) -> int:
        """Upstream offset of the first record copied at or after d, else the next upstream to copy."""
        i = bisect.bisect_left(self.downstreams, downstream_offset)
        return self.records[i][0] if i < len(self.records) else self.records[-1][0] + 1

    def last_source_before(self, downstream_offset: int) -> int | None:
        """Upstream offset of the last record copied before d."""
        i = bisect.bisect_left(self.downstreams, downstream_offset)
        return self.records[i - 1][0] if i > 0 else None

    def rereads(self, upstream_offset: int, downstream_offset: int) -> int:
        """Records before ``upstream_offset`` whose copies lie at or after ``downstream_offset``."""
        before = bisect.bisect_left(self.upstreams, upstream_offset)
        at_or_after = bisect.bisect_left(self.downstreams, downstream_offset)
        return max(0, before - at_or_after)


gaps = st.one_of(st.just(0), st.just(0), st.integers(1, 30))


@st.composite
def copies(draw: st.DrawFn, *, with_gaps: bool = True) -> Copy:
    u = draw(st.integers(0, 1000))
    d = draw(st.integers(0, 1000))
    n = draw(st.integers(1, 400))
    records = []
    for _ in range(n):
        records.append((u, d))
        u += 1 + (draw(gaps) if with_gaps else 0)
        d += 1 + (draw(gaps) if with_gaps else 0)
    commits = draw(st.frozensets(st.integers(0, n - 1), max_size=10))
    return Copy(records, commits)


def _fill(syncs: Sequence[OffsetSync], *, read_to_end_required: bool, initial: int) -> OffsetSyncStore:
    """A store that read ``syncs[:initial]`` before initialization and the rest after."""
    store = OffsetSyncStore(read_to_end_required=read_to_end_required)
    for sync in syncs[:initial]:
        store.update(sync)
    store.mark_initialized()
    for sync in syncs[initial:]:
        store.update(sync)
    return store


def _copied_ranges(copy: Copy, cuts: frozenset[int], batch: int, max_segments: int) -> CopiedRanges:
    copied = CopiedRanges(max_segments=max_segments)
    segments = copy.segments(cuts)
    for start in range(0, len(segments), batch):
        copied.add(TOPIC, PARTITION, segments[start : start + batch])
    return copied


# ---------------------------------------------------------------------------------------------
# Properties: OffsetSyncStore
# ---------------------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    start=st.integers(0, 1 << 62),
    steps=st.lists(
        st.one_of(st.integers(0, 3), st.integers(0, 200), st.integers(0, 1 << 40), st.integers(0, 1 << 61)),
        max_size=250,
    ),
    read_to_end_required=st.booleans(),
    initial=st.integers(0, 250),
)
def test_invariants_hold_after_every_update(
    start: int, steps: list[int], read_to_end_required: bool, initial: int
) -> None:
    store = OffsetSyncStore(read_to_end_required=read_to_end_required)
    offset, earliest = start, None
    for index, step in enumerate([0, *steps]):
        if index == initial:
            store.mark_initialized()
        offset = min(offset + step, INT64_MAX)
        sync = _sync(offset, offset)
        store.update(sync)
        if earliest is None or (read_to_end_required and not store.initialized):
            earliest = sync
        assert_invariants(store, sync, earliest)


@settings(max_examples=60, deadline=None)
@given(
    offsets=st.lists(st.tuples(st.integers(0, 500), st.integers(0, 500)), min_size=1, max_size=120),
    initial=st.integers(0, 120),
)
def test_invariant_d_follows_upstream_rewinds(offsets: list[tuple[int, int]], initial: int) -> None:
    store = OffsetSyncStore()
    earliest: OffsetSync | None = None
    for index, (upstream, downstream) in enumerate(offsets):
        if index == initial:
            store.mark_initialized()
        sync = _sync(upstream, downstream)
        previous = store.slots(TOPIC, PARTITION)
        store.update(sync)
        if not previous or upstream < previous[0].upstream_offset:
            earliest = sync
        assert earliest is not None
        assert_invariants(store, sync, earliest)


@settings(max_examples=100, deadline=None)
@given(
    copy=copies(),
    offset_lag_max=st.integers(0, 60),
    read_to_end_required=st.booleans(),
    initial_fraction=st.floats(0, 1),
)
def test_store_never_skips(
    copy: Copy, offset_lag_max: int, read_to_end_required: bool, initial_fraction: float
) -> None:
    syncs = copy.syncs(offset_lag_max)
    store = _fill(syncs, read_to_end_required=read_to_end_required, initial=int(initial_fraction * len(syncs)))
    for g in range(copy.upstreams[0] - 2, copy.upstreams[-1] + 3):
        d = store.translate_downstream(TOPIC, PARTITION, g)
        assert d is not None
        if d == -1:
            continue
        assert 0 <= d <= copy.first_copy_at_or_after(g), f"translating {g} to {d} skips records"


@settings(max_examples=100, deadline=None)
@given(copy=copies(with_gaps=False), offset_lag_max=st.integers(0, 60))
def test_store_rereads_at_most_offset_lag_max_near_the_end(copy: Copy, offset_lag_max: int) -> None:
    syncs = copy.syncs(offset_lag_max)
    last = len(copy.records) - 1
    u0, d0 = copy.records[0]
    end = copy.upstreams[-1] + 1
    # Before the final commit: the syncs emitted so far (the final flush is the last sync, if any).
    state, emitted = SyncState(), []
    for i, (u, d) in enumerate(copy.records):
        state, synced = advance(state, u, d, offset_lag_max)
        if synced:
            emitted.append(_sync(u, d))
        if i in copy.commits and i != last:
            state, delayed = flush_delayed(state)
            if delayed is not None:
                emitted.append(_sync(*delayed))
    for store_syncs in (emitted, syncs):
        store = _fill(store_syncs, read_to_end_required=False, initial=0)
        latest = store.syncs(TOPIC, PARTITION)[0].upstream_offset
        for g in range(latest, end + 1):
            t = translate(store, None, TOPIC, PARTITION, g)
            assert t is not None and not t.exact
            true_position = d0 + (g - u0)
            assert t.rereads == true_position - t.downstream_offset
            assert 0 <= t.rereads <= offset_lag_max
    # After the final commit a caught-up consumer translates exactly (KAFKA-15906).
    caught_up = translate(_fill(syncs, read_to_end_required=False, initial=0), None, TOPIC, PARTITION, end)
    assert caught_up == Translation(end, d0 + (end - u0), 0, False)


# ---------------------------------------------------------------------------------------------
# Properties: CopiedRanges, reverse translation, translate()
# ---------------------------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(
    copy=copies(),
    cuts=st.frozensets(st.integers(0, 400), max_size=20),
    batch=st.integers(1, 8),
    max_segments=st.one_of(st.integers(1, 6), st.just(10_000)),
)
def test_copied_ranges_are_exact_both_ways(copy: Copy, cuts: frozenset[int], batch: int, max_segments: int) -> None:
    copied = _copied_ranges(copy, cuts, batch, max_segments)
    kept = copied.segments(TOPIC, PARTITION)
    runs = copy.segments()
    assert list(kept) == runs[-max_segments:], "continuing segments merge, the oldest are dropped"
    for g in range(copy.upstreams[0] - 2, copy.upstreams[-1] + 3):
        d = copied.translate_downstream(TOPIC, PARTITION, g)
        if g < kept[0].upstream_start:
            assert d is None
            continue
        assert d is not None
        assert d <= copy.first_copy_at_or_after(g), "skips"
        previous = copy.last_copy_before(g)
        assert previous is None or previous < d, "re-reads"
    for d in range(copy.downstreams[0] - 2, copy.downstreams[-1] + 3):
        u = copied.translate_upstream(TOPIC, PARTITION, d)
        if d < kept[0].downstream_start:
            assert u is None
            continue
        assert u is not None
        assert u <= copy.first_source_at_or_after(d), "skips"
        previous = copy.last_source_before(d)
        assert previous is None or previous < u, "re-reads"


@st.composite
def retried_copies(draw: st.DrawFn) -> tuple[list[int], list[tuple[int, int]]]:
    """Upstream offsets (with gaps) copied in rounds; a round may restart at an earlier record (a retry)."""
    upstream = list(itertools.accumulate(draw(st.lists(st.integers(1, 4), min_size=2, max_size=150))))
    log: list[tuple[int, int]] = []
    d = draw(st.integers(0, 100))
    index = 0
    for _ in range(draw(st.integers(1, 6))):
        length = draw(st.integers(1, len(upstream)))
        for u in upstream[index : index + length]:
            log.append((u, d))
            d += 1 + draw(gaps)
        end = min(index + length, len(upstream))
        index = draw(st.integers(0, end)) if end < len(upstream) else draw(st.integers(0, end - 1))
    return upstream, log


@settings(max_examples=100, deadline=None)
@given(retried=retried_copies(), offset_lag_max=st.integers(0, 20))
def test_retried_copies_never_skip(retried: tuple[list[int], list[tuple[int, int]]], offset_lag_max: int) -> None:
    upstream, log = retried
    copied = CopiedRanges()
    copied.add(TOPIC, PARTITION, Copy(log, frozenset()).segments())
    store = _fill(Copy(log, frozenset()).syncs(offset_lag_max), read_to_end_required=False, initial=0)
    last_copy = {u: d for u, d in log}  # the newest copy of every copied upstream record
    # Copying goes on after the last record of the log: later upstream records will land after it.
    position = log[-1][0]
    for g in range(upstream[0] - 1, upstream[-1] + 2):
        bound = min((d for u, d in last_copy.items() if g <= u <= position), default=log[-1][1] + 1)
        for d in (copied.translate_downstream(TOPIC, PARTITION, g), store.translate_downstream(TOPIC, PARTITION, g)):
            if d is not None and d != -1:
                assert d <= bound, f"translating {g} to {d} skips records"
        exact = copied.translate_downstream(TOPIC, PARTITION, g)
        if exact is not None:
            assert all(d < exact for u, d in log if u < g and last_copy[u] == d), "re-reads"
    for d in range(log[0][1] - 1, log[-1][1] + 2):
        u = copied.translate_upstream(TOPIC, PARTITION, d)
        if u is not None:
            assert all(ru >= u for ru, rd in log if rd >= d), "skips"


@settings(max_examples=100, deadline=None)
@given(copy=copies(), offset_lag_max=st.integers(0, 60), read_to_end_required=st.booleans())
def test_reverse_translation_with_syncs_never_skips(
    copy: Copy, offset_lag_max: int, read_to_end_required: bool
) -> None:
    syncs = copy.syncs(offset_lag_max)
    store = _fill(syncs, read_to_end_required=read_to_end_required, initial=len(syncs) // 2)
    for d in range(copy.downstreams[0] - 2, copy.downstreams[-1] + 3):
        u = translate_upstream_with_syncs(store, TOPIC, PARTITION, d)
        if u is None:
            assert d < store.syncs(TOPIC, PARTITION)[-1].downstream_offset
            continue
        assert u <= copy.first_source_at_or_after(d), f"translating {d} back to {u} skips records"


@settings(max_examples=100, deadline=None)
@given(
    copy=copies(),
    offset_lag_max=st.integers(0, 60),
    max_segments=st.one_of(st.integers(1, 4), st.just(10_000)),
    with_ranges=st.booleans(),
)
def test_translate_never_skips_and_counts_rereads(
    copy: Copy, offset_lag_max: int, max_segments: int, with_ranges: bool
) -> None:
    store = _fill(copy.syncs(offset_lag_max), read_to_end_required=False, initial=0)
    copied = _copied_ranges(copy, frozenset(), 3, max_segments) if with_ranges else None
    upstream_contiguous = all(b - a == 1 for a, b in itertools.pairwise(copy.upstreams))
    for g in range(copy.upstreams[0] - 2, copy.upstreams[-1] + 3):
        t = translate(store, copied, TOPIC, PARTITION, g)
        mm2 = store.translate_downstream(TOPIC, PARTITION, g)
        exact = copied.translate_downstream(TOPIC, PARTITION, g) if copied is not None else None
        if t is None:
            assert exact is None and mm2 == -1
            continue
        assert t.upstream_offset == g
        assert t.downstream_offset <= copy.first_copy_at_or_after(g), "skips"
        actual_rereads = copy.rereads(g, t.downstream_offset)
        if exact is not None:
            assert t == Translation(g, exact, 0, True)
            assert actual_rereads == 0
        else:
            assert not t.exact and t.downstream_offset == mm2
            assert actual_rereads <= t.rereads
            if upstream_contiguous and g <= copy.upstreams[-1] + 1:
                assert actual_rereads == t.rereads
