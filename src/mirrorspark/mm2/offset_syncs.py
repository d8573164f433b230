"""Offset-sync emission (MM2 ``OffsetSyncWriter``) and the copied segments a task acknowledges."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace


@dataclass(frozen=True, slots=True)
class SyncState:
    """Offset-sync emission state of one source partition (MM2 ``PartitionState``); offsets -1 before the first record.

    ``delayed`` holds the newest record that did not sync, emitted at the next commit (KAFKA-15906).
    """

    previous_upstream: int = -1
    previous_downstream: int = -1
    last_sync_downstream: int = -1
    delayed: tuple[int, int] | None = None


def advance(state: SyncState, upstream: int, downstream: int, offset_lag_max: int) -> tuple[SyncState, bool]:
    """Feed one acknowledged record into the emission rule (MM2 3.7+ ``OffsetSyncWriter.maybeQueueOffsetSyncs``).

    A sync is due for the partition's first record, when the downstream offset ran ``offset_lag_max`` (0: every
    record) past the last sync, when upstream offsets are not consecutive, or when downstream went backwards.
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
    """Promote the delayed sync at a commit (MM2 ``OffsetSyncWriter.promoteDelayedOffsetSyncs``), or ``None`` if none.

    Done after each committed batch, so an idle partition's last record gets a sync and a caught-up group translates
    to the exact end offset.
    """
    if state.delayed is None:
        return state, None
    return replace(state, delayed=None), state.delayed


@dataclass(frozen=True, slots=True)
class CopiedSegment:
    """A run of ``count`` records copied with consecutive offsets on both sides (Kafka record offsets)."""

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

    Equivalent to :func:`advance` per record plus :meth:`CopiedSegment.extend`, in one loop over plain integers;
    returns the new state, the syncs due and the copied runs.
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
