"""Verify's comparison (core/verify/compare.py C1..C6) on simulated copies with faults injected, found exactly."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorspark.core.gaps import GapEvent
from mirrorspark.core.provenance import HEADER_NAME
from mirrorspark.core.verify import Finding, MappedSpan, Record, align, chunk_digest, chunks, narrow, verify_partition
from mirrorspark.mm2.offset_syncs import SyncState, fold_acknowledged

pytestmark = pytest.mark.unit

ALTERS = ("alter-key", "alter-value", "alter-headers", "alter-timestamp")
FAULTS = ("ok", "ok", "ok", "drop", *ALTERS, "delete", "dup", "foreign", "swap", "swap")


@dataclass
class Copy:
    """A simulated flow's copy of one source partition: both logs, the segments and the findings expected."""

    source: dict[int, Record]
    target: dict[int, Record] = field(default_factory=dict)
    dropped: set[int] = field(default_factory=set)
    gaps: list[GapEvent] = field(default_factory=list)
    expected: list[Finding] = field(default_factory=list)
    acked: list[tuple[int, int]] = field(default_factory=list)  # (upstream, downstream) acknowledged


def _records(n: int, keys: list[bytes | None]) -> dict[int, Record]:
    return {
        u: Record(u, keys[u % len(keys)], b"v%d" % u, (("h", b"%d" % (u % 3)),), "create", 1_700_000_000_000 + u)
        for u in range(n)
    }


def _copy(src: dict[int, Record], r: Record, d: int) -> Record:
    """The target's copy: its own offset, the provenance header appended (ignored by verify: R2)."""
    return replace(r, offset=d, headers=(*r.headers, (HEADER_NAME, b"\x01" * 38)))


def _altered(r: Record, how: str) -> tuple[Record, str]:
    if how == "alter-key":
        return replace(r, key=b"altered"), "key"
    if how == "alter-value":
        return replace(r, value=b"altered"), "value"
    if how == "alter-headers":
        return replace(r, headers=(*r.headers, ("x", None))), "headers"
    return replace(r, timestamp_ms=r.timestamp_ms + 1), "timestamp"


def simulate(n: int, codes: list[str], gap: tuple[int, int] | None, base: int, in_flight: int) -> Copy:
    """Copy a partition of ``n`` records record by record, applying each record's fault code."""
    c = Copy(_records(n, [None, b"k1", b"k2"]))
    lost = range(*gap) if gap else range(0)
    for u in lost:
        del c.source[u]
    if gap:
        c.gaps.append(GapEvent("a->b", "t", 0, "deleted", gap[0], gap[1] - 1, at=0))
    d = base
    extra: list[tuple[int, str, int]] = []  # (downstream, code, source offset) of records written between copies
    for u in range(n):
        code = codes[u % len(codes)]
        if u in lost:
            continue
        if code == "drop":
            c.dropped.add(u)
            continue
        c.target[d] = _copy(c.source, c.source[u], d)
        c.acked.append((u, d))
        d += 1
        if code in ("dup", "foreign"):
            r = c.source[u] if code == "dup" else Record(0, b"stranger", b"foreign %d" % u)
            c.target[d] = replace(r, offset=d)
            extra.append((d, code, u))
            d += 1
    acked = c.acked[: len(c.acked) - in_flight] if in_flight else c.acked
    last_d = acked[-1][1] if acked else -1
    mapped = dict(acked)
    for ed, code, u in extra:  # a record written after the last acknowledged copy is in flight: not judged
        if ed < last_d:
            c.expected.append(
                Finding("duplicated", u, ed, related_offset=mapped[u])
                if code == "dup"
                else Finding("unexpected", None, ed)
            )
    swaps = []
    for u, dd in acked:
        code = codes[u % len(codes)]
        if code in ALTERS:
            c.target[dd], what = _altered(c.target[dd], code)
            c.expected.append(Finding("different", u, dd, field=what))
        elif code == "delete":
            del c.target[dd]
            c.expected.append(Finding("missing", u, dd))
        elif code == "swap":
            swaps.append((u, dd))
    for (u1, d1), (u2, d2) in zip(swaps[::2], swaps[1::2], strict=False):
        c.target[d1], c.target[d2] = replace(c.target[d2], offset=d1), replace(c.target[d1], offset=d2)
        c.expected += [
            Finding("out_of_order", u1, d1, related_offset=u2),
            Finding("out_of_order", u2, d2, related_offset=u1),
        ]
    c.acked = acked
    c.expected.sort(key=Finding.sort_key)
    return c


def _segments(acked: list[tuple[int, int]]) -> list:  # type: ignore[type-arg]
    if not acked:
        return []
    return fold_acknowledged(SyncState(), [u for u, _ in acked], [d for _, d in acked], 100)[2]


faulty = st.tuples(
    st.integers(0, 120),
    st.lists(st.sampled_from(FAULTS), min_size=1, max_size=40),
    st.one_of(st.none(), st.tuples(st.integers(0, 100), st.integers(1, 20)).map(lambda t: (t[0], t[0] + t[1]))),
    st.integers(0, 5),
    st.integers(0, 3),
    st.sampled_from([1, 4, 16, 1024]),
)


@settings(max_examples=300, deadline=None)
@given(faulty)
def test_every_fault_is_found_and_classified_exactly(case: tuple) -> None:  # type: ignore[type-arg]
    """C3-C6: alter, delete, duplicate, foreign record, swap, gap and drops, each named with its offsets."""
    n, codes, gap, base, in_flight, size = case
    gap = (min(gap[0], n), min(gap[1], n)) if gap else None
    c = simulate(n, codes, gap, base, in_flight)
    alignment = align(_segments(c.acked), c.gaps, start=0, end=n)
    counts, findings = verify_partition(alignment, c.source, c.target, dropped=c.dropped, chunk_size=size)
    assert findings == c.expected
    mapped = [u for u, _ in c.acked]
    first, last = (mapped[0], mapped[-1] + 1) if mapped else (n, n)
    lost = set(range(*gap)) if gap else set()
    wrong = sum(f.kind in ("different", "missing", "out_of_order") for f in findings)
    assert counts.verified == len(mapped) - wrong
    assert counts.skipped == len(c.dropped)
    assert counts.gap_offsets == len(lost)
    outside = [u for u in range(n) if not first <= u < last and u not in lost]
    assert counts.unverified_offsets == sum(1 for u in outside if u not in c.dropped)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 150), st.lists(st.sampled_from(["ok", "drop"]), min_size=1, max_size=9), st.integers(1, 64))
def test_a_clean_copy_is_always_clean(n: int, codes: list[str], size: int) -> None:
    """C3: every mapped record verified, drops skipped, no finding."""
    c = simulate(n, codes, None, 7, 0)
    counts, findings = verify_partition(
        align(_segments(c.acked), [], start=0, end=n), c.source, c.target, dropped=c.dropped, chunk_size=size
    )
    assert findings == []
    assert counts.verified == len(c.acked)
    assert counts.skipped == len(c.dropped)
    assert counts.unverified_offsets == 0  # drops before the first copy or after the last are skipped too


def test_chunks_cover_each_mapped_span_in_order() -> None:
    """C1."""
    a = align([], [], start=0, end=0)
    assert chunks(a) == []
    spans = (MappedSpan(0, 10, 5), MappedSpan(7, 20, 3))
    a = replace(a, end=10, spans=spans)
    assert [(k.start, k.downstream_start, k.count) for k in chunks(a, 2)] == [
        (0, 10, 2),
        (2, 12, 2),
        (4, 14, 1),
        (7, 20, 2),
        (9, 22, 1),
    ]
    with pytest.raises(ValueError, match="chunk size"):
        chunks(a, 0)


@given(st.lists(st.binary(min_size=16, max_size=16), max_size=200), st.sets(st.integers(0, 199)), st.integers(1, 16))
def test_narrow_finds_exactly_the_differing_positions(digests: list[bytes], flip: set[int], leaf: int) -> None:
    """C2."""
    other = [b"\x00" * 16 if i in flip and d != b"\x00" * 16 else d for i, d in enumerate(digests)]
    found, compared = narrow(digests, other, leaf=leaf)
    assert found == [i for i in range(len(digests)) if digests[i] != other[i]]
    if not found:
        assert compared <= 1


def test_a_record_the_flow_drops_but_copied_is_unexpected_and_an_unreadable_source_is_unverified() -> None:
    """C4: the flow drops source 1 yet the target holds a copy; source 2 was compacted away after its copy."""
    src = _records(3, [b"k"])
    tgt = {10 + u: replace(r, offset=10 + u) for u, r in src.items()}
    del src[2]
    a = align(_segments([(0, 10), (1, 11), (2, 12)]), [], start=0, end=3)
    counts, findings = verify_partition(a, src, tgt, dropped={1})
    assert findings == [Finding("unexpected", None, 11)]
    assert (counts.verified, counts.unverified_offsets) == (1, 1)


def test_a_hole_record_the_flow_keeps_is_missing() -> None:
    """C5: no segment claims source 1 and the flow does not drop it."""
    src = _records(3, [b"k"])
    tgt = {0: src[0], 1: replace(src[2], offset=1)}
    counts, findings = verify_partition(align(_segments([(0, 0), (2, 1)]), [], start=0, end=3), src, tgt)
    assert findings == [Finding("missing", 1, None)]
    assert counts.verified == 2


def test_the_issue_scenario_names_each_fault_with_offsets() -> None:
    """Altered, deleted, produced twice, a stranger's record, swapped, a gap and a drop in one partition."""
    codes = ["ok", "alter-value", "ok", "delete", "ok", "dup", "ok", "swap", "swap", "drop", "foreign", "ok"]
    c = simulate(24, codes, (14, 17), 100, 0)
    a = align(_segments(c.acked), c.gaps, start=0, end=24)
    counts, findings = verify_partition(a, c.source, c.target, dropped=c.dropped, chunk_size=4)
    d = dict(c.acked)
    assert findings == c.expected
    assert {f.kind for f in findings} == {"different", "missing", "duplicated", "unexpected", "out_of_order"}
    assert Finding("different", 1, d[1], field="value") in findings
    assert Finding("missing", 3, d[3]) in findings
    assert Finding("duplicated", 5, d[5] + 1, related_offset=d[5]) in findings
    assert Finding("out_of_order", 7, d[7], related_offset=8) in findings
    assert (counts.gap_offsets, counts.skipped) == (3, 2)  # the codes repeat: drops at 9 and 21


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 80), st.lists(st.sampled_from(["ok", "drop", "dup"]), min_size=1, max_size=6), st.integers(1, 9))
def test_executor_chunk_digests_match_on_a_clean_copy(n: int, codes: list[str], size: int) -> None:
    """C1 as the Spark job uses it: each side digests its own chunk, and a clean copy's digests are equal."""
    c = simulate(n, codes, None, 3, 0)
    for k in chunks(align(_segments(c.acked), [], start=0, end=n), size):
        assert chunk_digest(c.source, k.start, k.count, c.dropped) == chunk_digest(
            c.target, k.downstream_start, k.count
        )
