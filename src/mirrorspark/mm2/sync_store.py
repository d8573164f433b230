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
    """MM2 ``invariantB``: ``x`` at slot ``i`` is not too far ahead of ``y`` at slot ``j`` (i < j); overflow holds."""
    if x is y:
        return True
    bound = _int64(y.upstream_offset + (1 << j) - (1 << i))
    return bound < 0 or x.upstream_offset <= bound


def _invariant_c(x: OffsetSync, i: int, y: OffsetSync) -> bool:
    """MM2 ``invariantC``: ``x`` at slot ``i`` is at least ``2^max(i-2, 0)`` ahead of the later ``y``."""
    if x is y:
        return True
    bound = _int64(y.upstream_offset + (1 << max(i - 2, 0)))
    return bound >= 0 and x.upstream_offset >= bound


def _updated_slots(original: tuple[OffsetSync, ...], sync: OffsetSync) -> tuple[OffsetSync, ...]:
    """Return the slot array after a non-rewinding ``sync``: MM2 ``updateSyncArray`` (KAFKA-15202, mm2.md §7.2).

    Slot 0 takes ``sync``; a later slot keeps its sync while B holds against the slot before it, else takes the best
    older candidate; the first slot needing no repair ends the walk (B then holds for every later slot).
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

    Per **source** topic-partition an array of 64 slots (:data:`SYNCS_PER_PARTITION`), slot 0 the newest; syncs are
    fed in topic order with :meth:`update`, and translation is refused until :meth:`mark_initialized` (MM2
    ``readToEnd``). Invariants after every update, for slots ``i < j`` holding distinct syncs with upstream offsets
    ``u_i``, ``u_j``:

    * A — slot 0 holds the newest sync.
    * B — older slots are not too old: ``u_i <= u_j + 2^j - 2^i``.
    * C — roughly exponential spacing: ``u_i >= u_j + 2^max(i-2, 0)``.
    * D — slot 63 holds the earliest sync usable for translation: the one that last reset the array (first sync,
      upstream rewind, or the initial read's last when ``read_to_end_required``); holds while upstream offsets stay
      at or below 2^62 (beyond, B's Java bound overflows, as in MM2).

    Bounds use signed 64-bit wrap-around as MM2; "same sync" means the same object, as MM2 compares references.
    ``read_to_end_required`` is MM2's ``initializationMustReadToEnd`` (KAFKA-15905). One writer; concurrent readers
    see a partition's old or new array, never half of one. Mirrors MM2 3.8+ (KAFKA-14666, KAFKA-15202, KAFKA-15906).
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
        """Record that the initial read-to-end finished (MM2 ``readToEnd = true``); idempotent."""
        self._initialized = True

    def update(self, sync: OffsetSync) -> None:
        """Apply one offset sync (MM2 ``handleRecord``), in offsets-topic order, keeping invariants A to D.

        A partition's first sync, an upstream rewind, or any sync of the initial read when ``read_to_end_required``
        fills every slot (the old history is dropped); otherwise MM2's slot update applies.
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

        The newest with ``upstream_offset <=`` it, else slot 63 ("too old to translate"); ``None`` before
        :meth:`mark_initialized` or without syncs for the partition.
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

        With ``s`` = :meth:`lookup`: ``s.downstream_offset`` if ``s`` is exactly at ``upstream_offset``, else one
        past it (the "+1 rule": the furthest position that cannot skip a later record). -1 when every retained sync
        is newer (too old to translate; MM2 drops it); ``None`` before :meth:`mark_initialized` or without syncs for
        the partition.
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
        """Return the 64 slots of a partition, newest first, repeats included (MM2 ``syncFor``, for tests)."""
        return self._slots.get((topic, partition), ())

    def syncs(self, topic: str, partition: int) -> tuple[OffsetSync, ...]:
        """Return the distinct retained syncs of a partition, newest first (also before :meth:`mark_initialized`)."""
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
