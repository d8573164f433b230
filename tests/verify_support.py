"""Hypothesis strategies and builders shared by verify's unit tests (core/verify)."""

from __future__ import annotations

from hypothesis import strategies as st

from mirrorspark.core.gaps import GapEvent
from mirrorspark.mm2.offset_syncs import CopiedSegment


def gap(first: int | None, last: int | None) -> GapEvent:
    """A ``deleted`` gap event of partition ``t-0`` of flow ``a->b`` (inclusive bounds, ``None`` unknown)."""
    return GapEvent("a->b", "t", 0, "deleted", first, last, at=0)


@st.composite
def segment_lists(draw: st.DrawFn) -> list[CopiedSegment]:
    """Up to 6 copied segments of 1-12 records, increasing and non-overlapping on both sides (as CopiedRanges)."""
    out, u, d = [], draw(st.integers(0, 20)), draw(st.integers(0, 20))
    for _ in range(draw(st.integers(0, 6))):
        u += draw(st.integers(0, 5))
        d += draw(st.integers(0, 5))
        n = draw(st.integers(1, 12))
        out.append(CopiedSegment(u, d, n))
        u, d = u + n, d + n
    return out
