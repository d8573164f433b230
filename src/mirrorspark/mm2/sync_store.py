"""MM2's ``OffsetSyncStore``: translation of upstream offsets through offset syncs."""

from __future__ import annotations

from mirrorspark.mm2.records import OffsetSync

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
    """Return the slot array after a non-rewinding ``sync``: MM2 ``updateSyncArray`` (KAFKA-15202, mm2.md §7.2).

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
    :class:`~mirrorspark.mm2.records.OffsetSync`, as decoding a record does; two syncs
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
        """Find the sync MM2 would translate ``upstream_offset`` with (MM2 ``latestOffsetSync``).

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
        """Return the 64 slots of a partition, newest first, repeats included (MM2 ``syncFor``, for tests).

        Parameters
        ----------
        topic, partition:
            The **upstream** (source) topic-partition.

        Returns
        -------
        tuple[OffsetSync, ...]
            64 syncs, or ``()`` if no sync was seen for the partition.
        """
        return self._slots.get((topic, partition), ())

    def syncs(self, topic: str, partition: int) -> tuple[OffsetSync, ...]:
        """Return the distinct retained syncs of a partition, newest first.

        Available before :meth:`mark_initialized` too (inspection).

        Parameters
        ----------
        topic, partition:
            The **upstream** (source) topic-partition.

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
        """Return the ``(upstream topic, partition)`` pairs with at least one sync (a new set)."""
        return set(self._slots)


__all__ = ["SYNCS_PER_PARTITION", "OffsetSyncStore"]
