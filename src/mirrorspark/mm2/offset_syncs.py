"""Offset-sync emission (MM2 ``OffsetSyncWriter``) and the copied segments a task acknowledges."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace


@dataclass(frozen=True, slots=True)
class SyncState:
    """Offset-sync emission state of one source partition (MM2 ``PartitionState``).

    Attributes
    ----------
    previous_upstream:
        Upstream offset of the last acknowledged record, ``-1`` before the first.
    previous_downstream:
        Downstream offset of the last acknowledged record, ``-1`` before the first.
    last_sync_downstream:
        Downstream offset of the last record that produced a sync, ``-1`` before
        the first (so the first record of a flow's lifetime always syncs).
    delayed:
        ``(upstream, downstream)`` of the newest record that did *not* sync, to be
        emitted at the next commit (KAFKA-15906), or ``None``.
    """

    previous_upstream: int = -1
    previous_downstream: int = -1
    last_sync_downstream: int = -1
    delayed: tuple[int, int] | None = None


def advance(state: SyncState, upstream: int, downstream: int, offset_lag_max: int) -> tuple[SyncState, bool]:
    """Feed one acknowledged record into the emission rule.

    Mirrors ``OffsetSyncWriter.maybeQueueOffsetSyncs`` (MM2 3.7+): a sync is due
    when this is the partition's first record, when the downstream offset ran
    ``offset.lag.max`` or more past the last sync, when the upstream offsets are
    not consecutive (compaction, transaction markers, a seek) or when the
    downstream offset went backwards (target truncated or recreated).

    Parameters
    ----------
    state:
        The partition's state before the record.
    upstream, downstream:
        The record's source offset and the offset the target assigned its copy.
    offset_lag_max:
        ``offset.lag.max`` in records (MM2 default 100); 0 syncs every record.

    Returns
    -------
    tuple[SyncState, bool]
        The new state, and whether ``OffsetSync(upstream, downstream)`` must be
        emitted now. When it need not, the pair is kept as ``delayed``.
    """
    should_sync = (
        state.last_sync_downstream == -1
        or downstream - (state.last_sync_downstream + 1) >= offset_lag_max
        or upstream - state.previous_upstream != 1
        or downstream < state.previous_downstream
    )
    if should_sync:
        return SyncState(upstream, downstream, downstream, None), True
    return SyncState(upstream, downstream, state.last_sync_downstream, (upstream, downstream)), False


def flush_delayed(state: SyncState) -> tuple[SyncState, tuple[int, int] | None]:
    """Promote the delayed sync at a commit (MM2 ``OffsetSyncWriter.promoteDelayedOffsetSyncs``).

    MM2 does this after each offset flush; mirrorspark after each committed
    batch, so the last record of a partition that goes idle always gets a sync
    and a caught-up consumer group translates to the exact end offset.

    Returns
    -------
    tuple[SyncState, tuple[int, int] | None]
        The state without its delayed slot, and the ``(upstream, downstream)``
        pair to emit, or ``None`` if nothing was delayed.
    """
    if state.delayed is None:
        return state, None
    return replace(state, delayed=None), state.delayed


@dataclass(frozen=True, slots=True)
class CopiedSegment:
    """A run of records copied with consecutive offsets on both sides.

    Upstream offsets ``upstream_start .. upstream_start + count - 1`` landed at
    downstream offsets ``downstream_start .. downstream_start + count - 1``.

    Attributes
    ----------
    upstream_start, downstream_start:
        Offsets of the run's first record in the source and target partition.
    count:
        Number of records in the run (≥ 1).
    """

    upstream_start: int
    downstream_start: int
    count: int

    @property
    def upstream_end(self) -> int:
        """Upstream offset one past the run's last record."""
        return self.upstream_start + self.count

    def extend(self, upstream: int, downstream: int) -> CopiedSegment | None:
        """Return the run grown by one record, or ``None`` if the record does not continue it."""
        if upstream == self.upstream_start + self.count and downstream == self.downstream_start + self.count:
            return CopiedSegment(self.upstream_start, self.downstream_start, self.count + 1)
        return None


def fold_acknowledged(
    state: SyncState,
    upstream: Sequence[int],
    downstream: Sequence[int],
    offset_lag_max: int,
) -> tuple[SyncState, list[tuple[int, int]], list[CopiedSegment]]:
    """Feed a batch of acknowledged records into the emission rule and the copied runs at once.

    Equivalent to calling :func:`advance` for every ``(upstream[i], downstream[i])`` in
    order and growing :class:`CopiedSegment` runs with :meth:`CopiedSegment.extend`, but
    with plain integers in one loop: the data path collects delivery reports as two lists
    and folds them when a batch ends, instead of allocating a state and a segment per
    record in the delivery callback.

    Parameters
    ----------
    state:
        The partition's state before the batch.
    upstream, downstream:
        Source offsets of the acknowledged records in production order, and the offsets
        the target assigned their copies (same length).
    offset_lag_max:
        ``offset.lag.max`` in records.

    Returns
    -------
    tuple[SyncState, list[tuple[int, int]], list[CopiedSegment]]
        The state after the batch (its ``delayed`` slot holds the newest record that did
        not sync, as :func:`advance` leaves it), the syncs due in order, and the copied runs.

    Raises
    ------
    ValueError
        If the two sequences differ in length.
    """
    if len(upstream) != len(downstream):
        raise ValueError(f"{len(upstream)} upstream offsets but {len(downstream)} downstream offsets")
    if not upstream:
        return state, [], []
    prev_u, prev_d = state.previous_upstream, state.previous_downstream
    last_sync = state.last_sync_downstream
    delayed = state.delayed
    delayed_at = -1  # index of the newest record that did not sync in this batch
    syncs: list[tuple[int, int]] = []
    segments: list[CopiedSegment] = []
    seg_u = seg_d = -1
    seg_n = 0
    for i, u in enumerate(upstream):
        d = downstream[i]
        if last_sync == -1 or d - (last_sync + 1) >= offset_lag_max or u - prev_u != 1 or d < prev_d:
            syncs.append((u, d))
            last_sync = d
            delayed_at = -1
            delayed = None
        else:
            delayed_at = i
        if seg_n and u == seg_u + seg_n and d == seg_d + seg_n:
            seg_n += 1
        else:
            if seg_n:
                segments.append(CopiedSegment(seg_u, seg_d, seg_n))
            seg_u, seg_d, seg_n = u, d, 1
        prev_u, prev_d = u, d
    segments.append(CopiedSegment(seg_u, seg_d, seg_n))
    if delayed_at >= 0:
        delayed = (upstream[delayed_at], downstream[delayed_at])
    return SyncState(prev_u, prev_d, last_sync, delayed), syncs, segments


__all__ = ["CopiedSegment", "SyncState", "advance", "flush_delayed", "fold_acknowledged"]
