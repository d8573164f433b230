"""Offset translation: exact copied ranges (mirrorspark) first, MM2's offset-sync rule second."""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, replace

from mirrorspark.mm2.offset_syncs import CopiedSegment
from mirrorspark.mm2.records import OffsetSync
from mirrorspark.mm2.sync_store import OffsetSyncStore

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

    Not part of MM2 (MM2 only has the sampled syncs). Per **source** topic-partition, segments in copy order:

    1. Strictly increasing and non-overlapping upstream *and* downstream; a segment continuing the last one on both
       sides is merged into it.
    2. At most ``max_segments`` (≥ 1, default 10 000, else ValueError) per partition; the oldest are dropped and
       positions before the first kept one translate to ``None`` (fall back to :class:`OffsetSyncStore`).
    3. Downstream going backwards (target truncated or re-created) drops every segment.
    4. Upstream going backwards with downstream forward (a retried batch, a seek) cuts the segments at the new
       upstream start, so each upstream offset maps to its newest copy (MM2 drops all history).
    5. Rules 3 and 4 assume one writer, so segments carry the copier's lease epoch and those of an epoch older than
       the newest seen are ignored (a zombie's late report, ``engine-audit.md`` F5). Ignoring a copy may re-read
       duplicates, never skip a record.

    Offsets are Kafka's: an upstream/downstream offset is a record's; a position is the next to read.
    """

    __slots__ = ("_epochs", "_lock", "_max_segments", "_segments")

    def __init__(self, *, max_segments: int = 10_000) -> None:
        if max_segments < 1:
            raise ValueError(f"max_segments must be at least 1, got {max_segments}")
        self._max_segments = max_segments
        self._segments: dict[tuple[str, int], list[CopiedSegment]] = {}
        self._epochs: dict[tuple[str, int], int] = {}  # newest lease epoch seen per partition
        self._lock = threading.Lock()  # a flow's reports add while another flow's checkpoints translate

    @property
    def max_segments(self) -> int:
        """Segments kept per partition."""
        return self._max_segments

    def add(self, topic: str, partition: int, segments: Iterable[CopiedSegment], *, epoch: int = 0) -> bool:
        """Record segments copied for one source partition, in copy order, by lease ``epoch`` (0 = none).

        Returns ``False`` if they were ignored (a superseded epoch's); raises ValueError for a segment with ``count
        < 1``.
        """
        key = (topic, partition)
        with self._lock:
            if epoch < self._epochs.get(key, 0):
                return False
            self._epochs[key] = epoch
            kept = self._segments.setdefault(key, [])
            for segment in segments:
                if segment.count < 1:
                    raise ValueError(f"a copied segment holds at least one record, got {segment}")
                self._append(kept, segment)
            excess = len(kept) - self._max_segments
            if excess > 0:
                del kept[:excess]
            return True

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
        """Return the kept segments of a partition, oldest first."""
        with self._lock:
            return tuple(self._segments.get((topic, partition), ()))

    def forget_topic(self, topic: str) -> None:
        """Drop every kept segment of the **upstream** ``topic`` (deleted and re-created: they translate nothing)."""
        with self._lock:
            for key in [k for k in self._segments if k[0] == topic]:
                del self._segments[key]

    def partitions(self) -> set[tuple[str, int]]:
        """Return the ``(upstream topic, partition)`` pairs with at least one kept segment (a new set)."""
        with self._lock:
            return {key for key, kept in self._segments.items() if kept}

    def translate_downstream(self, topic: str, partition: int, upstream_offset: int) -> int | None:
        """Translate a source position to the exact target position; ``None`` if unknown (use :class:`OffsetSyncStore`).

        Inside a segment, ``downstream_start + (upstream_offset - upstream_start)``; at its end or in a gap after
        it, one past its last copy. Nothing is skipped and nothing read again.
        """
        with self._lock:
            kept = self._segments.get((topic, partition))
            index = bisect_right(kept, upstream_offset, key=_upstream_start_of) - 1 if kept else -1
            segment = kept[index] if kept and index >= 0 else None
        if segment is None:
            return None
        if upstream_offset < segment.upstream_end:
            return segment.downstream_start + (upstream_offset - segment.upstream_start)
        return _downstream_end(segment)

    def translate_upstream(self, topic: str, partition: int, downstream_offset: int) -> int | None:
        """Translate a target position back to a source position (failback), exactly; ``None`` if unknown.

        Inside a segment, ``upstream_start + (downstream_offset - downstream_start)``; in a gap after it, its
        upstream end. Exact because copying preserves order: nothing skipped, nothing read again.
        """
        with self._lock:
            kept = self._segments.get((topic, partition))
            index = bisect_right(kept, downstream_offset, key=_downstream_start_of) - 1 if kept else -1
            segment = kept[index] if kept and index >= 0 else None
        if segment is None:
            return None
        if downstream_offset < _downstream_end(segment):
            return segment.upstream_start + (downstream_offset - segment.downstream_start)
        return segment.upstream_end


# --------------------------------------------------------------------------- translation


def translate_upstream_with_syncs(
    store: OffsetSyncStore, topic: str, partition: int, downstream_offset: int
) -> int | None:
    """Translate a target position back to a source position through the forward flow's syncs (failback).

    The reverse of MM2's "+1 rule": with ``s`` the newest sync at or before ``downstream_offset``,
    ``s.upstream_offset`` if it is exactly there, else ``s.upstream_offset + 1``. Never skips, because downstream
    offsets grow with upstream ones between the store's resets; it re-reads the records between. ``None`` if the
    store is not initialized or every retained sync lies after ``downstream_offset``.
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
    """A source position translated to the target, with the records a consumer starting there reads again.

    ``rereads`` is 0 when exact; for MM2's "+1 rule" ``upstream_offset - sync.upstream_offset - 1`` (an upper bound
    when the source has gaps there).
    """

    upstream_offset: int
    downstream_offset: int
    rereads: int
    exact: bool


def translate(
    store: OffsetSyncStore, copied: CopiedRanges | None, topic: str, partition: int, upstream_offset: int
) -> Translation | None:
    """Translate a source position, exactly if the copied segments know it, else by MM2's rule.

    ``None`` when neither can: no segment reaches back to it and the store is not initialized, has no sync for the
    partition, or says -1 (too old to translate).
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


def _newest_sync_at_or_before_downstream(
    store: OffsetSyncStore, topic: str, partition: int, downstream_offset: int
) -> OffsetSync | None:
    for s in store.syncs(topic, partition):  # newest first
        if s.downstream_offset <= downstream_offset:
            return s
    return None


def translate_back(
    store: OffsetSyncStore | None, copied: CopiedRanges | None, topic: str, partition: int, offset: int
) -> Translation | None:
    """Translate a position on a flow's target back to its source (failback); beyond MM2, which cannot.

    For a flow ``T->S``, a group on S consuming ``T.topic1`` resumes on T at the result: exact copied segments
    first, else :func:`translate_upstream_with_syncs`; ``None`` when neither can.
    """
    if copied is not None:
        back = copied.translate_upstream(topic, partition, offset)
        if back is not None:
            return Translation(offset, back, 0, True)
    if store is None:
        return None
    back = translate_upstream_with_syncs(store, topic, partition, offset)
    if back is None:
        return None
    sync = _newest_sync_at_or_before_downstream(store, topic, partition, offset)
    rereads = 0 if sync is None or sync.downstream_offset == offset else max(0, offset - sync.downstream_offset - 1)
    return Translation(offset, back, rereads, False)


__all__ = ["CopiedRanges", "Translation", "translate", "translate_back", "translate_upstream_with_syncs"]
