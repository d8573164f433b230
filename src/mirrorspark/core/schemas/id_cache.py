"""A flow's cache of schema id translations: source registry id -> target registry id, with counters.

Unbounded on purpose: an entry is two ints, a flow meets at most as many ids as its source registry holds
(thousands: a few MB at most), and an id never changes its schema in Confluent's registry (nor in Apicurio's
ccompat API, whose ids are content ids), so no entry goes stale while the target registry keeps its schemas.
An eviction would only turn hits into misses, each an HTTP round trip on the data path.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Final

UNKNOWN: Final = -1
"""What :meth:`SchemaIdCache.lookup` returns for an id the source registry does not know (remembered)."""


@dataclass(frozen=True, slots=True)
class IdCacheStats:
    """Counters of a :class:`SchemaIdCache` since it was made.

    ``hits`` and ``misses`` count lookups of ids (``misses``: the caller had to ask the registries);
    ``unknown`` counts the records whose id the source registry does not know (each one, not each id);
    ``size`` is the number of translations held.
    """

    hits: int
    misses: int
    unknown: int
    size: int

    @property
    def hit_ratio(self) -> float | None:
        """``hits / (hits + misses)``, or ``None`` before the first lookup."""
        looked_up = self.hits + self.misses
        return self.hits / looked_up if looked_up else None


class SchemaIdCache:
    """Translated schema ids of one flow (source id -> target id) and their counters; thread-safe (one lock).

    A lookup is a hit (the target id), a known-unknown id (:data:`UNKNOWN`, counted in ``unknown``) or a miss
    (``None``): the caller then resolves the id through the registries and stores the answer with :meth:`put`
    or :meth:`put_unknown`.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._target: dict[int, int] = {}
        self._unknown: set[int] = set()
        self._hits = 0
        self._misses = 0
        self._unknown_records = 0

    def lookup(self, source_id: int) -> int | None:
        """Return the target id of ``source_id``, :data:`UNKNOWN` if the source registry lacks it, else ``None``."""
        with self._lock:
            found = self._target.get(source_id)
            if found is not None:
                self._hits += 1
                return found
            if source_id in self._unknown:
                self._unknown_records += 1
                return UNKNOWN
            self._misses += 1
            return None

    def put(self, source_id: int, target_id: int) -> None:
        """Remember that ``source_id`` on the source registry is ``target_id`` on the target's."""
        with self._lock:
            self._target[source_id] = target_id
            self._unknown.discard(source_id)

    def put_unknown(self, source_id: int) -> None:
        """Remember that the source registry does not know ``source_id``, counting the record that carried it."""
        with self._lock:
            self._unknown.add(source_id)
            self._unknown_records += 1

    def stats(self) -> IdCacheStats:
        """Return the counters and the number of translations, read together."""
        with self._lock:
            return IdCacheStats(self._hits, self._misses, self._unknown_records, len(self._target))

    def __len__(self) -> int:
        with self._lock:
            return len(self._target)

    def __repr__(self) -> str:
        s = self.stats()
        return f"{type(self).__name__}(size={s.size}, hits={s.hits}, misses={s.misses}, unknown={s.unknown})"


__all__ = ["UNKNOWN", "IdCacheStats", "SchemaIdCache"]
