"""Planning a verification: each partition's window, cut into units; units merged back; samples drawn (no I/O).

The driver (``mirrorspark verify`` or ``run``'s continuous sampling) knows per source partition its copied
segments, gap events and log start and end offsets. :func:`partition_window` turns the command's window
(``--since``: an offset from the source's ``offsets_for_times``; ``--last N``; or everything the flow knows)
into source offsets; :func:`plan_partition` judges what needs no read (offsets below the log start: gone on the
source; gap and unverified spans at the window's edges) and cuts the rest into units, one Spark task each;
:func:`merge_partition` merges the units' counts and findings into one
:class:`~mirrorspark.core.verify.report.PartitionReport`; :func:`sample_ranges` draws the random ranges of a
continuous sample. Invariants (named by ``tests/unit/test_verify_units.py``):

- U1 :func:`cut_units` partitions its alignment's window ``[start, end)`` into units exactly: sorted, contiguous,
  non-empty (none for an empty window).
- U2 every cut lies strictly inside a mapped span (its offset and the one before are both mapped by it), so no
  target hole straddles two units: the units' alignments' target holes are exactly the window's.
- U3 a unit holds at most ``size`` offsets unless no cut inside a mapped span is possible within them: it then ends
  one record into the first mapped span past ``size`` (or at the window's end).
- U4 :func:`plan_partition` accounts for every offset of the window exactly once: in a unit, or in its ``unread``
  counts (gap spans as gap offsets, every other offset as unverified); offsets below the source's log start are
  never in a unit (they cannot be read), and neither are gap or unverified spans before the first or after the
  last mapped or hole span, except, for a flow that ``drops`` records (transforms, the provenance header), the
  unverified ones: they are read, so that a record the flow dropped there is *skipped*, not unverified (C5; e.g.
  a filtered record after the last copy, which leaves no segment behind).
- U5 :func:`merge_partition` sums the counts and the omitted findings field by field and sorts the findings
  (``Finding.sort_key``): the merge of a partition's units has the counts of
  :func:`~mirrorspark.core.verify.compare.verify_partition` over the whole window, and its findings at the same
  offsets (for a window with no record the flow drops in an unverified span). Limit: a finding relating records of
  two units is classified by its own unit's records (a duplicate of another unit's record is *unexpected*).
- U6 :func:`partition_window` never starts before the flow's knowledge or after the end: ``--last N`` ends at the
  last copied segment's end and starts where N copied offsets precede it (or at the first segment), ``--since``
  starts at its offset and ends at the log end, the default starts at the first segment or gap the flow knows
  (the log start when it knows none) and ends at the log end; ``start <= readable <= end``.
- S1 every range :func:`sample_ranges` draws lies inside one copied segment (mapped offsets only: no hole, gap or
  target hole), and a partition's ranges are sorted and disjoint.
- S2 the ranges hold ``min(records, copied offsets)`` offsets in all: every copied offset when there are no more.
- S3 the draw depends only on the segments, ``records``, ``run`` and the injected ``random.Random``'s draws.
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields

from mirrorspark.core.gaps import GapEvent
from mirrorspark.core.verify.alignment import Alignment, GapSpan, HoleSpan, MappedSpan, Span, UnverifiedSpan, align
from mirrorspark.core.verify.compare import DEFAULT_CHUNK_SIZE
from mirrorspark.core.verify.report import FINDING_KINDS, Finding, FindingKind, PartitionCounts, PartitionReport
from mirrorspark.mm2.offset_syncs import CopiedSegment

DEFAULT_UNIT_RECORDS = 1_000_000
"""Source offsets per unit (one Spark task): a few seconds of reading at the executors' reader's speed."""

PartitionKey = tuple[str, int]
"""A source topic and partition."""


@dataclass(frozen=True, slots=True)
class Window:
    """Source offsets ``[start, end)`` to judge; those below ``readable`` (the log start) are gone on the source."""

    start: int
    readable: int
    end: int


def _copied_tail_start(segments: Sequence[CopiedSegment], last: int) -> int:
    """Return the source offset from which the last ``last`` copied offsets run to the last segment's end."""
    left = last
    for seg in reversed(segments):
        if seg.count >= left:
            return seg.upstream_end - left
        left -= seg.count
    return segments[0].upstream_start


def partition_window(
    segments: Sequence[CopiedSegment],
    gaps: Iterable[GapEvent],
    *,
    log_start: int,
    log_end: int,
    since: int | None = None,
    last: int | None = None,
) -> Window:
    """Return one partition's window (U6): ``since`` a source offset, ``last`` copied records (≥ 1), or neither.

    ``segments`` and ``gaps`` are the partition's (oldest first); ``log_start`` and ``log_end`` its source log
    start and end offsets. Raises ValueError when both ``since`` and ``last`` are given, or ``last < 1``.
    """
    if since is not None and last is not None:
        raise ValueError("a window is --since or --last, not both")
    if last is not None:
        if last < 1:
            raise ValueError(f"--last must be at least 1, got {last}")
        if not segments:
            return Window(log_end, log_end, log_end)
        end = segments[-1].upstream_end
        start = _copied_tail_start(segments, last)
    elif since is not None:
        start, end = since, max(since, log_end)
    else:
        known = [s.upstream_start for s in segments[:1]] + [g.first_lost for g in gaps if g.first_lost is not None]
        start = min(known) if known else log_start
        end = max(start, log_end)
    return Window(start, min(max(start, log_start), end), end)


def cut_units(alignment: Alignment, size: int = DEFAULT_UNIT_RECORDS) -> list[tuple[int, int]]:
    """Cut an alignment's window into units ``[start, end)`` of about ``size`` offsets (U1-U3).

    Raises ValueError for ``size < 1``.
    """
    if size < 1:
        raise ValueError(f"a unit holds at least 1 offset, got {size}")
    if alignment.end <= alignment.start:
        return []
    # where a cut may go: (first, last) offsets strictly inside a mapped span, in order (U2)
    allowed = [(m.start + 1, m.end - 1) for m in alignment.mapped if m.count >= 2]
    cuts: list[int] = []
    lo, i = alignment.start, 0
    while lo + size < alignment.end:
        while i < len(allowed) and allowed[i][1] <= lo:
            i += 1
        if i == len(allowed):
            break
        j = i
        while j < len(allowed) and allowed[j][0] <= lo + size:
            j += 1
        # the last place within size, else the first one past it (U3)
        lo = min(allowed[j - 1][1], lo + size) if j > i else allowed[i][0]
        cuts.append(lo)
    bounds = [alignment.start, *cuts, alignment.end]
    return list(itertools.pairwise(bounds))


def _unread(spans: Iterable[Span]) -> PartitionCounts:
    """Return the counts of spans judged without reading: gap spans as gap offsets, every other offset as unverified."""
    gap = unverified = 0
    for s in spans:
        n = s.end - s.start
        if isinstance(s, GapSpan):
            gap += n
        else:
            unverified += n
    return PartitionCounts(gap_offsets=gap, unverified_offsets=unverified)


@dataclass(frozen=True, slots=True)
class PartitionPlan:
    """A partition's units (source offsets ``[start, end)``, in order) and the counts of what needs no read."""

    window: Window
    units: tuple[tuple[int, int], ...]
    unread: PartitionCounts


def plan_partition(
    segments: Sequence[CopiedSegment],
    gaps: Sequence[GapEvent],
    window: Window,
    *,
    unit_records: int = DEFAULT_UNIT_RECORDS,
    drops: bool = False,
) -> PartitionPlan:
    """Cut a partition's window into units to read and counts of what needs no read (U4).

    ``drops``: the flow may drop records (transforms or the provenance header), so its unverified spans are read.
    """
    gone = align(segments, gaps, start=window.start, end=window.readable).spans
    rest = align(segments, gaps, start=window.readable, end=window.end)
    kinds = (MappedSpan, HoleSpan, UnverifiedSpan) if drops else (MappedSpan, HoleSpan)
    read = [i for i, s in enumerate(rest.spans) if isinstance(s, kinds)]
    if not read:
        return PartitionPlan(window, (), add_counts([_unread(gone), _unread(rest.spans)]))
    first, last = read[0], read[-1]
    edges = rest.spans[:first] + rest.spans[last + 1 :]
    lo, hi = rest.spans[first].start, rest.spans[last].end
    units = cut_units(align(segments, gaps, start=lo, end=hi), unit_records)
    return PartitionPlan(window, tuple(units), add_counts([_unread(gone), _unread(edges)]))


def add_counts(counts: Iterable[PartitionCounts]) -> PartitionCounts:
    """Return the field-by-field sum of partition counts."""
    total = dict.fromkeys((f.name for f in fields(PartitionCounts)), 0)
    for c in counts:
        for name in total:
            total[name] += getattr(c, name)
    return PartitionCounts(**total)


def merge_partition(
    flow: str,
    topic: str,
    partition: int,
    target_topic: str,
    parts: Iterable[tuple[PartitionCounts, Sequence[Finding], Sequence[tuple[FindingKind, int]]]],
) -> PartitionReport:
    """Merge the counts, findings and omitted findings (per kind) of a partition's units into one report (U5)."""
    counts: list[PartitionCounts] = []
    findings: list[Finding] = []
    omitted: Counter[FindingKind] = Counter()
    for c, f, o in parts:
        counts.append(c)
        findings.extend(f)
        for kind, n in o:
            omitted[kind] += n
    findings.sort(key=Finding.sort_key)
    left = tuple((k, omitted[k]) for k in FINDING_KINDS if omitted[k])
    return PartitionReport(flow, topic, partition, target_topic, add_counts(counts), tuple(findings), left)


def sample_ranges(
    segments: Mapping[PartitionKey, Sequence[CopiedSegment]],
    records: int,
    rng: random.Random,
    *,
    run: int = DEFAULT_CHUNK_SIZE,
) -> dict[PartitionKey, list[tuple[int, int]]]:
    """Draw random runs of at most ``run`` copied offsets, ``records`` offsets in all (S1-S3), by partition.

    Each segment is cut into runs of ``run`` offsets from its start (its last one shorter); runs are drawn without
    replacement until the budget is spent, the last one trimmed to it. Raises ValueError for ``records < 0`` or
    ``run < 1``.
    """
    if records < 0 or run < 1:
        raise ValueError(f"records must be >= 0 and run >= 1, got {records} and {run}")
    keys = sorted(segments)
    slots: list[tuple[PartitionKey, CopiedSegment]] = [(k, s) for k in keys for s in segments[k]]
    starts = list(itertools.accumulate((math.ceil(s.count / run) for _, s in slots), initial=0))
    total_runs = starts[-1]
    out: dict[PartitionKey, list[tuple[int, int]]] = {}
    budget = records
    drawn = min(total_runs, math.ceil(records / run) + len(slots)) if records else 0  # enough despite short runs
    for index in rng.sample(range(total_runs), drawn):
        if budget <= 0:
            break
        i = bisect.bisect_right(starts, index) - 1
        key, seg = slots[i]
        lo = seg.upstream_start + (index - starts[i]) * run
        n = min(run, seg.upstream_end - lo, budget)
        out.setdefault(key, []).append((lo, lo + n))
        budget -= n
    return {k: sorted(v) for k, v in sorted(out.items())}


__all__ = [
    "DEFAULT_UNIT_RECORDS",
    "PartitionPlan",
    "Window",
    "add_counts",
    "cut_units",
    "merge_partition",
    "partition_window",
    "plan_partition",
    "sample_ranges",
]
