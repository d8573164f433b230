"""A flow's schema id cache (#39): source id -> target id, hits, misses and unknown ids counted, thread-safe."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorspark.core.schemas import UNKNOWN, IdCacheStats, SchemaIdCache

pytestmark = pytest.mark.unit


def test_a_miss_then_hits() -> None:
    cache = SchemaIdCache()
    assert cache.lookup(7) is None
    cache.put(7, 1001)
    assert cache.lookup(7) == 1001
    assert cache.lookup(7) == 1001
    assert cache.stats() == IdCacheStats(hits=2, misses=1, unknown=0, size=1)
    assert cache.stats().hit_ratio == pytest.approx(2 / 3)
    assert len(cache) == 1


def test_no_lookup_has_no_hit_ratio() -> None:
    assert SchemaIdCache().stats().hit_ratio is None


def test_an_unknown_id_is_remembered_and_each_record_counted() -> None:
    cache = SchemaIdCache()
    assert cache.lookup(9) is None
    cache.put_unknown(9)  # the record that missed
    assert cache.lookup(9) == UNKNOWN
    assert cache.lookup(9) == UNKNOWN
    assert cache.stats() == IdCacheStats(hits=0, misses=1, unknown=3, size=0)


def test_a_translation_found_later_replaces_the_unknown_mark() -> None:
    cache = SchemaIdCache()
    cache.put_unknown(9)
    cache.put(9, 12)
    assert cache.lookup(9) == 12


def test_repr_shows_the_counters() -> None:
    cache = SchemaIdCache()
    cache.put(1, 2)
    cache.lookup(1)
    assert repr(cache) == "SchemaIdCache(size=1, hits=1, misses=0, unknown=0)"


@given(pairs=st.dictionaries(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1), max_size=50))
def test_every_stored_translation_is_found(pairs: dict[int, int]) -> None:
    cache = SchemaIdCache()
    for source, target in pairs.items():
        cache.put(source, target)
    assert {s: cache.lookup(s) for s in pairs} == pairs
    assert cache.stats() == IdCacheStats(hits=len(pairs), misses=0, unknown=0, size=len(pairs))


def test_counters_add_up_under_threads() -> None:
    cache = SchemaIdCache()
    per_thread, threads = 2_000, 4

    def work() -> None:
        for i in range(per_thread):
            if cache.lookup(i % 50) is None:
                cache.put(i % 50, i % 50 + 1000)

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    stats = cache.stats()
    assert stats.hits + stats.misses == per_thread * threads
    assert 50 <= stats.misses <= 50 * threads  # each id missed at least once, at most once per thread
    assert stats.size == 50
    assert all(cache.lookup(i) == i + 1000 for i in range(50))
