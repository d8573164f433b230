"""Comparison and narrowing: range digests of aligned records, narrowed to the records that differ, classified.

The Spark job digests fixed-size *chunks* (:func:`chunks`) of the mapped spans on both clusters
(:func:`chunk_digest`), compares them, and only for a mismatching chunk ships the records' digests to
:func:`narrow`, then the records themselves to :func:`classify`. :func:`verify_partition` composes the three over
records held in memory (a partition's window, or the unit tests). Invariants (named by
``tests/unit/test_verify_compare.py``):

- C1 :func:`chunks` cut each mapped span into runs of at most ``size`` positions, in order, covering it exactly.
- C2 :func:`narrow` returns exactly the positions whose digests differ, by bisecting on range digests (a matching
  half is never looked into), in increasing order.
- C3 a clean copy (every mapped source record's copy at its mapped target offset, holes holding only records the
  flow drops, no target record in a target hole) has no finding, and ``verified`` counts every mapped record.
- C4 each mismatching mapped position is exactly one finding: *unverified* (not a finding) when its source record
  can no longer be read; *missing* when its target offset holds no record; *unexpected* when the flow drops the
  source record but a copy is there; *out of order* when its copy sits at another target offset and its target
  offset holds another source record's copy; *different* otherwise, naming the first differing field.
- C5 a source record in a hole the flow does not drop is *missing* (``target_offset`` ``None``); one it drops, in
  a hole or an unverified span, is *skipped* (counted, never a finding, not unverified).
- C6 a target record in a target hole is *duplicated* when it equals a source record of a mapped span (its
  ``related_offset`` the target offset of that record's copy), else *unexpected*.

The provenance header is never compared (:mod:`.records` R2); compare the source record *after* the flow's
transforms (and schema-ID mapping): the caller applies them and lists the offsets they drop in ``dropped``.

Limits: a swap of two equal records is no divergence; a record replaced by a copy of another whose own copy is
in place is *different*, not a duplicate; after a ``"truncated"`` gap the target's copies of the truncated
records sit in target holes and are reported *unexpected* (their source offsets are gone; the gap names them);
target records past the last segment's end are in flight and not judged.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from mirrorspark.core.verify.alignment import Alignment, HoleSpan, UnverifiedSpan
from mirrorspark.core.verify.records import Record, combine_digests, digests, first_difference, range_digest
from mirrorspark.core.verify.report import Finding, PartitionCounts

Records = Mapping[int, Record]
"""One side's records by Kafka offset."""

DEFAULT_CHUNK_SIZE = 1024
"""Records per compared range (one digest per 1 024 records on each side)."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """``count`` source offsets from ``start`` and the target offsets from ``downstream_start`` they map to."""

    start: int
    downstream_start: int
    count: int


def chunks(alignment: Alignment, size: int = DEFAULT_CHUNK_SIZE) -> list[Chunk]:
    """Cut the mapped spans into chunks of at most ``size`` (≥ 1, else ValueError) records (C1)."""
    if size < 1:
        raise ValueError(f"chunk size must be at least 1, got {size}")
    out = []
    for span in alignment.mapped:
        for i in range(0, span.count, size):
            out.append(Chunk(span.start + i, span.downstream_start + i, min(size, span.count - i)))
    return out


def chunk_digest(records: Records, first: int, count: int, dropped: Collection[int] = frozenset()) -> bytes:
    """Return the :func:`range_digest` of offsets ``first … first + count - 1`` of one side.

    An offset with no record, or one in ``dropped`` (source side: the flow drops it), hashes as ``ABSENT``.
    """
    return range_digest(None if o in dropped else records.get(o) for o in range(first, first + count))


def narrow(source: Sequence[bytes], target: Sequence[bytes], *, leaf: int = 8) -> tuple[list[int], int]:
    """Return the positions whose digests differ (C2) and how many range digests were compared.

    Bisects: a range whose two sides' range digests match is skipped, one of at most ``leaf`` positions is compared
    digest by digest. Raises ValueError if the sides differ in length.
    """
    if len(source) != len(target):
        raise ValueError(f"{len(source)} source digests but {len(target)} target digests")
    found: list[int] = []
    compared = 0
    stack = [(0, len(source))]
    while stack:
        lo, hi = stack.pop()
        if hi - lo <= leaf:
            found.extend(i for i in range(lo, hi) if source[i] != target[i])
            continue
        compared += 1
        if _range(source, lo, hi) == _range(target, lo, hi):
            continue
        mid = (lo + hi) // 2
        stack.append((mid, hi))
        stack.append((lo, mid))
    return found, compared


def _range(digests: Sequence[bytes], lo: int, hi: int) -> bytes:
    return combine_digests(digests[lo:hi])


@dataclass(frozen=True, slots=True)
class DigestIndex:
    """Where record digests sit: ``source`` the offsets of mapped source records, ``target`` of target records.

    :func:`verify_partition` indexes every record; a Spark job need only index the digests of the mismatching and
    target-hole records (a join), as nothing else is looked up.
    """

    source: Mapping[bytes, Sequence[int]]
    target: Mapping[bytes, Sequence[int]]


def index_records(alignment: Alignment, source: Records, target: Records, dropped: Collection[int]) -> DigestIndex:
    """Index the mapped source records the flow keeps and every target record by digest."""
    src: dict[bytes, list[int]] = {}
    for span in alignment.mapped:
        for o in range(span.start, span.end):
            r = source.get(o)
            if r is not None and o not in dropped:
                src.setdefault(r.digest, []).append(o)
    tgt: dict[bytes, list[int]] = {}
    for o, r in target.items():
        tgt.setdefault(r.digest, []).append(o)
    return DigestIndex(src, tgt)


def classify(
    u: int, d: int, s: Record | None, t: Record | None, *, dropped: bool, index: DigestIndex
) -> Finding | None:
    """Classify one mismatching mapped position, source offset ``u`` → target offset ``d`` (C4).

    ``s`` and ``t`` are the records there (``None``: none); ``dropped`` whether the flow drops ``s``. Returns
    ``None`` for an unverified position (the source record can no longer be read, or nothing to say).
    """
    if dropped:
        return None if t is None else Finding("unexpected", None, d)
    if s is None:
        return None
    if t is None:
        return Finding("missing", u, d)
    elsewhere = [o for o in index.target.get(s.digest, ()) if o != d]
    holds = [o for o in index.source.get(t.digest, ()) if o != u]
    if elsewhere and holds:
        return Finding("out_of_order", u, d, related_offset=holds[0])
    return Finding("different", u, d, field=first_difference(s, t))


def classify_target_hole(d: int, t: Record, alignment: Alignment, index: DigestIndex) -> Finding:
    """Classify a target record at offset ``d`` in one of ``alignment.target_holes`` (C6)."""
    return classify_target_digest(d, t.digest, alignment, index)


def classify_target_digest(d: int, digest: bytes, alignment: Alignment, index: DigestIndex) -> Finding:
    """Classify a target-hole record at offset ``d`` by its digest alone (C6; what a streaming executor keeps)."""
    origin = index.source.get(digest)
    if not origin:
        return Finding("unexpected", None, d)
    u = origin[0]
    span = next(s for s in alignment.mapped if s.start <= u < s.end)
    return Finding("duplicated", u, d, related_offset=span.downstream_start + (u - span.start))


@dataclass(slots=True)
class _Tally:
    verified: int = 0
    unverified: int = 0
    digests: int = 0
    skipped: int = 0


def _compare_chunk(
    c: Chunk, source: Records, target: Records, dropped: Collection[int], index: DigestIndex, tally: _Tally
) -> list[Finding]:
    """Compare one chunk's range digests and, if they differ, narrow and classify its positions."""
    src = [None if o in dropped else source.get(o) for o in range(c.start, c.start + c.count)]
    tgt = [target.get(o) for o in range(c.downstream_start, c.downstream_start + c.count)]
    tally.digests += 1
    tally.unverified += sum(r is None and c.start + i not in dropped for i, r in enumerate(src))
    if range_digest(src) == range_digest(tgt):
        tally.verified += sum(r is not None for r in src)
        return []
    bad, compared = narrow(digests(src), digests(tgt))
    tally.digests += compared
    wrong = set(bad)
    tally.verified += sum(src[i] is not None for i in range(c.count) if i not in wrong)
    found = []
    for i in bad:
        u = c.start + i
        f = classify(u, c.downstream_start + i, source.get(u), tgt[i], dropped=u in dropped, index=index)
        if f is not None:
            found.append(f)
    return found


def verify_partition(
    alignment: Alignment,
    source: Records,
    target: Records,
    *,
    dropped: Collection[int] = frozenset(),
    chunk_size: int = DEFAULT_CHUNK_SIZE,
) -> tuple[PartitionCounts, list[Finding]]:
    """Compare one partition's window on both sides; return its counts and findings (C3-C6), sorted by source offset.

    ``source`` and ``target`` map Kafka offsets to records (after the flow's transforms on the source side);
    ``dropped`` holds the source offsets the flow's transforms or provenance header drop.
    """
    index = index_records(alignment, source, target, dropped)
    tally = _Tally()
    findings: list[Finding] = []
    for c in chunks(alignment, chunk_size):
        findings += _compare_chunk(c, source, target, dropped, index, tally)
    for span in alignment.spans:
        if isinstance(span, HoleSpan):
            for o in range(span.start, span.end):
                if o in dropped:
                    tally.skipped += 1
                elif o in source:
                    findings.append(Finding("missing", o, None))
        elif isinstance(span, UnverifiedSpan):  # a record the flow drops needs no copy, acknowledged or not
            n = sum(1 for o in dropped if span.start <= o < span.end)
            tally.skipped += n
            tally.unverified -= n
    for lo, hi in alignment.target_holes:
        for d in range(lo, hi):
            t = target.get(d)
            if t is not None:
                findings.append(classify_target_hole(d, t, alignment, index))
    findings.sort(key=Finding.sort_key)
    counts = PartitionCounts(
        verified=tally.verified,
        skipped=tally.skipped,
        gap_offsets=alignment.gap_offsets,
        unverified_offsets=alignment.unverified_offsets + tally.unverified,
        digests=tally.digests,
    )
    return counts, findings


__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "Chunk",
    "DigestIndex",
    "Records",
    "chunk_digest",
    "chunks",
    "classify",
    "classify_target_digest",
    "classify_target_hole",
    "index_records",
    "narrow",
    "verify_partition",
]
