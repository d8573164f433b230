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

    Both rules assume **one writer**: after a rewind, copying goes on from the
    new segment's end. Two writers break that assumption: a copy task of an
    instance that lost the flow's lease (a zombie) whose report arrives after
    the new holder's (``engine-audit.md`` F5). Its segment, upstream back and
    downstream forward, would cut the new holder's newer segments, and a
    position past its end would translate to after it, past records whose only
    copy lies before it (the audit's case: (100→1000, 100 records) then
    (100→1100, 50 records) translated 150 to 1150, while 150..199 sit at
    1050..1099). So every segment comes with the **lease epoch** of the
    instance that copied it (:class:`~mirrorspark.replication.worker.lease.FlowLease`,
    growing at every take-over): segments of an epoch older than the newest
    epoch seen for the partition are ignored. Ignoring a copy never makes a
    translation skip a record (it may only re-read duplicates). Epochs start
    over only if the lease topic is deleted: segments of the new, smaller epochs
    are then ignored until the process restarts, and translation falls back to
    the newest kept segment (re-reads, never skips).

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
        """Record segments copied for one source partition, in copy order.

        Parameters
        ----------
        topic, partition:
            The **upstream** (source) topic-partition.
        segments:
            The segments, oldest first, each with ``count >= 1``.
        epoch:
            The lease epoch of the instance that copied them (0: no lease, or a report written
            before reports carried it). Segments of an epoch older than the newest one seen for
            the partition are ignored (see the class notes).

        Returns
        -------
        bool
            Whether the segments were taken (``False``: a superseded epoch's, ignored).

        Raises
        ------
        ValueError
            If a segment has ``count < 1`` (nothing is recorded from that segment on).
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
        """Return the kept segments of a partition, oldest first.

        Parameters
        ----------
        topic, partition:
            The **upstream** (source) topic-partition.

        Returns
        -------
        tuple[CopiedSegment, ...]
            The segments in increasing upstream offset; ``()`` if none is kept.
        """
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
    """Translate a position on a flow's target back to its source (failback), exactly if the copied segments know it.

    For a flow ``T->S``: a group on S consuming the copy of ``topic`` (e.g.
    ``T.topic1`` on S) resumes on T at the result. The reverse of
    :func:`translate`: :meth:`CopiedRanges.translate_upstream` first (exact, 0
    re-reads), else :func:`translate_upstream_with_syncs` over the flow's
    offset syncs. Not part of MM2, which cannot translate failback offsets.

    Parameters
    ----------
    store:
        The offset-sync store of the flow ``T->S``, or ``None`` when it emits none.
    copied:
        That flow's copied segments, or ``None`` (it does not run in this process).
    topic, partition:
        The flow's **upstream** topic-partition (``topic1`` on T).
    offset:
        The group's position on S (committed offset = next offset to read).

    Returns
    -------
    Translation or None
        In a checkpoint's terms (the group's cluster is upstream):
        ``upstream_offset`` is ``offset`` and ``downstream_offset`` the position on
        T. ``rereads`` counts the copies on S between the newest sync at or before
        ``offset`` and ``offset`` that a consumer on T reads again (0 when exact or
        when that sync is at ``offset``). ``None`` when neither can translate.
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
