"""Offset-sync emission (mm2.md §6) and copied segments: MM2's worked example plus properties."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorspark.mm2.offset_syncs import CopiedSegment, SyncState, advance, flush_delayed, fold_acknowledged

pytestmark = pytest.mark.unit


def _feed(
    pairs: Sequence[tuple[int, int]], offset_lag_max: int, state: SyncState | None = None
) -> tuple[SyncState, list[bool]]:
    """Feed ``pairs`` through :func:`advance`; return the final state and the sync decisions."""
    state = SyncState() if state is None else state
    decisions = []
    for upstream, downstream in pairs:
        state, synced = advance(state, upstream, downstream, offset_lag_max)
        decisions.append(synced)
    return state, decisions


# ---------------------------------------------------------------------------------------------
# MM2's worked example (MirrorSourceTaskTest, mm2.md §6)
# ---------------------------------------------------------------------------------------------

# (upstream, downstream, sync?) with offset.lag.max=50
MM2_EXAMPLE: list[tuple[int, int, bool]] = [
    (0, 100, True),  # first record of the partition
    (2, 102, True),  # upstream skipped 1
    (3, 152, False),  # 152 - 103 = 49 < 50
    (4, 153, True),  # 153 - 103 = 50 >= 50
    (5, 154, False),
    (6, 203, False),  # 203 - 154 = 49
    (7, 204, True),  # 204 - 154 = 50
    (2, 206, True),  # upstream went back
    (3, 207, False),
    (4, 3, True),  # downstream went backwards (target truncated/recreated)
    (5, 4, False),
]


def test_mm2_worked_example_decisions() -> None:
    _, decisions = _feed([(u, d) for u, d, _ in MM2_EXAMPLE], offset_lag_max=50)
    assert decisions == [expected for _, _, expected in MM2_EXAMPLE]


def test_mm2_worked_example_state_after_each_record() -> None:
    state = SyncState()
    last_sync = -1
    for upstream, downstream, expected in MM2_EXAMPLE:
        state, synced = advance(state, upstream, downstream, 50)
        assert synced is expected, (upstream, downstream)
        if expected:
            last_sync = downstream
        assert state.previous_upstream == upstream
        assert state.previous_downstream == downstream
        assert state.last_sync_downstream == last_sync
        assert state.delayed == (None if expected else (upstream, downstream))


def test_initial_state_matches_mm2_partition_state() -> None:
    assert SyncState() == SyncState(previous_upstream=-1, previous_downstream=-1, last_sync_downstream=-1, delayed=None)


def test_first_record_always_syncs_even_when_consecutive_to_the_sentinel() -> None:
    # upstream 0 is "consecutive" to previous_upstream=-1; the first record syncs anyway.
    state, synced = advance(SyncState(), 0, 0, 1_000_000)
    assert synced
    assert state == SyncState(0, 0, 0, None)


def test_offset_lag_max_zero_syncs_every_record() -> None:
    pairs = [(u, d) for u, d, _ in MM2_EXAMPLE] + [(10 + i, 500 + i) for i in range(20)]
    _, decisions = _feed(pairs, offset_lag_max=0)
    assert all(decisions)


@pytest.mark.parametrize("offset_lag_max", [1, 2, 5, 100])
def test_consecutive_records_sync_every_lag_max_plus_one(offset_lag_max: int) -> None:
    pairs = [(1000 + i, i) for i in range(4 * (offset_lag_max + 1) + 1)]
    _, decisions = _feed(pairs, offset_lag_max)
    synced_at = [i for i, s in enumerate(decisions) if s]
    assert synced_at == list(range(0, len(pairs), offset_lag_max + 1))


# ---------------------------------------------------------------------------------------------
# Delayed syncs (KAFKA-15906)
# ---------------------------------------------------------------------------------------------


def test_last_non_synced_record_becomes_the_delayed_slot() -> None:
    state, decisions = _feed([(0, 0), (1, 1), (2, 2), (3, 3)], offset_lag_max=100)
    assert decisions == [True, False, False, False]
    assert state.delayed == (3, 3)


def test_flush_delayed_returns_the_delayed_pair_once() -> None:
    state, _ = _feed([(0, 0), (1, 1), (2, 2)], offset_lag_max=100)
    flushed, pair = flush_delayed(state)
    assert pair == (2, 2)
    assert flushed == SyncState(2, 2, 0, None)
    again, pair2 = flush_delayed(flushed)
    assert pair2 is None
    assert again == flushed


def test_flush_delayed_without_delayed_is_a_no_op() -> None:
    assert flush_delayed(SyncState()) == (SyncState(), None)
    state, _ = _feed([(0, 0)], offset_lag_max=100)
    assert flush_delayed(state) == (state, None)


def test_a_sync_discards_the_delayed_slot() -> None:
    state, _ = _feed([(0, 0), (1, 1)], offset_lag_max=100)
    assert state.delayed == (1, 1)
    state, synced = advance(state, 5, 2, 100)  # upstream gap
    assert synced
    assert state.delayed is None
    assert flush_delayed(state)[1] is None


def test_flush_does_not_reset_the_emission_rule() -> None:
    # Promoting the delayed sync is not a sync of the rule: lastSyncDownstream stays.
    state, _ = _feed([(0, 0), (1, 1), (2, 2)], offset_lag_max=3)
    state, _ = flush_delayed(state)
    assert state.last_sync_downstream == 0
    state, synced = advance(state, 3, 3, 3)
    assert not synced
    state, synced = advance(state, 4, 4, 3)  # 4 - (0 + 1) = 3 >= 3
    assert synced


def test_state_is_immutable() -> None:
    state = SyncState()
    advance(state, 0, 0, 10)
    assert state == SyncState()
    with pytest.raises(AttributeError):
        state.delayed = (1, 1)  # type: ignore[misc]


# ---------------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------------

offsets = st.integers(min_value=0, max_value=10_000)
pairs_st = st.lists(st.tuples(offsets, offsets), max_size=60)
lag_st = st.integers(min_value=0, max_value=200)


@given(pairs=pairs_st, offset_lag_max=lag_st)
def test_property_sync_only_for_the_record_just_fed(pairs: list[tuple[int, int]], offset_lag_max: int) -> None:
    state = SyncState()
    for upstream, downstream in pairs:
        before = state
        state, synced = advance(state, upstream, downstream, offset_lag_max)
        assert (state.previous_upstream, state.previous_downstream) == (upstream, downstream)
        if synced:
            # the sync is OffsetSync(upstream, downstream) of this record, nothing older
            assert state.last_sync_downstream == downstream
            assert state.delayed is None
        else:
            assert state.last_sync_downstream == before.last_sync_downstream
            assert state.delayed == (upstream, downstream)
    # a flush can only ever emit the last record fed, and only if it did not sync itself
    _, promoted = flush_delayed(state)
    if promoted is not None:
        assert promoted == pairs[-1]


@given(pairs=pairs_st, offset_lag_max=lag_st, flush_after=st.sets(st.integers(0, 60)))
def test_property_flushes_do_not_change_sync_decisions(
    pairs: list[tuple[int, int]], offset_lag_max: int, flush_after: set[int]
) -> None:
    _, without = _feed(pairs, offset_lag_max)
    state = SyncState()
    with_flushes = []
    for i, (upstream, downstream) in enumerate(pairs):
        state, synced = advance(state, upstream, downstream, offset_lag_max)
        with_flushes.append(synced)
        if i in flush_after:
            state, _ = flush_delayed(state)
    assert with_flushes == without


@given(
    upstream_start=offsets,
    downstream_start=offsets,
    count=st.integers(min_value=1, max_value=500),
    offset_lag_max=lag_st,
)
def test_property_consecutive_records_bound_the_distance_between_syncs(
    upstream_start: int, downstream_start: int, count: int, offset_lag_max: int
) -> None:
    state = SyncState()
    sync_downstreams = []
    for i in range(count):
        state, synced = advance(state, upstream_start + i, downstream_start + i, offset_lag_max)
        if synced:
            sync_downstreams.append(downstream_start + i)
        # a group at any copied record translates to at most offset.lag.max behind it
        assert downstream_start + i - state.last_sync_downstream <= offset_lag_max
    assert sync_downstreams[0] == downstream_start
    for earlier, later in itertools.pairwise(sync_downstreams):
        assert 0 < later - earlier <= offset_lag_max + 1
    assert downstream_start + count - 1 - sync_downstreams[-1] <= offset_lag_max


# ---------------------------------------------------------------------------------------------
# CopiedSegment
# ---------------------------------------------------------------------------------------------


def test_segment_extends_with_the_next_consecutive_pair() -> None:
    seg = CopiedSegment(10, 100, 3)
    assert seg.upstream_end == 13
    assert seg.extend(13, 103) == CopiedSegment(10, 100, 4)
    assert seg == CopiedSegment(10, 100, 3)  # frozen, not mutated


@pytest.mark.parametrize(
    ("upstream", "downstream"),
    [(14, 103), (13, 104), (12, 102), (13, 102), (10, 100), (0, 0)],
)
def test_segment_rejects_non_consecutive_pairs(upstream: int, downstream: int) -> None:
    assert CopiedSegment(10, 100, 3).extend(upstream, downstream) is None


@given(
    upstream_start=offsets,
    downstream_start=offsets,
    count=st.integers(min_value=1, max_value=1000),
    upstream=offsets,
    downstream=offsets,
)
def test_property_segment_extends_only_for_consecutive_pairs(
    upstream_start: int, downstream_start: int, count: int, upstream: int, downstream: int
) -> None:
    seg = CopiedSegment(upstream_start, downstream_start, count)
    grown = seg.extend(upstream, downstream)
    consecutive = upstream == upstream_start + count and downstream == downstream_start + count
    if consecutive:
        assert grown == CopiedSegment(upstream_start, downstream_start, count + 1)
        assert grown.upstream_end == upstream + 1
    else:
        assert grown is None


@given(pairs=st.lists(st.tuples(offsets, offsets), min_size=1, max_size=60))
def test_property_folding_pairs_into_segments_covers_them_exactly(pairs: list[tuple[int, int]]) -> None:
    segments = [CopiedSegment(pairs[0][0], pairs[0][1], 1)]
    for upstream, downstream in pairs[1:]:
        grown = segments[-1].extend(upstream, downstream)
        if grown is None:
            segments.append(CopiedSegment(upstream, downstream, 1))
        else:
            segments[-1] = grown
    expanded = [(seg.upstream_start + i, seg.downstream_start + i) for seg in segments for i in range(seg.count)]
    assert expanded == pairs
    for prev, nxt in itertools.pairwise(segments):
        # a new segment starts only where the pairs stop being consecutive on either side
        assert (nxt.upstream_start, nxt.downstream_start) != (
            prev.upstream_end,
            prev.downstream_start + prev.count,
        )


# --------------------------------------------------------------------------- fold_acknowledged


def _fold_one_by_one(
    state: SyncState, ups: Sequence[int], downs: Sequence[int], lag_max: int
) -> tuple[SyncState, list[tuple[int, int]], list[CopiedSegment]]:
    """The per-record reference: :func:`advance` and :meth:`CopiedSegment.extend` per record."""
    syncs: list[tuple[int, int]] = []
    segments: list[CopiedSegment] = []
    for u, d in zip(ups, downs, strict=True):
        state, due = advance(state, u, d, lag_max)
        if due:
            syncs.append((u, d))
        grown = segments[-1].extend(u, d) if segments else None
        if grown is None:
            segments.append(CopiedSegment(u, d, 1))
        else:
            segments[-1] = grown
    return state, syncs, segments


@st.composite
def _acknowledged(draw: st.DrawFn) -> tuple[SyncState, list[int], list[int], int]:
    """A batch of acknowledged records with gaps on either side and a starting state."""
    n = draw(st.integers(0, 300))
    u = draw(st.integers(0, 50))
    d = draw(st.integers(0, 50))
    ups, downs = [], []
    for _ in range(n):
        ups.append(u)
        downs.append(d)
        u += draw(st.sampled_from([1, 1, 1, 1, 2, 5]))
        d += draw(st.sampled_from([1, 1, 1, 1, 2, -3]))
    prev_u = draw(st.integers(-1, 60))
    prev_d = draw(st.integers(-1, 60))
    last = draw(st.integers(-1, 60))
    delayed = draw(st.none() | st.tuples(st.integers(0, 60), st.integers(0, 60)))
    return SyncState(prev_u, prev_d, last, delayed), ups, downs, draw(st.sampled_from([0, 1, 3, 10, 100]))


@given(_acknowledged())
def test_fold_acknowledged_equals_advancing_record_by_record(case: tuple[SyncState, list[int], list[int], int]) -> None:
    state, ups, downs, lag_max = case
    assert fold_acknowledged(state, ups, downs, lag_max) == _fold_one_by_one(state, ups, downs, lag_max)


def test_fold_acknowledged_long_consecutive_run() -> None:
    state, syncs, segments = fold_acknowledged(SyncState(), list(range(10, 260)), list(range(0, 250)), 100)
    assert segments == [CopiedSegment(10, 0, 250)]
    assert syncs == [(10, 0), (111, 101), (212, 202)]
    assert state == SyncState(259, 249, 202, (259, 249))
    assert flush_delayed(state)[1] == (259, 249)


def test_fold_acknowledged_rejects_mismatched_lists() -> None:
    with pytest.raises(ValueError, match="3 upstream offsets but 2 downstream"):
        fold_acknowledged(SyncState(), [1, 2, 3], [1, 2], 100)
