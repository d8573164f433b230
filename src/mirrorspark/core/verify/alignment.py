"""Alignment: which target offsets each source offset of a partition should have become (no I/O).

Input is what mirrorspark already knows of one source partition: its copied segments
(:class:`~mirrorspark.mm2.offset_syncs.CopiedSegment`, as :class:`~mirrorspark.mm2.translation.CopiedRanges`
keeps them: strictly increasing, non-overlapping on both sides) and its gap ledger's events
(:class:`~mirrorspark.core.gaps.GapEvent`). A record a transform drops, or the provenance header skips, is never
acknowledged and so is in no segment (``replication/task/produce.py``): its upstream offset falls in a *hole*
between two segments whose downstream offsets continue each other. A hole is therefore not a loss by itself: the
comparison (:mod:`.compare`) decides per record, the flow's transforms re-applied, whether a hole's record was
dropped on purpose (*skipped*) or is *missing*. Invariants (named by ``tests/unit/test_verify_alignment.py``):

- A1 the spans of an :class:`Alignment` partition the window ``[start, end)`` of source offsets exactly: sorted,
  contiguous, non-empty, each offset in one span.
- A2 an offset a segment covers is *mapped*, to ``downstream_start + (offset - upstream_start)``, even if a gap
  names it too (it was copied: compare it).
- A3 an offset no segment covers but a gap event names is a *gap* (with the event's reason), never divergence; a
  gap bound the ledger does not know (``None``) stretches to the window's edge.
- A4 any other offset below the first segment's start is *unverified* (``"not-tracked"``: its segments were
  forgotten or it was never meant to be copied), above the last one's end *unverified* (``"in-flight"``: not
  acknowledged yet); between segments it is in a *hole*; with no segment at all, the whole rest is in flight.
- A5 ``target_holes`` are the downstream offsets between consecutive mapped spans that no span maps to: a target
  record there comes from no source record in the window (a duplicate, a retried batch's first copy, a record
  another producer wrote); transaction markers sit there too and are never read by a consumer.

Counts of gap and unverified spans are in offsets (an upper bound of records: control records and compacted-away
records occupy offsets too).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from mirrorspark.core.gaps import GapEvent, GapReason
from mirrorspark.mm2.offset_syncs import CopiedSegment

UnverifiedReason = Literal["not-tracked", "in-flight"]
"""Why a source range cannot be verified: before the first known segment, or not acknowledged yet."""

_Where = Literal["before", "between", "after"]


@dataclass(frozen=True, slots=True)
class MappedSpan:
    """Source offsets ``[start, start + count)`` copied to target offsets ``[downstream_start, … + count)``."""

    start: int
    downstream_start: int
    count: int

    @property
    def end(self) -> int:
        """Source offset one past the span."""
        return self.start + self.count

    @property
    def downstream_end(self) -> int:
        """Target offset one past the span."""
        return self.downstream_start + self.count


@dataclass(frozen=True, slots=True)
class GapSpan:
    """Source offsets ``[start, end)`` the gap ledger names as lost (``reason`` from the event)."""

    start: int
    end: int
    reason: GapReason


@dataclass(frozen=True, slots=True)
class HoleSpan:
    """Source offsets ``[start, end)`` between two segments: records dropped on purpose, or missing."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class UnverifiedSpan:
    """Source offsets ``[start, end)`` that cannot be mapped (``reason``: not tracked, or in flight)."""

    start: int
    end: int
    reason: UnverifiedReason


Span = MappedSpan | GapSpan | HoleSpan | UnverifiedSpan


@dataclass(frozen=True, slots=True)
class Alignment:
    """A partition's window ``[start, end)`` of source offsets cut into spans (A1), and the target's holes (A5)."""

    start: int
    end: int
    spans: tuple[Span, ...]
    target_holes: tuple[tuple[int, int], ...]

    @property
    def mapped(self) -> tuple[MappedSpan, ...]:
        """The mapped spans, in order."""
        return tuple(s for s in self.spans if isinstance(s, MappedSpan))

    @property
    def gap_offsets(self) -> int:
        """Source offsets in gap spans."""
        return sum(s.end - s.start for s in self.spans if isinstance(s, GapSpan))

    @property
    def unverified_offsets(self) -> int:
        """Source offsets in unverified spans."""
        return sum(s.end - s.start for s in self.spans if isinstance(s, UnverifiedSpan))

    def span_of(self, offset: int) -> Span | None:
        """Return the span holding a source offset, or ``None`` outside the window."""
        for s in self.spans:
            if s.start <= offset < s.end:
                return s
        return None


def _gap_ranges(gaps: Iterable[GapEvent], start: int, end: int) -> list[tuple[int, int, GapReason]]:
    """Return the gap events' ranges clipped to ``[start, end)``, sorted; unknown bounds stretch to the edges."""
    out = []
    for g in gaps:
        lo = start if g.first_lost is None else max(start, g.first_lost)
        hi = end if g.last_lost is None else min(end, g.last_lost + 1)
        if lo < hi:
            out.append((lo, hi, g.reason))
    return sorted(out)


def _unmapped(lo: int, hi: int, kind: _Where, gaps: Sequence[tuple[int, int, GapReason]]) -> list[Span]:
    """Cut an unmapped range into gap spans (A3) and the rest, by where it lies (A4)."""
    out: list[Span] = []
    at = lo
    for g_lo, g_hi, reason in gaps:
        g_lo, g_hi = max(g_lo, at), min(g_hi, hi)
        if g_lo >= g_hi:
            continue
        if at < g_lo:
            out.append(_rest(at, g_lo, kind))
        out.append(GapSpan(g_lo, g_hi, reason))
        at = g_hi
    if at < hi:
        out.append(_rest(at, hi, kind))
    return out


def _rest(lo: int, hi: int, kind: _Where) -> Span:
    if kind == "between":
        return HoleSpan(lo, hi)
    return UnverifiedSpan(lo, hi, "not-tracked" if kind == "before" else "in-flight")


def align(segments: Sequence[CopiedSegment], gaps: Iterable[GapEvent], *, start: int, end: int) -> Alignment:
    """Cut the source window ``[start, end)`` into mapped, gap, hole and unverified spans (A1-A5).

    Parameters
    ----------
    segments
        One source partition's copied segments, oldest first, as ``CopiedRanges.segments`` returns them.
    gaps
        That partition's gap events (others' are the caller's to filter out).
    start, end
        Source offsets: the first to verify, and one past the last (e.g. the log start and end offsets).

    Raises
    ------
    ValueError
        ``end < start``, or segments not strictly increasing on both sides.
    """
    if end < start:
        raise ValueError(f"window end {end} before its start {start}")
    _check_order(segments)
    gap_ranges = _gap_ranges(gaps, start, end)
    spans: list[Span] = []
    holes: list[tuple[int, int]] = []
    at = start
    previous: MappedSpan | None = None
    earlier = False  # a segment ended before the window: what follows it is a hole, not untracked
    for seg in segments:
        lo, hi = max(seg.upstream_start, start), min(seg.upstream_end, end)
        if lo >= hi:
            earlier = earlier or seg.upstream_end <= start
            continue
        span = MappedSpan(lo, seg.downstream_start + (lo - seg.upstream_start), hi - lo)
        if at < lo:
            kind: _Where = "before" if previous is None and not earlier else "between"
            spans.extend(_unmapped(at, lo, kind, gap_ranges))
        if previous is not None and previous.downstream_end < span.downstream_start:
            holes.append((previous.downstream_end, span.downstream_start))
        spans.append(span)
        previous, at = span, hi
    if at < end:
        later = any(seg.upstream_start >= end for seg in segments)
        tail: _Where = "between" if later and (previous is not None or earlier) else "before" if later else "after"
        spans.extend(_unmapped(at, end, tail, gap_ranges))
    return Alignment(start, end, tuple(spans), tuple(holes))


def _check_order(segments: Sequence[CopiedSegment]) -> None:
    for a, b in itertools.pairwise(segments):
        if b.upstream_start < a.upstream_end or b.downstream_start < a.downstream_start + a.count:
            raise ValueError(f"copied segments out of order or overlapping: {a} then {b}")


__all__ = ["Alignment", "GapSpan", "HoleSpan", "MappedSpan", "Span", "UnverifiedReason", "UnverifiedSpan", "align"]
