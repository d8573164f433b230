"""Progress and offset syncs, MM2's way: pure state machines, no I/O.

Two pieces of MM2's source task live here:

* :class:`SyncState` / :func:`advance` — the per-partition offset-sync emission
  rule of MM2's ``MirrorSourceTask`` / ``OffsetSyncWriter`` (mm2.md §6): which
  (upstream offset, downstream offset) pairs become ``OffsetSync`` records.
* :class:`CopiedSegment` — runs of records copied contiguously, which the data
  path reports so that offset translation can be exact where MM2's is
  conservative (issue: consumer migration).

and the translation side, MM2's checkpoint task and what mirrorspark adds to it:

* :class:`OffsetSyncStore` — a port of MM2's ``OffsetSyncStore`` (mm2.md §7): 64
  exponentially spaced syncs per source partition and MM2's downstream rule.
* :class:`CopiedRanges` — mirrorspark's exact record of copied segments, which
  translates both ways without re-reads where it still has the history.
* :func:`translate_upstream_with_syncs` — the conservative reverse rule (failback)
  over the syncs of the forward flow.
* :func:`translate` / :class:`Translation` — exact where possible, MM2's rule
  otherwise, reporting how many records a consumer will read again.

Offsets follow Kafka's meaning throughout: an *upstream offset* is a record's
offset in the source partition, a *downstream offset* is the offset the target
broker assigned to its copy, and a *position* (or committed offset) is the next
offset to read.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from mirrorspark.records import OffsetSync

__all__ = [
    "SYNCS_PER_PARTITION",
    "CopiedRanges",
    "CopiedSegment",
    "OffsetSyncStore",
    "SyncState",
    "Translation",
    "advance",
    "flush_delayed",
    "fold_acknowledged",
    "translate",
    "translate_upstream_with_syncs",
]


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


# --------------------------------------------------------------------------- OffsetSyncStore (mm2.md §7)

SYNCS_PER_PARTITION = 64
"""Slots per source partition in :class:`OffsetSyncStore` (MM2 ``OffsetSyncStore.SYNCS_PER_PARTITION``)."""

_INT64_MIN = -(1 << 63)
_UINT64_SPAN = 1 << 64


def _int64(value: int) -> int:
    """``value`` wrapped to a signed 64-bit integer, as Java's ``long`` arithmetic wraps."""
    return (value - _INT64_MIN) % _UINT64_SPAN + _INT64_MIN


def _invariant_b(x: OffsetSync, i: int, y: OffsetSync, j: int) -> bool:
    """MM2 ``invariantB``: ``x`` at slot ``i`` is not too far ahead of ``y`` at slot ``j`` (i < j).

    Holds when ``x`` is ``y`` (identity), when ``y.u + 2^j - 2^i`` overflows to a
    negative long, or when ``x.u <= y.u + 2^j - 2^i``.
    """
    if x is y:
        return True
    bound = _int64(y.upstream_offset + (1 << j) - (1 << i))
    return bound < 0 or x.upstream_offset <= bound


def _invariant_c(x: OffsetSync, i: int, y: OffsetSync) -> bool:
    """MM2 ``invariantC``: ``x`` at slot ``i`` is at least ``2^max(i-2, 0)`` ahead of the later ``y``.

    Holds when ``x`` is ``y`` (identity), or when ``y.u + 2^max(i-2, 0)`` does not
    overflow and ``x.u`` reaches it.
    """
    if x is y:
        return True
    bound = _int64(y.upstream_offset + (1 << max(i - 2, 0)))
    return bound >= 0 and x.upstream_offset >= bound


def _updated_slots(original: tuple[OffsetSync, ...], sync: OffsetSync) -> tuple[OffsetSync, ...]:
    """The slot array after a non-rewinding ``sync``: MM2 ``updateSyncArray`` (KAFKA-15202, mm2.md §7.2).

    Slot 0 takes ``sync``; each later slot keeps its sync while invariant B still
    holds against the slot before it, otherwise takes the best candidate found by
    walking the original array (an older sync that satisfies B and C at this
    index, or ``sync`` itself). The first slot that needs no repair ends the walk:
    B holding there implies it holds for every later slot.
    """
    slots = list(original)
    replacement = sync
    replacement_index = 0
    slots[0] = sync
    for current in range(1, SYNCS_PER_PARTITION):
        previous = current - 1
        while True:
            old = original[replacement_index]
            is_recent = _invariant_b(slots[previous], previous, old, current)
            separated_from_previous = _invariant_c(slots[previous], previous, old)
            following = current + 1
            separated_from_next = following >= SYNCS_PER_PARTITION or _invariant_c(old, current, slots[following])
            duplicate = replacement_index + 1 < SYNCS_PER_PARTITION and original[replacement_index + 1] is old
            promote = is_recent and separated_from_previous and separated_from_next
            if promote:
                replacement = old
            skip = duplicate or not separated_from_previous
            if promote or skip:
                replacement_index += 1
            if not (replacement_index < current and skip):
                break
        if _invariant_b(slots[previous], previous, slots[current], current):
            break
        slots[current] = replacement
    return tuple(slots)


class OffsetSyncStore:
    """Offset syncs of a flow, kept for translation: a port of MM2's ``OffsetSyncStore`` (mm2.md §7).

    Per **source** topic-partition the store keeps an array of 64 slots
    (:data:`SYNCS_PER_PARTITION`), slot 0 the newest; a run of slots may hold the
    same sync. Syncs are fed in the order of the offset-syncs topic with
    :meth:`update`; translation is refused until :meth:`mark_initialized` says the
    initial read-to-end finished (MM2 ``readToEnd``).

    Invariants after every update (checked by the unit tests), for slots
    ``i < j`` holding distinct syncs with upstream offsets ``u_i``, ``u_j``:

    * A — slot 0 holds the newest sync.
    * B — older slots are not too old: ``u_i <= u_j + 2^j - 2^i``.
    * C — roughly exponential spacing: ``u_i >= u_j + 2^max(i-2, 0)``.
    * D — slot 63 holds the earliest sync usable for translation: the sync that
      last reset the array (the partition's first sync, an upstream rewind, or
      the last sync of the initial read when ``read_to_end_required``). This
      holds while upstream offsets stay at or below 2^62: B's bound for slot 63
      contains Java's ``1L << 63``, which is negative, so beyond that MM2 may
      replace slot 63 too, and so does this port.

    Bounds are computed in signed 64-bit arithmetic with wrap-around, and a bound
    that overflows counts as satisfied, exactly as in MM2. "Same sync" means the
    same object (MM2 compares references): every :meth:`update` should pass a new
    :class:`~mirrorspark.records.OffsetSync`, as decoding a record does; two syncs
    with equal numbers are still two syncs, while passing one object twice is
    feeding the same sync twice.

    Mirrors ``OffsetSyncStore`` of MM2 3.8+: KAFKA-14666 (keep history for older
    offsets), KAFKA-15202 (slot update that keeps the most distinct syncs),
    KAFKA-15906 (delayed syncs make the newest record translatable) and
    KAFKA-15905 (only the last sync of the initial read when the checkpoints could
    not be loaded).

    Parameters
    ----------
    read_to_end_required:
        MM2 ``initializationMustReadToEnd``: while not initialized, every sync
        replaces the whole array, so after startup only the latest sync per
        partition is usable (older group offsets translate to ``-1`` until newer
        syncs arrive). MM2 sets it when the checkpoint store failed to load.
        Default ``False``: the initial read keeps the full history.

    Notes
    -----
    Not safe for concurrent :meth:`update` calls. A reader running concurrently
    with one writer sees either the old or the new array of a partition, never a
    half-updated one: like MM2, an update builds a new array and then publishes it.
    """

    __slots__ = ("_initialized", "_read_to_end_required", "_slots")

    def __init__(self, *, read_to_end_required: bool = False) -> None:
        self._read_to_end_required = read_to_end_required
        self._initialized = False
        self._slots: dict[tuple[str, int], tuple[OffsetSync, ...]] = {}

    @property
    def read_to_end_required(self) -> bool:
        """Whether the initial read keeps only the last sync per partition (MM2 ``initializationMustReadToEnd``)."""
        return self._read_to_end_required

    @property
    def initialized(self) -> bool:
        """Whether :meth:`mark_initialized` was called (translation is available)."""
        return self._initialized

    def mark_initialized(self) -> None:
        """Record that the initial read-to-end of the offset-syncs topic finished (MM2 ``readToEnd = true``).

        From now on :meth:`translate_downstream` answers, and updates keep history
        even when ``read_to_end_required``. Idempotent.
        """
        self._initialized = True

    def update(self, sync: OffsetSync) -> None:
        """Apply one offset sync (MM2 ``handleRecord``), in offsets-topic order.

        * First sync of its partition → every slot holds it.
        * Initial read with ``read_to_end_required``, or an upstream rewind
          (``sync.upstream_offset`` below slot 0's) → every slot holds it; the old
          history is dropped.
        * Otherwise the slots are updated with MM2's algorithm (mm2.md §7.2),
          keeping invariants A to D.

        Parameters
        ----------
        sync:
            The sync, keyed by its **upstream** topic and partition; offsets are
            signed 64-bit. Must be a new object for every record (see the class
            docstring on identity).
        """
        key = (sync.topic, sync.partition)
        original = self._slots.get(key)
        only_load_last = self._read_to_end_required and not self._initialized
        if original is None or only_load_last or sync.upstream_offset < original[0].upstream_offset:
            self._slots[key] = (sync,) * SYNCS_PER_PARTITION
        else:
            self._slots[key] = _updated_slots(original, sync)

    def lookup(self, topic: str, partition: int, upstream_offset: int) -> OffsetSync | None:
        """The sync MM2 would translate ``upstream_offset`` with (MM2 ``latestOffsetSync``).

        Parameters
        ----------
        topic, partition:
            The **upstream** (source) topic-partition.
        upstream_offset:
            A position on the source (committed offset = next offset to read).

        Returns
        -------
        OffsetSync or None
            The newest retained sync with ``upstream_offset <= upstream_offset``,
            else the oldest retained sync (slot 63, whose upstream offset is then
            greater: "too old to translate"); ``None`` before :meth:`mark_initialized`
            or when no sync was seen for the partition.
        """
        if not self._initialized:
            return None
        slots = self._slots.get((topic, partition))
        if slots is None:
            return None
        for sync in slots:
            if sync.upstream_offset <= upstream_offset:
                return sync
        return slots[-1]

    def translate_downstream(self, topic: str, partition: int, upstream_offset: int) -> int | None:
        """Translate a source position to a target position (MM2 ``translateDownstream``, mm2.md §7.1).

        With ``s`` = :meth:`lookup`: ``s.downstream_offset`` if ``s`` is exactly at
        ``upstream_offset``, else ``s.downstream_offset + 1`` — the sync only says
        where the record at ``s.upstream_offset`` landed, so one past it is the
        furthest position that cannot skip a later record (the "+1 rule"). This
        re-reads up to ``upstream_offset - s.upstream_offset - 1`` records.

        Parameters
        ----------
        topic, partition:
            The **upstream** (source) topic-partition.
        upstream_offset:
            A position on the source (committed offset = next offset to read).

        Returns
        -------
        int or None
            The position on the target (next offset to read); ``-1`` when every
            retained sync is newer than ``upstream_offset`` (too old to translate;
            MM2's checkpoint task drops it); ``None`` before
            :meth:`mark_initialized` or when no sync was seen for the partition.
        """
        sync = self.lookup(topic, partition, upstream_offset)
        if sync is None:
            return None
        if sync.upstream_offset > upstream_offset:
            return -1
        if sync.upstream_offset == upstream_offset:
            return sync.downstream_offset
        return sync.downstream_offset + 1

    def slots(self, topic: str, partition: int) -> tuple[OffsetSync, ...]:
        """The 64 slots of a partition, newest first, repeats included (MM2 ``syncFor``, for tests).

        Returns
        -------
        tuple[OffsetSync, ...]
            64 syncs, or ``()`` if no sync was seen for the partition.
        """
        return self._slots.get((topic, partition), ())

    def syncs(self, topic: str, partition: int) -> tuple[OffsetSync, ...]:
        """The distinct retained syncs of a partition, newest first.

        Available before :meth:`mark_initialized` too (inspection).

        Returns
        -------
        tuple[OffsetSync, ...]
            At most 64 syncs, distinct by identity, in slot order (decreasing
            upstream offset); ``()`` if no sync was seen for the partition.
        """
        seen: set[int] = set()
        distinct: list[OffsetSync] = []
        for sync in self._slots.get((topic, partition), ()):
            if id(sync) not in seen:
                seen.add(id(sync))
                distinct.append(sync)
        return tuple(distinct)

    def partitions(self) -> set[tuple[str, int]]:
        """The ``(upstream topic, partition)`` pairs with at least one sync."""
        return set(self._slots)


# --------------------------------------------------------------------------- CopiedRanges (mirrorspark)


def _downstream_end(segment: CopiedSegment) -> int:
    """Downstream offset one past the segment's last record."""
    return segment.downstream_start + segment.count


def _upstream_start_of(segment: CopiedSegment) -> int:
    return segment.upstream_start


def _downstream_start_of(segment: CopiedSegment) -> int:
    return segment.downstream_start


class CopiedRanges:
    """What the data path copied, segment by segment: exact translation where MM2's is conservative.

    Per **source** topic-partition an ordered list of
    :class:`CopiedSegment` (copy order), strictly increasing and
    non-overlapping on both sides: each segment starts at or after the previous
    one's end upstream *and* downstream. A segment that continues the last one on
    both sides is merged into it. At most ``max_segments`` segments are kept per
    partition; the oldest are dropped, and positions before the first kept
    segment become unknown (``None``; fall back to :class:`OffsetSyncStore`).

    When a new segment breaks the order:

    * **downstream** goes backwards (target partition truncated or recreated) →
      the old segments point at records that no longer exist: all are dropped.
    * **upstream** goes backwards with downstream still forward (records copied
      again, e.g. a retried batch or a seek) → segments are cut at the new
      segment's upstream start and the rest dropped, so each upstream offset maps
      to its newest copy. (MM2's store drops all history in this case.)

    Not part of MM2: MM2 only has the sampled syncs. Offsets are Kafka's: an
    upstream/downstream offset is a record's offset; a position is the next
    offset to read.

    Parameters
    ----------
    max_segments:
        Segments kept per partition (≥ 1), default 10 000.

    Raises
    ------
    ValueError
        If ``max_segments`` is less than 1.
    """

    __slots__ = ("_max_segments", "_segments")

    def __init__(self, *, max_segments: int = 10_000) -> None:
        if max_segments < 1:
            raise ValueError(f"max_segments must be at least 1, got {max_segments}")
        self._max_segments = max_segments
        self._segments: dict[tuple[str, int], list[CopiedSegment]] = {}

    @property
    def max_segments(self) -> int:
        """Segments kept per partition."""
        return self._max_segments

    def add(self, topic: str, partition: int, segments: Iterable[CopiedSegment]) -> None:
        """Record segments copied for one source partition, in copy order.

        Parameters
        ----------
        topic, partition:
            The **upstream** (source) topic-partition.
        segments:
            The segments, oldest first, each with ``count >= 1``.

        Raises
        ------
        ValueError
            If a segment has ``count < 1`` (nothing is recorded from that segment on).
        """
        kept = self._segments.setdefault((topic, partition), [])
        for segment in segments:
            if segment.count < 1:
                raise ValueError(f"a copied segment holds at least one record, got {segment}")
            self._append(kept, segment)
        excess = len(kept) - self._max_segments
        if excess > 0:
            del kept[:excess]

    @staticmethod
    def _append(kept: list[CopiedSegment], segment: CopiedSegment) -> None:
        if not kept:
            kept.append(segment)
            return
        last = kept[-1]
        last_downstream_end = _downstream_end(last)
        if segment.downstream_start < last_downstream_end:
            kept[:] = [segment]
            return
        if segment.upstream_start < last.upstream_end:
            cut = bisect_right(kept, segment.upstream_start - 1, key=_upstream_start_of)
            del kept[cut:]
            if kept and kept[-1].upstream_end > segment.upstream_start:
                head = kept[-1]
                kept[-1] = replace(head, count=segment.upstream_start - head.upstream_start)
            kept.append(segment)
            return
        if segment.upstream_start == last.upstream_end and segment.downstream_start == last_downstream_end:
            kept[-1] = replace(last, count=last.count + segment.count)
            return
        kept.append(segment)

    def segments(self, topic: str, partition: int) -> tuple[CopiedSegment, ...]:
        """The kept segments of a partition, oldest first (``()`` if none)."""
        return tuple(self._segments.get((topic, partition), ()))

    def partitions(self) -> set[tuple[str, int]]:
        """The ``(upstream topic, partition)`` pairs with at least one kept segment."""
        return {key for key, kept in self._segments.items() if kept}

    def translate_downstream(self, topic: str, partition: int, upstream_offset: int) -> int | None:
        """Translate a source position to the exact target position.

        * Inside a segment: ``downstream_start + (upstream_offset - upstream_start)``.
        * At a segment's end, in the gap after it (upstream records that were not
          copied) or after the last segment (records not copied yet): one past the
          segment's last downstream record.

        Every copied record at or after ``upstream_offset`` lies at or after the
        result, and every copied record before it lies before the result: nothing
        is skipped and nothing read again.

        Parameters
        ----------
        topic, partition:
            The **upstream** (source) topic-partition.
        upstream_offset:
            A position on the source (committed offset = next offset to read).

        Returns
        -------
        int or None
            The position on the target (next offset to read), or ``None`` if
            ``upstream_offset`` lies before the first kept segment or nothing was
            recorded for the partition (unknown: use :class:`OffsetSyncStore`).
        """
        kept = self._segments.get((topic, partition))
        if not kept:
            return None
        index = bisect_right(kept, upstream_offset, key=_upstream_start_of) - 1
        if index < 0:
            return None
        segment = kept[index]
        if upstream_offset < segment.upstream_end:
            return segment.downstream_start + (upstream_offset - segment.upstream_start)
        return _downstream_end(segment)

    def translate_upstream(self, topic: str, partition: int, downstream_offset: int) -> int | None:
        """Translate a target position back to a source position (failback), exactly.

        * Inside a segment: ``upstream_start + (downstream_offset - downstream_start)``.
        * In the gap after a segment (target records that are not copies from
          this partition) or after the last segment: the segment's upstream end.

        Every copied record whose copy is at or after ``downstream_offset`` lies
        at or after the result upstream (nothing skipped; later copies have later
        upstream offsets because copying preserves order), and every record whose
        copy is before ``downstream_offset`` lies before it (nothing read again).

        Parameters
        ----------
        topic, partition:
            The **upstream** (source) topic-partition whose copy is being read.
        downstream_offset:
            A position on the target (committed offset = next offset to read).

        Returns
        -------
        int or None
            The position on the source (next offset to read), or ``None`` if
            ``downstream_offset`` lies before the first kept segment or nothing was
            recorded for the partition.
        """
        kept = self._segments.get((topic, partition))
        if not kept:
            return None
        index = bisect_right(kept, downstream_offset, key=_downstream_start_of) - 1
        if index < 0:
            return None
        segment = kept[index]
        if downstream_offset < _downstream_end(segment):
            return segment.upstream_start + (downstream_offset - segment.downstream_start)
        return segment.upstream_end


# --------------------------------------------------------------------------- translation


def translate_upstream_with_syncs(
    store: OffsetSyncStore, topic: str, partition: int, downstream_offset: int
) -> int | None:
    """Translate a target position back to a source position through the forward flow's syncs.

    The reverse of MM2's "+1 rule", for failback when no :class:`CopiedRanges`
    history is available: take the newest retained sync ``s`` with
    ``s.downstream_offset <= downstream_offset``; return ``s.upstream_offset`` if
    equal, else ``s.upstream_offset + 1``.

    Why it never skips: copying preserves order, so downstream offsets grow with
    upstream offsets between the store's resets (an upstream rewind clears the
    store; a downstream reset makes newer syncs, which are preferred, point into
    the new target log). A record whose copy is at or after ``downstream_offset``
    was therefore copied no earlier than the record of ``s``: it is that record
    itself (only if ``s.downstream_offset == downstream_offset``, hence the
    equal case) or a later one, with an upstream offset of at least
    ``s.upstream_offset + 1``. Records between ``s.upstream_offset + 1`` and the
    true position are read again on the source.

    Parameters
    ----------
    store:
        The offset-sync store of the flow that copied source → target.
    topic, partition:
        The **upstream** (source) topic-partition.
    downstream_offset:
        A position on the target (committed offset = next offset to read).

    Returns
    -------
    int or None
        The position on the source (next offset to read), or ``None`` if the
        store is not initialized or every retained sync lies after
        ``downstream_offset``.
    """
    if not store.initialized:
        return None
    for sync in store.syncs(topic, partition):
        if sync.downstream_offset == downstream_offset:
            return sync.upstream_offset
        if sync.downstream_offset < downstream_offset:
            return sync.upstream_offset + 1
    return None


@dataclass(frozen=True, slots=True)
class Translation:
    """A source position translated to the target.

    Attributes
    ----------
    upstream_offset:
        The position on the source (committed offset = next offset to read).
    downstream_offset:
        The position on the target (next offset to read there).
    rereads:
        Number of records a consumer starting at ``downstream_offset`` reads
        again (copies of records before ``upstream_offset``): 0 when exact; for
        MM2's "+1 rule" ``upstream_offset - sync.upstream_offset - 1``, exact when
        the source has no gaps there, an upper bound otherwise.
    exact:
        Whether the translation came from :class:`CopiedRanges` (no re-reads)
        rather than from MM2's :class:`OffsetSyncStore` rule.
    """

    upstream_offset: int
    downstream_offset: int
    rereads: int
    exact: bool


def translate(
    store: OffsetSyncStore, copied: CopiedRanges | None, topic: str, partition: int, upstream_offset: int
) -> Translation | None:
    """Translate a source position, exactly if the copied segments know it, else by MM2's rule.

    Parameters
    ----------
    store:
        The flow's offset-sync store (MM2's rule, mm2.md §7.1).
    copied:
        The flow's copied segments, or ``None`` when there are none (e.g. MM2
        copied the data, or after a restart).
    topic, partition:
        The **upstream** (source) topic-partition.
    upstream_offset:
        A position on the source (committed offset = next offset to read).

    Returns
    -------
    Translation or None
        The target position with its re-read count, or ``None`` when neither
        can translate: the segments do not reach back to ``upstream_offset`` and
        the store is not initialized, has no sync for the partition, or says
        ``-1`` (too old to translate).
    """
    if copied is not None:
        exact = copied.translate_downstream(topic, partition, upstream_offset)
        if exact is not None:
            return Translation(upstream_offset, exact, 0, True)
    sync = store.lookup(topic, partition, upstream_offset)
    if sync is None or sync.upstream_offset > upstream_offset:
        return None
    if sync.upstream_offset == upstream_offset:
        return Translation(upstream_offset, sync.downstream_offset, 0, False)
    return Translation(upstream_offset, sync.downstream_offset + 1, upstream_offset - sync.upstream_offset - 1, False)
